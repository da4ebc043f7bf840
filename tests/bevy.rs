//! docs/reference/engines.md#the-bevy-plugin, the Bevy plugin: headless apps (`MinimalPlugins`, no
//! window, no GPU) with time advanced by hand, each scenario also run through the Rust API (`Game`)
//! and compared tick by tick. Run with `cargo test --features bevy --test bevy`.

use std::path::Path;

use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use serde_json::{json, Value};
use world_streaming::bevy::prelude::*;
use world_streaming::files::inputs::{Action, InputLine};
use world_streaming::game::Game;
use world_streaming::host::{Entity as KitEntity, EntityId};
use world_streaming::kits::builtin_catalog;
use world_streaming::kits::district::STREAMED;
use world_streaming::kits::streaming::{ChunkEvent, StreamingEvent};
use world_streaming::kits::terrain::{TerrainService, TERRAIN};

/// What the recorder saw: each message with its kit tick, in the order they were read.
#[derive(Resource, Default, Debug, Clone, PartialEq)]
struct Seen {
    loaded: Vec<(u64, IVec3)>,
    unloaded: Vec<(u64, IVec3)>,
    built: Vec<(u64, IVec3, u64)>,
    refused: Vec<AnchorRefused>,
    /// `FixedUpdate` runs, counted by a system of the test's own.
    fixed_steps: u64,
}

fn record(
    mut seen: ResMut<Seen>,
    mut loaded: MessageReader<ChunkLoaded>,
    mut unloaded: MessageReader<ChunkUnloaded>,
    mut built: MessageReader<TerrainBuilt>,
    mut refused: MessageReader<AnchorRefused>,
) {
    seen.fixed_steps += 1;
    seen.loaded.extend(loaded.read().map(|m| (m.tick, m.chunk)));
    seen.unloaded
        .extend(unloaded.read().map(|m| (m.tick, m.chunk)));
    seen.built
        .extend(built.read().map(|m| (m.tick, m.chunk, m.hash)));
    seen.refused.extend(refused.read().cloned());
}

/// A headless app with `plugin`, one fixed step per `update()` (after the first, which only
/// starts the clock), and the recorder after the plugin's systems.
fn app(plugin: WorldStreamingPlugin) -> App {
    let mut app = App::new();
    app.add_plugins(MinimalPlugins)
        .insert_resource(TimeUpdateStrategy::FixedTimesteps(1))
        .add_plugins(plugin)
        .init_resource::<Seen>()
        .add_systems(FixedUpdate, record.after(StreamingSystems::Districts));
    app.finish();
    app.cleanup();
    app.update(); // starts the clock: no fixed step yet
    app
}

fn ws(app: &App) -> &WorldStreaming {
    app.world().non_send::<WorldStreaming>()
}

fn seen(app: &App) -> Seen {
    app.world().resource::<Seen>().clone()
}

fn scene_text(v: &Value) -> String {
    v.to_string()
}

/// Streaming (radius 1, 2 loads a tick), terrain (1 worker, latency 2), no entity: the anchors
/// bring the foci.
fn terrain_scene() -> Value {
    json!({
        "kits": [
            { "id": "world.ground" },
            { "id": "world.streaming",
              "config": { "chunkSize": 32, "radius": 1, "budgetMs": 2, "focus": "players" } },
            { "id": "world.terrain",
              "config": { "seed": 7, "cellsPerChunk": 8, "workers": 1, "commitLatency": 2 } }
        ],
        "entities": []
    })
}

fn plugin_of(scene: &Value) -> WorldStreamingPlugin {
    WorldStreamingPlugin::from_scene_text(&scene_text(scene), "scene.json", ".")
}

fn game_of(scene: &Value) -> Game {
    Game::from_scene_text(
        &scene_text(scene),
        "scene.json",
        Path::new("."),
        &builtin_catalog(),
    )
    .unwrap()
}

/// The walker's path: where it stands during each step (1-based).
fn walk(step: u64) -> Vec3 {
    match step {
        1..=6 => Vec3::new(16.0, 0.0, 16.0),
        7..=14 => Vec3::new(300.0, 0.0, 16.0),
        _ => Vec3::new(20.0, 2.0, -40.0),
    }
}

const STEPS: u64 = 24;

/// The same walk through the Rust API: the walker spawned tagged `player` before tick 1, moved
/// before the tick whenever its position changes; the chunk events by kind, in emission order.
fn walk_by_api(scene: &Value) -> (Seen, Game) {
    let mut game = game_of(scene);
    let mut out = Seen::default();
    let mut at: Option<Vec3> = None;
    for step in 1..=STEPS {
        let to = walk(step);
        let pos = Position {
            x: f64::from(to.x),
            y: f64::from(to.y),
            z: f64::from(to.z),
        };
        let action = match at {
            None => Some(Action::Spawn {
                entity: KitEntity {
                    id: EntityId::new("walker"),
                    tags: ["player"].into(),
                    position: pos,
                    rides: None,
                    data: None,
                },
            }),
            Some(prev) if prev != to => Some(Action::Move {
                entity: EntityId::new("walker"),
                to: pos,
            }),
            Some(_) => None,
        };
        if let Some(action) = action {
            game.apply(&InputLine { tick: step, action }).unwrap();
        }
        at = Some(to);
        game.tick();
        out.fixed_steps += 1;
        for e in game.engine_mut().take_events() {
            if let Some((c, loaded)) = e.chunk() {
                if loaded {
                    out.loaded.push((e.tick, chunk_ivec3(c)));
                } else {
                    out.unloaded.push((e.tick, chunk_ivec3(c)));
                }
            } else if e.event == "world.terrain.built" {
                let hash = e.data.get("hash").and_then(Value::as_str).unwrap();
                let hash = u64::from_str_radix(hash, 16).unwrap();
                let (x, z) = (e.data.get("x").unwrap(), e.data.get("z").unwrap());
                let c = ChunkPos::new(x.as_i64().unwrap(), z.as_i64().unwrap());
                out.built.push((e.tick, chunk_ivec3(c), hash));
            }
        }
    }
    (out, game)
}

/// The same walk through the plugin: an anchor spawned before the first step, its
/// `Transform` set before every `update()`.
fn walk_by_plugin(scene: &Value) -> App {
    let mut app = app(plugin_of(scene));
    let walker = app
        .world_mut()
        .spawn((
            StreamingAnchor::new("walker"),
            Transform::from_translation(walk(1)),
        ))
        .id();
    for step in 1..=STEPS {
        let to = walk(step);
        let mut t = app.world_mut().get_mut::<Transform>(walker).unwrap();
        if t.translation != to {
            t.translation = to;
        }
        app.update();
    }
    app
}

#[test]
fn messages_match_the_kits_events_tick_by_tick() {
    let scene = terrain_scene();
    let (by_api, _) = walk_by_api(&scene);
    let app = walk_by_plugin(&scene);
    let by_plugin = seen(&app);
    assert!(!by_api.loaded.is_empty() && !by_api.unloaded.is_empty() && !by_api.built.is_empty());
    assert_eq!(by_plugin.loaded, by_api.loaded);
    assert_eq!(by_plugin.unloaded, by_api.unloaded);
    assert_eq!(by_plugin.built, by_api.built);
    assert_eq!(ws(&app).tick(), STEPS);
}

#[test]
fn anchors_drive_loading_and_their_kit_entity_follows_the_transform() {
    let scene = terrain_scene();
    let (_, game) = walk_by_api(&scene);
    let app = walk_by_plugin(&scene);
    let ws = ws(&app);
    // Nothing in the scene but the anchor: what is loaded is what the anchor asked for.
    let api_loaded: Vec<IVec3> = game
        .streaming()
        .unwrap()
        .loaded()
        .into_iter()
        .map(chunk_ivec3)
        .collect();
    assert_eq!(ws.loaded(), api_loaded);
    assert!(
        ws.is_loaded(IVec3::new(0, 0, -2)),
        "the last stand, (20, -40), is chunk (0, -2)"
    );
    assert!(
        !ws.is_loaded(IVec3::new(9, 0, 0)),
        "the second stand was left behind"
    );
    let walker = ws
        .game()
        .engine()
        .world()
        .get(&EntityId::new("walker"))
        .unwrap();
    assert_eq!(
        walker.position,
        Position {
            x: 20.0,
            y: 2.0,
            z: -40.0
        }
    );
    assert!(walker.has_tag("player"));
}

#[test]
fn one_kit_tick_per_fixed_step() {
    let mut app = app(plugin_of(&terrain_scene()));
    assert_eq!(ws(&app).tick(), 0, "the first update only starts the clock");
    // 1, 0, 3, 2 fixed steps per update.
    for n in [1u32, 0, 3, 2] {
        app.insert_resource(TimeUpdateStrategy::FixedTimesteps(n));
        app.update();
    }
    let counted = seen(&app).fixed_steps;
    assert_eq!(counted, 6);
    assert_eq!(ws(&app).steps(), counted);
    assert_eq!(ws(&app).tick(), counted);
    // Time advanced by a duration: the fixed clock decides (64 Hz: 100 ms holds 6 steps).
    app.insert_resource(TimeUpdateStrategy::ManualDuration(
        std::time::Duration::from_millis(100),
    ));
    app.update();
    let counted = seen(&app).fixed_steps;
    assert_eq!(counted, 12);
    assert_eq!(ws(&app).tick(), counted);
}

#[test]
fn terrain_is_readable_from_the_resource_as_the_kit_built_it() {
    let scene = terrain_scene();
    let (by_api, game) = walk_by_api(&scene);
    let app = walk_by_plugin(&scene);
    let ws = ws(&app);
    let api_terrain = game
        .engine()
        .service::<dyn TerrainService>(TERRAIN)
        .unwrap();
    let loaded = ws.loaded();
    let built: Vec<IVec3> = loaded.iter().copied().filter(|c| ws.is_built(*c)).collect();
    assert!(!built.is_empty());
    for c in &loaded {
        assert_eq!(
            ws.is_built(*c),
            api_terrain.is_built(ivec3_chunk(*c)),
            "{c:?}"
        );
    }
    for c in built {
        let data = ws.chunk(c).unwrap();
        let expected = api_terrain.chunk(ivec3_chunk(c)).unwrap();
        assert_eq!(data.cells, 8);
        assert_eq!(data.bytes.len(), 8 * 8 * 3, "u16 heights then u8 materials");
        assert_eq!(data.bytes, expected.bytes);
        // The hash the last TerrainBuilt message of this chunk carried.
        let last = by_api.built.iter().rev().find(|(_, b, _)| *b == c).unwrap();
        assert_eq!(data.hash(), last.2);
        let corner = Position {
            x: c.x as f64 * 32.0,
            y: 0.0,
            z: c.z as f64 * 32.0,
        };
        assert_eq!(ws.height_at(corner), Some(data.height(0, 0)));
    }
    assert!(
        !ws.is_built(IVec3::new(9, 0, 0)),
        "released chunks free their terrain"
    );
    assert!(ws.chunk(IVec3::new(9, 0, 0)).is_none());
}

/// The streamed entities the kit holds live now: (id, data) in spawn order.
fn kit_streamed(ws: &WorldStreaming) -> Vec<(String, Option<Value>)> {
    let d = ws.district().unwrap();
    ws.game()
        .engine()
        .world()
        .iter()
        .filter(|e| e.has_tag(STREAMED) || d.district_line(&e.id).is_some())
        .map(|e| {
            (
                e.id.as_str().to_owned(),
                e.data.as_ref().map(|m| Value::Object((**m).clone())),
            )
        })
        .collect()
}

/// The DistrictEntity components in Bevy: (id, data), by id.
fn bevy_streamed(app: &mut App) -> Vec<(String, Option<Value>)> {
    let mut q = app.world_mut().query::<&DistrictEntity>();
    let mut out: Vec<(String, Option<Value>)> = q
        .iter(app.world())
        .map(|d| (d.id.as_str().to_owned(), d.data.clone().map(Value::Object)))
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn sorted(mut v: Vec<(String, Option<Value>)>) -> Vec<(String, Option<Value>)> {
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

#[test]
fn district_entities_are_bevy_entities_while_materialised() {
    let mut app = app(WorldStreamingPlugin::from_scene_file(
        "examples/scenes/town.json",
    ));
    let hero = app
        .world_mut()
        .spawn((
            StreamingAnchor::new("hero"),
            Transform::from_xyz(16.0, 0.0, 16.0),
        ))
        .id();
    app.update();
    // Tick 1 loads the 9 chunks around the hero: the well and the crate materialise; the lamp
    // (a scene entity tagged streamed) is live from the start.
    let mirrored = bevy_streamed(&mut app);
    let ids: Vec<&str> = mirrored.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["crate1", "lamp", "well"]);
    assert_eq!(mirrored, sorted(kit_streamed(ws(&app))));
    assert_eq!(
        mirrored[0].1,
        Some(json!({ "loot": ["rope"], "opened": false }))
    );
    let well = ws(&app).district_entity(&EntityId::new("well")).unwrap();
    let t = app.world().get::<Transform>(well).unwrap();
    assert_eq!(t.translation, Vec3::new(10.0, 0.0, 12.0));

    // A change of data through the game reaches the component at the next step.
    ws_mut(&mut app)
        .game_mut()
        .set_data(
            "crate1",
            Some(
                json!({ "loot": [], "opened": true })
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
        )
        .unwrap();
    app.update();
    let crate1 = ws(&app).district_entity(&EntityId::new("crate1")).unwrap();
    let data = app
        .world()
        .get::<DistrictEntity>(crate1)
        .unwrap()
        .data
        .clone();
    assert_eq!(
        data.map(Value::Object),
        Some(json!({ "loot": [], "opened": true }))
    );

    // The hero walks to the baker: the town's chunks are released, the well and the crate
    // are stored (their Bevy entities despawned) and the baker materialises.
    app.world_mut()
        .get_mut::<Transform>(hero)
        .unwrap()
        .translation = Vec3::new(300.0, 0.0, 16.0);
    app.update();
    let ids: Vec<String> = bevy_streamed(&mut app)
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    assert_eq!(ids, ["baker", "lamp"]);
    assert_eq!(bevy_streamed(&mut app), sorted(kit_streamed(ws(&app))));
    assert!(
        app.world().get_entity(well).is_err(),
        "the well's Bevy entity is despawned"
    );
    assert!(app.world().get_entity(crate1).is_err());
    assert!(ws(&app).district_entity(&EntityId::new("well")).is_none());

    // Back home: the stored crate comes back with the data it was stored with.
    app.world_mut()
        .get_mut::<Transform>(hero)
        .unwrap()
        .translation = Vec3::new(16.0, 0.0, 16.0);
    app.update();
    let mirrored = bevy_streamed(&mut app);
    assert_eq!(mirrored, sorted(kit_streamed(ws(&app))));
    let ids: Vec<&str> = mirrored.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["crate1", "lamp", "well"]);
    assert_eq!(mirrored[0].1, Some(json!({ "loot": [], "opened": true })));
}

#[test]
fn district_entities_match_the_kit_on_every_step_of_a_walk() {
    let mut app = app(WorldStreamingPlugin::from_scene_file(
        "examples/scenes/town.json",
    ));
    let hero = app
        .world_mut()
        .spawn((
            StreamingAnchor::new("hero"),
            Transform::from_xyz(16.0, 0.0, 16.0),
        ))
        .id();
    let path = [16.0, 80.0, 150.0, 220.0, 300.0, 230.0, 100.0, 16.0];
    for x in path {
        app.world_mut()
            .get_mut::<Transform>(hero)
            .unwrap()
            .translation = Vec3::new(x, 0.0, 16.0);
        app.update();
        assert_eq!(
            bevy_streamed(&mut app),
            sorted(kit_streamed(ws(&app))),
            "at x = {x}"
        );
        let live = ws(&app).district().unwrap().live();
        assert_eq!(bevy_streamed(&mut app).len(), live, "at x = {x}");
    }
}

fn ws_mut(app: &mut App) -> Mut<'_, WorldStreaming> {
    app.world_mut().non_send_mut::<WorldStreaming>()
}

#[test]
fn a_removed_anchor_despawns_the_entity_made_for_it_but_not_a_scene_entity() {
    let mut app = app(WorldStreamingPlugin::from_scene_file(
        "examples/scenes/town.json",
    ));
    let hero = app
        .world_mut()
        .spawn((
            StreamingAnchor::new("hero"),
            Transform::from_xyz(16.0, 0.0, 16.0),
        ))
        .id();
    let scout = app
        .world_mut()
        .spawn((
            StreamingAnchor::new("scout"),
            Transform::from_xyz(40.0, 0.0, 40.0),
        ))
        .id();
    app.update();
    let has = |app: &App, id: &str| {
        ws(app)
            .game()
            .engine()
            .world()
            .get(&EntityId::new(id))
            .is_some()
    };
    assert!(has(&app, "scout") && has(&app, "hero"));
    assert_eq!(ws(&app).anchor_id(scout), Some(&EntityId::new("scout")));
    app.world_mut()
        .entity_mut(scout)
        .remove::<StreamingAnchor>();
    app.world_mut().entity_mut(hero).remove::<StreamingAnchor>();
    app.update();
    assert!(
        !has(&app, "scout"),
        "made by the plugin: despawned with its anchor"
    );
    assert!(has(&app, "hero"), "the scene's entity stays");
}

#[test]
fn a_translation_the_kit_refuses_is_a_message_and_changes_nothing() {
    let mut app = app(WorldStreamingPlugin::from_scene_file(
        "examples/scenes/town.json",
    ));
    let hero = app
        .world_mut()
        .spawn((
            StreamingAnchor::new("hero"),
            Transform::from_xyz(16.0, 0.0, 16.0),
        ))
        .id();
    let baker = app
        .world_mut()
        .spawn((
            StreamingAnchor::new("baker"),
            Transform::from_xyz(0.0, 0.0, 0.0),
        ))
        .id();
    app.update();
    app.world_mut()
        .get_mut::<Transform>(hero)
        .unwrap()
        .translation
        .x = f32::NAN;
    app.update();
    let refused = seen(&app).refused;
    assert_eq!(refused.len(), 2, "{refused:?}");
    assert_eq!(refused[0].anchor, baker);
    assert!(
        refused[0].message.contains("district"),
        "{}",
        refused[0].message
    );
    assert_eq!(refused[1].anchor, hero);
    assert!(
        refused[1].message.contains("hero"),
        "{}",
        refused[1].message
    );
    let at = ws(&app)
        .game()
        .engine()
        .world()
        .get(&EntityId::new("hero"))
        .unwrap()
        .position;
    assert_eq!(
        at,
        Position {
            x: 16.0,
            y: 0.0,
            z: 16.0
        }
    );
}

#[test]
fn a_scene_that_does_not_build_is_reported_with_its_problems() {
    let mut scene = terrain_scene();
    scene["kits"][1]["config"]["radius"] = json!(65);
    let plugin = plugin_of(&scene);
    let err = plugin.build_game().unwrap().err().unwrap().to_string();
    assert!(err.contains("scene.json: kits[1].config.radius"), "{err}");
    let added = std::panic::catch_unwind(move || {
        App::new().add_plugins(MinimalPlugins).add_plugins(plugin);
    });
    let panic = added.unwrap_err();
    let text = panic.downcast_ref::<String>().unwrap();
    assert!(text.contains("kits[1].config.radius"), "{text}");
}

#[test]
fn a_game_built_by_hand_is_driven_when_inserted() {
    let game = game_of(&terrain_scene());
    let mut app = App::new();
    app.add_plugins(MinimalPlugins)
        .insert_resource(TimeUpdateStrategy::FixedTimesteps(1))
        .insert_non_send(WorldStreaming::new(game))
        .add_plugins(WorldStreamingPlugin::inserted());
    app.world_mut().spawn((
        StreamingAnchor::new("walker"),
        Transform::from_xyz(8.0, 0.0, 8.0),
    ));
    app.update();
    app.update();
    assert_eq!(ws(&app).tick(), 1);
    assert!(ws(&app).is_loaded(IVec3::new(0, 0, 0)));
}

/// `neighbours: 1` on the terrain scene (docs/reference/engines.md#the-bevy-plugin).
fn complete_scene() -> Value {
    let mut scene = terrain_scene();
    scene["kits"][1]["config"]["neighbours"] = json!(1);
    scene["kits"][1]["config"]["budgetMs"] = json!(6);
    scene
}

/// Still for 8 steps, then east 6 m a step: chunks complete ahead and lose completeness behind.
fn stroll(step: u64) -> Vec3 {
    let x = if step <= 8 {
        16.0
    } else {
        16.0 + 6.0 * (step - 8) as f32
    };
    Vec3::new(x, 0.0, 16.0)
}

const STROLL_STEPS: u64 = 40;

/// What a mesher system saw: the completeness messages with their ticks, the complete chunks
/// they add up to after each step, and how many snapshots it took and was refused.
#[derive(Resource, Default, Debug, Clone, PartialEq)]
struct Meshed {
    complete: Vec<(u64, IVec3)>,
    incomplete: Vec<(u64, IVec3)>,
    now: std::collections::BTreeSet<(i32, i32)>,
    snapshots: usize,
    refused: usize,
}

/// A mesher: on `ChunkComplete` it takes the chunk's snapshot with skin 1 from the resource and
/// checks it against the chunk and its west and north neighbours' cells; a chunk built but not
/// complete is refused one.
fn mesher(
    ws: NonSend<WorldStreaming>,
    mut meshed: ResMut<Meshed>,
    mut unloaded: MessageReader<ChunkUnloaded>,
    mut built: MessageReader<TerrainBuilt>,
    mut complete: MessageReader<ChunkComplete>,
    mut incomplete: MessageReader<ChunkIncomplete>,
) {
    for m in unloaded.read() {
        meshed.now.remove(&(m.chunk.z, m.chunk.x));
    }
    for m in built.read() {
        if ws.is_built(m.chunk) && !ws.is_complete(m.chunk) {
            assert!(matches!(
                ws.snapshot(m.chunk, 1),
                Err(SnapshotError::NotComplete)
            ));
            assert!(matches!(ws.snapshot(m.chunk, 0), Ok(s) if s.version == 1));
            meshed.refused += 1;
        }
    }
    for m in incomplete.read() {
        assert!(meshed.now.remove(&(m.chunk.z, m.chunk.x)), "{m:?}");
        meshed.incomplete.push((m.tick, m.chunk));
    }
    for m in complete.read() {
        assert!(meshed.now.insert((m.chunk.z, m.chunk.x)), "{m:?}");
        meshed.complete.push((m.tick, m.chunk));
        let Ok(s): Result<Snapshot, _> = ws.snapshot(m.chunk, 1) else {
            panic!("{m:?}: a complete chunk has its snapshot");
        };
        assert_eq!(
            (chunk_ivec3(s.chunk), s.skin, s.side, s.heights.len()),
            (m.chunk, 1, 10, 100)
        );
        assert_eq!(Some(s.version), ws.version(m.chunk));
        let own = ws.chunk(m.chunk).unwrap();
        let west = ws.chunk(m.chunk - IVec3::X).unwrap();
        let north = ws.chunk(m.chunk + IVec3::Z).unwrap();
        for a in 0..8 {
            for b in 0..8 {
                assert_eq!(s.height(a + 1, b + 1), own.height(a, b));
                assert_eq!(s.material(a + 1, b + 1), own.material(a, b));
            }
            assert_eq!(s.height(0, a + 1), west.height(7, a));
            assert_eq!(s.height(a + 1, 9), north.height(a, 0));
        }
        meshed.snapshots += 1;
    }
    let now: Vec<IVec3> = meshed
        .now
        .iter()
        .map(|&(z, x)| IVec3::new(x, 0, z))
        .collect();
    assert_eq!(ws.complete(), now, "step {}", ws.steps());
}

#[test]
fn completeness_messages_and_snapshots_reach_systems_as_the_kit_emits_them() {
    let scene = complete_scene();
    // The plugin, with the mesher after the plugin's systems.
    let mut app = App::new();
    app.add_plugins(MinimalPlugins)
        .insert_resource(TimeUpdateStrategy::FixedTimesteps(1))
        .add_plugins(plugin_of(&scene))
        .init_resource::<Meshed>()
        .add_systems(FixedUpdate, mesher.after(StreamingSystems::Districts));
    app.finish();
    app.cleanup();
    app.update();
    let walker = app
        .world_mut()
        .spawn((
            StreamingAnchor::new("walker"),
            Transform::from_translation(stroll(1)),
        ))
        .id();
    for step in 1..=STROLL_STEPS {
        let to = stroll(step);
        let mut t = app.world_mut().get_mut::<Transform>(walker).unwrap();
        if t.translation != to {
            t.translation = to;
        }
        app.update();
    }
    let meshed = app.world().resource::<Meshed>().clone();
    // The same stroll through the Rust API: the events the messages stand for.
    let mut game = game_of(&scene);
    let (mut complete, mut incomplete) = (Vec::new(), Vec::new());
    for step in 1..=STROLL_STEPS {
        let to = stroll(step);
        let pos = Position {
            x: f64::from(to.x),
            y: 0.0,
            z: f64::from(to.z),
        };
        let action = if step == 1 {
            Action::Spawn {
                entity: KitEntity {
                    id: EntityId::new("walker"),
                    tags: ["player"].into(),
                    position: pos,
                    rides: None,
                    data: None,
                },
            }
        } else {
            Action::Move {
                entity: EntityId::new("walker"),
                to: pos,
            }
        };
        if step == 1 || stroll(step) != stroll(step - 1) {
            game.apply(&InputLine { tick: step, action }).unwrap();
        }
        game.tick();
        for e in game.engine_mut().take_events() {
            match StreamingEvent::from_event(&e) {
                Some(StreamingEvent::ChunkComplete(c)) => complete.push((e.tick, chunk_ivec3(c))),
                Some(StreamingEvent::ChunkIncomplete(c)) => {
                    incomplete.push((e.tick, chunk_ivec3(c)))
                }
                _ => {}
            }
        }
    }
    assert_eq!(meshed.complete, complete);
    assert_eq!(meshed.incomplete, incomplete);
    assert!(complete.len() > 20 && !incomplete.is_empty(), "{meshed:?}");
    assert!(
        meshed.snapshots == complete.len() && meshed.refused > 10,
        "{meshed:?}"
    );
    // Bad skins through the resource.
    let ws = ws(&app);
    let c = ws.complete()[0];
    assert!(matches!(
        ws.snapshot(c, 9),
        Err(SnapshotError::Skin { skin: 9, max: 8 })
    ));
    assert!(matches!(ws.snapshot(c, 8), Ok(s) if s.side == 24));
}

/// Without `neighbours` the plugin writes no completeness message (the kit emits none).
#[test]
fn without_neighbours_no_completeness_message_is_written() {
    let scene = terrain_scene();
    let mut app = App::new();
    app.add_plugins(MinimalPlugins)
        .insert_resource(TimeUpdateStrategy::FixedTimesteps(1))
        .add_plugins(plugin_of(&scene))
        .init_resource::<Meshed>()
        .add_systems(
            FixedUpdate,
            (|mut meshed: ResMut<Meshed>,
              mut complete: MessageReader<ChunkComplete>,
              mut incomplete: MessageReader<ChunkIncomplete>| {
                meshed
                    .complete
                    .extend(complete.read().map(|m| (m.tick, m.chunk)));
                meshed
                    .incomplete
                    .extend(incomplete.read().map(|m| (m.tick, m.chunk)));
            })
            .after(StreamingSystems::Districts),
        );
    app.finish();
    app.cleanup();
    app.update();
    app.world_mut().spawn((
        StreamingAnchor::new("walker"),
        Transform::from_translation(stroll(1)),
    ));
    for _ in 0..12 {
        app.update();
    }
    let meshed = app.world().resource::<Meshed>().clone();
    assert!(meshed.complete.is_empty() && meshed.incomplete.is_empty());
    let ws = ws(&app);
    // `is_complete` still answers: loaded and built.
    let built: Vec<IVec3> = ws
        .loaded()
        .into_iter()
        .filter(|c| ws.is_built(*c))
        .collect();
    assert!(!built.is_empty());
    assert!(built.iter().all(|c| ws.is_complete(*c)));
}

/// A vertical scene (docs/reference/engines.md#the-bevy-plugin): a disc of radius 2 with two rows
/// above and below the anchor's, sections 16 m tall; the anchor climbs to row 6, dives to row -9
/// and walks east.
fn vertical_scene() -> Value {
    json!({
        "kits": [
            { "id": "world.ground" },
            { "id": "world.streaming",
              "config": { "chunkSize": 32, "radius": 2, "shape": "disc", "budgetMs": 24,
                          "vertical": { "radius": 2, "height": 16 }, "focus": "players" } }
        ],
        "entities": []
    })
}

fn climb(step: u64) -> Vec3 {
    let t = step as f32;
    match step {
        0..=20 => Vec3::new(16.0, 8.0 + 5.0 * t, 16.0),
        21..=60 => Vec3::new(16.0, 108.0 - 6.0 * (t - 20.0), 16.0),
        _ => Vec3::new(16.0 + 7.0 * (t - 60.0), -132.0, 16.0),
    }
}

/// The messages of a vertical run, with their ticks, in the order read.
#[derive(Resource, Default, Debug, Clone, PartialEq)]
struct Sections {
    loaded: Vec<(u64, IVec3)>,
    unloaded: Vec<(u64, IVec3)>,
    columns_loaded: Vec<(u64, IVec3)>,
    columns_unloaded: Vec<(u64, IVec3)>,
}

/// With `vertical` on the messages name sections as `IVec3 (x, y, z)` with their rows, the column
/// messages come with a column's first and last section, and the resource answers per section
/// and per column, all as the kit's events and service say through the Rust API.
#[test]
fn vertical_sections_come_as_ivec3_with_their_rows_and_columns_as_messages() {
    let scene = vertical_scene();
    let mut app = App::new();
    app.add_plugins(MinimalPlugins)
        .insert_resource(TimeUpdateStrategy::FixedTimesteps(1))
        .add_plugins(plugin_of(&scene))
        .init_resource::<Sections>()
        .add_systems(
            FixedUpdate,
            (|mut seen: ResMut<Sections>,
              mut loaded: MessageReader<ChunkLoaded>,
              mut unloaded: MessageReader<ChunkUnloaded>,
              mut col_loaded: MessageReader<ColumnLoaded>,
              mut col_unloaded: MessageReader<ColumnUnloaded>| {
                seen.loaded.extend(loaded.read().map(|m| (m.tick, m.chunk)));
                seen.unloaded
                    .extend(unloaded.read().map(|m| (m.tick, m.chunk)));
                seen.columns_loaded
                    .extend(col_loaded.read().map(|m| (m.tick, m.column)));
                seen.columns_unloaded
                    .extend(col_unloaded.read().map(|m| (m.tick, m.column)));
            })
            .after(StreamingSystems::Districts),
        );
    app.finish();
    app.cleanup();
    app.update();
    let walker = app
        .world_mut()
        .spawn((
            StreamingAnchor::new("walker"),
            Transform::from_translation(climb(1)),
        ))
        .id();
    const CLIMB_STEPS: u64 = 80;
    for step in 1..=CLIMB_STEPS {
        app.world_mut()
            .get_mut::<Transform>(walker)
            .unwrap()
            .translation = climb(step);
        app.update();
    }
    let by_plugin = app.world().resource::<Sections>().clone();
    // The same climb through the Rust API.
    let mut game = game_of(&scene);
    let mut by_api = Sections::default();
    for step in 1..=CLIMB_STEPS {
        let to = climb(step);
        let pos = Position {
            x: f64::from(to.x),
            y: f64::from(to.y),
            z: f64::from(to.z),
        };
        let action = if step == 1 {
            Action::Spawn {
                entity: KitEntity {
                    id: EntityId::new("walker"),
                    tags: ["player"].into(),
                    position: pos,
                    rides: None,
                    data: None,
                },
            }
        } else {
            Action::Move {
                entity: EntityId::new("walker"),
                to: pos,
            }
        };
        game.apply(&InputLine { tick: step, action }).unwrap();
        game.tick();
        for e in game.engine_mut().take_events() {
            if let Some((c, loaded)) = e.chunk() {
                let list = if loaded {
                    &mut by_api.loaded
                } else {
                    &mut by_api.unloaded
                };
                list.push((e.tick, chunk_ivec3(c)));
            } else if let Some((c, loaded)) = e.column() {
                let list = if loaded {
                    &mut by_api.columns_loaded
                } else {
                    &mut by_api.columns_unloaded
                };
                list.push((e.tick, chunk_ivec3(c)));
            }
        }
    }
    assert_eq!(by_plugin, by_api);
    let rows: std::collections::BTreeSet<i32> = by_plugin.loaded.iter().map(|m| m.1.y).collect();
    assert!(
        rows.first().is_some_and(|&y| y < 0) && rows.last().is_some_and(|&y| y >= 6),
        "{rows:?}"
    );
    assert!(!by_plugin.columns_loaded.is_empty() && !by_plugin.columns_unloaded.is_empty());
    assert!(by_plugin.columns_loaded.iter().all(|m| m.1.y == 0));
    // The resource, per section and per column.
    let ws = ws(&app);
    let streaming = game.streaming().unwrap();
    let loaded: Vec<IVec3> = streaming.loaded().into_iter().map(chunk_ivec3).collect();
    assert_eq!(ws.loaded(), loaded);
    let columns: Vec<IVec3> = streaming.columns().into_iter().map(chunk_ivec3).collect();
    assert_eq!(ws.columns(), columns);
    assert!(loaded.len() > columns.len() && !columns.is_empty());
    for c in &loaded {
        assert!(ws.is_loaded(*c) && ws.is_column_loaded(c.with_y(0)), "{c}");
        assert!(!ws.is_loaded(c.with_y(c.y + 20)), "{c}");
    }
    let here = climb(CLIMB_STEPS);
    let at = Position {
        x: f64::from(here.x),
        y: f64::from(here.y),
        z: f64::from(here.z),
    };
    assert_eq!(ws.chunk_of(at), Some(IVec3::new(4, -9, 0)));
    for y in -14..=-4 {
        assert_eq!(
            ws.is_loaded(IVec3::new(4, y, 0)),
            (-11..=-7).contains(&y),
            "row {y}"
        );
    }
}
