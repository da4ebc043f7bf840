//! The replay viewer: `world-streaming view REPLAY --out view.html`. The page's data is checked
//! against the engine at every tick of several runs (a reconstruction in Rust of what the page
//! does), and the page itself is opened in a real headless Chromium: Step is pressed and the
//! tick counter, the loaded cells drawn (counted and read back as pixels) and the events listed
//! are compared with the replay's state at that tick; reduced motion is emulated; a screenshot
//! goes to `target/view-drive.png`. Without Chromium the browser tests say so loudly and skip,
//! except under `WS_REQUIRE_CHROMIUM=1` (CI), where they fail.

#[path = "common/chromium.rs"]
mod chromium;

mod common;
use common::bin;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};
use world_streaming::files::inputs::Inputs;
use world_streaming::game::Game;
use world_streaming::grid::ChunkPos;
use world_streaming::replay::Recording;
use world_streaming::view::{capture, render, terrain_height, ViewData};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn record_example(name: &str, ticks: Option<u64>) -> Recording {
    let scene = repo().join(format!("examples/scenes/{name}.json"));
    let inputs_file = repo().join(format!("examples/scenes/{name}.inputs.jsonl"));
    let inputs = if inputs_file.exists() {
        Inputs::parse(&std::fs::read_to_string(&inputs_file).unwrap(), "inputs").unwrap()
    } else {
        Inputs::default()
    };
    let target = ticks.unwrap_or(inputs.last_tick().max(1));
    Recording::record(&scene, &inputs, target).unwrap()
}

/// The game of `recording` run to `tick`, for the state the page must show there.
fn game_at(recording: &Recording, tick: u64) -> (tempfile::TempDir, Game) {
    let (dir, mut game, inputs) = recording.game().unwrap();
    game.run(&inputs, tick).unwrap();
    (dir, game)
}

/// What the page rebuilds from the frames, done again in Rust.
#[derive(Default, Debug, PartialEq)]
struct Rebuilt {
    loaded: BTreeSet<ChunkPos>,
    pending: BTreeSet<ChunkPos>,
    refusals: Vec<Value>,
    foci: Vec<f64>,
    tickets: Vec<Value>,
    heights: BTreeMap<ChunkPos, f64>,
    dormant: Vec<Value>,
    variables: BTreeMap<String, Value>,
    scene: Value,
    predicted: Vec<f64>,
    holes: Option<Vec<ChunkPos>>,
    entities: BTreeMap<String, Value>,
    district: Option<Value>,
}

fn chunks(flat: &Value) -> Vec<ChunkPos> {
    let v: Vec<i64> = flat
        .as_array()
        .map(|a| a.iter().map(|n| n.as_i64().unwrap()).collect())
        .unwrap_or_default();
    v.chunks(2).map(|c| ChunkPos::new(c[0], c[1])).collect()
}

impl Rebuilt {
    fn apply(&mut self, frame: &Value, names: &[Value], ids: &[Value]) {
        for e in frame["e"].as_array().into_iter().flatten() {
            let e = e.as_array().unwrap();
            if e.len() != 3 {
                continue;
            }
            let c = ChunkPos::new(e[1].as_i64().unwrap(), e[2].as_i64().unwrap());
            match names[e[0].as_u64().unwrap() as usize].as_str().unwrap() {
                "world.chunk.loaded" => {
                    self.loaded.insert(c);
                    self.pending.remove(&c);
                }
                "world.chunk.unloaded" => {
                    self.loaded.remove(&c);
                    self.heights.remove(&c);
                }
                _ => {}
            }
        }
        self.loaded.extend(chunks(&frame["la"]));
        for c in chunks(&frame["lr"]) {
            self.loaded.remove(&c);
            self.heights.remove(&c);
        }
        let h: Vec<f64> = frame["h"]
            .as_array()
            .map(|a| a.iter().map(|n| n.as_f64().unwrap()).collect())
            .unwrap_or_default();
        for h in h.chunks(3) {
            self.heights
                .insert(ChunkPos::new(h[0] as i64, h[1] as i64), h[2]);
        }
        self.pending.extend(chunks(&frame["pa"]));
        for c in chunks(&frame["pr"]) {
            self.pending.remove(&c);
        }
        if let Some(r) = frame.get("r") {
            self.refusals = r.as_array().unwrap().clone();
        }
        if let Some(f) = frame.get("f") {
            self.foci = f
                .as_array()
                .unwrap()
                .iter()
                .map(|n| n.as_f64().unwrap())
                .collect();
        }
        if let Some(k) = frame.get("k") {
            self.tickets = k.as_array().unwrap().clone();
        }
        if let Some(d) = frame.get("d") {
            self.dormant = d.as_array().unwrap().clone();
        }
        for (k, v) in frame["v"].as_object().into_iter().flatten() {
            self.variables.insert(k.clone(), v.clone());
        }
        if let Some(s) = frame.get("s") {
            self.scene = s.clone();
        }
        if let Some(p) = frame.get("p") {
            self.predicted = p
                .as_array()
                .unwrap()
                .iter()
                .map(|n| n.as_f64().unwrap())
                .collect();
        }
        if let Some(o) = frame.get("o") {
            self.holes = Some(chunks(o));
        }
        let id = |i: &Value| {
            ids[i.as_u64().unwrap() as usize]
                .as_str()
                .unwrap()
                .to_owned()
        };
        for e in frame["n"].as_array().into_iter().flatten() {
            let mut e = e.clone();
            e[0] = json!(id(&e[0]));
            self.entities.insert(e[0].as_str().unwrap().to_owned(), e);
        }
        let moved = frame["m"].as_array().cloned().unwrap_or_default();
        for m in moved.chunks(3) {
            let e = self
                .entities
                .get_mut(&id(&m[0]))
                .expect("a move of a live entity");
            e[2] = m[1].clone();
            e[3] = m[2].clone();
        }
        for i in frame["nr"].as_array().into_iter().flatten() {
            self.entities.remove(&id(i));
        }
        if let Some(c) = frame.get("c") {
            self.district = Some(c.clone());
        }
    }
}

/// Every tick's state rebuilt from the frames equals the engine's at that tick.
fn check_frames_against_the_engine(recording: &Recording) -> ViewData {
    let data = capture(recording, "test", Some(&terrain_height)).unwrap();
    let terrain = world_streaming::view::has_terrain(recording);
    let json = serde_json::to_value(&data).unwrap();
    let names = json["names"].as_array().unwrap().clone();
    let ids = json["ids"].as_array().unwrap().clone();
    let frames = json["frames"].as_array().unwrap();
    assert_eq!(frames.len(), recording.steps.len() + 1);
    // The engine's state after every tick (one run: `Game::run` starts its inputs afresh).
    let (_dir, mut game, inputs) = recording.game().unwrap();
    // With each, the height of every loaded chunk whose terrain is built.
    let heights = |g: &Game| -> BTreeMap<ChunkPos, f64> {
        let loaded = g.streaming().map(|s| s.loaded()).unwrap_or_default();
        loaded
            .into_iter()
            .filter_map(|c| Some((c, terrain_height(g, c)?)))
            .collect()
    };
    let mut states = vec![(state_with_entities(&game), heights(&game))];
    game.run_observing(&inputs, recording.ticks, |g, _| {
        states.push((state_with_entities(g), heights(g)))
    })
    .unwrap();
    let mut rebuilt = Rebuilt::default();
    for (tick, (frame, (state, heights))) in frames.iter().zip(&states).enumerate() {
        rebuilt.apply(frame, &names, &ids);
        assert_eq!(&rebuilt.heights, heights, "terrain heights at tick {tick}");
        let set = |key: &str| -> BTreeSet<ChunkPos> {
            serde_json::from_value::<Vec<ChunkPos>>(state[key].clone())
                .unwrap()
                .into_iter()
                .collect()
        };
        assert_eq!(rebuilt.loaded, set("loaded"), "loaded at tick {tick}");
        assert_eq!(rebuilt.pending, set("pending"), "pending at tick {tick}");
        assert_eq!(
            rebuilt.refusals.len(),
            state["refusals"].as_array().unwrap().len(),
            "refusals at tick {tick}"
        );
        let foci: Vec<f64> = state["foci"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|f| [f["x"].as_f64().unwrap(), f["z"].as_f64().unwrap()])
            .collect();
        assert_eq!(rebuilt.foci, foci, "foci at tick {tick}");
        let tickets: Vec<Value> = state["tickets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| json!([t["id"], t["x"], t["z"], t["radius"], t["ticksLeft"]]))
            .collect();
        assert_eq!(rebuilt.tickets, tickets, "tickets at tick {tick}");
        let dormant: Vec<&str> = rebuilt
            .dormant
            .iter()
            .map(|d| d[0].as_str().unwrap())
            .collect();
        let expected: Vec<&str> = state["dormant"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_str().unwrap())
            .collect();
        assert_eq!(dormant, expected, "dormant at tick {tick}");
        // `world.terrain.waits` counts the commits that waited for a worker thread: it depends
        // on thread timing (docs/reference/terrain.md#the-commit), so two runs need not agree on
        // it.
        let timing = |k: &String| k != "world.terrain.waits";
        let variables: BTreeMap<String, Value> = state["variables"]
            .as_object()
            .unwrap()
            .iter()
            .filter(|(k, _)| timing(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut rebuilt_variables = rebuilt.variables.clone();
        rebuilt_variables.retain(|k, _| timing(k));
        assert_eq!(rebuilt_variables, variables, "variables at tick {tick}");
        assert_eq!(rebuilt.scene, state["scene"], "scene at tick {tick}");
        check_predicted_holes_and_entities_against_the_state(
            &rebuilt,
            state,
            tick,
            terrain.then_some(heights),
        );
        // The frame lists exactly the step's events of the recording.
        if tick > 0 {
            let step = &recording.steps[tick - 1];
            assert_eq!(
                frame["e"].as_array().map_or(0, Vec::len),
                step.events.len(),
                "events at tick {tick}"
            );
        }
    }
    data
}

/// The state document with, under `"_entities"`, every live entity as `{id: [x, z, kind]}`
/// (kinds as the page draws them, worked out here from the entity's tags and links), and under
/// `"_ready"` the chunks that are loaded and built or held by a load refusal.
fn state_with_entities(game: &Game) -> Value {
    let mut state = serde_json::to_value(game.state()).unwrap();
    let world = game.engine().world();
    let district = game
        .engine()
        .service::<dyn world_streaming::kits::district::DistrictService>("world.district");
    let mut entities = serde_json::Map::new();
    for e in world.iter() {
        let ridden = world.iter().any(|o| o.rides.as_ref() == Some(&e.id));
        let kind = if e.has_tag("player") || world.control() == Some(&e.id) {
            "p"
        } else if e.has_tag("vehicle") || ridden {
            "v"
        } else if district
            .as_ref()
            .is_some_and(|d| d.district_line(&e.id).is_some())
        {
            "d"
        } else {
            "e"
        };
        entities.insert(
            e.id.as_str().to_owned(),
            json!([e.position.x, e.position.z, kind]),
        );
    }
    state["_entities"] = Value::Object(entities);
    state
}

/// What docs/reference/district.md#materialising, docs/reference/streaming.md#priorities add to a
/// frame, against the state document of the same tick. `built`: with a terrain builder, the chunks
/// built (else every loaded chunk is ready).
fn check_predicted_holes_and_entities_against_the_state(
    rebuilt: &Rebuilt,
    state: &Value,
    tick: usize,
    built: Option<&BTreeMap<ChunkPos, f64>>,
) {
    let predicted: Vec<f64> = state["predicted"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|f| [f["x"].as_f64().unwrap(), f["z"].as_f64().unwrap()])
        .collect();
    assert_eq!(
        rebuilt.predicted, predicted,
        "predicted foci at tick {tick}"
    );
    // The hole cells: as many as `world.chunks.holes` counts (present exactly when the scene
    // uses scheduling, docs/reference/config.md#outputs-that-appear-only-when-used), none of them
    // loaded and built (a built chunk has a height) or load-refused.
    match state["variables"].get("world.chunks.holes") {
        Some(n) => {
            let holes = rebuilt.holes.as_ref().expect(
                "scheduling scene \
                (docs/reference/config.md#outputs-that-appear-only-when-used): holes carried",
            );
            assert_eq!(
                holes.len() as u64,
                n.as_u64().unwrap(),
                "holes at tick {tick}"
            );
            let refused: BTreeSet<ChunkPos> = state["refusals"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|r| r["hook"] == "world.chunk.load")
                .map(|r| ChunkPos::new(r["x"].as_i64().unwrap(), r["z"].as_i64().unwrap()))
                .collect();
            let mut sorted = holes.clone();
            sorted.sort();
            sorted.dedup();
            assert_eq!(&sorted, holes, "holes sorted, each once, at tick {tick}");
            let loaded: BTreeSet<ChunkPos> =
                serde_json::from_value(state["loaded"].clone()).unwrap();
            for h in holes {
                assert!(
                    !refused.contains(h),
                    "{h} is refused, not a hole, at tick {tick}"
                );
                let ready = loaded.contains(h) && built.is_none_or(|b| b.contains_key(h));
                assert!(!ready, "{h} is ready, not a hole, at tick {tick}");
            }
        }
        None => assert_eq!(
            rebuilt.holes, None,
            "no scheduling \
            (docs/reference/config.md#outputs-that-appear-only-when-used): no holes at tick \
            {tick}"
        ),
    }
    let entities: BTreeMap<String, Value> = rebuilt
        .entities
        .iter()
        .map(|(id, e)| {
            let (x, z) = (e[2].as_f64().unwrap(), e[3].as_f64().unwrap());
            (id.clone(), json!([x, z, e[1]]))
        })
        .collect();
    let expected: BTreeMap<String, Value> = state["_entities"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    assert_eq!(entities, expected, "live entities at tick {tick}");
    let district = state
        .get("district")
        .map(|d| json!([d["live"], d["stored"]]));
    assert_eq!(rebuilt.district, district, "district counts at tick {tick}");
}

#[test]
fn the_frames_rebuild_every_ticks_state_of_the_example_runs() {
    for name in ["seed", "drive", "two_scenes", "demo", "party"] {
        let recording = record_example(name, None);
        let data = check_frames_against_the_engine(&recording);
        assert_eq!(data.ticks, recording.ticks, "{name}");
    }
}

/// A run of docs/reference/streaming.md#anchors: two players far apart (`focus: "players"`) and a
/// preload ticket.
fn many_foci_recording(dir: &Path) -> Recording {
    let scene = json!({
        "kits": [
            {"id": "world.ground"},
            {"id": "world.streaming", "config": {"focus": "players", "radius": 1, "budgetMs": 4}}
        ],
        "entities": [
            {"id": "hero", "tags": ["player"], "position": {"x": 8, "z": 8}},
            {"id": "friend", "tags": ["player"], "position": {"x": 200, "z": 8}}
        ]
    });
    let path = dir.join("many.json");
    std::fs::write(&path, scene.to_string()).unwrap();
    let lines = [
        json!({"tick": 3, "do": "request", "id": "gate", "at": {"x": 40, "z": 200}, "radius": 1, "ticks": 30}),
        json!({"tick": 8, "do": "move", "entity": "friend", "to": {"x": 260, "z": 40}}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let inputs = Inputs::parse(&text, "many.inputs.jsonl").unwrap();
    Recording::record(&path, &inputs, 20).unwrap()
}

#[test]
fn the_frames_of_a_run_with_many_foci_and_a_ticket_carry_them() {
    let dir = tempfile::tempdir().unwrap();
    let recording = many_foci_recording(dir.path());
    let data = check_frames_against_the_engine(&recording);
    let foci = data
        .frames
        .iter()
        .filter_map(|f| f.foci.as_ref())
        .next_back()
        .unwrap();
    assert_eq!(foci.len(), 6, "two players and the ticket: {foci:?}");
    assert!(data
        .frames
        .iter()
        .any(|f| f.tickets.as_ref().is_some_and(|t| t.len() == 1)));
}

#[test]
fn a_load_that_restores_chunks_without_events_is_carried_as_a_correction() {
    let dir = tempfile::tempdir().unwrap();
    let scene = dir.path().join("scene.json");
    std::fs::copy(repo().join("examples/scenes/seed.json"), &scene).unwrap();
    // A recording's save paths are relative (an absolute one would lead out of the replay's
    // directory): the recorded run resolves them in `dir`.
    let save = "save.json";
    let lines = [
        json!({"tick": 6, "do": "save", "path": save}),
        json!({"tick": 7, "do": "move", "entity": "hero", "to": {"x": 300, "z": 8}}),
        json!({"tick": 12, "do": "load", "path": save}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let mut inputs = Inputs::parse(&text, "inputs").unwrap();
    inputs.dir = Some(dir.path().to_path_buf());
    let recording = Recording::record(&scene, &inputs, 16).unwrap();
    let data = check_frames_against_the_engine(&recording);
    let json = serde_json::to_value(&data).unwrap();
    let corrections = json["frames"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f.get("la").is_some() || f.get("lr").is_some())
        .count();
    assert!(
        corrections > 0,
        "the load's restored chunks need a correction"
    );
}

#[test]
fn the_page_is_one_self_contained_file() {
    let dir = tempfile::tempdir().unwrap();
    let replay = dir.path().join("drive.replay.json");
    record_example("drive", None).write(&replay).unwrap();
    let page = dir.path().join("drive.html");
    let out = bin()
        .args(["view"])
        .arg(&replay)
        .arg("--out")
        .arg(&page)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("130 ticks"));
    let html = std::fs::read_to_string(&page).unwrap();
    for forbidden in ["http://", "https://", "<link", "src=", "@import", "url("] {
        assert!(!html.contains(forbidden), "the page holds {forbidden:?}");
    }
    assert!(
        html.contains("default-src 'none'"),
        "a CSP forbids any fetch"
    );
    for id in [
        "start", "pause", "reset", "step", "slider", "tick", "grid", "events",
    ] {
        assert!(html.contains(&format!("id=\"{id}\"")), "no #{id}");
    }
    // The data is there, whole.
    let data = html
        .split("<script type=\"application/json\" id=\"data\">")
        .nth(1)
        .and_then(|s| s.split("</script>").next())
        .unwrap();
    let data: Value = serde_json::from_str(data).unwrap();
    assert_eq!(data["format"], "world-streaming-view");
    assert_eq!(data["frames"].as_array().unwrap().len(), 131);
    // `-` writes it to stdout.
    let out = bin()
        .args(["view"])
        .arg(&replay)
        .args(["--out", "-"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8(out.stdout).unwrap(), html);
}

#[test]
fn text_from_the_run_cannot_close_the_data_script() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("mods")).unwrap();
    let hostile = "</script><script>document.title='owned'</script>&amp;";
    std::fs::write(
        dir.path().join("mods/refuse.json"),
        json!({"id": "refuse", "hook": "world.chunk.load", "match": {"x": 1}, "cancel": true, "reason": hostile})
            .to_string(),
    )
    .unwrap();
    let mut scene: Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("examples/scenes/seed.json")).unwrap(),
    )
    .unwrap();
    scene["mods"] = json!(["mods/refuse.json"]);
    let scene_path = dir.path().join("scene.json");
    std::fs::write(&scene_path, scene.to_string()).unwrap();
    let recording = Recording::record(&scene_path, &Inputs::default(), 5).unwrap();
    let data = check_frames_against_the_engine(&recording);
    assert!(data
        .frames
        .iter()
        .any(|f| f.refusals.as_ref().is_some_and(|r| !r.is_empty())));
    let html = render(&data);
    assert!(!html.contains(hostile));
    assert_eq!(
        html.matches("</script>").count(),
        2,
        "only the page's own two scripts close"
    );
}

#[test]
fn a_replay_that_does_not_reproduce_is_refused_with_the_tick() {
    let dir = tempfile::tempdir().unwrap();
    let mut recording = record_example("seed", Some(5));
    // Altered and consistent with itself (its digest made of the altered events): it reads,
    // and the run does not reproduce it.
    let step = &mut recording.steps[2];
    step.events
        .push("{\"tick\":3,\"event\":\"forged\",\"data\":{}}".into());
    step.digest = world_streaming::replay::Step::digest_of(&step.events);
    let replay = dir.path().join("bad.replay.json");
    recording.write(&replay).unwrap();
    let out = bin()
        .arg("view")
        .arg(&replay)
        .arg("--out")
        .arg(dir.path().join("bad.html"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("does not reproduce") && stderr.contains("tick 3"),
        "{stderr}"
    );
    assert!(!dir.path().join("bad.html").exists());
}

/// A recording claiming more ticks than its steps hold is viewed up to the first tick with no
/// step and no further (as `replay` stops): one tick past its steps, not 10 000 000.
#[test]
fn a_recording_claiming_more_ticks_than_it_holds_is_not_run_to_its_claimed_end() {
    let mut recording = record_example("seed", Some(5));
    recording.ticks = 10_000_000;
    match capture(&recording, "claimed", None) {
        Err(world_streaming::view::ViewError::Differs(d)) => {
            assert_eq!((d.tick, d.ticks_run), (6, 6));
            assert!(d.expected.is_none());
        }
        other => panic!(
            "expected a divergence at tick 6, got {:?}",
            other.map(|_| ())
        ),
    }
}

/// The party example builds terrain (`world.terrain`, committed 2 ticks after a load): the
/// frames give a chunk its height from the tick it is built until it is released (the frame
/// check compares them with the terrain service at every tick), and the CLI's page has them.
#[test]
fn terrain_heights_follow_the_chunks_built() {
    let recording = record_example("party", None);
    let data = check_frames_against_the_engine(&recording);
    let mut first_loaded = BTreeMap::new();
    let mut first_height = BTreeMap::new();
    for (tick, f) in data.frames.iter().enumerate() {
        for e in &f.events {
            if e.as_array().unwrap().len() == 3
                && data.names[e[0].as_u64().unwrap() as usize] == "world.chunk.loaded"
            {
                first_loaded
                    .entry((e[1].as_i64().unwrap(), e[2].as_i64().unwrap()))
                    .or_insert(tick);
            }
        }
        for h in f.heights.chunks(3) {
            first_height
                .entry((h[0] as i64, h[1] as i64))
                .or_insert(tick);
        }
    }
    assert!(
        first_height.len() > 20,
        "{} chunks built",
        first_height.len()
    );
    for (c, built) in &first_height {
        let loaded = first_loaded[c];
        assert!(
            *built >= loaded + 2,
            "{c:?} loaded at {loaded}, shaded at {built}"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let replay = dir.path().join("party.replay.json");
    recording.write(&replay).unwrap();
    // The page has them, and is the same bytes every time (terrain is built on worker threads).
    let page = || {
        let out = bin()
            .arg("view")
            .arg(&replay)
            .args(["--out", "-"])
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };
    let html = page();
    assert!(html.contains(",\"h\":["), "no heights in the page");
    assert!(!html.contains("world.terrain.waits"));
    assert_eq!(html, page());
}

// ---- In the browser ----

const LOADED_RGB: [u64; 3] = [0x3f, 0xa3, 0x4d];
const UNLOAD_REFUSED_RGB: [u64; 3] = [0xef, 0x8a, 0x2b];

/// Reads the canvas pixel at the centre of each chunk (with the page's own geometry).
fn pixels_at(page: &mut chromium::Page<'_>, cells: &[ChunkPos]) -> Vec<[u64; 3]> {
    let list: Vec<[i64; 2]> = cells.iter().map(|c| [c.x, c.z]).collect();
    let v = page.eval(&format!(
        "(() => {{ const c = document.getElementById('grid'); const d = c.dataset; \
         const ctx = c.getContext('2d'); const cell = Number(d.cell); \
         return {list:?}.map(([x, z]) => {{ \
           const px = Number(d.ox) + (x - Number(d.originX) + 0.5) * cell; \
           const pz = Number(d.oz) + (z - Number(d.originZ) + 0.5) * cell; \
           return Array.from(ctx.getImageData(Math.floor(px), Math.floor(pz), 1, 1).data.slice(0, 3)); }}); }})()"
    ));
    v.as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let p = p.as_array().unwrap();
            [
                p[0].as_u64().unwrap(),
                p[1].as_u64().unwrap(),
                p[2].as_u64().unwrap(),
            ]
        })
        .collect()
}

/// The first tick after which the engine has a loaded chunk (0 when it never has one).
fn first_tick_with_a_loaded_chunk(recording: &Recording) -> u64 {
    let (_dir, mut game, inputs) = recording.game().unwrap();
    let mut first = None;
    game.run_observing(&inputs, recording.ticks, |g, _| {
        if first.is_none() && !g.streaming().unwrap().loaded().is_empty() {
            first = Some(g.engine().tick_count());
        }
    })
    .unwrap();
    first.unwrap_or(0)
}

/// The page shows tick `tick` exactly as the engine has it.
fn check_page_at(page: &mut chromium::Page<'_>, recording: &Recording, tick: u64) {
    assert_eq!(
        page.eval("document.getElementById('tick').textContent"),
        json!(tick.to_string())
    );
    let (_dir, game) = game_at(recording, tick);
    let streaming = game.streaming().unwrap();
    let loaded = streaming.loaded();
    assert_eq!(
        page.eval("Number(document.getElementById('grid').dataset.loadedDrawn)"),
        json!(loaded.len()),
        "loaded cells drawn at tick {tick}"
    );
    // Every loaded chunk is painted loaded (or unload-refused) where no marker covers it...
    let state = game.state();
    let held: BTreeSet<ChunkPos> = state
        .refusals
        .iter()
        .filter(|r| r.hook == "world.chunk.unload")
        .map(|r| ChunkPos::new(r.x, r.z))
        .collect();
    // Markers (the focus, dormant entities) are at least 3 px wide plus their outline, so on
    // small cells they cover neighbours: skip the cells they can reach.
    let cell = page
        .eval("Number(document.getElementById('grid').dataset.cell)")
        .as_f64()
        .unwrap();
    let reach = ((cell * 0.3).clamp(3.0, 10.0) + 2.0) / cell;
    let reach = reach.ceil() as i64;
    let mut centres = Vec::new();
    for f in streaming
        .foci()
        .into_iter()
        .chain(streaming.predicted().unwrap_or_default())
    {
        centres.push(streaming.chunk_of(f));
    }
    // Every live entity has a marker (dormant ones a second one).
    for e in game.engine().world().iter() {
        centres.push(streaming.chunk_of(e.position));
    }
    let mut marked = BTreeSet::new();
    for c in centres {
        for dz in -reach..=reach {
            for dx in -reach..=reach {
                marked.insert(ChunkPos::new(c.x + dx, c.z + dz));
            }
        }
    }
    let visible: Vec<ChunkPos> = loaded
        .iter()
        .filter(|c| !marked.contains(c))
        .copied()
        .collect();
    for (c, rgb) in visible.iter().zip(pixels_at(page, &visible)) {
        if held.contains(c) {
            assert_eq!(
                rgb, UNLOAD_REFUSED_RGB,
                "the pixel of held {c} at tick {tick}"
            );
        } else if terrain_height(&game, *c).is_some() {
            // Built terrain: the loaded green, shaded by height.
            assert!(
                rgb != LOADED_RGB && rgb[1] > rgb[0] && rgb[1] > rgb[2],
                "the pixel of built {c} at tick {tick}: {rgb:?}"
            );
        } else {
            assert_eq!(rgb, LOADED_RGB, "the pixel of loaded {c} at tick {tick}");
        }
    }
    // ... and no pending chunk is.
    let pending: Vec<ChunkPos> = state
        .pending
        .iter()
        .filter(|c| !marked.contains(c))
        .copied()
        .collect();
    for (c, rgb) in pending.iter().zip(pixels_at(page, &pending)) {
        assert_ne!(
            rgb, LOADED_RGB,
            "pending {c} drawn as loaded at tick {tick}"
        );
    }
    // The side list holds the tick's events.
    let events = if tick == 0 {
        0
    } else {
        recording.steps[tick as usize - 1].events.len()
    };
    assert_eq!(
        page.eval("document.querySelectorAll('#events li').length"),
        json!(events.min(400) + usize::from(events > 400)),
        "events listed at tick {tick}"
    );
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

const READY: &str = "document.body && document.body.dataset.ready === '1'";

#[test]
fn stepping_in_chromium_shows_the_replays_state_at_each_tick() {
    let Some(mut browser) = chromium::chromium() else {
        return;
    };
    let recording = record_example("drive", None);
    let (_dir, file) = write_page(&recording, "drive");
    let mut page = browser.page(1280, 1000);
    page.open(&file, READY);
    // The page opens on the first tick that shows a loaded chunk, not on the empty tick 0.
    let start = first_tick_with_a_loaded_chunk(&recording);
    assert!(start > 0);
    check_page_at(&mut page, &recording, start);
    page.click("reset");
    check_page_at(&mut page, &recording, 0);
    for _ in 0..12 {
        page.click("step");
    }
    check_page_at(&mut page, &recording, 12);
    // Keys: three steps on, one back.
    for _ in 0..3 {
        page.press("ArrowRight");
    }
    page.press("ArrowLeft");
    check_page_at(&mut page, &recording, 14);
    // The slider, then End and Reset.
    page.eval("(() => { const s = document.getElementById('slider'); s.value = '57'; s.dispatchEvent(new Event('input')); })()");
    check_page_at(&mut page, &recording, 57);
    page.press("End");
    check_page_at(&mut page, &recording, recording.ticks);
    page.click("reset");
    check_page_at(&mut page, &recording, 0);
    // Stepping back over a kept state (every 256 ticks) and forward again agrees too.
    page.eval("(() => { const s = document.getElementById('slider'); s.value = '40'; s.dispatchEvent(new Event('input')); })()");
    page.press("ArrowLeft");
    check_page_at(&mut page, &recording, 39);
    let png = page.screenshot();
    assert_eq!(&png[1..4], b"PNG");
    let shot = chromium::target_dir().join("view-drive.png");
    std::fs::write(&shot, png).unwrap();
    eprintln!("screenshot of the page at tick 39: {}", shot.display());

    // The party example (docs/reference/streaming.md#anchors: three players in two vehicles, a
    // resident cap, a ticket far away from tick 85): the same checks on its way and while the
    // ticket is held.
    let party = record_example("party", None);
    let (_dir, file) = write_page(&party, "party");
    let mut page = browser.page(1280, 1000);
    page.open(&file, READY);
    check_page_at(&mut page, &party, first_tick_with_a_loaded_chunk(&party));
    page.press("Home");
    for _ in 0..20 {
        page.press(".");
    }
    check_page_at(&mut page, &party, 20);
    page.eval("(() => { const s = document.getElementById('slider'); s.value = '90'; s.dispatchEvent(new Event('input')); })()");
    check_page_at(&mut page, &party, 90);
    let caption = page.eval("document.getElementById('counts').textContent");
    assert!(caption.as_str().unwrap().contains("tickets 1"), "{caption}");
    std::fs::write(
        chromium::target_dir().join("view-party.png"),
        page.screenshot(),
    )
    .unwrap();
}

#[test]
fn with_reduced_motion_the_page_never_plays_by_itself() {
    let Some(mut browser) = chromium::chromium() else {
        return;
    };
    let recording = record_example("drive", None);
    let (_dir, file) = write_page(&recording, "drive");
    {
        let mut page = browser.page(1280, 1000);
        page.reduce_motion(true);
        page.open(&file, READY);
        assert_eq!(
            page.eval("matchMedia('(prefers-reduced-motion: reduce)').matches"),
            json!(true)
        );
        assert_eq!(
            page.eval("document.getElementById('start').disabled"),
            json!(true)
        );
        assert_eq!(
            page.eval("document.getElementById('motion').hidden"),
            json!(false)
        );
        let start = first_tick_with_a_loaded_chunk(&recording);
        page.click("start");
        page.press(" ");
        std::thread::sleep(Duration::from_millis(800));
        assert_eq!(
            page.eval("document.getElementById('tick').textContent"),
            json!(start.to_string())
        );
        page.click("step");
        check_page_at(&mut page, &recording, start + 1);
        std::thread::sleep(Duration::from_millis(500));
        assert_eq!(
            page.eval("document.getElementById('tick').textContent"),
            json!((start + 1).to_string())
        );
    }
    // Without the preference, Start plays on by itself and Pause stops it.
    let mut page = browser.page(1280, 1000);
    page.reduce_motion(false);
    page.open(&file, READY);
    assert_eq!(
        page.eval("document.getElementById('motion').hidden"),
        json!(true)
    );
    page.eval("document.getElementById('speed').value = '60'");
    page.click("start");
    page.wait_for(
        "Number(document.getElementById('tick').textContent) >= 5",
        Duration::from_secs(20),
    );
    page.click("pause");
    let paused = page.eval("document.getElementById('tick').textContent");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        page.eval("document.getElementById('tick').textContent"),
        paused
    );
    let tick: u64 = paused.as_str().unwrap().parse().unwrap();
    check_page_at(&mut page, &recording, tick);
}

/// A 10 000-tick run at radius 32 (4 225 chunks live): a drive around a 5 km square at 2 m a
/// tick, 64 loads a tick, three crates, a mod holding the home chunk.
fn large_recording(dir: &Path) -> Recording {
    std::fs::create_dir_all(dir.join("mods")).unwrap();
    std::fs::write(
        dir.join("mods/keep_home.json"),
        json!({"id": "keep_home", "hook": "world.chunk.unload", "match": {"x": 0, "z": 0}, "cancel": true, "reason": "home"})
            .to_string(),
    )
    .unwrap();
    let scene = json!({
        "kits": [
            {"id": "world.ground"},
            {"id": "world.streaming", "config": {"chunkSize": 32, "radius": 32, "budgetMs": 64}}
        ],
        "mods": ["mods/keep_home.json"],
        "entities": [
            {"id": "hero", "tags": ["player"], "position": {"x": 16, "z": 16}},
            {"id": "crate-1", "tags": ["streamable"], "position": {"x": 2500, "z": 40}},
            {"id": "crate-2", "tags": ["streamable"], "position": {"x": 5000, "z": 2500}},
            {"id": "crate-3", "tags": ["streamable"], "position": {"x": 40, "z": 4000}}
        ]
    });
    let path = dir.join("large.json");
    std::fs::write(&path, scene.to_string()).unwrap();
    let mut text = String::new();
    let (mut x, mut z) = (16.0, 16.0);
    for tick in 1..=10_000u64 {
        match (tick - 1) / 2_500 {
            0 => x += 2.0,
            1 => z += 2.0,
            2 => x -= 2.0,
            _ => z -= 2.0,
        }
        text.push_str(
            &json!({"tick": tick, "do": "move", "entity": "hero", "to": {"x": x, "z": z}})
                .to_string(),
        );
        text.push('\n');
    }
    let inputs = Inputs::parse(&text, "large.inputs.jsonl").unwrap();
    Recording::record(&path, &inputs, 10_000).unwrap()
}

/// The page of a 10 000-tick radius-32 run opens, jumps to its end and steps back, and shows the
/// engine's state there. Prints the page's size and Chromium's first paint (the README quotes
/// them); no timing is asserted.
#[test]
fn a_10000_tick_radius_32_replay_opens_and_jumps_to_its_end() {
    let Some(mut browser) = chromium::chromium() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    let recording = large_recording(dir.path());
    let recorded = started.elapsed();
    // Kept in target/ for a look, and for timing the release binary on it.
    let replay = chromium::target_dir().join("view-large.replay.json");
    recording.write(&replay).unwrap();
    let file = chromium::target_dir().join("view-large.html");
    let started = std::time::Instant::now();
    bin()
        .arg("view")
        .arg(&replay)
        .arg("--out")
        .arg(&file)
        .assert()
        .success();
    let viewed = started.elapsed();
    let size = std::fs::metadata(&file).unwrap().len();
    let mut page = browser.page(1280, 1000);
    page.open(&file, READY);
    page.wait_for(
        "performance.getEntriesByName('first-contentful-paint').length > 0",
        Duration::from_secs(20),
    );
    let paint = page.eval(
        "(() => { const p = performance.getEntriesByName('first-contentful-paint')[0]; \
         const g = performance.getEntriesByName('ws-first-grid')[0]; \
         return [p ? p.startTime : null, g ? g.startTime : null]; })()",
    );
    // It opens on tick 1, the first with a loaded chunk (the hero's square starts loading).
    check_page_at(&mut page, &recording, 1);
    let jump = page.eval(
        "(() => { const t0 = performance.now(); const s = document.getElementById('slider'); \
         s.value = s.max; s.dispatchEvent(new Event('input')); return performance.now() - t0; })()",
    );
    check_page_at(&mut page, &recording, 10_000);
    let drawn = page.eval("Number(document.getElementById('grid').dataset.loadedDrawn)");
    assert!(
        drawn.as_u64().unwrap() >= 65 * 65,
        "at least the 65 × 65 square is drawn, got {drawn}"
    );
    let back = page.eval(
        "(() => { const t0 = performance.now(); document.getElementById('step').click(); \
         const s = document.getElementById('slider'); s.value = '7777'; \
         s.dispatchEvent(new Event('input')); return performance.now() - t0; })()",
    );
    check_page_at(&mut page, &recording, 7_777);
    let png = page.screenshot();
    std::fs::write(chromium::target_dir().join("view-large.png"), png).unwrap();
    let ms = |v: &Value| v.as_f64().map_or("?".to_owned(), |v| format!("{v:.0}"));
    eprintln!(
        "large replay: recorded in {recorded:.1?}, page written in {viewed:.1?}: {size} bytes \
         ({:.2} MiB); first contentful paint {} ms, grid drawn at {} ms; jump to the end {} ms, \
         back to tick 7777 {} ms",
        size as f64 / 1048576.0,
        ms(&paint[0]),
        ms(&paint[1]),
        ms(&jump),
        ms(&back)
    );
}

/// What docs/reference/streaming.md#anchors, docs/reference/terrain.md#off-the-tick add is drawn:
/// the foci of two players and a ticket (the engine's own docs/reference/streaming.md#tickets
/// state) and terrain heights (from a probe, until a terrain kit is built in).
#[test]
fn foci_tickets_and_terrain_heights_are_drawn_when_the_run_has_them() {
    let Some(mut browser) = chromium::chromium() else {
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let recording = many_foci_recording(scratch.path());
    let probe = |_: &Game, c: ChunkPos| Some((c.x * 3 + c.z) as f64);
    let data = capture(&recording, "many foci", Some(&probe)).unwrap();
    let file = scratch.path().join("many.html");
    std::fs::write(&file, render(&data)).unwrap();
    let mut page = browser.page(1280, 1000);
    page.open(&file, READY);
    page.click("reset");
    for _ in 0..5 {
        page.click("step");
    }
    assert_eq!(
        page.eval("document.getElementById('tick').textContent"),
        json!("5")
    );
    let caption = page.eval("document.getElementById('counts').textContent");
    assert!(
        caption.as_str().unwrap().contains("foci 3 · tickets 1"),
        "{caption}"
    );
    assert_eq!(
        page.eval("document.getElementById('legend-heights').hidden"),
        json!(false)
    );
    let at_metres = |page: &mut chromium::Page<'_>, x: f64, z: f64| -> Value {
        page.eval(&format!(
            "(() => {{ const c = document.getElementById('grid'); const d = c.dataset; \
             const px = Number(d.ox) + ({x} / 32 - Number(d.originX)) * Number(d.cell); \
             const pz = Number(d.oz) + ({z} / 32 - Number(d.originZ)) * Number(d.cell); \
             return Array.from(c.getContext('2d').getImageData(Math.floor(px), Math.floor(pz), 1, 1).data.slice(0, 3)); }})()"
        ))
    };
    // Every focus is drawn (a white disc) where the engine has it.
    let (_dir, game) = game_at(&recording, 5);
    let streaming = game.streaming().unwrap();
    let foci = streaming.foci();
    assert_eq!(foci.len(), 3);
    for f in &foci {
        assert_eq!(
            at_metres(&mut page, f.x, f.z),
            json!([255, 255, 255]),
            "focus {f:?}"
        );
    }
    // The ticket's square (chunk (1, 6), radius 1: chunks 0..=2 × 5..=7) is outlined.
    let outline = page.eval(
        "(() => { const c = document.getElementById('grid'); const d = c.dataset; \
         const x0 = Number(d.ox) + (0 - Number(d.originX)) * Number(d.cell); \
         const z0 = Number(d.oz) + (5 - Number(d.originZ)) * Number(d.cell); \
         return Array.from(c.getContext('2d').getImageData(Math.floor(x0) + 2, Math.floor(z0) + 1, 1, 1).data.slice(0, 3)); })()",
    );
    assert_eq!(outline, json!([0x4a, 0xa3, 0xff]));
    // Loaded chunks are shaded by height: green, darker where lower, never the plain loaded
    // colour. The cells are large here, so only a focus's own chunk has a marker at its centre.
    let cell = page.eval("Number(document.getElementById('grid').dataset.cell)");
    assert!(cell.as_f64().unwrap() >= 30.0, "cells of {cell} px");
    assert_eq!(
        page.eval("Number(document.getElementById('grid').dataset.loadedDrawn)"),
        json!(streaming.loaded().len())
    );
    let focus_chunks: Vec<ChunkPos> = foci.iter().map(|f| streaming.chunk_of(*f)).collect();
    let cells: Vec<ChunkPos> = streaming
        .loaded()
        .into_iter()
        .filter(|c| !focus_chunks.contains(c))
        .collect();
    let pixels = pixels_at(&mut page, &cells);
    let light = |p: &[u64; 3]| p.iter().sum::<u64>();
    let mut compared = 0;
    for (a, pa) in cells.iter().zip(&pixels) {
        assert_ne!(*pa, LOADED_RGB, "{a} is not shaded");
        assert!(pa[1] > pa[0] && pa[1] > pa[2], "{a}: {pa:?} is not green");
        for (b, pb) in cells.iter().zip(&pixels) {
            if a.x * 3 + a.z < b.x * 3 + b.z {
                compared += 1;
                assert!(
                    light(pa) < light(pb),
                    "{a} is higher than {b} but not lighter"
                );
            }
        }
    }
    assert!(compared >= 10, "only {compared} pairs compared");
}

/// Edits change a built chunk's heights: the page's shading follows (`world.terrain.changed`
/// re-asks the probe), checked against the terrain service at every tick. The world example runs
/// from a copy, so that its world directory is a temporary one.
#[test]
fn terrain_heights_follow_edits() {
    let dir = tempfile::tempdir().unwrap();
    let scene = dir.path().join("world.json");
    std::fs::copy(repo().join("examples/scenes/world.json"), &scene).unwrap();
    let text = std::fs::read_to_string(repo().join("examples/scenes/world.inputs.jsonl")).unwrap();
    let inputs = Inputs::parse(&text, "inputs").unwrap();
    let recording = Recording::record(&scene, &inputs, 60).unwrap();
    let data = check_frames_against_the_engine(&recording);
    // Chunk (0,0) is shaded again on the tick of its edit.
    let edited = data
        .frames
        .iter()
        .position(|f| {
            f.events.iter().any(|e| {
                e.as_array().unwrap().len() == 3
                    && data.names[e[0].as_u64().unwrap() as usize] == "world.terrain.changed"
            })
        })
        .unwrap();
    assert!(data.frames[edited]
        .heights
        .chunks(3)
        .any(|h| (h[0], h[1]) == (0.0, 0.0)));
}

// ---- docs/reference/streaming.md#holes: predicted foci and holes ----

const HOLE_RGB: [u64; 3] = [0xff, 0x2d, 0x55];
const PREDICTED_RGB: [u64; 3] = [0x00, 0xf0, 0xa8];

/// `examples/scenes/lookahead.json` (terrain with commitLatency 2, radius 4, budget 3, a drive
/// east at 24 m a tick) for `ticks` ticks, with `lookAheadTicks` set to `look_ahead` (the
/// example has none: it is the baseline of the book's table).
fn lookahead_recording(dir: &Path, look_ahead: u64, ticks: u64) -> Recording {
    let root = repo().join("examples/scenes");
    let mut scene: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("lookahead.json")).unwrap())
            .unwrap();
    scene["kits"][1]["config"]["lookAheadTicks"] = json!(look_ahead);
    let path = dir.join("lookahead.json");
    std::fs::write(&path, scene.to_string()).unwrap();
    let text = std::fs::read_to_string(root.join("lookahead.inputs.jsonl")).unwrap();
    let inputs = Inputs::parse(&text, "lookahead.inputs.jsonl").unwrap();
    Recording::record(&path, &inputs, ticks).unwrap()
}

#[test]
fn the_frames_carry_the_predicted_foci_and_the_hole_cells() {
    let dir = tempfile::tempdir().unwrap();
    for look_ahead in [0, 2] {
        let recording = lookahead_recording(dir.path(), look_ahead, 60);
        let data = check_frames_against_the_engine(&recording);
        let holes: usize = data
            .frames
            .iter()
            .filter_map(|f| f.holes.as_ref())
            .map(|h| h.len() / 2)
            .sum();
        assert!(holes > 0, "lookAheadTicks {look_ahead}: no hole carried");
        let predicted = data
            .frames
            .iter()
            .filter(|f| f.predicted.as_ref().is_some_and(|p| !p.is_empty()))
            .count();
        if look_ahead == 0 {
            assert_eq!(predicted, 0);
        } else {
            assert!(predicted > 0, "no predicted focus carried");
        }
    }
    // Without a scheduling key (docs/reference/config.md#outputs-that-appear-only-when-used) no
    // hole list is carried (the state has no hole variables either).
    let data = check_frames_against_the_engine(&record_example("drive", None));
    assert!(data.frames.iter().all(|f| f.holes.is_none()));
}

/// Reads the canvas pixel `inset` px inside the left edge of each chunk's cell, half-way down.
fn edge_pixels_at(page: &mut chromium::Page<'_>, cells: &[ChunkPos]) -> Vec<[u64; 3]> {
    let list: Vec<[i64; 2]> = cells.iter().map(|c| [c.x, c.z]).collect();
    let v = page.eval(&format!(
        "(() => {{ const c = document.getElementById('grid'); const d = c.dataset; \
         const ctx = c.getContext('2d'); const cell = Number(d.cell); const gap = cell >= 6 ? 1 : 0; \
         return {list:?}.map(([x, z]) => {{ \
           const px = Number(d.ox) + (x - Number(d.originX)) * cell + gap + 1; \
           const pz = Number(d.oz) + (z - Number(d.originZ) + 0.5) * cell; \
           return Array.from(ctx.getImageData(Math.floor(px), Math.floor(pz), 1, 1).data.slice(0, 3)); }}); }})()"
    ));
    v.as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let p = p.as_array().unwrap();
            [0, 1, 2].map(|i| p[i].as_u64().unwrap())
        })
        .collect()
}

/// The canvas pixel at each position in metres.
fn pixels_at_metres(page: &mut chromium::Page<'_>, at: &[[f64; 2]], size: f64) -> Vec<[u64; 3]> {
    let v = page.eval(&format!(
        "(() => {{ const c = document.getElementById('grid'); const d = c.dataset; \
         const ctx = c.getContext('2d'); const cell = Number(d.cell); \
         return {at:?}.map(([x, z]) => {{ \
           const px = Number(d.ox) + (x / {size} - Number(d.originX)) * cell; \
           const pz = Number(d.oz) + (z / {size} - Number(d.originZ)) * cell; \
           return Array.from(ctx.getImageData(Math.floor(px), Math.floor(pz), 1, 1).data.slice(0, 3)); }}); }})()"
    ));
    v.as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let p = p.as_array().unwrap();
            [0, 1, 2].map(|i| p[i].as_u64().unwrap())
        })
        .collect()
}

/// The page shows the engine's hole cells and count, and its predicted foci, at `tick`.
fn check_holes_and_predicted_at(page: &mut chromium::Page<'_>, recording: &Recording, tick: u64) {
    let (_dir, game) = game_at(recording, tick);
    let streaming = game.streaming().unwrap();
    let holes = streaming.hole_chunks().expect(
        "a scheduling scene \
        (docs/reference/config.md#outputs-that-appear-only-when-used)",
    );
    let (count, _) = streaming.holes();
    assert_eq!(
        holes.len() as u64,
        count,
        "the list is what the variable counts"
    );
    let caption = page.eval("document.getElementById('counts').textContent");
    assert!(
        caption
            .as_str()
            .unwrap()
            .ends_with(&format!(" · holes {count}")),
        "tick {tick}: {caption}"
    );
    assert_eq!(
        page.eval("Number(document.getElementById('grid').dataset.holesDrawn)"),
        json!(count)
    );
    // Every hole cell is framed in the hole colour, every other loaded or pending cell is not.
    let state = game.state();
    let others: Vec<ChunkPos> = state
        .loaded
        .iter()
        .chain(&state.pending)
        .filter(|c| !holes.contains(c))
        .copied()
        .collect();
    // Markers (foci, entities) may cover the sampled point: those cells are skipped.
    let cell = page
        .eval("Number(document.getElementById('grid').dataset.cell)")
        .as_f64()
        .unwrap();
    let size = streaming.chunk_size();
    let reach = ((cell * 0.3).clamp(3.0, 10.0) + 3.0) / cell * size;
    let markers: Vec<[f64; 2]> = streaming
        .foci()
        .into_iter()
        .chain(streaming.predicted().unwrap_or_default())
        .chain(game.engine().world().iter().map(|e| e.position))
        .map(|p| [p.x, p.z])
        .collect();
    let gap = if cell >= 6.0 { 1.0 } else { 0.0 };
    let clear = |c: &ChunkPos| {
        let (x, z) = (
            (c.x as f64 + (gap + 1.0) / cell) * size,
            (c.z as f64 + 0.5) * size,
        );
        markers
            .iter()
            .all(|m| (m[0] - x).abs() > reach || (m[1] - z).abs() > reach)
    };
    let holes_clear: Vec<ChunkPos> = holes.iter().filter(|c| clear(c)).copied().collect();
    assert!(
        holes_clear.len() + 2 >= holes.len(),
        "tick {tick}: too few hole cells to sample"
    );
    let others: Vec<ChunkPos> = others.into_iter().filter(|c| clear(c)).collect();
    for (c, rgb) in holes_clear.iter().zip(edge_pixels_at(page, &holes_clear)) {
        assert_eq!(rgb, HOLE_RGB, "hole {c} at tick {tick}");
    }
    for (c, rgb) in others.iter().zip(edge_pixels_at(page, &others)) {
        assert_ne!(rgb, HOLE_RGB, "{c} is no hole at tick {tick}");
    }
    // The predicted foci: a disc of their own colour where the state has them.
    let predicted: Vec<[f64; 2]> = streaming
        .predicted()
        .expect("a scheduling scene (docs/reference/config.md#outputs-that-appear-only-when-used)")
        .iter()
        .map(|p| [p.x, p.z])
        .collect();
    assert_eq!(
        page.eval("Number(document.getElementById('grid').dataset.predictedDrawn)"),
        json!(predicted.len())
    );
    for (p, rgb) in predicted
        .iter()
        .zip(pixels_at_metres(page, &predicted, streaming.chunk_size()))
    {
        assert_eq!(rgb, PREDICTED_RGB, "predicted focus {p:?} at tick {tick}");
    }
}

#[test]
fn predicted_foci_and_holes_are_drawn_in_chromium() {
    let Some(mut browser) = chromium::chromium() else {
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let recording = lookahead_recording(scratch.path(), 2, 60);
    let (_dir, file) = write_page(&recording, "lookahead");
    let mut page = browser.page(1280, 1000);
    page.open(&file, READY);
    let mut with_holes = 0;
    let mut with_predicted = 0;
    let mut most = (0, 0);
    for tick in [1, 2, 3, 5, 8, 13, 21, 34, 47, 55, 60] {
        page.slide_to(tick);
        check_page_at(&mut page, &recording, tick);
        check_holes_and_predicted_at(&mut page, &recording, tick);
        let (_dir, game) = game_at(&recording, tick);
        let s = game.streaming().unwrap();
        with_holes += usize::from(s.holes().0 > 0);
        most = most.max((s.holes().0, tick));
        with_predicted += usize::from(!s.predicted().unwrap().is_empty());
    }
    for id in ["legend-holes", "legend-predicted"] {
        let hidden = format!("document.getElementById('{id}').hidden");
        assert_eq!(page.eval(&hidden), json!(false), "{id}");
    }
    assert!(with_holes >= 3, "only {with_holes} ticks with holes");
    assert!(
        with_predicted >= 3,
        "only {with_predicted} ticks with predictions"
    );
    // The screenshot at the tick with the most holes.
    page.slide_to(most.1);
    std::fs::write(
        chromium::target_dir().join("view-lookahead.png"),
        page.screenshot(),
    )
    .unwrap();
    eprintln!("view-lookahead.png: tick {} with {} holes", most.1, most.0);
}

// ---- docs/reference/district.md#streamed-entities: live entities ----

const PLAYER_RGB: [u64; 3] = [0xff, 0x4f, 0xd8];
const VEHICLE_RGB: [u64; 3] = [0x3a, 0xd7, 0xff];
const DISTRICT_RGB: [u64; 3] = [0xd9, 0xd9, 0xd9];
const ENTITY_RGB: [u64; 3] = [0x7f, 0x8c, 0x99];
/// A district entity whose id and data are HTML: the page shows them as text.
const HOSTILE_ID: &str = "<img src=x onerror=\"document.title='owned'\">";

/// A district scene: a hero riding a cart, a free boat, a sign, and district entities (a well,
/// a crate, one with HTML in its id and data, and one far away that stays stored).
fn district_recording(dir: &Path) -> Recording {
    let lines = [
        json!({"id": "well", "tags": ["prop"], "position": {"x": 10, "z": 28}}),
        json!({"id": "crate1", "tags": ["crate"], "position": {"x": 56, "z": 20}, "data": {"loot": ["rope"]}}),
        json!({"id": HOSTILE_ID, "position": {"x": 28, "z": 56}, "data": {"note": "<b>bold</b>"}}),
        json!({"id": "far", "position": {"x": 300, "z": 10}}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(dir.join("d.jsonl"), text).unwrap();
    let scene = json!({
        "kits": [
            {"id": "game.engine"},
            {"id": "world.ground"},
            {"id": "world.streaming", "config": {"chunkSize": 32, "radius": 1, "budgetMs": 4}},
            {"id": "world.district", "config": {"districts": ["d.jsonl"]}}
        ],
        "entities": [
            {"id": "hero", "tags": ["player"], "position": {"x": 4, "z": 4}, "rides": "cart"},
            {"id": "cart", "tags": ["vehicle"], "position": {"x": 20, "z": 12}},
            {"id": "boat", "tags": ["vehicle"], "position": {"x": 50, "z": 50}},
            {"id": "sign", "position": {"x": 40, "z": 6}}
        ],
        "control": "hero"
    });
    let path = dir.join("district.json");
    std::fs::write(&path, scene.to_string()).unwrap();
    let lines = [
        json!({"tick": 3, "do": "move", "entity": "boat", "to": {"x": -20, "z": 40}}),
        json!({"tick": 4, "do": "set", "entity": "crate1", "data": {"loot": []}}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let inputs = Inputs::parse(&text, "district.inputs.jsonl").unwrap();
    Recording::record(&path, &inputs, 6).unwrap()
}

#[test]
fn the_frames_of_a_district_run_carry_its_entities_and_counts() {
    let dir = tempfile::tempdir().unwrap();
    let recording = district_recording(dir.path());
    assert_eq!(recording.districts.len(), 1);
    let data = check_frames_against_the_engine(&recording);
    let kinds: BTreeSet<String> = data
        .frames
        .iter()
        .flat_map(|f| &f.entities)
        .map(|e| e[1].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(kinds, ["d", "e", "p", "v"].map(String::from).into());
    assert!(data.frames.iter().any(|f| f.district.is_some()));
    // The town example too.
    let town = record_example("town", Some(8));
    check_frames_against_the_engine(&town);
}

/// The page shows every live entity of `tick` where it stands, in its kind's colour, and the
/// counts the state has.
fn check_entities_at(page: &mut chromium::Page<'_>, recording: &Recording, tick: u64) {
    let (_dir, game) = game_at(recording, tick);
    let streaming = game.streaming().unwrap();
    let size = streaming.chunk_size();
    let state = state_with_entities(&game);
    let entities = state["_entities"].as_object().unwrap();
    let count = |k: &str| entities.values().filter(|e| e[2] == k).count();
    let district = state["district"].clone();
    let expected = format!(
        "live {} (players {} · vehicles {} · district {} · other {}) · district kit: live {}, stored {}",
        entities.len(),
        count("p"),
        count("v"),
        count("d"),
        count("e"),
        district["live"],
        district["stored"]
    );
    assert_eq!(
        page.eval("document.getElementById('entity-counts').textContent"),
        json!(expected),
        "tick {tick}"
    );
    assert_eq!(
        page.eval("Number(document.getElementById('grid').dataset.entitiesDrawn)"),
        json!(entities.len())
    );
    let cell = page
        .eval("Number(document.getElementById('grid').dataset.cell)")
        .as_f64()
        .unwrap();
    let reach = ((cell * 0.3).clamp(3.0, 10.0) + 3.0) / cell * size;
    let foci: Vec<[f64; 2]> = streaming.foci().iter().map(|f| [f.x, f.z]).collect();
    let mut checked = BTreeSet::new();
    let at: Vec<(String, [f64; 2], String)> = entities
        .iter()
        .map(|(id, e)| {
            (
                id.clone(),
                [e[0].as_f64().unwrap(), e[1].as_f64().unwrap()],
                e[2].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let positions: Vec<[f64; 2]> = at.iter().map(|a| a.1).collect();
    let pixels = pixels_at_metres(page, &positions, size);
    for ((id, p, kind), rgb) in at.iter().zip(pixels) {
        let near = |q: &[f64; 2]| (q[0] - p[0]).abs() <= reach && (q[1] - p[1]).abs() <= reach;
        if foci.iter().any(near) || positions.iter().filter(|q| near(q)).count() > 1 {
            continue; // another marker covers it
        }
        let colour = match kind.as_str() {
            "p" => PLAYER_RGB,
            "v" => VEHICLE_RGB,
            "d" => DISTRICT_RGB,
            _ => ENTITY_RGB,
        };
        assert_eq!(rgb, colour, "{id} ({kind}) at {p:?}, tick {tick}");
        checked.insert(kind.clone());
    }
    assert!(checked.len() >= 3, "tick {tick}: only {checked:?} checked");
}

#[test]
fn entities_are_drawn_where_they_stand_in_chromium() {
    let Some(mut browser) = chromium::chromium() else {
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let recording = district_recording(scratch.path());
    let (_dir, file) = write_page(&recording, "district");
    let mut page = browser.page(1280, 1000);
    page.open(&file, READY);
    let start = first_tick_with_a_loaded_chunk(&recording);
    check_page_at(&mut page, &recording, start);
    check_entities_at(&mut page, &recording, start);
    // No scheduling key (docs/reference/config.md#outputs-that-appear-only-when-used): no hole or
    // prediction in the legend.
    for id in ["legend-holes", "legend-predicted"] {
        let hidden = format!("document.getElementById('{id}').hidden");
        assert_eq!(page.eval(&hidden), json!(true), "{id}");
    }
    for tick in 2..=6 {
        page.slide_to(tick);
        check_page_at(&mut page, &recording, tick);
        check_entities_at(&mut page, &recording, tick);
    }
    // The pointer over the entity whose id is HTML: the detail panel shows it as text.
    let (_dir, game) = game_at(&recording, 6);
    let hostile = game
        .engine()
        .world()
        .get(&world_streaming::host::EntityId::new(HOSTILE_ID))
        .expect("live at tick 6")
        .position;
    page.eval(&format!(
        "(() => {{ const c = document.getElementById('grid'); const d = c.dataset; \
         const r = c.getBoundingClientRect(); const cell = Number(d.cell); \
         const px = Number(d.ox) + ({x} / 32 - Number(d.originX)) * cell; \
         const pz = Number(d.oz) + ({z} / 32 - Number(d.originZ)) * cell; \
         c.dispatchEvent(new MouseEvent('mousemove', {{ clientX: r.left + px * r.width / c.width, \
           clientY: r.top + pz * r.height / c.height, bubbles: true }})); }})()",
        x = hostile.x,
        z = hostile.z
    ));
    let detail =
        page.eval("Array.from(document.querySelectorAll('#detail dd')).map((d) => d.textContent)");
    assert_eq!(detail[0], json!(HOSTILE_ID), "{detail}");
    assert_eq!(detail[1], json!("district entity"), "{detail}");
    assert_eq!(detail[4], json!(r#"{"note":"<b>bold</b>"}"#), "{detail}");
    assert_eq!(
        page.eval("document.querySelectorAll('img, b').length"),
        json!(0)
    );
    assert_ne!(page.eval("document.title"), json!("owned"));
    std::fs::write(
        chromium::target_dir().join("view-district.png"),
        page.screenshot(),
    )
    .unwrap();
}
