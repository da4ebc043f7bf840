//! The no-argument demo: three players in two vehicles split up across a valley and meet again;
//! a teleport target is preloaded by a ticket before one of them jumps there; a resident cap
//! evicts what the players left behind; the `keep_home` mod refuses to unload chunk (0,0). The
//! tool prints what happens, tick by tick, with maps of the grid.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};
use world_streaming::files::inputs::Inputs;
use world_streaming::game::Game;
use world_streaming::grid::ChunkPos;
use world_streaming::host::{Engine, MOD_ERROR};
use world_streaming::kits::streaming::{StreamingEvent, StreamingService};
use world_streaming::kits::streaming::{CHUNK_LOADED, CHUNK_UNLOADED};
use world_streaming::kits::terrain::{TerrainService, TERRAIN};

const SCENE: &str = include_str!("../../examples/scenes/party.json");
const INPUTS: &str = include_str!("../../examples/scenes/party.inputs.jsonl");
const KEEP_HOME: &str = include_str!("../../mods/keep_home.json");

/// A progress bar on stderr for long runs, only when stderr is a terminal.
pub fn progress_bar(ticks: u64) -> Option<ProgressBar> {
    if ticks < 20_000 || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::new(ticks);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} ticks ({per_sec}, {eta} left)")
            .expect("a valid template"),
    );
    Some(bar)
}

pub fn run() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let scenes = dir.path().join("examples/scenes");
    std::fs::create_dir_all(&scenes)?;
    std::fs::create_dir_all(dir.path().join("mods"))?;
    std::fs::write(scenes.join("party.json"), SCENE)?;
    std::fs::write(dir.path().join("mods/keep_home.json"), KEEP_HOME)?;
    let mut game = Game::from_scene_file(&scenes.join("party.json"))?;
    let inputs = Inputs::parse(INPUTS, "examples/scenes/party.inputs.jsonl")
        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    let target = inputs.last_tick();
    let streaming = game.streaming().expect("the demo enables world.streaming");

    println!("world-streaming demo (examples/scenes/party.json): ann and bo ride the jeep, cy the");
    println!(
        "boat (focus \"players\": one focus per player, chunkSize 32, radius 2, 4 loads a tick,"
    );
    println!(
        "maxLoaded 60). They split up east and north, meet again, then ticket \"tp\" preloads"
    );
    println!(
        "(-800, -800) and ann jumps there. The mod keep_home refuses to unload chunk (0,0).\n\
         world.terrain (seed 2026) builds each loaded chunk on worker threads, 2 ticks later.\n"
    );
    let maps_at = [1, 41, 81, 99, 100, target];
    let mut seen = 0;
    game.run_with(&inputs, target, |engine, _| {
        let events = &engine.events()[seen..];
        seen = engine.events().len();
        let tick = engine.tick_count();
        let count = |name: &str| events.iter().filter(|e| e.event == name).count();
        let mut notes = Vec::new();
        for e in events {
            match StreamingEvent::from_event(e) {
                // The id as the event's JSON writes it (quoted).
                Some(StreamingEvent::TicketReady(id)) => {
                    notes.push(format!("ticket {} ready", serde_json::Value::String(id)))
                }
                Some(StreamingEvent::Capacity { wanted, cap }) => {
                    notes.push(format!("over capacity: {wanted} wanted, cap {cap}"))
                }
                _ if e.event == MOD_ERROR => {
                    notes.push(format!("mod.error {}", e.data["message"]))
                }
                _ => {}
            }
        }
        let (loads, releases) = (count(CHUNK_LOADED), count(CHUNK_UNLOADED));
        if loads + releases > 0 || !notes.is_empty() || maps_at.contains(&tick) {
            println!(
                "tick {tick:>3}  +{loads:<2} -{releases:<2} | {} live, {} pending, {} foci, progress {:.2}{}",
                streaming.loaded().len(),
                streaming.pending().len(),
                streaming.foci().len(),
                streaming.progress(),
                notes.iter().map(|n| format!("  [{n}]")).collect::<String>(),
            );
        }
        if maps_at.contains(&tick) {
            println!("{}", map(engine, streaming.as_ref()));
        }
    })?;
    let state = game.state();
    println!(
        "after tick {}: {} chunks live, dormant props: {}",
        state.tick,
        state.loaded.len(),
        state.dormant.join(", ")
    );
    for r in state.refusals {
        println!(
            "held refusal: ({}, {}) {} by {} ({:?})",
            r.x, r.z, r.hook, r.by, r.reason
        );
    }
    println!("\nRun your own: world-streaming run SCENE --inputs FILE --events - --state -   (see --help)");
    Ok(())
}

/// An ASCII map of the grid around the foci: `A`, `B`, … the non-ticket foci in anchor order,
/// `T` a ticket, `0`–`9` a loaded chunk whose terrain is built (its mean height, low to high),
/// `#` loaded (terrain not built yet, or no terrain kit), `+` pending, `x` load refused, `H` kept
/// by an unload refusal, `.` nothing. It spans every focus (at most 41 chunks a side). With
/// `vertical` in force (docs/viewer.md#vertical-worlds) it is the slice at the first focus's
/// section row, as the viewer opens on: a cell is that row's section, a focus's letter marks its
/// column whatever its row, and the heading names the row.
pub fn map(engine: &Engine, s: &dyn StreamingService) -> String {
    let foci = s.foci();
    let Some(first) = foci.first() else {
        return "  (no focus)\n".into();
    };
    let row = s.vertical().map(|_| s.chunk_of(*first).y);
    let tickets: Vec<ChunkPos> = s
        .tickets()
        .iter()
        .map(|t| {
            s.chunk_of(world_streaming::grid::Position::new(t.x, t.z))
                .column()
        })
        .collect();
    // Columns (a flat chunk is its own).
    let chunks: Vec<ChunkPos> = foci.iter().map(|f| s.chunk_of(*f).column()).collect();
    // The foci in force end with the tickets that counted in the last tick's plan.
    let tickets_in_force = tickets.len().min(foci.len() - 1);
    let reach = i64::from(s.radius()) + 2;
    let centre = s.chunk_of(*first);
    let (mut x0, mut x1, mut z0, mut z1) = (centre.x, centre.x, centre.z, centre.z);
    for c in &chunks {
        (x0, x1) = (x0.min(c.x), x1.max(c.x));
        (z0, z1) = (z0.min(c.z), z1.max(c.z));
    }
    // At most 41 chunks a side, around the middle of the foci.
    let clamp = |lo: i64, hi: i64| {
        let mid = lo + (hi - lo) / 2;
        (lo.max(mid - 20), hi.min(mid + 20))
    };
    let (x0, x1) = clamp(x0 - reach, x1 + reach);
    let (z0, z1) = clamp(z0 - reach, z1 + reach);
    let (loaded, pending, refusals) = (s.loaded(), s.pending(), s.refusals());
    let terrain = engine.service::<dyn TerrainService>(TERRAIN);
    let shade = |c: ChunkPos| -> Option<char> {
        let data = terrain.as_ref()?.chunk(c)?;
        let n = data.cells;
        let sum: u64 = (0..n)
            .flat_map(|j| (0..n).map(move |i| (i, j)))
            .map(|(i, j)| u64::from(data.height(i, j)))
            .sum();
        let mean = sum / u64::from(n * n);
        char::from_digit((mean * 10 / 65536) as u32, 10)
    };
    let mut out = match row {
        None => format!("  map at tick {}:\n", engine.tick_count()),
        Some(y) => format!(
            "  map at tick {}, section row y = {y} (the first focus's):\n",
            engine.tick_count()
        ),
    };
    // A held refusal's row (its `y` as the state writes it; 0 without).
    let refusal_row = |r: &world_streaming::kits::streaming::Refusal| {
        serde_json::to_value(r)
            .ok()
            .and_then(|v| v["y"].as_i64())
            .unwrap_or(0)
    };
    for z in (z0..=z1).rev() {
        out.push_str("    ");
        for x in x0..=x1 {
            let column = ChunkPos::new(x, z);
            let c = row.map_or(column, |y| ChunkPos::section(x, y, z));
            let refused = refusals
                .iter()
                .find(|r| r.x == x && r.z == z && refusal_row(r) == c.y);
            let anchor = chunks
                .iter()
                .enumerate()
                .find(|(i, f)| **f == column && *i < foci.len() - tickets_in_force)
                .map(|(i, _)| (b'A' + (i % 26) as u8) as char);
            let ch = match () {
                _ if anchor.is_some() => anchor.unwrap_or('@'),
                _ if tickets.contains(&column) => 'T',
                _ if refused.is_some_and(|r| r.hook.ends_with("unload")) => 'H',
                _ if refused.is_some() => 'x',
                _ if loaded.contains(&c) => shade(column).unwrap_or('#'),
                _ if pending.contains(&c) => '+',
                _ => '.',
            };
            out.push(ch);
        }
        out.push('\n');
    }
    out.push_str(
        "    A B C… foci  T ticket  0-9 built terrain (mean height)  # loaded  + pending\n    H kept by a refusal  x load refused\n",
    );
    out
}
