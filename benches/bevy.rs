//! The Bevy plugin's cost per fixed step with 100 anchors (docs/reference/engines.md#engine-goals:
//! under 10 µs beyond the kit's own tick), the same scene driven side by side:
//! - `api`: through the Rust API: the 100 moves as one input, one tick, the events drained and
//!   read as typed chunk events (what a hand-written integration does);
//! - `plugin_fixed_step`: one run of Bevy's `FixedMain` schedule: a game system moving the 100
//!   anchors' `Transform`s, then the plugin's systems (anchors written, the tick, messages,
//!   districts);
//! - `bevy_without_plugin_fixed_step`: the same `FixedMain` run without the plugin (Bevy's
//!   schedules and the game's own system): the plugin's overhead beyond the kit's own tick is
//!   `plugin_fixed_step` − `api` − this;
//! - `overhead_interleaved`: that difference measured directly, the three steps run in turn in
//!   each iteration (robust to the machine's load changing between benchmarks);
//! - `plugin_update`: a whole `App::update()` of a `MinimalPlugins` app with one fixed step (Bevy's
//!   own frame: time, the main schedules, message buffers);
//! - `thread_core`: the alternative to a non-send resource, a `Send` handle to a game owned by
//!   a thread of its own: the 100 positions sent over a channel, the tick there, the chunk
//!   events sent back.
//!
//! `cargo bench --features bevy --bench bevy`

use std::sync::mpsc;
use std::time::Duration;

use bevy::app::FixedMain;
use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use criterion::{criterion_group, criterion_main, Criterion};
use world_streaming::bevy::prelude::*;
use world_streaming::game::Game;
use world_streaming::host::EntityId;
use world_streaming::kits::builtin_catalog;
use world_streaming::kits::streaming::ChunkEvent;

const ANCHORS: usize = 100;

/// 100 players on a 10 × 10 grid, 96 m apart, radius 1, 4 loads a tick.
fn scene() -> String {
    let entities: Vec<serde_json::Value> = (0..ANCHORS)
        .map(|k| serde_json::json!({ "id": format!("a{k}"), "tags": ["player"], "position": home(k, 0) }))
        .collect();
    serde_json::json!({
        "kits": [
            { "id": "world.ground" },
            { "id": "world.streaming",
              "config": { "chunkSize": 32, "radius": 1, "budgetMs": 4, "focus": "players" } }
        ],
        "entities": entities
    })
    .to_string()
}

/// Where anchor `k` stands at step `step`: walking 1 m a step east and back over 64 m, so
/// each anchor crosses a chunk edge every 32 steps (loads and releases in the steady state).
fn at(k: usize, step: u64) -> (f64, f64) {
    let phase = (step + k as u64 * 7) % 128;
    let dx = if phase < 64 { phase } else { 128 - phase } as f64;
    (
        (k % 10) as f64 * 96.0 + 8.0 + dx,
        (k / 10) as f64 * 96.0 + 8.0,
    )
}

fn home(k: usize, step: u64) -> serde_json::Value {
    let (x, z) = at(k, step);
    serde_json::json!({ "x": x, "z": z })
}

fn game() -> Game {
    Game::from_scene_text(&scene(), "scene.json", ".".as_ref(), &builtin_catalog()).unwrap()
}

/// One step through the Rust API; returns the chunk events read.
fn api_step(game: &mut Game, ids: &[EntityId], step: u64) -> usize {
    let engine = game.engine_mut();
    let stamp = engine.tick_count() + 1;
    engine.input(stamp, |e| {
        for (k, id) in ids.iter().enumerate() {
            let (x, z) = at(k, step);
            let to = world_streaming::grid::Position { x, y: 0.0, z };
            e.world_mut().move_to(id, to).unwrap();
        }
    });
    engine.tick();
    let events = engine.take_events();
    events.iter().filter_map(|e| e.chunk()).count()
}

#[derive(Resource, Default)]
struct Step(u64);

#[derive(Component)]
struct Walker(usize);

/// The game's own system: each anchor where `at` says.
fn move_anchors(mut step: ResMut<Step>, mut q: Query<(&Walker, &mut Transform)>) {
    step.0 += 1;
    for (w, mut t) in &mut q {
        let (x, z) = at(w.0, step.0);
        t.translation = Vec3::new(x as f32, 0.0, z as f32);
    }
}

/// The app: `MinimalPlugins`, the game's system moving the 100 anchors and, when `plugin`,
/// the plugin (without it: what Bevy and the game's own system cost per step).
fn app(plugin: bool) -> App {
    let mut app = App::new();
    app.add_plugins(MinimalPlugins)
        .insert_resource(TimeUpdateStrategy::FixedTimesteps(1))
        .init_resource::<Step>();
    if plugin {
        app.add_plugins(WorldStreamingPlugin::from_scene_text(
            &scene(),
            "scene.json",
            ".",
        ))
        .add_systems(FixedUpdate, move_anchors.before(StreamingSystems::Anchors));
    } else {
        app.add_systems(FixedUpdate, move_anchors);
    }
    for k in 0..ANCHORS {
        let (x, z) = at(k, 0);
        app.world_mut().spawn((
            Walker(k),
            StreamingAnchor::new(&format!("a{k}")),
            Transform::from_xyz(x as f32, 0.0, z as f32),
        ));
    }
    app.finish();
    app.cleanup();
    app
}

/// What the thread-owned game is sent each step, and what it sends back.
type Moves = Vec<(usize, f64, f64)>;
type Chunks = Vec<(i64, i64, bool, u64)>;

/// A `Send` handle to a game living on its own thread (what a `Send` core would be without
/// rewriting the kit's `Rc<RefCell>` state as `Arc<Mutex>`).
struct ThreadCore {
    to: mpsc::SyncSender<Moves>,
    from: mpsc::Receiver<Chunks>,
}

impl ThreadCore {
    fn start() -> Self {
        let (to, moves) = mpsc::sync_channel::<Moves>(1);
        let (back, from) = mpsc::sync_channel::<Chunks>(1);
        std::thread::spawn(move || {
            let mut game = game();
            let ids: Vec<EntityId> = (0..ANCHORS)
                .map(|k| EntityId::new(&format!("a{k}")))
                .collect();
            for list in moves {
                let engine = game.engine_mut();
                let stamp = engine.tick_count() + 1;
                engine.input(stamp, |e| {
                    for (k, x, z) in list {
                        let to = world_streaming::grid::Position { x, y: 0.0, z };
                        e.world_mut().move_to(&ids[k], to).unwrap();
                    }
                });
                engine.tick();
                let out: Chunks = engine
                    .take_events()
                    .iter()
                    .filter_map(|e| e.chunk().map(|(c, l)| (c.x, c.z, l, e.tick)))
                    .collect();
                if back.send(out).is_err() {
                    break;
                }
            }
        });
        ThreadCore { to, from }
    }

    fn step(&self, step: u64) -> usize {
        let moves: Moves = (0..ANCHORS)
            .map(|k| {
                let (x, z) = at(k, step);
                (k, x, z)
            })
            .collect();
        self.to.send(moves).unwrap();
        self.from.recv().unwrap().len()
    }
}

fn per_step(c: &mut Criterion) {
    let mut g = c.benchmark_group("bevy_100_anchors");
    g.measurement_time(Duration::from_secs(4));

    let mut game = game();
    let ids: Vec<EntityId> = (0..ANCHORS)
        .map(|k| EntityId::new(&format!("a{k}")))
        .collect();
    let mut step = 0;
    for _ in 0..200 {
        step += 1;
        api_step(&mut game, &ids, step);
    }
    g.bench_function("api", |b| {
        b.iter(|| {
            step += 1;
            api_step(&mut game, &ids, step)
        })
    });

    let mut bare = app(false);
    for _ in 0..200 {
        bare.world_mut().run_schedule(FixedMain);
    }
    g.bench_function("bevy_without_plugin_fixed_step", |b| {
        b.iter(|| bare.world_mut().run_schedule(FixedMain))
    });

    let mut fixed = app(true);
    for _ in 0..200 {
        fixed.world_mut().run_schedule(FixedMain);
    }
    g.bench_function("plugin_fixed_step", |b| {
        b.iter(|| fixed.world_mut().run_schedule(FixedMain))
    });
    assert_eq!(
        fixed.world().non_send::<WorldStreaming>().steps(),
        fixed.world().resource::<Step>().0,
        "one kit tick per fixed step"
    );

    // The three measured in turn within each iteration, so that a change of the machine's
    // load touches all three: the time reported is the plugin's overhead alone (the plugin's
    // step minus the API's step minus Bevy's bare step; floored at 1 ns).
    g.bench_function("overhead_interleaved", |b| {
        b.iter_custom(|iters| {
            let mut over: i128 = 0;
            for _ in 0..iters {
                let t0 = std::time::Instant::now();
                step += 1;
                api_step(&mut game, &ids, step);
                let t1 = std::time::Instant::now();
                fixed.world_mut().run_schedule(FixedMain);
                let t2 = std::time::Instant::now();
                bare.world_mut().run_schedule(FixedMain);
                let t3 = std::time::Instant::now();
                over += (t2 - t1).as_nanos() as i128
                    - (t1 - t0).as_nanos() as i128
                    - (t3 - t2).as_nanos() as i128;
            }
            // Floored at 1 ns an iteration (criterion refuses a zero sample).
            Duration::from_nanos(over.max(iters as i128) as u64)
        })
    });

    let mut whole = app(true);
    whole.update(); // starts the clock
    for _ in 0..200 {
        whole.update();
    }
    g.bench_function("plugin_update", |b| b.iter(|| whole.update()));

    let core = ThreadCore::start();
    let mut step = 0;
    for _ in 0..200 {
        step += 1;
        core.step(step);
    }
    g.bench_function("thread_core", |b| {
        b.iter(|| {
            step += 1;
            core.step(step)
        })
    });
    g.finish();
}

criterion_group!(benches, per_step);
criterion_main!(benches);
