//! The worst-tick cases (docs/performance.md#worst-tick): adversarial but legal scenes, mods and
//! inputs, shipped beside this file (one directory a case), plus the few files too large to ship
//! (a district of 250 000 entities, 1 024 ticket requests), written at run time.
//!
//! Shared by `examples/worst_tick.rs` (50 ticks a case, release build, each case its own
//! process) and `tests/worst_tick.rs` (every shipped file checked, each case run for 2 ticks in a
//! cheap variant, so the set cannot rot).

#![allow(dead_code)] // each includer uses its part

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

/// One case: its directory under `benches/worst/` and what it is.
pub struct Case {
    /// Its name (the directory).
    pub name: &'static str,
    /// What is adversarial about it.
    pub what: &'static str,
}

/// Every case, in the order of the table in docs/performance.md.
pub const CASES: &[Case] = &[
    Case {
        name: "lua-handlers",
        what: "one Lua mod, 1 000 load handlers each spending nearly its per-call budget",
    },
    Case {
        name: "lua-service-calls",
        what:
            "one Lua load handler calling isLoaded in a loop until its budget runs out, radius 64",
    },
    Case {
        name: "lua-service-lists",
        what: "3 tickets of radius 64, then pending(), loaded(), lodLoaded(1), around() in a loop",
    },
    Case {
        name: "tickets-inputs",
        what:
            "1 024 ticket requests of radius 64 from one inputs file (132 KB), refused past the cap",
    },
    Case {
        name: "tickets-lua",
        what: "the same 1 024 requests from one Lua handler",
    },
    Case {
        name: "lod-6-players",
        what: "lod [{step 2, radius 1024}], 6 players 200 km apart, one teleporting every tick",
    },
    Case {
        name: "lod-16-players",
        what: "the same with 16 players",
    },
    Case {
        name: "lod-toggle-mod",
        what: "a Lua mod switching radius 1 / no lod and radius 64 / lod radius 1024 every tick",
    },
    Case {
        name: "limits-streaming",
        what:
            "every world.streaming key at its maximum (radius 64, no load budget, maxLoaded 10^6, \
               lookAheadTicks 600, holeRing 8, 4 lod levels to 1024, lodBudget 4096, fair), \
               tickets wanting 931 896 chunks, 4 players moving 2 km a tick",
    },
    Case {
        name: "limits-streaming-nearest",
        what: "the same under \"nearest\"",
    },
    Case {
        name: "limits-terrain",
        what: "world.terrain and world.nav at their maxima (256 cells a chunk, 64 workers asked \
               (one a core started), latency 64, maxNodes 262 144), radius 64 and no load budget",
    },
    Case {
        name: "limits-terrain-commit",
        what: "the same with commitLatency 1: tick 2 commits every chunk tick 1 loaded, \
               waiting for their generation",
    },
    Case {
        name: "district-full-chunks",
        what: "25 full chunks around the hero (each home to 10 000 district entities, 2 MiB of \
               lines with data on every one, the most a chunk may be; 250 000 entities), radius \
               2, budgetMs 4: \
               4 full chunks materialised a tick, all 25 stored at once by a teleport on tick \
               15, materialised again from tick 30",
    },
    Case {
        name: "nav-unreachable",
        what: "100 nav agents whose goals lie beyond chunks that are not built (each search \
               floods the built ground), maxNodes 262 144; 20 such path inputs on ticks 8 and 30",
    },
];

/// How big the generated files are: `Full` as measured, `Cheap` for a debug build (the test
/// suite's two ticks; 20 district entities a chunk instead of 10 000).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// As measured.
    Full,
    /// For a debug build's two ticks.
    Cheap,
}

/// A case made ready to run in a directory of its own.
pub struct Prepared {
    /// The scene file.
    pub scene: PathBuf,
    /// The inputs file, if the case has one.
    pub inputs: Option<PathBuf>,
}

/// The directory of the shipped cases.
pub fn shipped_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/worst")
}

/// The shipped files of `case` (scene first, then mods, then inputs).
pub fn shipped_files(case: &str) -> Vec<PathBuf> {
    let dir = shipped_dir().join(case);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    let rank = |p: &PathBuf| match p.extension().and_then(|e| e.to_str()) {
        Some("json") => 0,
        Some("lua") => 1,
        _ => 2,
    };
    files.sort_by_key(|p| (rank(p), p.clone()));
    files
}

/// Copies `case`'s shipped files into `dir` and writes what is generated beside them.
pub fn prepare(case: &str, dir: &Path, scale: Scale) -> Prepared {
    for file in shipped_files(case) {
        std::fs::copy(&file, dir.join(file.file_name().expect("a file name")))
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    }
    let inputs = dir.join("inputs.jsonl");
    match case {
        "tickets-inputs" => write_ticket_requests(&inputs),
        "district-full-chunks" => write_crowd(
            &dir.join("crowd.district.jsonl"),
            2,
            match scale {
                Scale::Full => 10_000,
                Scale::Cheap => 20,
            },
        ),
        _ => {}
    }
    Prepared {
        scene: dir.join("scene.json"),
        inputs: inputs.exists().then_some(inputs),
    }
}

/// Rewrites a prepared scene into what a debug build's two ticks can afford: smaller radii,
/// levels, cells and node budgets; every key and mod stays.
pub fn cheapen(case: &str, scene_path: &Path) {
    let text = std::fs::read_to_string(scene_path).expect("the scene");
    let mut scene: Value = serde_json::from_str(&text).expect("the scene is JSON");
    match case {
        "lod-6-players" | "lod-16-players" => {
            kit(&mut scene, "world.streaming")["config"]["lod"] =
                json!([{"step": 2, "radius": 48}]);
        }
        "limits-streaming" | "limits-streaming-nearest" => {
            let c = &mut kit(&mut scene, "world.streaming")["config"];
            c["radius"] = json!(8);
            c["lod"] = json!([{"step": 8, "radius": 61}, {"step": 16, "radius": 62},
                              {"step": 32, "radius": 63}, {"step": 64, "radius": 64}]);
            c["maxTicketChunks"] = json!(1000);
        }
        "limits-terrain" | "limits-terrain-commit" => {
            kit(&mut scene, "world.streaming")["config"]["radius"] = json!(2);
            let t = &mut kit(&mut scene, "world.terrain")["config"];
            t["cellsPerChunk"] = json!(16);
            t["workers"] = json!(2);
        }
        "lua-service-calls" | "lua-service-lists" => {
            let c = &mut kit(&mut scene, "world.streaming")["config"];
            c["radius"] = json!(4);
            if c.get("lod").is_some() {
                c["lod"] = json!([{"step": 2, "radius": 12}]);
            }
        }
        "nav-unreachable" => {
            kit(&mut scene, "world.streaming")["config"]["radius"] = json!(1);
            kit(&mut scene, "world.nav")["config"]["maxNodes"] = json!(20_000);
        }
        _ => {}
    }
    std::fs::write(
        scene_path,
        serde_json::to_string_pretty(&scene).expect("JSON"),
    )
    .expect("the cheap scene");
}

/// The kit entry `id` of a scene value.
fn kit<'a>(scene: &'a mut Value, id: &str) -> &'a mut Value {
    scene["kits"]
        .as_array_mut()
        .expect("kits")
        .iter_mut()
        .find(|k| k["id"] == id)
        .unwrap_or_else(|| panic!("kit {id}"))
}

/// 1 024 requests of radius 64 at tick 1, 40 km apart (about 132 KB).
fn write_ticket_requests(path: &Path) {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).expect("inputs"));
    for i in 0..1024u32 {
        let line = json!({
            "tick": 1, "do": "request", "id": format!("t{i:04}"),
            "at": {"x": f64::from(i % 32) * 40960.0, "z": f64::from(i / 32) * 40960.0},
            "radius": 64, "ticks": 100
        });
        writeln!(out, "{line}").expect("inputs");
    }
}

/// A district file of `n` entities at home in each chunk within `r` rings of chunk (0, 0)
/// (chunks of 32 m, in row order), every line about 200 bytes with its `data` (so 10 000 of
/// them come to just under the 2 MiB a chunk's lines may be).
fn write_crowd(path: &Path, r: i64, n: u32) {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).expect("district"));
    for cz in -r..=r {
        for cx in -r..=r {
            for i in 0..n {
                let x = cx as f64 * 32.0 + f64::from(i % 997) * 0.032;
                let z = cz as f64 * 32.0 + f64::from(i % 991) * 0.032;
                let line = format!(
                    r#"{{"id": "c{cx}_{cz}_{i:05}", "tags": ["npc"], "position": {{"x": {x}, "z": {z}}}, "data": {{"mood": "crowded", "n": {i}, "note": ""}}}}"#
                );
                let pad = 200usize.saturating_sub(line.len());
                let line = line.replace(
                    r#""note": """#,
                    &format!(r#""note": "{}""#, "x".repeat(pad)),
                );
                writeln!(out, "{line}").expect("district");
            }
        }
    }
}
