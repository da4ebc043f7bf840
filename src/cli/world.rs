//! `world-streaming world inspect DIR` and `world-streaming world verify DIR`: what a world
//! directory (`worldDir`, SPEC §13) holds and whether every region file in it is sound. Both only
//! read ([`store::read_dir`]): unlike opening the directory for a game, nothing is removed,
//! copied aside or rewritten. Only files named `r.<x>.<z>.wsr` are region files; the rest (a
//! `.damaged` copy, a `.tmp` left by a killed flush) are ignored.
//!
//! Exit status: 0 ok (for `verify`: every header and record is sound and every region has the
//! same stamp), 1 bad input (a damaged file, or a directory that cannot be read), 2 usage.

use std::path::{Path, PathBuf};

use anyhow::bail;
use clap::Subcommand;
use serde_json::{json, Value};
use world_streaming::files::display_name;
use world_streaming::grid::ChunkPos;
use world_streaming::kits::terrain::region::{Damage, Stamp};
use world_streaming::kits::terrain::store::{self, RegionReport};

const IGNORED: &str = "Only files named r.<x>.<z>.wsr are read; anything else in the directory \
                       (r.0.0.wsr.damaged copies, r.0.0.wsr.tmp files a killed flush left) is \
                       ignored. Nothing is written, removed or copied aside.";

#[derive(Subcommand)]
pub enum WorldCommand {
    /// List every region file of a world directory and each chunk record in it: file, region,
    /// size, header status and stamp, then per record the chunk, offset, length, edited cells
    /// and checksum status. One line per item, regions in order, chunks in row order.
    #[command(after_help = format!(
        "{IGNORED}\n\nExamples:\n  world-streaming world inspect saves/world\n  \
         world-streaming world inspect saves/world --json"
    ))]
    Inspect {
        /// The world directory (`worldDir` of the terrain kit).
        dir: PathBuf,
        /// One JSON document instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Check every region file of a world directory: headers, table, record checksums and
    /// payloads, and that all regions have the same stamp. Sound: one summary line, exit 0;
    /// otherwise one line per bad header or record (file, chunk or `header`, what is wrong),
    /// exit 1.
    #[command(after_help = format!(
        "{IGNORED}\n\nExamples:\n  world-streaming world verify saves/world && echo sound"
    ))]
    Verify {
        /// The world directory (`worldDir` of the terrain kit).
        dir: PathBuf,
    },
}

pub fn run(command: WorldCommand) -> anyhow::Result<()> {
    match command {
        WorldCommand::Inspect { dir, json } => inspect(&dir, json),
        WorldCommand::Verify { dir } => verify(&dir),
    }
}

/// Every region file of `dir`; a directory that is missing or unreadable is an error.
fn read(dir: &Path) -> anyhow::Result<Vec<RegionReport>> {
    if !dir.is_dir() {
        if dir.exists() {
            bail!("{}: not a directory", display_name(dir));
        }
        bail!("{}: no such directory", display_name(dir));
    }
    Ok(store::read_dir(dir)?)
}

/// `1 record`, `2 records`.
fn count(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
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

/// One record as listed: chunk, offset, length, edited cells (if sound), its stamp if the
/// header is damaged (found by scanning), and what is wrong with it.
struct Row {
    chunk: ChunkPos,
    offset: u64,
    len: u64,
    edits: Option<usize>,
    stamp: Option<Stamp>,
    damage: Option<String>,
}

/// The records of a region in row order (then by offset).
fn rows(r: &RegionReport) -> Vec<Row> {
    let d = &r.decoded;
    let mut rows: Vec<Row> = d
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
                edits: kept.map(|(_, diff)| diff.cells.len()),
                stamp: kept.filter(|_| d.stamp.is_none()).map(|(s, _)| *s),
                damage,
            }
        })
        .collect();
    rows.sort_by_key(|row| (row.chunk, row.offset));
    rows
}

fn header_damage(r: &RegionReport) -> Option<&str> {
    r.decoded.damage.iter().find_map(|x| match x {
        Damage::Header(m) => Some(m.as_str()),
        _ => None,
    })
}

fn inspect(dir: &Path, as_json: bool) -> anyhow::Result<()> {
    let regions = read(dir)?;
    if as_json {
        let list: Vec<Value> = regions
            .iter()
            .map(|r| {
                let chunks: Vec<Value> = rows(r)
                    .iter()
                    .map(|row| {
                        json!({
                            "x": row.chunk.x, "z": row.chunk.z,
                            "offset": row.offset, "length": row.len,
                            "edits": row.edits,
                            "stamp": row.stamp.as_ref().map(stamp_json),
                            "status": row.damage.as_deref().unwrap_or("ok"),
                        })
                    })
                    .collect();
                json!({
                    "file": r.file,
                    "region": {"x": r.pos.x, "z": r.pos.z},
                    "bytes": r.len,
                    "header": header_damage(r).unwrap_or("ok"),
                    "stamp": r.decoded.stamp.as_ref().map(stamp_json),
                    "chunks": chunks,
                })
            })
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({ "dir": display_name(dir), "regions": list }))?
        );
        return Ok(());
    }
    println!(
        "{}: {}",
        display_name(dir),
        count(regions.len(), "region file")
    );
    for r in &regions {
        let header = match (header_damage(r), &r.decoded.stamp) {
            (Some(m), _) => format!("header damaged: {m} (records found by scanning)"),
            (None, Some(s)) => format!("header ok  {}", stamp_text(s)),
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
            if let Some(n) = row.edits {
                line += &format!("  edits {n}");
            }
            if let Some(s) = &row.stamp {
                line += &format!("  {}", stamp_text(s));
            }
            match &row.damage {
                None => line += "  ok",
                Some(m) => line += &format!("  damaged: {m}"),
            }
            println!("{line}");
        }
    }
    Ok(())
}

fn verify(dir: &Path) -> anyhow::Result<()> {
    let regions = read(dir)?;
    let mut problems: Vec<String> = Vec::new();
    let mut records = 0;
    // The first stamp found (region order): a game can open the directory only if every region
    // and record has it.
    let mut first: Option<(String, Stamp)> = None;
    let mut check_stamp = |file: &str, what: &str, s: &Stamp, problems: &mut Vec<String>| {
        let (f, expected) = first.get_or_insert_with(|| (file.to_owned(), *s));
        if !expected.same(s) {
            problems.push(format!(
                "{file}: {what}: stamp ({s}) differs from {f}'s ({expected}): no game can open both"
            ));
        }
    };
    for r in &regions {
        if let Some(m) = header_damage(r) {
            problems.push(format!("{}: header: {m}", r.file));
        }
        if let Some(s) = &r.decoded.stamp {
            check_stamp(&r.file, "header", s, &mut problems);
        }
        for row in rows(r) {
            let chunk = format!("chunk {} {}", row.chunk.x, row.chunk.z);
            match &row.damage {
                Some(m) => problems.push(format!("{}: {chunk}: {m}", r.file)),
                None => records += 1,
            }
            if let Some(s) = &row.stamp {
                check_stamp(&r.file, &chunk, s, &mut problems);
            }
        }
    }
    if problems.is_empty() {
        println!(
            "{}: {}, {}, all sound",
            display_name(dir),
            count(regions.len(), "region file"),
            count(records, "chunk record"),
        );
        return Ok(());
    }
    for p in &problems {
        println!("{p}");
    }
    bail!(
        "{}: {} in {}",
        display_name(dir),
        count(problems.len(), "problem"),
        count(regions.len(), "region file"),
    )
}
