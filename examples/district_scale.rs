//! District worlds at scale, for the measurements in docs/district.md (release build):
//!
//! - `cargo run --release --example district_scale -- write DIR N [spread|one] [DATA]` writes
//!   `DIR/scene.json` and its district file `DIR/d.jsonl` of `N` entities: `spread` (the
//!   default) 100 to a chunk over a square of chunks, the hero far from every home (radius 0),
//!   as `benches/district.rs` does; `one`, every home in chunk (0, 0), the hero there, and
//!   `DIR/in.jsonl`, the hero leaving at tick 20 and coming back at tick 35. `DATA` > 0 gives
//!   each entity a `data` object of about that many bytes. Then measure the CLI on it, e.g.
//!   `/usr/bin/time -f %M world-streaming check DIR/scene.json`.
//! - `cargo run --release --example district_scale -- ticks N [DATA]` runs the `one` world for
//!   50 ticks in this process and prints each tick's wall and CPU time, its district events and
//!   the process's resident memory (VmRSS, VmHWM from /proc/self/status): the worst tick of a
//!   district whose homes all fall in one chunk (the chunk materialises at tick 1, is stored at
//!   tick 20 and materialises again at tick 35). Past 10 000 entities (or 2 MiB of lines) the
//!   world is refused at start: one chunk may be home to no more (see docs/district.md, "One
//!   chunk's cost", which gives the numbers of a million from before that limit).

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use world_streaming::game::Game;
use world_streaming::grid::Position;
use world_streaming::host::EntityId;
use world_streaming::kits::builtin_catalog;

/// This thread's CPU time in milliseconds (the machine is shared: wall-clock time counts other
/// processes' turns too).
fn cpu() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec for the call to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 * 1e3 + t.tv_nsec as f64 / 1e6
}

fn status(key: &str) -> String {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(key))
        .map(|l| l[key.len()..].trim().to_owned())
        .unwrap_or_default()
}

/// Writes the world (see the module's `write`).
fn write(dir: &Path, n: usize, one: bool, data: usize) {
    std::fs::create_dir_all(dir).expect("the directory");
    let data = match data {
        0 => String::new(),
        d => format!(
            ",\"data\":{{\"s\":\"{}\"}}",
            "x".repeat(d.saturating_sub(8))
        ),
    };
    let mut f = std::io::BufWriter::new(std::fs::File::create(dir.join("d.jsonl")).unwrap());
    let side = ((n as f64 / 100.0).sqrt().ceil() as usize).max(1);
    for k in 0..n {
        let (id, x, z) = if one {
            let x = 1.0 + (k % 1000) as f64 * 0.03;
            (format!("e{k}"), x, 1.0 + (k / 1000) as f64 * 0.00003)
        } else {
            let (c, i) = (k / 100, k % 100);
            let (cx, cz) = (c % side, c / side);
            let x = cx as f64 * 32.0 + (i % 10) as f64 * 3.0 + 1.0;
            let z = cz as f64 * 32.0 + (i / 10) as f64 * 3.0 + 1.0;
            (format!("e{cx}_{cz}_{i}"), x, z)
        };
        writeln!(
            f,
            "{{\"id\":\"{id}\",\"tags\":[\"crate\"],\"position\":{{\"x\":{x},\"z\":{z}}}{data}}}"
        )
        .unwrap();
    }
    f.flush().unwrap();
    let hero = if one { 16 } else { -1000 };
    let scene = serde_json::json!({
        "kits": [
            { "id": "game.engine" }, { "id": "world.ground" },
            { "id": "world.streaming", "config": { "chunkSize": 32, "radius": 0, "budgetMs": 1000 } },
            { "id": "world.district", "config": { "districts": ["d.jsonl"] } }
        ],
        "entities": [ { "id": "hero", "tags": ["player"], "position": { "x": hero, "z": hero } } ]
    });
    std::fs::write(dir.join("scene.json"), scene.to_string()).unwrap();
    if one {
        std::fs::write(
            dir.join("in.jsonl"),
            "{\"tick\": 20, \"do\": \"move\", \"entity\": \"hero\", \"to\": {\"x\": 5000, \"z\": 16}}\n\
             {\"tick\": 35, \"do\": \"move\", \"entity\": \"hero\", \"to\": {\"x\": 16, \"z\": 16}}\n",
        )
        .unwrap();
    }
}

/// Runs the `one` world for 50 ticks (see the module's `ticks`).
fn ticks(n: usize, data: usize) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    write(dir.path(), n, true, data);
    let scene = std::fs::read_to_string(dir.path().join("scene.json")).unwrap();
    let t = Instant::now();
    let game = Game::from_scene_text(&scene, "scene.json", dir.path(), &builtin_catalog());
    let mut game = match game {
        Ok(g) => g,
        Err(e) => {
            println!("refused at start: {e}");
            return;
        }
    };
    println!(
        "start: {:.1} ms, VmRSS {}, VmHWM {}",
        t.elapsed().as_secs_f64() * 1e3,
        status("VmRSS:"),
        status("VmHWM:")
    );
    let hero = EntityId::new("hero");
    let mut worst = (0.0f64, 0.0f64, 0);
    for tick in 1..=50u64 {
        // As in.jsonl says.
        let to = match tick {
            20 => Some(5000.0),
            35 => Some(16.0),
            _ => None,
        };
        if let Some(x) = to {
            game.engine_mut()
                .world_mut()
                .move_to(&hero, Position::new(x, 16.0))
                .unwrap();
        }
        let seen = game.engine().events().len();
        let (t, c) = (Instant::now(), cpu());
        game.tick();
        let ms = t.elapsed().as_secs_f64() * 1e3;
        let cpu_ms = cpu() - c;
        if ms > worst.0 {
            worst = (ms, cpu_ms, tick);
        }
        let events: Vec<String> = game.engine().events()[seen..]
            .iter()
            .filter(|e| e.event.starts_with("world.district"))
            .map(|e| serde_json::to_string(e).unwrap())
            .collect();
        if ms > 1.0 || !events.is_empty() {
            println!(
                "tick {tick}: {ms:.1} ms ({cpu_ms:.1} ms CPU), VmRSS {}, VmHWM {}; {}",
                status("VmRSS:"),
                status("VmHWM:"),
                events.join("; ")
            );
        }
    }
    println!(
        "worst tick: {:.1} ms ({:.1} ms CPU, tick {}); VmHWM {}",
        worst.0,
        worst.1,
        worst.2,
        status("VmHWM:")
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let num = |i: usize, default: usize| {
        args.get(i)
            .and_then(|a| a.replace('_', "").parse().ok())
            .unwrap_or(default)
    };
    match args.first().map(String::as_str) {
        Some("write") if args.len() >= 3 => {
            let one = args.get(3).map(String::as_str) == Some("one");
            write(Path::new(&args[1]), num(2, 0), one, num(4, 0));
        }
        Some("ticks") => ticks(num(1, 1_000_000), num(2, 0)),
        _ => eprintln!(
            "usage: district_scale write DIR N [spread|one] [DATA] | district_scale ticks N [DATA]"
        ),
    }
}
