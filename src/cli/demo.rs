//! The no-argument demo: a player drives a jeep across a bounded island with streamable props and
//! the `keep_home` mod, and the tool prints what happens, tick by tick, with maps of the grid.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;
use world_streaming::files::inputs::Inputs;
use world_streaming::game::Game;
use world_streaming::grid::ChunkPos;
use world_streaming::host::{Engine, CHUNK_LOADED, CHUNK_UNLOADED};
use world_streaming::kits::streaming::StreamingService;

const SCENE: &str = include_str!("../../examples/scenes/demo.json");
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

/// The jeep's route: east to the island's edge, north, back west and home.
fn route() -> Vec<serde_json::Value> {
    let mut lines = Vec::new();
    let waypoints = [
        (16.0, 16.0),
        (300.0, 16.0),
        (300.0, 250.0),
        (-200.0, 250.0),
        (16.0, 16.0),
    ];
    let mut tick = 2u64;
    for w in waypoints.windows(2) {
        let ((x0, z0), (x1, z1)): ((f64, f64), (f64, f64)) = (w[0], w[1]);
        let steps = ((x1 - x0).abs().max((z1 - z0).abs()) / 12.0).ceil() as u64;
        for s in 1..=steps {
            let t = s as f64 / steps as f64;
            let to = json!({ "x": x0 + (x1 - x0) * t, "z": z0 + (z1 - z0) * t });
            lines.push(json!({ "tick": tick, "do": "move", "entity": "jeep", "to": to }));
            tick += 1;
        }
    }
    lines
}

pub fn run() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let scenes = dir.path().join("examples/scenes");
    std::fs::create_dir_all(&scenes)?;
    std::fs::create_dir_all(dir.path().join("mods"))?;
    std::fs::write(scenes.join("demo.json"), SCENE)?;
    std::fs::write(dir.path().join("mods/keep_home.json"), KEEP_HOME)?;
    let mut game = Game::from_scene_file(&scenes.join("demo.json"))?;
    let text: String = route().iter().map(|l| format!("{l}\n")).collect();
    let inputs = Inputs::parse(&text, "demo route").map_err(|e| anyhow::anyhow!("{e:?}"))?;
    let target = inputs.last_tick() + 12;
    let streaming = game.streaming().expect("the demo enables world.streaming");

    println!("world-streaming demo: a jeep crosses a 20x20-chunk island (chunkSize 32, radius 2,");
    println!("3 loads per tick). The mod keep_home refuses to unload chunk (0,0).\n");
    let maps_at = [1, 8, 30, target];
    let mut seen = 0;
    let mut held = Vec::new();
    game.run_with(&inputs, target, |engine, _| {
        let events = &engine.events()[seen..];
        seen = engine.events().len();
        let tick = engine.tick_count();
        let list = |name: &str| -> String {
            events
                .iter()
                .filter(|e| e.event == name)
                .map(|e| format!("({},{})", e.data["x"], e.data["z"]))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let (loaded, released) = (list(CHUNK_LOADED), list(CHUNK_UNLOADED));
        let refusals = streaming.refusals();
        let refused: Vec<String> = refusals
            .iter()
            .filter(|r| !held.contains(*r))
            .map(|r| {
                format!(
                    "{} refused {} of ({},{}): {:?}",
                    r.by, r.hook, r.x, r.z, r.reason
                )
            })
            .collect();
        held = refusals;
        if !loaded.is_empty()
            || !released.is_empty()
            || !refused.is_empty()
            || maps_at.contains(&tick)
        {
            let mut line = format!("tick {tick:>3}");
            if !loaded.is_empty() {
                line += &format!("  loaded {loaded}");
            }
            if !released.is_empty() {
                line += &format!("  released {released}");
            }
            line += &format!(
                "  | {} live, {} pending",
                streaming.loaded().len(),
                streaming.pending().len()
            );
            for r in &refused {
                line += &format!("\n          {r}");
            }
            println!("{line}");
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

/// An ASCII map of the grid around the focus chunk: `@` focus, `#` loaded, `+` pending,
/// `x` load refused, `H` kept by an unload refusal, `.` nothing, blank off the demo island
/// (chunks -10..10 on both axes).
pub fn map(engine: &Engine, s: &dyn StreamingService) -> String {
    let Some(focus) = s.focus() else {
        return "  (no focus)\n".into();
    };
    let f = s.chunk_of(focus);
    let (loaded, pending, refusals) = (s.loaded(), s.pending(), s.refusals());
    let reach = i64::from(s.radius()) + 3;
    let mut out = format!("  map at tick {} around chunk {f}:\n", engine.tick_count());
    for z in (f.z - reach..=f.z + reach).rev() {
        out.push_str("    ");
        for x in f.x - reach..=f.x + reach {
            let c = ChunkPos::new(x, z);
            let refused = refusals.iter().find(|r| r.x == x && r.z == z);
            let ch = match () {
                _ if c == f => '@',
                _ if refused.is_some_and(|r| r.hook.ends_with("unload")) => 'H',
                _ if refused.is_some() => 'x',
                _ if loaded.contains(&c) => '#',
                _ if pending.contains(&c) => '+',
                _ if !(-10..10).contains(&x) || !(-10..10).contains(&z) => ' ',
                _ => '.',
            };
            out.push(ch);
            out.push(' ');
        }
        out.push('\n');
    }
    out.push_str("    @ focus  # loaded  + pending  H kept by a refusal  x load refused\n");
    out
}
