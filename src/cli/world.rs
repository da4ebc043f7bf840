//! `world-streaming world inspect DIR` and `world-streaming world verify DIR`: what a world
//! directory (`worldDir`, docs/reference/world-dir.md#what-is-stored,
//! docs/reference/district.md#district-persistence) holds and whether every region file in it is
//! sound: the terrain's (`r.<x>.<z>.wsr`) and the district kit's (`d.<x>.<z>.wsd`), each kind with
//! its own stamp. Both only read ([`worlddir::store::read_dir`]): unlike opening the directory for
//! a game, nothing is removed, copied aside or rewritten. The rest (a `.damaged` copy, a `.tmp`
//! left by a killed flush, the journals) is ignored.
//!
//! Exit status: 0 ok (for `verify`: every header and record is sound and every region of a kind
//! has the same stamp), 1 bad input (a damaged file, or a directory that cannot be read), 2 usage.

use std::path::{Path, PathBuf};

use anyhow::bail;
use clap::Subcommand;
use serde_json::{json, Value};
use world_streaming::files::display_name;
use world_streaming::grid::ChunkPos;
use world_streaming::kits::district::{self, District, DistrictStamp};
use world_streaming::kits::terrain::region::{Damage, Stamp, Terrain};
use world_streaming::kits::terrain::store;
use world_streaming::worlddir::frame::Kind;
use world_streaming::worlddir::store::RegionReport;

const IGNORED: &str = "Only files named r.<x>.<z>.wsr (terrain) and d.<x>.<z>.wsd (district) \
                       are read; anything else in the directory (r.0.0.wsr.damaged copies, \
                       r.0.0.wsr.tmp files a killed flush left, journals) is ignored. Nothing is \
                       written, removed or copied aside.";

#[derive(Subcommand)]
pub enum WorldCommand {
    /// List every region file of a world directory and each chunk record in it: file, region,
    /// size, header status and stamp, then per record the chunk, offset, length, edited cells
    /// (terrain) or entities (district) and checksum status. One line per item, terrain regions
    /// then district regions, each in order, chunks in row order.
    #[command(after_help = format!(
        "{IGNORED}\n\nExamples:\n  world-streaming world inspect saves/world\n  \
         world-streaming world inspect saves/world --json"
    ))]
    Inspect {
        /// The world directory (`worldDir` of the terrain and district kits).
        dir: PathBuf,
        /// One JSON document instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Check every region file of a world directory: headers, table, record checksums and
    /// payloads, and that all regions of a kind have the same stamp. Sound: one summary line,
    /// exit 0;
    /// otherwise one line per bad header or record (file, chunk or `header`, what is wrong),
    /// exit 1.
    #[command(after_help = format!(
        "{IGNORED}\n\nExamples:\n  world-streaming world verify saves/world && echo sound"
    ))]
    Verify {
        /// The world directory (`worldDir` of the terrain and district kits).
        dir: PathBuf,
    },
}

pub fn run(command: WorldCommand) -> anyhow::Result<()> {
    match command {
        WorldCommand::Inspect { dir, json } => inspect(&dir, json),
        WorldCommand::Verify { dir } => verify(&dir),
    }
}

/// Every region file of `dir`, terrain's and the district kit's; a directory that is missing or
/// unreadable is an error.
fn read(dir: &Path) -> anyhow::Result<(Vec<RegionReport<Terrain>>, Vec<district::DistrictReport>)> {
    if !dir.is_dir() {
        if dir.exists() {
            bail!("{}: not a directory", display_name(dir));
        }
        bail!("{}: no such directory", display_name(dir));
    }
    Ok((store::read_dir(dir)?, district::read_dir(dir)?))
}

/// `1 record`, `2 records`.
fn count(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// What the listing says of each kind of region file.
trait Listed: Kind {
    /// What a record's count counts, as `inspect` names it.
    const COUNTS: &'static str;
    /// A record's count.
    fn count_of(data: &Self::Data) -> usize;
    fn stamp_text(s: &Self::Stamp) -> String;
    fn stamp_json(s: &Self::Stamp) -> Value;
}

impl Listed for Terrain {
    const COUNTS: &'static str = "edits";
    fn count_of(diff: &Self::Data) -> usize {
        diff.cells.len()
    }
    fn stamp_text(s: &Stamp) -> String {
        format!(
            "generator {}  seed {}  cells {}  chunk size {}",
            s.generator, s.seed, s.cells, s.chunk_size
        )
    }
    fn stamp_json(s: &Stamp) -> Value {
        json!({"generator": s.generator, "seed": s.seed, "cells": s.cells, "chunkSize": s.chunk_size})
    }
}

impl Listed for District {
    const COUNTS: &'static str = "entities";
    fn count_of(record: &Self::Data) -> usize {
        record.entities()
    }
    fn stamp_text(s: &DistrictStamp) -> String {
        format!(
            "format {}  district files {}  hash {:016x}  chunk size {}",
            s.format, s.files, s.hash, s.chunk_size
        )
    }
    fn stamp_json(s: &DistrictStamp) -> Value {
        json!({"format": s.format, "files": s.files, "hash": format!("{:016x}", s.hash), "chunkSize": s.chunk_size})
    }
}

/// One record as listed: chunk, offset, length, its count (edited cells, entities; if sound),
/// its stamp if the header is damaged (found by scanning), and what is wrong with it.
struct Row<K: Kind> {
    chunk: ChunkPos,
    offset: u64,
    len: u64,
    count: Option<usize>,
    stamp: Option<K::Stamp>,
    damage: Option<String>,
}

/// The records of a region in row order (then by offset).
fn rows<K: Listed>(r: &RegionReport<K>) -> Vec<Row<K>> {
    let d = &r.decoded;
    let mut rows: Vec<Row<K>> = d
        .entries
        .iter()
        .map(|&(chunk, offset, len)| {
            let damage = d.damage.iter().find_map(|x| match x {
                Damage::Record {
                    chunk: c,
                    offset: o,
                    message,
                } if *c == chunk && *o == offset => Some(message.clone()),
                _ => None,
            });
            let kept = d.chunks.get(&chunk).filter(|_| damage.is_none());
            Row {
                chunk,
                offset,
                len,
                count: kept.map(|(_, data)| K::count_of(data)),
                stamp: kept.filter(|_| d.stamp.is_none()).map(|(s, _)| *s),
                damage,
            }
        })
        .collect();
    rows.sort_by_key(|row| (row.chunk, row.offset));
    rows
}

fn header_damage<K: Kind>(r: &RegionReport<K>) -> Option<&str> {
    r.decoded.damage.iter().find_map(|x| match x {
        Damage::Header(m) => Some(m.as_str()),
        _ => None,
    })
}

fn inspect(dir: &Path, as_json: bool) -> anyhow::Result<()> {
    let (regions, districts) = read(dir)?;
    if as_json {
        let mut doc = json!({ "dir": display_name(dir), "regions": regions_json(&regions) });
        if !districts.is_empty() {
            doc["districtRegions"] = Value::Array(regions_json(&districts));
        }
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(());
    }
    println!(
        "{}: {}",
        display_name(dir),
        count(regions.len(), "region file")
    );
    print_regions(&regions);
    if !districts.is_empty() {
        println!(
            "{}: {}",
            display_name(dir),
            count(districts.len(), "district region file")
        );
        print_regions(&districts);
    }
    Ok(())
}

fn regions_json<K: Listed>(regions: &[RegionReport<K>]) -> Vec<Value> {
    regions
        .iter()
        .map(|r| {
            let chunks: Vec<Value> = rows(r)
                .iter()
                .map(|row| {
                    let mut o = json!({
                        "x": row.chunk.x, "z": row.chunk.z,
                        "offset": row.offset, "length": row.len,
                    });
                    o[K::COUNTS] = json!(row.count);
                    o["stamp"] = json!(row.stamp.as_ref().map(K::stamp_json));
                    o["status"] = json!(row.damage.as_deref().unwrap_or("ok"));
                    o
                })
                .collect();
            json!({
                "file": r.file,
                "region": {"x": r.pos.x, "z": r.pos.z},
                "bytes": r.len,
                "header": header_damage(r).unwrap_or("ok"),
                "stamp": r.decoded.stamp.as_ref().map(K::stamp_json),
                "chunks": chunks,
            })
        })
        .collect()
}

fn print_regions<K: Listed>(regions: &[RegionReport<K>]) {
    for r in regions {
        let header = match (header_damage(r), &r.decoded.stamp) {
            (Some(m), _) => format!("header damaged: {m} (records found by scanning)"),
            (None, Some(s)) => format!("header ok  {}", K::stamp_text(s)),
            (None, None) => "header damaged".to_owned(),
        };
        println!(
            "{}  region {} {}  {} bytes  {}  {}",
            r.file,
            r.pos.x,
            r.pos.z,
            r.len,
            header,
            count(r.decoded.entries.len(), "record")
        );
        for row in rows(r) {
            let mut line = format!(
                "  chunk {} {}  offset {}  length {}",
                row.chunk.x, row.chunk.z, row.offset, row.len
            );
            if let Some(n) = row.count {
                line += &format!("  {} {n}", K::COUNTS);
            }
            if let Some(s) = &row.stamp {
                line += &format!("  {}", K::stamp_text(s));
            }
            match &row.damage {
                None => line += "  ok",
                Some(m) => line += &format!("  damaged: {m}"),
            }
            println!("{line}");
        }
    }
}

/// Checks every region of one kind into `problems`; returns how many records are sound.
fn check<K: Listed>(regions: &[RegionReport<K>], problems: &mut Vec<String>) -> usize {
    let mut records = 0;
    // The first stamp found (region order): a game can open the directory only if every region
    // and record of the kind has it.
    let mut first: Option<(String, K::Stamp)> = None;
    let mut check_stamp = |file: &str, what: &str, s: &K::Stamp, problems: &mut Vec<String>| {
        let (f, expected) = first.get_or_insert_with(|| (file.to_owned(), *s));
        if !K::same(expected, s) {
            problems.push(format!(
                "{file}: {what}: stamp ({s}) differs from {f}'s ({expected}): no game can open both"
            ));
        }
    };
    for r in regions {
        if let Some(m) = header_damage(r) {
            problems.push(format!("{}: header: {m}", r.file));
        }
        if let Some(s) = &r.decoded.stamp {
            check_stamp(&r.file, "header", s, problems);
        }
        for row in rows(r) {
            let chunk = format!("chunk {} {}", row.chunk.x, row.chunk.z);
            match &row.damage {
                Some(m) => problems.push(format!("{}: {chunk}: {m}", r.file)),
                None => records += 1,
            }
            if let Some(s) = &row.stamp {
                check_stamp(&r.file, &chunk, s, problems);
            }
        }
    }
    records
}

fn verify(dir: &Path) -> anyhow::Result<()> {
    let (regions, districts) = read(dir)?;
    let mut problems: Vec<String> = Vec::new();
    let records = check(&regions, &mut problems);
    let district_records = check(&districts, &mut problems);
    let mut files = count(regions.len(), "region file");
    let mut held = format!("{files}, {}", count(records, "chunk record"));
    if !districts.is_empty() {
        files += &format!(", {}", count(districts.len(), "district region file"));
        held += &format!(
            ", {}, {}",
            count(districts.len(), "district region file"),
            count(district_records, "district record")
        );
    }
    if problems.is_empty() {
        println!("{}: {held}, all sound", display_name(dir));
        return Ok(());
    }
    for p in &problems {
        println!("{p}");
    }
    bail!(
        "{}: {} in {files}",
        display_name(dir),
        count(problems.len(), "problem"),
    )
}
