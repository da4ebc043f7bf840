//! Edits and the world directory (docs/reference/terrain.md#edit-refusals): edits and their
//! refusals, modified vs dirty, write back, the round trip through region files and through a game
//! save in a fresh process, damaged files, stamps, and random edit/flush/release/reload sequences
//! against a model.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use assert_cmd::Command;
use common::{apply, c, game, scene_error, Rng};
use serde_json::{json, Value};
use world_streaming::game::Game;
use world_streaming::grid::{ChunkPos, Position};
use world_streaming::kits::terrain::region::{self, Diff, RegionPos};
use world_streaming::kits::terrain::store;
use world_streaming::kits::terrain::{Generator, TerrainService, TERRAIN};

const SEED: u64 = 99;

fn scene(radius: u32, terrain: Value) -> Value {
    json!({
        "kits": [
            { "id": "world.ground" },
            { "id": "world.streaming", "config": { "chunkSize": 32, "radius": radius, "budgetMs": 64 } },
            { "id": "world.terrain", "config": terrain }
        ],
        "entities": [
            { "id": "hero", "tags": ["player"], "position": { "x": 16, "z": 16 } }
        ],
        "control": "hero"
    })
}

fn terrain_config(dir: Option<&Path>, flush: u64) -> Value {
    let mut t = json!({ "seed": SEED, "workers": 2, "flushEveryTicks": flush });
    if let Some(d) = dir {
        t["worldDir"] = json!(d.to_str().unwrap());
    }
    t
}

fn ready(radius: u32, dir: Option<&Path>, flush: u64) -> Game {
    let mut g = game(&scene(radius, terrain_config(dir, flush)));
    g.run_until_ready("hero", 100).unwrap();
    g
}

fn terrain(g: &Game) -> std::rc::Rc<dyn TerrainService> {
    g.engine().service::<dyn TerrainService>(TERRAIN).unwrap()
}

fn baseline(chunk: ChunkPos) -> world_streaming::kits::terrain::ChunkData {
    Generator::new(SEED, 32, 32.0).generate(chunk)
}

/// The world position of cell `(i, j)` of `chunk` (32 cells of 1 m).
fn cell_pos(chunk: ChunkPos, i: u32, j: u32) -> Position {
    Position::new(
        chunk.x as f64 * 32.0 + f64::from(i) + 0.5,
        chunk.z as f64 * 32.0 + f64::from(j) + 0.5,
    )
}

/// Moves the hero to the centre of `chunk` and ticks until everything around it is built.
fn go(g: &mut Game, chunk: ChunkPos) {
    let tick = g.engine().tick_count() + 1;
    let (x, z) = (chunk.x as f64 * 32.0 + 16.0, chunk.z as f64 * 32.0 + 16.0);
    apply(
        g,
        json!({"tick": tick, "do": "move", "entity": "hero", "to": {"x": x, "z": z}}),
    );
    g.tick();
    g.run_until_ready("hero", 100).unwrap();
}

/// What the directory stores once the save thread has done what it was sent (a write back
/// that nobody waits for lands a moment later; this waits up to 20 s for `want`).
fn stored_eventually(dir: &Path, want: &[ChunkPos]) -> BTreeMap<ChunkPos, Diff> {
    for _ in 0..2000 {
        // The save thread may remove a region file between the listing and its read (an empty
        // region goes): that read fails, and the next look sees the directory without it.
        if let Some(s) = try_stored(dir) {
            if s.keys().copied().eq(want.iter().copied()) {
                return s;
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    stored(dir)
}

/// Every file of `dir` with its bytes, by name.
fn files_of(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            (name, std::fs::read(e.path()).unwrap())
        })
        .collect()
}

/// What the directory stores: chunk → diff.
fn stored(dir: &Path) -> BTreeMap<ChunkPos, Diff> {
    try_stored(dir).unwrap_or_else(|| panic!("{} could not be read", dir.display()))
}

/// [`stored`], or `None` if the directory could not be read (a file gone meanwhile).
fn try_stored(dir: &Path) -> Option<BTreeMap<ChunkPos, Diff>> {
    let mut out = BTreeMap::new();
    for r in store::read_dir(dir).ok()? {
        assert_eq!(r.decoded.damage, vec![], "{}", r.file);
        out.extend(r.decoded.chunks.into_iter().map(|(c, (_, d))| (c, d)));
    }
    Some(out)
}

/// Applies an edit stamped with the next tick.
fn edit_next(g: &mut Game, at: Position, height: u16, material: Option<u8>) {
    let tick = g.engine().tick_count() + 1;
    apply(g, edit_line(tick, at, height, material));
}

fn edit_line(tick: u64, at: Position, height: u16, material: Option<u8>) -> Value {
    let mut l = json!({"tick": tick, "do": "edit", "at": {"x": at.x, "z": at.z}, "height": height});
    if let Some(m) = material {
        l["material"] = json!(m);
    }
    l
}

#[test]
fn an_edit_changes_the_cell_and_tells_builders_once_a_tick() {
    let mut g = ready(1, None, 0);
    let t = terrain(&g);
    let here = c(0, 0);
    let before = t.chunk(here).unwrap().hash();
    let tick = g.engine().tick_count() + 1;
    // Two edits in one chunk, one of them on its east edge: (0,0) and (1,0) change, once each.
    apply(&mut g, edit_line(tick, cell_pos(here, 3, 4), 1234, Some(4)));
    apply(&mut g, edit_line(tick, cell_pos(here, 31, 9), 777, None));
    assert_eq!(t.height_at(cell_pos(here, 3, 4)), Some(1234));
    assert_eq!(t.chunk(here).unwrap().material(3, 4), 4);
    assert_eq!(
        t.chunk(here).unwrap().material(31, 9),
        baseline(here).material(31, 9)
    );
    assert_ne!(t.chunk(here).unwrap().hash(), before);
    assert!(t.is_modified(here) && !t.is_modified(c(1, 0)));
    g.tick();
    let changed: Vec<(u64, Value)> = common::events_named(&g, "world.terrain.changed");
    assert_eq!(
        changed,
        vec![
            (tick, json!({"x": 0, "z": 0})),
            (tick, json!({"x": 1, "z": 0}))
        ]
    );
    // A corner cell touches three neighbours.
    let tick = g.engine().tick_count() + 1;
    apply(&mut g, edit_line(tick, cell_pos(here, 0, 0), 5, None));
    g.tick();
    let corner: Vec<Value> = common::events_named(&g, "world.terrain.changed")
        .into_iter()
        .filter(|(t, _)| *t == tick)
        .map(|(_, d)| d)
        .collect();
    assert_eq!(
        corner,
        vec![
            json!({"x": -1, "z": -1}),
            json!({"x": 0, "z": -1}),
            json!({"x": -1, "z": 0}),
            json!({"x": 0, "z": 0})
        ]
    );
    // Setting a cell to what it holds changes nothing.
    let n = g.engine().events().len();
    edit_next(&mut g, cell_pos(here, 3, 4), 1234, Some(4));
    g.tick();
    assert!(g.engine().events()[n..]
        .iter()
        .all(|e| e.event != "world.terrain.changed"));
}

#[test]
fn an_edit_of_a_chunk_not_built_is_refused_with_an_event_and_changes_nothing() {
    let mut g = game(&scene(1, terrain_config(None, 0)));
    g.tick(); // chunks loaded at tick 1, built at tick 3
    let t = terrain(&g);
    apply(&mut g, edit_line(2, cell_pos(c(0, 0), 1, 1), 9, None));
    apply(&mut g, edit_line(2, cell_pos(c(40, 0), 1, 1), 9, None));
    assert_eq!(
        common::events_named(&g, "world.terrain.edit.refused"),
        vec![
            (2, json!({"x": 0, "z": 0, "reason": "not built"})),
            (2, json!({"x": 40, "z": 0, "reason": "not loaded"}))
        ]
    );
    g.tick();
    g.tick();
    assert_eq!(
        t.chunk(c(0, 0)).unwrap().hash(),
        baseline(c(0, 0)).hash(),
        "the refused edit left nothing behind"
    );
    assert!(!t.is_modified(c(0, 0)));
    // The Rust API refuses the same way, and says why.
    let err = g
        .edit(cell_pos(c(40, 0), 0, 0), 1, None)
        .unwrap_err()
        .to_string();
    assert!(err.contains("not loaded"), "{err}");
}

#[test]
fn lua_mods_edit_and_hear_refusals() {
    let mut g = ready(1, None, 0);
    g.add_mod(
        "digger.lua",
        r#"
        on("world.chunk.unload", function(e)
          local ok, why = terrain.edit({x = 0.5, z = 0.5}, 4242, 3)
          log("edit", tostring(ok), tostring(why), tostring(terrain.isModified(0, 0)))
          local ok2, why2 = terrain.edit({x = 9000, z = 0}, 1)
          log("far", tostring(ok2), why2)
        end)
        "#,
    )
    .unwrap();
    apply(
        &mut g,
        json!({"tick": 20, "do": "move", "entity": "hero", "to": {"x": 16 + 96, "z": 16}}),
    );
    g.tick();
    let log: Vec<String> = g.take_mod_log().into_iter().map(|l| l.message).collect();
    assert!(log.iter().any(|l| l == "edit\ttrue\tnil\ttrue"), "{log:?}");
    assert!(log.iter().any(|l| l == "far\tfalse\tnot loaded"), "{log:?}");
    assert!(!common::events_named(&g, "world.terrain.edit.refused").is_empty());
}

#[test]
fn a_neighbour_rebuild_never_writes_a_chunk_and_a_modified_chunk_is_written_without_one() {
    let dir = tempfile::tempdir().unwrap();
    let mut g = ready(1, Some(dir.path()), 10);
    // An edge edit: (0,0) modified, (1,0) only dirty.
    edit_next(&mut g, cell_pos(c(0, 0), 31, 5), 3, Some(0));
    g.tick();
    assert_eq!(common::events_named(&g, "world.terrain.changed").len(), 2);
    assert!(
        stored(dir.path()).is_empty(),
        "nothing is written before the flush tick"
    );
    while !g.engine().tick_count().is_multiple_of(10) {
        g.tick();
    }
    // Nothing is dirty any more, yet the modified chunk is written; the neighbour is not.
    let s = stored_eventually(dir.path(), &[c(0, 0)]);
    assert_eq!(s.keys().copied().collect::<Vec<_>>(), vec![c(0, 0)]);
    assert_eq!(s[&c(0, 0)].cells.len(), 1);
    // Restoring the cell's baseline makes the chunk unmodified: its record goes at the flush.
    let base = baseline(c(0, 0));
    edit_next(
        &mut g,
        cell_pos(c(0, 0), 31, 5),
        base.height(31, 5),
        Some(base.material(31, 5)),
    );
    assert!(!terrain(&g).is_modified(c(0, 0)));
    for _ in 0..10 {
        g.tick();
    }
    assert!(stored_eventually(dir.path(), &[]).is_empty());
    // An empty region is removed: only the lock file is left.
    assert_eq!(
        files_of(dir.path()).into_keys().collect::<Vec<_>>(),
        [store::LOCK_FILE]
    );
}

#[test]
fn a_released_modified_chunk_is_written_back_and_comes_back_edited() {
    let dir = tempfile::tempdir().unwrap();
    let mut g = ready(1, Some(dir.path()), 0);
    let tick = g.engine().tick_count() + 1;
    apply(
        &mut g,
        edit_line(tick, cell_pos(c(-1, -1), 7, 7), 60000, Some(4)),
    );
    let edited = terrain(&g).chunk(c(-1, -1)).unwrap().hash();
    apply(
        &mut g,
        json!({"tick": tick, "do": "move", "entity": "hero", "to": {"x": 16 + 320, "z": 16}}),
    );
    g.tick();
    g.tick();
    assert!(!terrain(&g).is_built(c(-1, -1)));
    // Released: written back at once (flushEveryTicks is 0), before any reload asks for it.
    let s = stored_eventually(dir.path(), &[c(-1, -1)]);
    assert_eq!(s.keys().copied().collect::<Vec<_>>(), vec![c(-1, -1)]);
    let tick = g.engine().tick_count() + 1;
    apply(
        &mut g,
        json!({"tick": tick, "do": "move", "entity": "hero", "to": {"x": 16, "z": 16}}),
    );
    g.run_until_ready("hero", 100).unwrap();
    assert_eq!(terrain(&g).chunk(c(-1, -1)).unwrap().hash(), edited);
    assert!(terrain(&g).is_modified(c(-1, -1)));
    let built: Vec<(u64, Value)> = common::events_named(&g, "world.terrain.built")
        .into_iter()
        .filter(|(_, d)| d["x"] == -1 && d["z"] == -1)
        .collect();
    assert_eq!(
        built.last().unwrap().1["hash"],
        json!(format!("{edited:016x}"))
    );
}

/// The edits of each chunk, in order: `(i, j, height, material)`.
type Model = BTreeMap<ChunkPos, Vec<(u32, u32, u16, u8)>>;

/// 1 000 random edits over 200 chunks: the input lines and the model.
fn thousand_edits(rng: &mut Rng) -> (Vec<Value>, Model) {
    let mut chunks: Vec<ChunkPos> = (-7..=7)
        .flat_map(|z| (-7..=7).map(move |x| c(x, z)))
        .collect();
    // Keep 200 of the 225.
    while chunks.len() > 200 {
        let k = rng.below(chunks.len() as u64) as usize;
        chunks.remove(k);
    }
    let mut lines = Vec::new();
    let mut model = Model::new();
    for n in 0..1000 {
        // Every chunk gets at least one edit.
        let chunk = if n < 200 {
            chunks[n]
        } else {
            chunks[rng.below(200) as usize]
        };
        let (i, j) = (rng.below(32) as u32, rng.below(32) as u32);
        let (h, m) = (rng.below(65536) as u16, rng.below(5) as u8);
        lines.push(edit_line(20, cell_pos(chunk, i, j), h, Some(m)));
        model.entry(chunk).or_default().push((i, j, h, m));
    }
    (lines, model)
}

#[test]
fn the_world_round_trips_through_region_files_and_a_save_in_fresh_processes() {
    let tmp = tempfile::tempdir().unwrap();
    let world = tmp.path().join("world");
    let scene_path = tmp.path().join("scene.json");
    std::fs::write(
        &scene_path,
        scene(7, terrain_config(Some(&world), 600)).to_string(),
    )
    .unwrap();
    let mut rng = Rng(2026);
    let (mut lines, model) = thousand_edits(&mut rng);
    let save = tmp.path().join("save.json");
    lines.push(json!({"tick": 21, "do": "save", "path": save.to_str().unwrap()}));
    let inputs = tmp.path().join("edits.jsonl");
    std::fs::write(
        &inputs,
        lines.iter().map(|l| format!("{l}\n")).collect::<String>(),
    )
    .unwrap();
    Command::cargo_bin("world-streaming")
        .unwrap()
        .args(["run", scene_path.to_str().unwrap(), "--inputs"])
        .arg(&inputs)
        .args(["--ticks", "25", "--quiet"])
        .assert()
        .success();
    // What the terrain must be: the baseline with the model's edits, in edit order.
    let mut expected = BTreeMap::new();
    let mut modified = Vec::new();
    for cz in -7..=7 {
        for cx in -7..=7 {
            let chunk = c(cx, cz);
            let base = baseline(chunk);
            let mut data = base.clone();
            for &(i, j, h, m) in model.get(&chunk).map(Vec::as_slice).unwrap_or(&[]) {
                data.set(i, j, h, m);
            }
            if data != base {
                modified.push(chunk);
            }
            expected.insert(chunk, format!("{:016x}", data.hash()));
        }
    }
    // Only modified chunks are on disk, each exactly as the model says.
    let on_disk = stored(&world);
    assert_eq!(on_disk.keys().copied().collect::<Vec<_>>(), modified);
    assert!(modified.len() >= 195, "{}", modified.len());
    for (chunk, diff) in &on_disk {
        let mut data = baseline(*chunk);
        data.apply(diff);
        assert_eq!(format!("{:016x}", data.hash()), expected[chunk]);
    }
    // A fresh process on the same world directory builds every chunk with its edits.
    let events = tmp.path().join("events.jsonl");
    Command::cargo_bin("world-streaming")
        .unwrap()
        .args([
            "run",
            scene_path.to_str().unwrap(),
            "--ticks",
            "12",
            "--events",
        ])
        .arg(&events)
        .assert()
        .success();
    let built: BTreeMap<ChunkPos, String> = std::fs::read_to_string(&events)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["event"] == "world.terrain.built")
        .map(|e| {
            let d = &e["data"];
            (
                c(d["x"].as_i64().unwrap(), d["z"].as_i64().unwrap()),
                d["hash"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(built, expected);
    // And a fresh process loads the game save (its built hashes checked against the world
    // directory), then goes on.
    let load = tmp.path().join("load.jsonl");
    std::fs::write(
        &load,
        format!(
            "{}\n",
            json!({"tick": 1, "do": "load", "path": save.to_str().unwrap()})
        ),
    )
    .unwrap();
    Command::cargo_bin("world-streaming")
        .unwrap()
        .args(["run", scene_path.to_str().unwrap(), "--inputs"])
        .arg(&load)
        .args(["--ticks", "30", "--quiet"])
        .assert()
        .success();
}

#[test]
fn a_save_without_a_world_directory_carries_the_edits_and_continues_exactly() {
    let tmp = tempfile::tempdir().unwrap();
    let sc = scene(1, terrain_config(None, 0));
    let lines = vec![
        edit_line(8, cell_pos(c(0, 0), 1, 2), 100, None),
        edit_line(8, cell_pos(c(1, 1), 31, 31), 200, Some(1)),
        // Released and reloaded later: the edits live in the save thread's memory meanwhile.
        json!({"tick": 9, "do": "move", "entity": "hero", "to": {"x": 16 + 320, "z": 16}}),
        json!({"tick": 15, "do": "move", "entity": "hero", "to": {"x": 16, "z": 16}}),
        edit_line(19, cell_pos(c(0, 0), 5, 5), 300, None),
    ];
    let mut whole = game(&sc);
    common::run(&mut whole, &lines, 30);
    // (0,0), then (1,1) (its corner neighbours are not loaded), then (0,0) again.
    assert_eq!(
        common::events_named(&whole, "world.terrain.changed").len(),
        3
    );
    for n in [7, 8, 9, 14, 19, 20] {
        let (g, resumed) = common::resumed_from_save(&sc, tmp.path(), &lines, n, 30);
        assert_eq!(
            resumed,
            common::events_after(&whole, n),
            "saved after tick {n}"
        );
        let section = &g.engine().save_document().kits["world.terrain"];
        assert!(section.get("worldDir").is_none());
        assert_eq!(
            terrain(&g).chunk(c(0, 0)).unwrap().hash(),
            terrain(&whole).chunk(c(0, 0)).unwrap().hash()
        );
    }
    // A save between an edit and its tick keeps the chunk dirty: `changed` still comes.
    let save = tmp.path().join("dirty.save.json");
    let mut with_save = lines.clone();
    with_save.insert(
        2,
        json!({"tick": 8, "do": "save", "path": save.to_str().unwrap()}),
    );
    let mut g = game(&sc);
    common::run(&mut g, &with_save, 30);
    let section = &serde_json::from_str::<Value>(&std::fs::read_to_string(&save).unwrap()).unwrap()
        ["kits"]["world.terrain"];
    assert_eq!(
        section["dirty"],
        json!([{"x": 0, "z": 0}, {"x": 1, "z": 1}]),
        "{section}"
    );
    assert_eq!(section["edits"].as_array().unwrap().len(), 2, "{section}");
    let mut h = game(&sc);
    let skip = h.engine().events().len();
    h.load(&save).unwrap();
    h.run(&common::inputs_after(&lines, 8), 30).unwrap();
    assert_eq!(
        common::events_from(&h, skip),
        common::events_after(&whole, 7)
    );
}

#[test]
fn damaged_region_files_fall_back_per_chunk_are_copied_aside_and_the_run_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    // Edits in three regions: around chunks (0,0), (-1,-1) and (31, 0)'s neighbour (32, 0).
    let targets = [c(0, 0), c(1, 0), c(-1, -1), c(-2, -1), c(32, 0), c(33, 0)];
    {
        let mut g = game(&scene(1, terrain_config(Some(dir.path()), 0)));
        for (k, t) in targets.iter().enumerate() {
            go(&mut g, *t);
            g.edit(cell_pos(*t, 2, 3), 1000 + k as u16, None).unwrap();
        }
    } // dropped: written back on close
    let before = stored(dir.path());
    let mut sorted = targets.to_vec();
    sorted.sort();
    assert_eq!(before.keys().copied().collect::<Vec<_>>(), sorted);
    let file = |r: RegionPos| dir.path().join(r.file_name());
    let (r00, rm1, r10) = (
        RegionPos::of(c(0, 0)),
        RegionPos::of(c(-1, -1)),
        RegionPos::of(c(32, 0)),
    );
    // Flip a byte in (1,0)'s record; truncate region (-1,-1) inside its last record; garbage in
    // region (1,0)'s header.
    let d = region::decode(&std::fs::read(file(r00)).unwrap(), r00);
    let (_, off, _) = d.entries.iter().find(|e| e.0 == c(1, 0)).copied().unwrap();
    let mut bytes = std::fs::read(file(r00)).unwrap();
    bytes[off as usize + region::RECORD_HEADER_LEN] ^= 0xFF;
    std::fs::write(file(r00), &bytes).unwrap();
    let original_r00 = bytes.clone();
    let bytes = std::fs::read(file(rm1)).unwrap();
    let d = region::decode(&bytes, rm1);
    let (last, off, _) = *d.entries.last().unwrap();
    let truncated = bytes[..off as usize + 5].to_vec();
    std::fs::write(file(rm1), &truncated).unwrap();
    let mut bytes = std::fs::read(file(r10)).unwrap();
    for b in &mut bytes[16..40] {
        *b = 0x5A;
    }
    std::fs::write(file(r10), &bytes).unwrap();
    let garbage = bytes;

    let mut g = game(&scene(1, terrain_config(Some(dir.path()), 0)));
    g.tick();
    let errors = common::events_named(&g, "world.terrain.error");
    let named: Vec<(i64, i64)> = errors
        .iter()
        .map(|(_, d)| (d["x"].as_i64().unwrap(), d["z"].as_i64().unwrap()))
        .collect();
    // Region by region (row order), then in file order.
    assert_eq!(named, vec![(last.x, last.z), (1, 0), (32, 0)]);
    assert!(errors.iter().all(|(t, _)| *t == 1));
    assert!(
        errors[1].1["message"].as_str().unwrap().contains("CRC-32"),
        "{errors:?}"
    );
    // Opening changed nothing on disk.
    let aside = |r: RegionPos| dir.path().join(format!("{}.damaged", r.file_name()));
    assert!(!aside(r00).exists() && !aside(rm1).exists() && !aside(r10).exists());
    // The damaged chunks load as generated; every other keeps its edits (the bad header's
    // records are found by their own magic and checksum). Then each gets one more edit.
    let t = terrain(&g);
    let mut want = BTreeMap::new();
    for chunk in targets {
        go(&mut g, chunk);
        let mut data = baseline(chunk);
        if chunk != c(1, 0) && chunk != last {
            data.apply(&before[&chunk]);
        }
        assert_eq!(t.chunk(chunk).unwrap().hash(), data.hash(), "{chunk}");
        g.edit(cell_pos(chunk, 30, 30), 7, Some(1)).unwrap();
        data.set(30, 30, 7, 1);
        want.insert(chunk, data.hash());
    }
    g.engine().flush().unwrap();
    // Each damaged file was copied aside, byte for byte, before its region was rewritten …
    assert_eq!(std::fs::read(aside(r00)).unwrap(), original_r00);
    assert_eq!(std::fs::read(aside(rm1)).unwrap(), truncated);
    assert_eq!(std::fs::read(aside(r10)).unwrap(), garbage);
    // … and the rewritten files are sound and hold every chunk as it is now.
    let now = stored(dir.path());
    for (chunk, hash) in want {
        let mut data = baseline(chunk);
        data.apply(&now[&chunk]);
        assert_eq!(data.hash(), hash, "{chunk}");
    }
}

#[test]
fn a_world_of_another_seed_is_a_clear_error_not_a_regeneration() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut g = ready(1, Some(dir.path()), 0);
        edit_next(&mut g, cell_pos(c(0, 0), 1, 1), 1, None);
    }
    let files = stored(dir.path());
    assert_eq!(files.len(), 1, "written back on close");
    let mut other = terrain_config(Some(dir.path()), 0);
    other["seed"] = json!(SEED + 1);
    let err = scene_error(&scene(1, other));
    assert!(
        err.contains("seed 99") && err.contains("seed 100") && err.contains("r.0.0.wsr"),
        "{err}"
    );
    assert_eq!(stored(dir.path()), files, "nothing was touched");
}

#[test]
fn a_failed_save_leaves_the_game_as_it_was() {
    let tmp = tempfile::tempdir().unwrap();
    let world = tmp.path().join("world");
    let mut g = ready(1, Some(&world), 0);
    edit_next(&mut g, cell_pos(c(0, 0), 1, 1), 1, None);
    // A file where the world directory was (opening the world created it, for its lock
    // file): the write back fails, so does the save.
    assert_eq!(stored(&world), BTreeMap::new());
    std::fs::remove_dir_all(&world).unwrap();
    std::fs::write(&world, "not a directory").unwrap();
    let save = tmp.path().join("save.json");
    let err = g.save(&save).unwrap_err().to_string();
    assert!(
        err.contains("world.terrain") && err.contains("cannot create the directory"),
        "{err}"
    );
    assert!(!save.exists());
    assert!(terrain(&g).is_modified(c(0, 0)));
    g.tick();
    // Once the directory is back, the next save writes the edit that failed.
    std::fs::remove_file(&world).unwrap();
    std::fs::create_dir(&world).unwrap();
    g.save(&save).unwrap();
    assert_eq!(
        stored(&world).keys().copied().collect::<Vec<_>>(),
        vec![c(0, 0)]
    );
}

/// Random edit / flush / release / reload / restart sequences against a model of the cells.
#[test]
fn random_edit_flush_release_reload_sequences_match_a_model() {
    let cases = common::proptest_cases().clamp(4, 24);
    for case in 0..cases {
        let dir = tempfile::tempdir().unwrap();
        let mut rng = Rng(1000 + u64::from(case));
        let flush = [0, 1, 7][rng.below(3) as usize];
        let mut g = ready(1, Some(dir.path()), flush);
        let mut model: BTreeMap<(ChunkPos, u32, u32), (u16, u8)> = BTreeMap::new();
        let mut at = c(0, 0);
        for _ in 0..40 {
            let tick = g.engine().tick_count() + 1;
            match rng.below(10) {
                0..=5 => {
                    let chunk = c(
                        at.x + rng.below(3) as i64 - 1,
                        at.z + rng.below(3) as i64 - 1,
                    );
                    let (i, j) = (rng.below(32) as u32, rng.below(32) as u32);
                    let base = baseline(chunk);
                    // Sometimes restore the baseline value.
                    let (h, m) = if rng.chance(20) {
                        (base.height(i, j), base.material(i, j))
                    } else {
                        (rng.below(65536) as u16, rng.below(5) as u8)
                    };
                    if g.edit(cell_pos(chunk, i, j), h, Some(m)).is_ok() {
                        model.insert((chunk, i, j), (h, m));
                    }
                }
                6 | 7 => {
                    // Move away (releasing everything) or back.
                    at = if rng.chance(50) {
                        c(0, 0)
                    } else {
                        c(rng.below(3) as i64 * 10, 0)
                    };
                    let p = Position::new(at.x as f64 * 32.0 + 16.0, at.z as f64 * 32.0 + 16.0);
                    apply(
                        &mut g,
                        json!({"tick": tick, "do": "move", "entity": "hero", "to": {"x": p.x, "z": p.z}}),
                    );
                    g.run_until_ready("hero", 100).unwrap();
                }
                8 => {
                    for _ in 0..rng.below(9) {
                        g.tick();
                    }
                }
                _ => {
                    // Close the game and open the world again.
                    drop(g);
                    g = game(&scene(1, terrain_config(Some(dir.path()), flush)));
                    go(&mut g, at);
                }
            }
            // Every built chunk is its baseline with the model's cells.
            let t = terrain(&g);
            for cz in at.z - 1..=at.z + 1 {
                for cx in at.x - 1..=at.x + 1 {
                    let chunk = c(cx, cz);
                    let Some(data) = t.chunk(chunk) else { continue };
                    let mut want = baseline(chunk);
                    for (&(_, i, j), &(h, m)) in model.range((chunk, 0, 0)..=(chunk, 31, 31)) {
                        want.set(i, j, h, m);
                    }
                    assert_eq!(data.hash(), want.hash(), "case {case}: {chunk}");
                    assert_eq!(
                        t.is_modified(chunk),
                        want != baseline(chunk),
                        "case {case}: {chunk}"
                    );
                }
            }
        }
        // After a final write back the directory holds exactly the modified chunks.
        g.engine().flush().unwrap();
        let mut want: BTreeMap<ChunkPos, Diff> = BTreeMap::new();
        for (&(chunk, i, j), &(h, m)) in &model {
            let base = baseline(chunk);
            if (base.height(i, j), base.material(i, j)) != (h, m) {
                want.entry(chunk)
                    .or_default()
                    .cells
                    .insert(j * 32 + i, (h, m));
            }
        }
        assert_eq!(stored(dir.path()), want, "case {case}");
    }
}

#[test]
fn world_dir_is_relative_to_the_scene_and_a_replay_runs_on_a_copy_of_it() {
    let tmp = tempfile::tempdir().unwrap();
    let scenes = tmp.path().join("scenes");
    std::fs::create_dir(&scenes).unwrap();
    let scene_path = scenes.join("scene.json");
    let mut sc = scene(1, terrain_config(None, 0));
    sc["kits"][2]["config"]["worldDir"] = json!("world");
    std::fs::write(&scene_path, sc.to_string()).unwrap();
    let elsewhere = tmp.path().join("cwd");
    std::fs::create_dir(&elsewhere).unwrap();
    let inputs = |name: &str, lines: &[Value]| {
        let p = tmp.path().join(name);
        std::fs::write(
            &p,
            lines.iter().map(|l| format!("{l}\n")).collect::<String>(),
        )
        .unwrap();
        p
    };
    let cli = || {
        let mut c = Command::cargo_bin("world-streaming").unwrap();
        c.current_dir(&elsewhere);
        c
    };
    // A first run leaves one edit in scenes/world (not in the current directory).
    let first = inputs(
        "first.jsonl",
        &[edit_line(6, cell_pos(c(0, 0), 4, 4), 4444, None)],
    );
    cli()
        .arg("run")
        .arg(&scene_path)
        .arg("--inputs")
        .arg(&first)
        .args(["--ticks", "8", "--quiet"])
        .assert()
        .success();
    let world = scenes.join("world");
    assert_eq!(
        stored(&world).keys().copied().collect::<Vec<_>>(),
        vec![c(0, 0)]
    );
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    // A recorded run starts from that world and edits more.
    let second = inputs(
        "second.jsonl",
        &[
            edit_line(6, cell_pos(c(0, 0), 5, 5), 5555, None),
            edit_line(6, cell_pos(c(-1, 0), 5, 5), 5555, None),
        ],
    );
    let rec = tmp.path().join("run.replay.json");
    cli()
        .arg("run")
        .arg(&scene_path)
        .arg("--inputs")
        .arg(&second)
        .args(["--ticks", "10", "--quiet", "--record"])
        .arg(&rec)
        .assert()
        .success();
    let after_run: BTreeMap<ChunkPos, Diff> = stored(&world);
    assert_eq!(after_run.len(), 2);
    let files_before = files_of(&world);
    // The replay starts from the world as the recording found it (one edit), not as it is now
    // (two), and leaves the real directory alone.
    cli().arg("replay").arg(&rec).assert().success();
    let files_after = files_of(&world);
    assert_eq!(files_after, files_before);
    // Removing the world does not change what the replay sees.
    std::fs::remove_dir_all(&world).unwrap();
    cli().arg("replay").arg(&rec).assert().success();
    assert!(!world.exists());
}

#[test]
fn a_save_with_a_world_directory_names_it_and_continues_exactly() {
    let lines = vec![
        edit_line(8, cell_pos(c(0, 0), 1, 2), 100, None),
        edit_line(8, cell_pos(c(1, 1), 31, 31), 200, Some(1)),
        json!({"tick": 9, "do": "move", "entity": "hero", "to": {"x": 16 + 320, "z": 16}}),
        json!({"tick": 15, "do": "move", "entity": "hero", "to": {"x": 16, "z": 16}}),
        edit_line(19, cell_pos(c(0, 0), 5, 5), 300, None),
    ];
    let whole_dir = tempfile::tempdir().unwrap();
    let mut whole = game(&scene(1, terrain_config(Some(whole_dir.path()), 5)));
    common::run(&mut whole, &lines, 30);
    whole.engine().flush().unwrap();
    for n in [7, 8, 9, 14, 19, 20] {
        let tmp = tempfile::tempdir().unwrap();
        let world = tmp.path().join("world");
        let sc = scene(1, terrain_config(Some(&world), 5));
        let (g, resumed) = common::resumed_from_save(&sc, tmp.path(), &lines, n, 30);
        assert_eq!(
            resumed,
            common::events_after(&whole, n),
            "saved after tick {n}"
        );
        let saved: Value = serde_json::from_str(
            &std::fs::read_to_string(tmp.path().join("run.save.json")).unwrap(),
        )
        .unwrap();
        let section = &saved["kits"]["world.terrain"];
        assert_eq!(section["worldDir"], json!(world.to_str().unwrap()));
        assert!(
            section.get("edits").is_none(),
            "written back, not carried: {section}"
        );
        drop(g);
        // The same edits give the same bytes (no timestamps, sorted tables).
        assert_eq!(
            files_of(&world),
            files_of(whole_dir.path()),
            "saved after tick {n}"
        );
    }
}

#[test]
fn a_save_loads_only_into_a_game_on_its_own_world_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let save = tmp.path().join("a.save.json");
    let mut g = ready(1, Some(&a), 0);
    g.edit(cell_pos(c(0, 0), 3, 3), 3, None).unwrap();
    g.save(&save).unwrap();
    // Another directory, and no directory: refused, naming both; nothing changes.
    for other in [Some(b.as_path()), None] {
        let mut h = ready(1, other, 0);
        let before = common::event_lines(&h);
        let err = common::refused_alike(&mut h, &save, common::Alone::NeedsTheGame);
        assert!(
            err.contains("worldDir") && err.contains("this game's is"),
            "{err}"
        );
        assert!(!terrain(&h).is_modified(c(0, 0)));
        h.tick();
        assert!(common::event_lines(&h).starts_with(&before));
    }
    assert_eq!(
        files_of(&b).into_keys().collect::<Vec<_>>(),
        [store::LOCK_FILE],
        "nothing was written to the other directory"
    );
    // The same directory, spelt otherwise, is the same world (and the same lock: the game
    // that wrote it must be gone first).
    let mut sc = scene(1, terrain_config(None, 0));
    sc["kits"][2]["config"]["worldDir"] = json!(format!("{}/../a", b.display()));
    let err = world_streaming::game::Game::from_scene_text(
        &sc.to_string(),
        "scene.json",
        Path::new("."),
        &world_streaming::kits::builtin_catalog(),
    )
    .err()
    .expect("a second game on the directory started");
    assert!(
        err.to_string().contains("is in use by another game"),
        "{err}"
    );
    drop(g);
    let mut h = game(&sc);
    h.load(&save).unwrap();
    assert!(terrain(&h).is_modified(c(0, 0)));
}

#[test]
fn a_mod_that_edits_without_end_is_stopped_by_its_budget_and_the_game_goes_on() {
    let mut g = ready(1, None, 0);
    g.add_mod(
        "flood.lua",
        r#"
        on("world.chunk.load", function(e)
          local n = 0
          while true do
            terrain.edit({x = 0.5 + n % 32, z = 0.5}, n % 65536)
            n = n + 1
            if n % 500 == 0 then log(n) end
          end
        end)
        "#,
    )
    .unwrap();
    let tick = g.engine().tick_count() + 1;
    apply(
        &mut g,
        json!({"tick": tick, "do": "move", "entity": "hero", "to": {"x": 16 + 32, "z": 16}}),
    );
    g.tick();
    let errors = common::events_named(&g, "mod.error");
    assert!(!errors.is_empty());
    assert!(
        errors.iter().all(|(_, d)| d["message"]
            .as_str()
            .unwrap()
            .contains("instruction budget exceeded")),
        "{errors:?}"
    );
    // Each edit was charged for the host's work: about a thousand fit in a call's budget of a
    // million units, not a hundred thousand.
    let most = g
        .take_mod_log()
        .iter()
        .filter_map(|l| l.message.parse::<u64>().ok())
        .max()
        .unwrap();
    assert!((500..5000).contains(&most), "{most} edits in one call");
    assert!(terrain(&g).is_modified(c(0, 0)));
    g.tick();
}

#[test]
fn a_bad_edit_line_names_its_line_and_field_with_the_range() {
    let text = "{\"tick\": 1, \"do\": \"edit\", \"at\": {\"x\": 1, \"z\": 2}, \"height\": 7}\n\
                {\"tick\": 2, \"do\": \"edit\", \"at\": {\"x\": 1, \"z\": 2}, \"height\": 70000}\n\
                {\"tick\": 3, \"do\": \"edit\", \"at\": {\"x\": 1, \"z\": 2}, \"height\": 7, \"material\": 256}\n\
                {\"tick\": 4, \"do\": \"edit\", \"at\": {\"x\": 1}, \"height\": 7}\n";
    let errors: Vec<String> = world_streaming::files::inputs::Inputs::parse(text, "in.jsonl")
        .unwrap_err()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        errors,
        [
            "in.jsonl: line 2: height: expected an integer 0..=65535, got 70000",
            "in.jsonl: line 3: material: expected an integer 0..=255, got 256",
            "in.jsonl: line 4: at.z: missing field",
        ]
    );
}

#[test]
fn a_world_of_another_generator_version_is_a_clear_error_too() {
    let dir = tempfile::tempdir().unwrap();
    let mut stamp = Generator::new(SEED, 32, 32.0).stamp();
    stamp.generator += 1;
    let bytes = region::encode(&region::Region {
        pos: RegionPos { x: -1, z: 0 },
        stamp,
        chunks: [(
            c(-3, 4),
            Diff {
                cells: [(5, (6, 1))].into(),
            },
        )]
        .into(),
    });
    std::fs::write(dir.path().join("r.-1.0.wsr"), &bytes).unwrap();
    let err = scene_error(&scene(1, terrain_config(Some(dir.path()), 0)));
    assert!(
        err.contains("r.-1.0.wsr") && err.contains("generator 2") && err.contains("generator 1"),
        "{err}"
    );
    assert_eq!(std::fs::read(dir.path().join("r.-1.0.wsr")).unwrap(), bytes);
}

#[test]
fn a_chunk_released_and_loaded_again_before_the_end_of_a_tick_keeps_its_edits() {
    // `leave` releases every chunk and `enter` has them loaded on the same tick: the release's
    // write back reaches the save thread before the reload's worker asks it.
    for dir in [None, Some(tempfile::tempdir().unwrap())] {
        let mut g = ready(1, dir.as_ref().map(|d| d.path()), 0);
        g.edit(cell_pos(c(0, 0), 9, 9), 4321, Some(2)).unwrap();
        let edited = terrain(&g).chunk(c(0, 0)).unwrap().hash();
        let tick = g.engine().tick_count() + 1;
        apply(&mut g, json!({"tick": tick, "do": "leave"}));
        apply(
            &mut g,
            json!({"tick": tick, "do": "enter", "scene": "main"}),
        );
        assert!(!terrain(&g).is_built(c(0, 0)));
        g.tick();
        g.run_until_ready("hero", 100).unwrap();
        assert_eq!(terrain(&g).chunk(c(0, 0)).unwrap().hash(), edited);
        assert!(terrain(&g).is_modified(c(0, 0)));
    }
}
