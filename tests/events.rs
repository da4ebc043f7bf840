//! A kit owns its vocabulary (issue 42, point 2): every event a kit emits reads back through
//! that kit's typed reader, and the reader's typed value writes the same name and the same JSON,
//! byte for byte, over the example scenes; an event of no kit reads as nothing through every
//! reader; and no kit's event name is written twice in `src/`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use world_streaming::files::inputs::Inputs;
use world_streaming::game::Game;
use world_streaming::host::{Event, EventData};
use world_streaming::kits::builtin_catalog;
use world_streaming::kits::district::{events as district, DistrictEvent};
use world_streaming::kits::nav::{events as nav, NavEvent};
use world_streaming::kits::streaming::{events as streaming, StreamingEvent};
use world_streaming::kits::terrain::{events as terrain, TerrainEvent};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The kits' vocabularies: each kit with its event names.
fn vocabularies() -> [(&'static str, &'static [&'static str]); 4] {
    [
        ("world.streaming", streaming::NAMES),
        ("world.terrain", terrain::NAMES),
        ("world.district", district::NAMES),
        ("world.nav", nav::NAMES),
    ]
}

/// What `event` reads back as, through each kit's reader: the kit and the name and JSON the
/// typed value writes. In a `vertical` world (docs/vertical.md#chunk-positions) a section's
/// events write `y` even when it is 0: [`streaming::chunk_event_data`] with `vertical` true is
/// the writer there, `StreamingEvent::data` the flat world's.
fn read_back(event: &Event, vertical: bool) -> Vec<(&'static str, &'static str, EventData)> {
    let mut read = Vec::new();
    if let Some(e) = StreamingEvent::from_event(event) {
        let data = match e {
            StreamingEvent::ChunkLoaded(c)
            | StreamingEvent::ChunkUnloaded(c)
            | StreamingEvent::ChunkComplete(c)
            | StreamingEvent::ChunkIncomplete(c)
                if vertical =>
            {
                streaming::chunk_event_data(c, true)
            }
            _ => e.data(),
        };
        read.push(("world.streaming", e.name(), data));
    }
    if let Some(e) = TerrainEvent::from_event(event) {
        read.push(("world.terrain", e.name(), e.data()));
    }
    if let Some(e) = DistrictEvent::from_event(event) {
        read.push(("world.district", e.name(), e.data()));
    }
    if let Some(e) = NavEvent::from_event(event) {
        read.push(("world.nav", e.name(), e.data()));
    }
    read
}

/// Runs `scene` (with its inputs file, if any) a few ticks past its last input; its events.
fn run(scene: &Path, dir: &Path) -> Vec<Event> {
    let mut json: Value =
        serde_json::from_str(&std::fs::read_to_string(scene).unwrap()).expect("scene JSON");
    // A world directory goes to a directory of the test's own (never beside the example).
    for kit in json["kits"].as_array_mut().into_iter().flatten() {
        if let Some(config) = kit["config"].as_object_mut() {
            if config.contains_key("worldDir") {
                config.insert("worldDir".into(), dir.to_str().unwrap().into());
            }
        }
    }
    let name = scene.file_name().unwrap().to_str().unwrap();
    let base = scene.parent().unwrap();
    let mut game = Game::from_scene_text(&json.to_string(), name, base, &builtin_catalog())
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let inputs_file = scene.with_extension("inputs.jsonl");
    let inputs = if inputs_file.exists() {
        Inputs::read(&inputs_file).unwrap_or_else(|e| panic!("{name}: {e:?}"))
    } else {
        Inputs::parse("", "none.jsonl").unwrap()
    };
    let last = std::fs::read_to_string(&inputs_file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok()?["tick"].as_u64())
        .max()
        .unwrap_or(0);
    game.run(&inputs, last.max(60) + 10)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let events = game.engine().events().to_vec();
    game.close().unwrap_or_else(|e| panic!("{name}: {e}"));
    events
}

#[test]
fn every_kits_event_reads_back_through_its_reader_and_writes_the_same_json() {
    let dir = std::env::temp_dir().join(format!("ws-events-{}", std::process::id()));
    let mut scenes: Vec<PathBuf> = std::fs::read_dir(root().join("examples/scenes"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    scenes.sort();
    assert!(scenes.len() >= 10, "{scenes:?}");
    let owner: BTreeMap<&str, &str> = vocabularies()
        .into_iter()
        .flat_map(|(kit, names)| names.iter().map(move |n| (*n, kit)))
        .collect();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for scene in &scenes {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let text = std::fs::read_to_string(scene).unwrap();
        let vertical = serde_json::from_str::<Value>(&text).unwrap()["kits"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|k| k["config"].get("vertical").is_some());
        for event in run(scene, &dir) {
            let read = read_back(&event, vertical);
            let what = format!(
                "{} {}: {}",
                scene.display(),
                event.event,
                event.data.to_value()
            );
            match owner.get(&*event.event) {
                Some(kit) => {
                    assert_eq!(read.len(), 1, "{what}: read by {read:?}");
                    let (by, name, data) = &read[0];
                    assert_eq!(by, kit, "{what}");
                    assert_eq!(*name, event.event, "{what}");
                    assert_eq!(
                        serde_json::to_string(data).unwrap(),
                        serde_json::to_string(&event.data).unwrap(),
                        "{what}"
                    );
                    *seen.entry(event.event.to_string()).or_default() += 1;
                }
                None => assert!(read.is_empty(), "{what}: read by {read:?}"),
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    // The scenes reach most of the vocabulary (errors and refusals have tests of their own).
    for name in [
        streaming::CHUNK_LOADED,
        streaming::CHUNK_UNLOADED,
        streaming::LOD_LOADED,
        streaming::LOD_UNLOADED,
        terrain::TERRAIN_BUILT,
        terrain::TERRAIN_LOD_BUILT,
        district::MATERIALISED,
        district::STORED,
        nav::NAV_PATH,
    ] {
        assert!(seen.contains_key(name), "{name} not seen: {seen:?}");
    }
}

#[test]
fn a_built_hash_reaches_the_reader_as_the_number_it_was() {
    let chunk = world_streaming::grid::ChunkPos::new(-4, 11);
    for hash in [0, 1, 0x9d01_eaa5_47c9_a46c, u64::MAX] {
        let event = Event {
            tick: 1,
            event: terrain::TERRAIN_BUILT.into(),
            data: TerrainEvent::Built { chunk, hash }.data(),
        };
        assert_eq!(TerrainEvent::built(&event), Some((chunk, hash)));
        assert_eq!(event.data.hash(), Some(hash));
        assert_eq!(event.data["hash"], format!("{hash:016x}"));
    }
}

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a source file: without its unit tests (from `#[cfg(test)]` on, as every file
/// keeps them last) and without comment lines.
fn code(text: &str) -> String {
    let end = text.find("#[cfg(test)]\nmod tests").unwrap_or(text.len());
    text[..end]
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn no_kits_event_name_is_written_twice_in_src() {
    let mut files = Vec::new();
    sources(&root().join("src"), &mut files);
    let files: Vec<(PathBuf, String)> = files
        .into_iter()
        .filter(|p| !p.ends_with("capi/testing.rs")) // test helpers only
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (p, code(&text))
        })
        .collect();
    for (kit, names) in vocabularies() {
        for name in names {
            let quoted = format!("\"{name}\"");
            let mut written = Vec::new();
            for (path, code) in &files {
                for line in code.lines().filter(|l| l.contains(&quoted)) {
                    // A variable of the same name is another namespace (`world.lod.loaded`,
                    // `world.district.stored` are both).
                    if !line.contains("const VAR_") {
                        written.push(format!("{}: {}", path.display(), line.trim()));
                    }
                }
            }
            assert_eq!(
                written.len(),
                1,
                "{kit}'s {name} must be written once, in its events.rs: {written:#?}"
            );
            assert!(
                written[0].contains(&format!("kits/{}/events.rs", &kit["world.".len()..])),
                "{name}: {written:?}"
            );
        }
    }
}

#[test]
fn the_viewer_layers_name_only_events_of_the_kits() {
    let all: Vec<&str> = vocabularies()
        .iter()
        .flat_map(|(_, n)| n.iter().copied())
        .collect();
    let mut files = Vec::new();
    for kit in std::fs::read_dir(root().join("src/kits")).unwrap() {
        let js = kit.unwrap().path().join("view.js");
        if js.exists() {
            files.push(js);
        }
    }
    let mut named = 0;
    for js in files {
        let text = std::fs::read_to_string(&js).unwrap();
        for quoted in text.split('"').skip(1).step_by(2) {
            if quoted.starts_with("world.") && quoted.matches('.').count() >= 2 {
                assert!(all.contains(&quoted), "{}: {quoted}", js.display());
                named += 1;
            }
        }
    }
    assert!(named >= 4, "{named}");
}
