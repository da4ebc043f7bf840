//! The replay viewer with `world.nav` (docs/reference/engines.md#the-viewer): the frames carry
//! every agent's goal, held path, wait and stuck mark, checked tick by tick against the game's own
//! state (the kit's save section, read from the engine of a second run, never from the viewer); a
//! run without the kit carries none of it; and in a real headless Chromium the page draws each
//! agent in its state's colour, its path as a line over the cells, the chunk a waiting agent waits
//! for, the counts, and the pointer's agent as text (its id is HTML). A screenshot goes to
//! `target/view-nav.png`.

#[path = "common/chromium.rs"]
mod chromium;

mod common;
use common::bin;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use world_streaming::files::inputs::Inputs;
use world_streaming::game::Game;
use world_streaming::replay::Recording;
use world_streaming::view::{capture, terrain_height};

const AGENT_RGB: [u64; 3] = [0xff, 0xb0, 0x00];
const WAITING_RGB: [u64; 3] = [0xff, 0x6a, 0x00];
const PATH_RGB: [u64; 3] = [0xc8, 0xff, 0x00];
const HOSTILE_ID: &str = "<img src=x onerror=\"document.title='owned'\">";
const READY: &str = "document.body && document.body.dataset.ready === '1'";

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The nav example (`examples/scenes/nav.json`) with a third agent whose id is HTML, and two
/// more inputs: the courier loses its goal on tick 70 (its agent state is dropped) and the
/// HTML agent gets a new goal on tick 75.
fn nav_recording(dir: &Path) -> Recording {
    let mut scene: Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("examples/scenes/nav.json")).unwrap(),
    )
    .unwrap();
    scene.as_object_mut().unwrap().remove("$schema");
    scene["entities"].as_array_mut().unwrap().push(json!({
        "id": HOSTILE_ID, "tags": ["agent"], "position": {"x": 24, "z": 24},
        "data": {"goal": {"x": 70, "z": 50}}
    }));
    let path = dir.join("nav.json");
    std::fs::write(&path, scene.to_string()).unwrap();
    let mut text =
        std::fs::read_to_string(repo().join("examples/scenes/nav.inputs.jsonl")).unwrap();
    for line in [
        json!({"tick": 70, "do": "set", "entity": "courier", "data": {"note": "off duty"}}),
        json!({"tick": 75, "do": "set", "entity": HOSTILE_ID, "data": {"goal": {"x": 8, "z": 40}}}),
    ] {
        text.push_str(&format!("{line}\n"));
    }
    let inputs = Inputs::parse(&text, "nav.inputs.jsonl").unwrap();
    Recording::record(&path, &inputs, 90).unwrap()
}

/// An agent as the game holds it: `[gx, gz, [x0, z0, …], wait | null, stuck | null,
/// arrived]`, from the kit's save section (`kits["world.nav"].agents`).
fn agents_of(game: &Game) -> BTreeMap<String, Value> {
    let doc = game.engine().save_document();
    let Some(section) = doc.kits.get("world.nav") else {
        return BTreeMap::new();
    };
    section["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            let path: Vec<Value> = a["path"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|c| [c["x"].clone(), c["z"].clone()])
                .collect();
            let wait = match a.get("waiting") {
                Some(w) => json!([w["x"], w["z"]]),
                None => Value::Null,
            };
            let stuck = a.get("stuck").cloned().unwrap_or(Value::Null);
            let arrived = a.get("arrived").cloned().unwrap_or(json!(false));
            let record = json!([a["goal"]["x"], a["goal"]["z"], path, wait, stuck, arrived]);
            (a["id"].as_str().unwrap().to_owned(), record)
        })
        .collect()
}

/// What the page rebuilds of the agents from the frames, done again in Rust: by id.
fn rebuild(agents: &mut BTreeMap<String, Value>, frame: &Value, ids: &[Value]) {
    let id = |i: &Value| {
        ids[i.as_u64().unwrap() as usize]
            .as_str()
            .unwrap()
            .to_owned()
    };
    for a in frame["a"].as_array().into_iter().flatten() {
        let a = a.as_array().unwrap();
        agents.insert(id(&a[0]), Value::Array(a[1..].to_vec()));
    }
    if let Some(steps) = frame["as"].as_array() {
        for pair in steps.chunks(2) {
            let a = agents
                .get_mut(&id(&pair[0]))
                .expect("a known agent stepped");
            let k = pair[1].as_u64().unwrap() as usize;
            let path = a[2].as_array_mut().unwrap();
            assert!(k > 0 && 2 * k <= path.len(), "a step drops cells it has");
            path.drain(..2 * k);
        }
    }
    for i in frame["ar"].as_array().into_iter().flatten() {
        assert!(agents.remove(&id(i)).is_some(), "a known agent removed");
    }
}

/// The state an agent is drawn in (the page's precedence).
fn state_of(a: &Value) -> &'static str {
    if a[5] == json!(true) {
        "arrived"
    } else if !a[4].is_null() {
        "stuck"
    } else if !a[3].is_null() {
        "waiting"
    } else if !a[2].as_array().unwrap().is_empty() {
        "walking"
    } else {
        "idle"
    }
}

#[test]
fn the_frames_carry_every_agents_path_and_wait_as_the_game_holds_them() {
    let dir = tempfile::tempdir().unwrap();
    let recording = nav_recording(dir.path());
    let data = capture(&recording, "nav", Some(&terrain_height)).unwrap();
    let json = serde_json::to_value(&data).unwrap();
    assert_eq!(json["cellsPerChunk"], json!(16), "cells to draw paths with");
    let ids = json["ids"].as_array().unwrap().clone();
    let frames = json["frames"].as_array().unwrap();
    let (_dir, mut game, inputs) = recording.game().unwrap();
    let mut states = vec![agents_of(&game)];
    game.run_observing(&inputs, recording.ticks, |g, _| states.push(agents_of(g)))
        .unwrap();
    assert_eq!(frames.len(), states.len());
    let mut rebuilt = BTreeMap::new();
    let mut seen = BTreeSet::new();
    for (tick, (frame, expected)) in frames.iter().zip(&states).enumerate() {
        rebuild(&mut rebuilt, frame, &ids);
        assert_eq!(&rebuilt, expected, "agents at tick {tick}");
        seen.extend(expected.values().map(state_of));
    }
    // The run shows every state but stuck, and uses every kind of change.
    assert_eq!(
        seen,
        BTreeSet::from(["arrived", "waiting", "walking"]),
        "{seen:?}"
    );
    for key in ["a", "as", "ar"] {
        assert!(
            frames.iter().any(|f| f.get(key).is_some()),
            "some frame has {key}"
        );
    }
    // A step costs its agent's index and a count, not its path again.
    let full: usize = frames
        .iter()
        .filter_map(|f| f["a"].as_array())
        .map(Vec::len)
        .sum();
    let steps: usize = frames
        .iter()
        .filter_map(|f| f["as"].as_array())
        .map(|s| s.len() / 2)
        .sum();
    assert!(steps > full, "{steps} steps, {full} whole records");
}

#[test]
fn a_run_without_world_nav_carries_no_agent_field() {
    // Entities tagged `agent` with a goal, but no kit: nothing of
    // docs/reference/engines.md#the-viewer in the page's data.
    let dir = tempfile::tempdir().unwrap();
    let scene = json!({
        "kits": [
            { "id": "world.ground" },
            { "id": "world.streaming", "config": { "chunkSize": 32, "radius": 1, "budgetMs": 4 } },
            { "id": "world.terrain", "config": { "seed": 3, "cellsPerChunk": 8, "workers": 0, "commitLatency": 1 } }
        ],
        "entities": [
            { "id": "hero", "tags": ["player"], "position": { "x": 16, "z": 16 } },
            { "id": "scout", "tags": ["agent"], "position": { "x": 10, "z": 10 }, "data": { "goal": { "x": 40, "z": 8 } } }
        ]
    });
    let path = dir.path().join("plain.json");
    std::fs::write(&path, scene.to_string()).unwrap();
    let recording = Recording::record(&path, &Inputs::default(), 6).unwrap();
    let data = capture(&recording, "plain", Some(&terrain_height)).unwrap();
    let json = serde_json::to_value(&data).unwrap();
    assert!(json.get("cellsPerChunk").is_none());
    for f in json["frames"].as_array().unwrap() {
        for key in ["a", "as", "ar"] {
            assert!(f.get(key).is_none(), "{key} in {f}");
        }
    }
}

fn write_page(recording: &Recording, name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let replay = dir.path().join(format!("{name}.replay.json"));
    recording.write(&replay).unwrap();
    let page = dir.path().join(format!("{name}.html"));
    bin()
        .arg("view")
        .arg(&replay)
        .arg("--out")
        .arg(&page)
        .assert()
        .success();
    (dir, page)
}

/// The canvas pixel at each point given in chunk units (`x / chunkSize`).
fn pixels(page: &mut chromium::Page<'_>, at: &[[f64; 2]]) -> Vec<[u64; 3]> {
    let v = page.eval(&format!(
        "(() => {{ const c = document.getElementById('grid'); const d = c.dataset; \
         const ctx = c.getContext('2d'); const cell = Number(d.cell); \
         return {at:?}.map(([x, z]) => {{ \
           const px = Number(d.ox) + (x - Number(d.originX)) * cell; \
           const pz = Number(d.oz) + (z - Number(d.originZ)) * cell; \
           return Array.from(ctx.getImageData(Math.floor(px), Math.floor(pz), 1, 1).data.slice(0, 3)); }}); }})()"
    ));
    v.as_array()
        .unwrap()
        .iter()
        .map(|p| [0, 1, 2].map(|i| p[i].as_u64().unwrap()))
        .collect()
}

/// The page at `tick` against the game's state there: the counts, each agent's marker, its
/// path's pixels between cell centres, the frame of each chunk waited for. Returns how many
/// path and wait pixels it checked.
fn check_agents_at(page: &mut chromium::Page<'_>, recording: &Recording, tick: u64) -> [usize; 2] {
    let (_dir, mut game, inputs) = recording.game().unwrap();
    game.run(&inputs, tick).unwrap();
    let agents = agents_of(&game);
    let count = |s: &str| agents.values().filter(|a| state_of(a) == s).count();
    let expected = format!(
        "agents {} (walking {} · waiting {} · stuck {} · arrived {} · idle {})",
        agents.len(),
        count("walking"),
        count("waiting"),
        count("stuck"),
        count("arrived"),
        count("idle")
    );
    assert_eq!(
        page.eval("document.getElementById('agent-counts').textContent"),
        json!(expected),
        "tick {tick}"
    );
    let dataset = page.eval("Object.assign({}, document.getElementById('grid').dataset)");
    let number = |k: &str| dataset[k].as_str().unwrap().parse::<f64>().unwrap();
    assert_eq!(number("agentsDrawn"), agents.len() as f64, "tick {tick}");
    let cells: usize = agents
        .values()
        .map(|a| a[2].as_array().unwrap().len() / 2)
        .sum();
    assert_eq!(number("pathCellsDrawn"), cells as f64, "tick {tick}");
    let waits: BTreeSet<String> = agents
        .values()
        .filter(|a| state_of(a) == "waiting")
        .map(|a| a[3].to_string())
        .collect();
    assert_eq!(number("waitChunksDrawn"), waits.len() as f64, "tick {tick}");

    let size = game.streaming().unwrap().chunk_size();
    let cell_m = size / 16.0;
    let px_cell = number("cell");
    // Markers (entities, foci) and what lies within their reach is not sampled.
    let reach = ((px_cell * 0.3).clamp(3.0, 10.0) + 3.0) / px_cell;
    let mut markers: Vec<[f64; 2]> = game
        .engine()
        .world()
        .iter()
        .map(|e| [e.position.x / size, e.position.z / size])
        .collect();
    markers.extend(
        game.streaming()
            .unwrap()
            .foci()
            .iter()
            .map(|f| [f.x / size, f.z / size]),
    );
    let covered = |p: [f64; 2]| {
        markers
            .iter()
            .any(|m| (m[0] - p[0]).abs() <= reach && (m[1] - p[1]).abs() <= reach)
    };
    let world = game.engine().world();
    let mut samples: Vec<([f64; 2], [u64; 3], String)> = Vec::new();
    for (id, a) in &agents {
        let e = world
            .get(&world_streaming::host::EntityId::new(id))
            .expect("an agent is live");
        let at = [e.position.x / size, e.position.z / size];
        let others = markers
            .iter()
            .filter(|m| (m[0] - at[0]).abs() <= reach && (m[1] - at[1]).abs() <= reach)
            .count();
        if others == 1 {
            let rgb = if state_of(a) == "waiting" {
                WAITING_RGB
            } else {
                AGENT_RGB
            };
            samples.push((at, rgb, format!("{id} marker")));
        }
        // The path: between consecutive cell centres on the same row or column, from where
        // it stands.
        let path = a[2].as_array().unwrap();
        let mut points = vec![[e.position.x / cell_m - 0.5, e.position.z / cell_m - 0.5]];
        points.extend(
            path.chunks(2)
                .map(|c| [c[0].as_f64().unwrap(), c[1].as_f64().unwrap()]),
        );
        for w in points.windows(2) {
            if w[0][0] != w[1][0] && w[0][1] != w[1][1] {
                continue; // a diagonal: its pixels are shared with the background
            }
            let mid = [
                ((w[0][0] + w[1][0]) / 2.0 + 0.5) * cell_m / size,
                ((w[0][1] + w[1][1]) / 2.0 + 0.5) * cell_m / size,
            ];
            if !covered(mid) {
                samples.push((mid, PATH_RGB, format!("{id} path at {mid:?}")));
            }
        }
    }
    let path_samples = samples.iter().filter(|s| s.1 == PATH_RGB).count();
    // Each chunk waited for: its frame's top edge, just inside the chunk.
    let mut wait_samples = 0;
    for w in &waits {
        let c: Value = serde_json::from_str(w).unwrap();
        let (cx, cz) = (c[0].as_f64().unwrap(), c[1].as_f64().unwrap());
        let p = [cx + 2.5 / px_cell, cz + 1.5 / px_cell];
        if !covered(p) {
            samples.push((p, WAITING_RGB, format!("frame of chunk {w}")));
            wait_samples += 1;
        }
    }
    let got = pixels(page, &samples.iter().map(|s| s.0).collect::<Vec<_>>());
    for ((_, rgb, what), pixel) in samples.iter().zip(got) {
        assert_eq!(&pixel, rgb, "{what}, tick {tick}");
    }
    [path_samples, wait_samples]
}

#[test]
fn agents_paths_and_waits_are_drawn_in_chromium() {
    let Some(mut browser) = chromium::chromium() else {
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let recording = nav_recording(scratch.path());
    let (_dir, file) = write_page(&recording, "nav");
    let mut page = browser.page(1280, 1000);
    page.open(&file, READY);
    for id in [
        "legend-agent",
        "legend-path",
        "legend-waiting",
        "agents-panel",
    ] {
        let hidden = format!("document.getElementById('{id}').hidden");
        assert_eq!(page.eval(&hidden), json!(false), "{id}");
    }
    let mut checked = [0, 0];
    for tick in [1, 3, 5, 8, 12, 14, 20, 30, 56, 62, 72, 80] {
        page.slide_to(tick);
        let [p, w] = check_agents_at(&mut page, &recording, tick);
        checked[0] += p;
        checked[1] += w;
    }
    assert!(
        checked[0] >= 20 && checked[1] >= 2,
        "path and wait pixels checked: {checked:?}"
    );
    // The pointer over the agent whose id is HTML: its goal and state, as text.
    let tick = 8;
    page.slide_to(tick);
    let (_dir, mut game, inputs) = recording.game().unwrap();
    game.run(&inputs, tick).unwrap();
    let agents = agents_of(&game);
    let hostile = &agents[HOSTILE_ID];
    let pos = game
        .engine()
        .world()
        .get(&world_streaming::host::EntityId::new(HOSTILE_ID))
        .unwrap()
        .position;
    page.eval(&format!(
        "(() => {{ const c = document.getElementById('grid'); const d = c.dataset; \
         const r = c.getBoundingClientRect(); const cell = Number(d.cell); \
         const px = Number(d.ox) + ({x} / 32 - Number(d.originX)) * cell; \
         const pz = Number(d.oz) + ({z} / 32 - Number(d.originZ)) * cell; \
         c.dispatchEvent(new MouseEvent('mousemove', {{ clientX: r.left + px * r.width / c.width, \
           clientY: r.top + pz * r.height / c.height, bubbles: true }})); }})()",
        x = pos.x,
        z = pos.z
    ));
    let rows: Vec<Value> = page
        .eval("Array.from(document.querySelectorAll('#detail dt, #detail dd')).map((d) => d.textContent)")
        .as_array()
        .unwrap()
        .clone();
    let row = |k: &str| {
        let i = rows
            .iter()
            .position(|r| r == k)
            .unwrap_or_else(|| panic!("{k} in {rows:?}"));
        rows[i + 1].as_str().unwrap().to_owned()
    };
    assert_eq!(row("id"), HOSTILE_ID);
    assert_eq!(row("goal"), format!("cell {}, {}", hostile[0], hostile[1]));
    let state = match state_of(hostile) {
        "walking" => format!(
            "walking, {} cells to go",
            hostile[2].as_array().unwrap().len() / 2
        ),
        "waiting" => format!("waiting for chunk {}, {}", hostile[3][0], hostile[3][1]),
        other => panic!("tick {tick}: the HTML agent is {other}"),
    };
    assert_eq!(row("state"), state);
    assert_eq!(
        page.eval("document.querySelectorAll('img').length"),
        json!(0)
    );
    assert_ne!(page.eval("document.title"), json!("owned"));
    std::fs::write(
        chromium::target_dir().join("view-nav.png"),
        page.screenshot(),
    )
    .unwrap();
}
