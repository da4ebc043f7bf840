//! `world-streaming world inspect DIR` and `world verify DIR`
//! (docs/reference/world-dir.md#inspect-and-verify): region files written with `region::encode`
//! into a temporary directory, then damaged in the ways a disk or a killed process damages them;
//! `verify` names each damaged record or header and exits 1, `inspect` lists every region and
//! record, and neither touches the directory.

mod common;
use common::bin;
use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;
use world_streaming::grid::ChunkPos;
use world_streaming::kits::terrain::region::{self, Diff, Region, RegionPos, Stamp};

fn stamp() -> Stamp {
    Stamp {
        generator: 1,
        seed: 2026,
        cells: 32,
        chunk_size: 32.0,
    }
}

fn diff(cells: &[(u32, u16, u8)]) -> Diff {
    Diff {
        cells: cells.iter().map(|&(i, h, m)| (i, (h, m))).collect(),
    }
}

/// Region `(x, z)` with `chunks` (chunk x, z, number of edited cells), stamped `stamp`.
fn region_with(x: i64, z: i64, stamp: Stamp, chunks: &[(i64, i64, u32)]) -> Region {
    let chunks: BTreeMap<ChunkPos, Diff> = chunks
        .iter()
        .map(|&(cx, cz, n)| {
            let cells: Vec<(u32, u16, u8)> = (0..n).map(|i| (i * 7, 100 + i as u16, 3)).collect();
            (ChunkPos::new(cx, cz), diff(&cells))
        })
        .collect();
    Region {
        pos: RegionPos { x, z },
        stamp,
        chunks,
    }
}

fn region(x: i64, z: i64, chunks: &[(i64, i64, u32)]) -> Region {
    region_with(x, z, stamp(), chunks)
}

/// Writes `r` as its region file in `dir`; returns the bytes.
fn write(dir: &Path, r: &Region) -> Vec<u8> {
    let bytes = region::encode(r);
    std::fs::write(dir.join(r.pos.file_name()), &bytes).unwrap();
    bytes
}

struct Out {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn world(args: &[&str], dir: &Path) -> Out {
    let out = bin().arg("world").args(args).arg(dir).output().unwrap();
    Out {
        code: out.status.code(),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

/// Every file of `dir` with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

/// A sound world directory: three regions (one in negative coordinates), plus files that are
/// not region files.
fn sound_dir() -> (tempfile::TempDir, Vec<Region>) {
    let dir = tempfile::tempdir().unwrap();
    let regions = vec![
        region(-1, 0, &[(-1, 0, 1), (-32, 5, 40)]),
        region(0, 0, &[(3, 4, 2), (1, 0, 1), (31, 31, 1024 / 7)]),
        region(0, 1, &[(0, 32, 5)]),
    ];
    for r in &regions {
        write(dir.path(), r);
    }
    // Debris and copies: ignored by both commands (and left alone).
    std::fs::write(dir.path().join("r.0.0.wsr.damaged"), b"garbage").unwrap();
    std::fs::write(dir.path().join("r.0.1.wsr.tmp"), b"half a write").unwrap();
    std::fs::write(dir.path().join("notes.txt"), b"hello").unwrap();
    (dir, regions)
}

#[test]
fn verify_a_sound_directory_prints_one_summary_line_and_exits_0() {
    let (dir, _) = sound_dir();
    let before = snapshot(dir.path());
    let out = world(&["verify"], dir.path());
    assert_eq!(out.code, Some(0), "{}{}", out.stdout, out.stderr);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{}", out.stdout);
    assert!(
        lines[0].ends_with("3 region files, 6 chunk records, all sound"),
        "{}",
        lines[0]
    );
    assert_eq!(out.stderr, "");
    assert_eq!(snapshot(dir.path()), before, "verify changed the directory");

    // An empty directory is sound too.
    let empty = tempfile::tempdir().unwrap();
    let out = world(&["verify"], empty.path());
    assert_eq!(out.code, Some(0));
    assert!(out
        .stdout
        .ends_with("0 region files, 0 chunk records, all sound\n"));
}

#[test]
fn inspect_lists_every_region_and_record_in_order() {
    let (dir, regions) = sound_dir();
    let before = snapshot(dir.path());
    let out = world(&["inspect"], dir.path());
    assert_eq!(out.code, Some(0), "{}{}", out.stdout, out.stderr);
    assert_eq!(
        snapshot(dir.path()),
        before,
        "inspect changed the directory"
    );
    assert!(!out.stdout.contains("wsr.damaged") && !out.stdout.contains("wsr.tmp"));
    assert!(!out.stdout.contains("notes"));

    // The lines we expect: regions in order (x, then z), records in row order (z, then x).
    let mut expected = vec![format!("{}: 3 region files", dir.path().display())];
    for r in &regions {
        let bytes = region::encode(r);
        let d = region::decode(&bytes, r.pos);
        expected.push(format!(
            "{}  region {} {}  {} bytes  header ok  generator 1  seed 2026  cells 32  chunk size 32  {} record{}",
            r.pos.file_name(),
            r.pos.x,
            r.pos.z,
            bytes.len(),
            r.chunks.len(),
            if r.chunks.len() == 1 { "" } else { "s" }
        ));
        for (c, offset, len) in d.entries {
            expected.push(format!(
                "  chunk {} {}  offset {offset}  length {len}  edits {}  ok",
                c.x,
                c.z,
                r.chunks[&c].cells.len()
            ));
        }
    }
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines, expected);
    // Row order within r.0.0.wsr: (1, 0), (3, 4), (31, 31).
    let chunks: Vec<&str> = lines[5..8].iter().map(|l| &l[..13]).collect();
    assert_eq!(chunks, ["  chunk 1 0  ", "  chunk 3 4  ", "  chunk 31 31"]);

    // The same twice (deterministic), and as JSON.
    assert_eq!(world(&["inspect"], dir.path()).stdout, out.stdout);
    let out = world(&["inspect", "--json"], dir.path());
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    let files: Vec<&str> = v["regions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["file"].as_str().unwrap())
        .collect();
    assert_eq!(files, ["r.-1.0.wsr", "r.0.0.wsr", "r.0.1.wsr"]);
    let r0 = &v["regions"][1];
    assert_eq!(r0["header"], "ok");
    assert_eq!(r0["stamp"]["seed"], 2026);
    assert_eq!(r0["chunks"][1]["x"], 3);
    assert_eq!(r0["chunks"][1]["edits"], 2);
    assert_eq!(r0["chunks"][1]["status"], "ok");
}

/// The damaged directory: a flipped byte in one record, a file cut inside its last record,
/// garbage in a header, and one sound region.
fn damaged_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    write(p, &region(-1, 0, &[(-1, 0, 1)]));

    let r = region(0, 0, &[(3, 4, 2), (1, 0, 1), (31, 31, 30)]);
    let mut bytes = region::encode(&r);
    let (_, offset, _) = region::decode(&bytes, r.pos).entries[1]; // chunk (3, 4)
    bytes[offset as usize + region::RECORD_HEADER_LEN + 2] ^= 0x10;
    std::fs::write(p.join("r.0.0.wsr"), &bytes).unwrap();

    let r = region(1, 0, &[(32, 0, 3), (33, 0, 4)]);
    let bytes = region::encode(&r);
    let (_, offset, _) = region::decode(&bytes, r.pos).entries[1]; // chunk (33, 0)
    std::fs::write(p.join("r.1.0.wsr"), &bytes[..offset as usize + 25]).unwrap();

    let r = region(0, 1, &[(0, 32, 5)]);
    let mut bytes = region::encode(&r);
    bytes[8..40].fill(0xA5);
    std::fs::write(p.join("r.0.1.wsr"), &bytes).unwrap();
    dir
}

#[test]
fn verify_names_each_damaged_record_and_header_and_exits_1() {
    let dir = damaged_dir();
    let before = snapshot(dir.path());
    let out = world(&["verify"], dir.path());
    assert_eq!(out.code, Some(1), "{}{}", out.stdout, out.stderr);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{}", out.stdout);
    assert!(
        lines[0].starts_with("r.0.0.wsr: chunk 3 4: CRC-32 mismatch"),
        "{}",
        lines[0]
    );
    // Regions in row order (z, then x), like chunks.
    assert!(
        lines[1].starts_with("r.1.0.wsr: chunk 33 0: the table says"),
        "{}",
        lines[1]
    );
    assert!(
        lines[2].starts_with("r.0.1.wsr: header: CRC-32 mismatch"),
        "{}",
        lines[2]
    );
    assert!(
        !out.stdout.contains("r.-1.0.wsr"),
        "the sound region is not named"
    );
    assert!(
        out.stderr.contains("3 problems in 4 region files"),
        "{}",
        out.stderr
    );
    assert_eq!(snapshot(dir.path()), before, "verify changed the directory");

    // Each damage alone fails verify too.
    for (name, what) in [
        ("r.0.0.wsr", "chunk 3 4"),
        ("r.1.0.wsr", "chunk 33 0"),
        ("r.0.1.wsr", "header"),
    ] {
        let one = tempfile::tempdir().unwrap();
        std::fs::copy(dir.path().join(name), one.path().join(name)).unwrap();
        let out = world(&["verify"], one.path());
        assert_eq!(out.code, Some(1), "{name}: {}", out.stdout);
        assert!(
            out.stdout.starts_with(&format!("{name}: {what}: ")),
            "{name}: {}",
            out.stdout
        );
        assert_eq!(out.stdout.lines().count(), 1, "{}", out.stdout);
    }
}

#[test]
fn inspect_shows_the_damage_of_each_record_and_header() {
    let dir = damaged_dir();
    let out = world(&["inspect"], dir.path());
    assert_eq!(
        out.code,
        Some(0),
        "inspect lists, it does not judge: {}",
        out.stderr
    );
    let lines: Vec<&str> = out.stdout.lines().collect();
    let line = |prefix: &str| {
        *lines
            .iter()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no line {prefix:?} in\n{}", out.stdout))
    };
    // r.0.0.wsr: the flipped record is damaged, its neighbours are not.
    let r0 = lines
        .iter()
        .position(|l| l.starts_with("r.0.0.wsr"))
        .unwrap();
    assert!(lines[r0].contains("header ok"));
    assert!(lines[r0 + 1].starts_with("  chunk 1 0 ") && lines[r0 + 1].ends_with("  ok"));
    assert!(
        lines[r0 + 2].starts_with("  chunk 3 4 ")
            && lines[r0 + 2].contains("damaged: CRC-32 mismatch"),
        "{}",
        lines[r0 + 2]
    );
    assert!(lines[r0 + 3].starts_with("  chunk 31 31 ") && lines[r0 + 3].ends_with("  ok"));
    // r.0.1.wsr: the header is damaged; its record is found by scanning, with its own stamp.
    assert!(line("r.0.1.wsr").contains("header damaged: CRC-32 mismatch"));
    let r01 = lines
        .iter()
        .position(|l| l.starts_with("r.0.1.wsr"))
        .unwrap();
    assert!(
        lines[r01 + 1].starts_with("  chunk 0 32 ")
            && lines[r01 + 1].contains("edits 5  generator 1  seed 2026")
            && lines[r01 + 1].ends_with("  ok"),
        "{}",
        lines[r01 + 1]
    );
    // r.1.0.wsr: cut inside its last record.
    let r10 = lines
        .iter()
        .position(|l| l.starts_with("r.1.0.wsr"))
        .unwrap();
    assert!(lines[r10 + 1].starts_with("  chunk 32 0 ") && lines[r10 + 1].ends_with("  ok"));
    assert!(lines[r10 + 2].starts_with("  chunk 33 0 ") && lines[r10 + 2].contains("damaged: "));

    let v: Value = serde_json::from_str(&world(&["inspect", "--json"], dir.path()).stdout).unwrap();
    let r0 = &v["regions"][1];
    assert_eq!(r0["file"], "r.0.0.wsr");
    assert!(r0["chunks"][1]["status"]
        .as_str()
        .unwrap()
        .starts_with("CRC-32 mismatch"));
    assert_eq!(r0["chunks"][1]["edits"], Value::Null);
}

#[test]
fn regions_of_two_worlds_in_one_directory_fail_verify() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), &region(0, 0, &[(0, 0, 1)]));
    let other = Stamp { seed: 7, ..stamp() };
    write(dir.path(), &region_with(1, 0, other, &[(32, 0, 1)]));
    let out = world(&["verify"], dir.path());
    assert_eq!(out.code, Some(1), "{}", out.stdout);
    assert!(
        out.stdout
            .starts_with("r.1.0.wsr: header: stamp (generator 1, seed 7,"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("differs from r.0.0.wsr's"));
}

#[test]
fn a_missing_or_unreadable_directory_is_a_clear_error_and_exit_1() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nowhere");
    for cmd in ["verify", "inspect"] {
        let out = world(&[cmd], &missing);
        assert_eq!(out.code, Some(1), "{cmd}");
        assert_eq!(out.stdout, "");
        assert!(
            out.stderr.contains("nowhere: no such directory"),
            "{cmd}: {}",
            out.stderr
        );
    }
    let file = tmp.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    let out = world(&["verify"], &file);
    assert_eq!(out.code, Some(1));
    assert!(out.stderr.contains("not a directory"), "{}", out.stderr);
}

#[test]
fn usage_errors_exit_2_and_help_says_what_is_ignored() {
    for args in [
        vec!["world"],
        vec!["world", "verify"],
        vec!["world", "fix", "."],
    ] {
        let out = bin().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
    for cmd in ["verify", "inspect"] {
        let out = bin().args(["world", cmd, "--help"]).output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(
            text.contains("r.0.0.wsr.damaged") && text.contains(".tmp"),
            "{text}"
        );
    }
}

/// `world-streaming ARGS` in `dir` under an address-space limit of 1.8 GB (`ulimit -v`), as a
/// game host with little memory runs it.
fn under_1_8_gb(dir: &Path, args: &[&str]) -> Out {
    let exe = assert_cmd::cargo::cargo_bin("world-streaming");
    let out = std::process::Command::new("sh")
        .current_dir(dir)
        .arg("-c")
        .arg("ulimit -v 1800000 && exec \"$0\" \"$@\"")
        .arg(exe)
        .args(args)
        .output()
        .unwrap();
    Out {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A region file whose size is past the 1 GiB cap (here a sparse file of 2 GiB: no disk used)
/// is refused at once from its size, never read: it used to be read up to the cap, a gigabyte of
/// memory (and, growing the buffer, two of address space) each time the world was opened, so
/// under a 1.8 GB address-space limit `world verify` and `run` failed for the whole world. Now it
/// is damage of its region's header naming the size and the cap, the world's other regions are
/// read, and the run's region loads as generated (docs/world-files.md's damage rules).
#[cfg(unix)]
#[test]
fn a_region_file_past_the_cap_is_refused_from_its_size_without_reading_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("world");
    std::fs::create_dir(&dir).unwrap();
    write(&dir, &region(-1, 0, &[(-1, 0, 1)]));
    let sparse = std::fs::File::create(dir.join("r.0.0.wsr")).unwrap();
    sparse.set_len(2 << 30).unwrap();
    drop(sparse);
    let out = under_1_8_gb(tmp.path(), &["world", "verify", "world"]);
    assert_eq!(out.code, Some(1), "{}{}", out.stdout, out.stderr);
    assert_eq!(
        out.stdout,
        "r.0.0.wsr: header: 2147483648 bytes: larger than any region file (1073741824 bytes at \
         most)\n",
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("1 problem in 2 region files"),
        "{}",
        out.stderr
    );
    // A run on that world: the region's chunks load as generated, with an error event.
    let scene = serde_json::json!({
        "kits": [
            { "id": "world.ground" },
            { "id": "world.streaming", "config": { "chunkSize": 32, "radius": 1, "budgetMs": 9 } },
            { "id": "world.terrain", "config": { "seed": 2026, "workers": 1, "worldDir": "world" } }
        ],
        "entities": [ { "id": "hero", "tags": ["player"], "position": { "x": 16, "z": 16 } } ],
        "control": "hero"
    });
    std::fs::write(tmp.path().join("scene.json"), scene.to_string()).unwrap();
    let out = under_1_8_gb(
        tmp.path(),
        &["run", "scene.json", "--ticks", "3", "-q", "--events", "-"],
    );
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let errors: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| l.contains("world.terrain.error"))
        .collect();
    assert_eq!(errors.len(), 1, "{}", out.stdout);
    assert!(
        errors[0]
            .contains("2147483648 bytes: larger than any region file (1073741824 bytes at most)"),
        "{}",
        errors[0]
    );
    assert!(out.stdout.contains("world.chunk.loaded"), "{}", out.stdout);
}
