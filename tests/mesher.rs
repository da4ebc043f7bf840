//! The mesher of `examples/kits/mesher.rs` on a drive across a terrain world with
//! `neighbours: 1` and edits on chunk edges and corners (docs/meshing.md#what-the-test-holds).
//!
//! After every tick it holds:
//! - **no seam**: every pair of neighbouring chunks that both have an installed mesh (east and
//!   north edges, and the corner a diagonal neighbour shares) have the same bits in every shared
//!   vertex's position and normal;
//! - **no stale mesh**: every installed mesh's version is its chunk's `version` now, and when the
//!   chunk's snapshot can be taken, the mesh is exactly (`==`, bits of every float) the mesh
//!   built from a snapshot taken now; an installed mesh is always a loaded chunk's;
//! - **a release never waits for the worker**: with the worker held at a gate (a job taken and
//!   others queued), a teleport releases chunks with jobs in flight, and the ticks end, with the
//!   released chunks' meshes and jobs gone, while the gate is still closed (a watchdog opens it
//!   after 60 s, and the test fails if it had to);
//! - **stale results are discarded and asked again**: results for chunks edited while their job
//!   was held are counted stale and not installed; once the player stops, every complete chunk
//!   has an installed mesh of its current version (every edit was re-meshed).
//!
//! The cell is 10 m / 12 = 0.833… m, so a position computed from a chunk's origin plus a local
//! offset rounds differently on the two sides of an edge: only world coordinates give the same
//! bits.

#[path = "../examples/kits/mesher.rs"]
mod mesher;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use world_streaming::game::Game;
use world_streaming::grid::{ChunkPos, Position};
use world_streaming::host::EntityId;
use world_streaming::kits::terrain::{Snapshot, TerrainService, TERRAIN};

const CHUNK: f64 = 10.0;
const CELLS: u32 = 12;

fn game(gate: Arc<mesher::Gate>) -> Game {
    let scene = json!({
        "kits": [
            { "id": "world.ground" },
            { "id": "world.streaming", "config": {
                "chunkSize": CHUNK, "radius": 2, "budgetMs": 4, "neighbours": 1, "lookAheadTicks": 2 } },
            { "id": "world.terrain", "config": {
                "seed": 44, "cellsPerChunk": CELLS, "commitLatency": 2, "workers": 1 } },
            { "id": mesher::ID }
        ],
        "entities": [ { "id": "hero", "tags": ["player"], "position": { "x": 5, "z": 5 } } ]
    });
    Game::from_scene_text(
        &scene.to_string(),
        "scene.json",
        ".".as_ref(),
        &mesher::catalog(gate),
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

struct Drive {
    game: Game,
    terrain: std::rc::Rc<dyn TerrainService>,
    hero: EntityId,
    /// Seam pairs compared over the drive.
    pairs: usize,
}

impl Drive {
    fn new(gate: Arc<mesher::Gate>) -> Drive {
        let game = game(gate);
        let terrain = game
            .engine()
            .service::<dyn TerrainService>(TERRAIN)
            .expect("terrain");
        Drive {
            game,
            terrain,
            hero: EntityId::new("hero"),
            pairs: 0,
        }
    }

    fn kit(&self) -> &mesher::MesherKit {
        self.game.kit::<mesher::MesherKit>().expect("enabled")
    }

    fn move_to(&mut self, x: f64, z: f64) {
        let (hero, t) = (self.hero.clone(), self.game.engine().tick_count() + 1);
        self.game
            .engine_mut()
            .input(t, |e| e.world_mut().move_to(&hero, Position::new(x, z)))
            .unwrap_or_else(|e| panic!("{e}"));
    }

    /// An edit of the cell at `(i, j)` of `chunk` (next tick's input), if the chunk is built.
    fn edit(&mut self, chunk: ChunkPos, i: u32, j: u32, height: u16) -> bool {
        let cell = CHUNK / f64::from(CELLS);
        let at = Position::new(
            chunk.x as f64 * CHUNK + (f64::from(i) + 0.5) * cell,
            chunk.z as f64 * CHUNK + (f64::from(j) + 0.5) * cell,
        );
        self.terrain.is_built(chunk) && self.game.edit(at, height, None).is_ok()
    }

    /// One tick, then everything the test holds after a tick.
    fn tick(&mut self) {
        self.game.tick();
        self.game.engine_mut().take_events();
        let t = self.game.engine().tick_count();
        let meshes = self.kit().meshes();
        match mesher::check_seams(&meshes) {
            Ok(n) => self.pairs += n,
            Err(s) => panic!(
                "tick {t}: a seam between {} and {} (vertex {} of {} vs vertex {} of {}): {:?} vs {:?}",
                s.a,
                s.b,
                s.a_vertex,
                s.a,
                s.b_vertex,
                s.b,
                meshes[&s.a].vertex_bits(s.a_vertex),
                meshes[&s.b].vertex_bits(s.b_vertex)
            ),
        }
        let streaming = self.game.streaming().expect("streaming");
        for (c, mesh) in &meshes {
            assert!(
                streaming.is_loaded(*c),
                "tick {t}: {c} has a mesh but is not loaded"
            );
            assert_eq!(
                self.terrain.version(*c),
                Some(mesh.version),
                "tick {t}: the mesh of {c} is stale"
            );
            if let Ok(now) = self.terrain.snapshot(*c, mesher::SKIN) {
                assert!(
                    **mesh == mesher::build(&now, CHUNK),
                    "tick {t}: the mesh of {c} (version {}) is not the mesh of its terrain now",
                    mesh.version
                );
            }
        }
    }

    /// Edits on the edges and corners of the built chunks around `(x, z)`: one edit a call,
    /// cycling through the corners and the edges' middles.
    fn edit_near(&mut self, x: f64, z: f64, k: u64) -> bool {
        let n = CELLS - 1;
        let spots = [
            (0, 0),
            (n, 0),
            (n, n),
            (0, n),
            (n, n / 2),
            (n / 2, n),
            (0, 5),
            (7, 0),
        ];
        let (i, j) = spots[(k % spots.len() as u64) as usize];
        let chunk = ChunkPos::new(
            (x / CHUNK).floor() as i64 + (k % 3) as i64 - 1,
            (z / CHUNK).floor() as i64 + (k / 3 % 3) as i64 - 1,
        );
        self.edit(chunk, i, j, 20_000 + (k % 200) as u16 * 100)
    }
}

/// A snapshot of `chunk` (skin 1) of a made-up world whose height is a function of the world
/// cell, as the terrain's snapshots are.
fn synthetic(chunk: ChunkPos, height: impl Fn(i64, i64) -> u16) -> Snapshot {
    let side = CELLS + 2;
    let mut heights = Vec::new();
    for j in 0..i64::from(side) {
        for i in 0..i64::from(side) {
            heights.push(height(
                chunk.x * i64::from(CELLS) + i - 1,
                chunk.z * i64::from(CELLS) + j - 1,
            ));
        }
    }
    Snapshot {
        chunk,
        skin: 1,
        side,
        materials: vec![0; heights.len()],
        heights,
        version: 1,
    }
}

#[test]
fn meshes_of_neighbouring_snapshots_share_their_edges_and_a_flat_one_is_flat() {
    let rough = |i: i64, j: i64| (i.wrapping_mul(7919) ^ j.wrapping_mul(104_729)) as u16;
    let mut meshes = std::collections::BTreeMap::new();
    for z in -3..=-1 {
        for x in 2..=4 {
            let c = ChunkPos::new(x, z);
            meshes.insert(c, Arc::new(mesher::build(&synthetic(c, rough), CHUNK)));
        }
    }
    // 6 east edges, 6 north edges, 4 north-east and 4 north-west corners.
    assert_eq!(mesher::check_seams(&meshes), Ok(20));
    let m = &meshes[&ChunkPos::new(3, -2)];
    assert_eq!(m.triangles(), (2 * CELLS * CELLS) as usize);
    assert_eq!(m.positions.len(), ((CELLS + 1) * (CELLS + 1)) as usize);

    let flat = mesher::build(&synthetic(ChunkPos::new(-5, 7), |_, _| 512), CHUNK);
    assert!(flat.normals.iter().all(|n| *n == [0.0, 1.0, 0.0]));
    assert!(flat.positions.iter().all(|p| p[1] == 2.0));
    // The corner (0, 0) of chunk (-5, 7) is world corner (-60, 84): -50 m, 70 m.
    assert_eq!(flat.positions[0], [-50.0, 2.0, 70.0]);
}

/// Opens `gate` after 60 s unless told the test is done; says whether it had to.
struct Watchdog {
    done: Arc<AtomicBool>,
    fired: Arc<AtomicBool>,
}

impl Watchdog {
    fn new(gate: Arc<mesher::Gate>) -> Watchdog {
        let (done, fired) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        let (d, f) = (done.clone(), Arc::clone(&fired));
        std::thread::spawn(move || {
            let until = Instant::now() + Duration::from_secs(60);
            while Instant::now() < until {
                if d.load(Ordering::Acquire) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            f.store(true, Ordering::Release);
            gate.open();
        });
        Watchdog { done, fired }
    }

    fn fired(&self) -> bool {
        self.fired.load(Ordering::Acquire)
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Release);
    }
}

#[test]
fn meshes_share_their_edges_bit_for_bit_stay_current_and_releases_never_wait() {
    let gate = mesher::Gate::new();
    let mut d = Drive::new(gate.clone());
    let mut edits = 0;

    // 1. The drive east, 1.5 m a tick, an edit every tick on an edge or corner near the player;
    //    the worker gets the time between ticks (each result is installed on the next tick).
    let mut x = 5.0;
    for k in 0..120u64 {
        x += 1.5;
        d.move_to(x, 5.0);
        edits += u64::from(d.edit_near(x, 5.0, k));
        d.tick();
        d.kit().wait_idle();
    }
    let s = d.kit().stats();
    assert!(edits >= 100, "only {edits} edits were made");
    assert!(
        s.installed > 100 && s.remeshed > 20 && s.withdrawn > 20,
        "{s:?}"
    );

    // 2. Stale results: the worker held at the gate while the chunks whose jobs it holds are
    //    edited; opened, it answers with meshes of the old versions, which are discarded.
    gate.close();
    let mut held = BTreeSet::new();
    for _ in 0..8 {
        x += 1.5;
        d.move_to(x, 5.0);
        d.tick();
        held.extend(d.kit().in_flight());
    }
    assert!(!held.is_empty(), "no job was held at the gate");
    let before = d.kit().stats();
    for c in d.kit().in_flight() {
        assert!(d.edit(c, 0, 0, 60_000), "{c} is not built");
    }
    gate.open();
    d.kit().wait_idle();
    d.tick();
    let after = d.kit().stats();
    assert!(
        after.stale > before.stale,
        "no stale result was discarded: {before:?} → {after:?}"
    );

    // 3. A release never waits for the worker: the worker holds a job at the gate and others
    //    are queued; a teleport releases those chunks, and the ticks end anyway.
    let watchdog = Watchdog::new(gate.clone());
    gate.close();
    let mut waiting = BTreeSet::new();
    for _ in 0..6 {
        x += 1.5;
        d.move_to(x, 5.0);
        d.tick();
        waiting.extend(d.kit().in_flight());
    }
    assert!(!waiting.is_empty(), "no job was held at the gate");
    let meshed_before = d.kit().meshes().len();
    x += 500.0;
    d.move_to(x, 5.0);
    for _ in 0..3 {
        d.tick(); // ends although the worker is held
    }
    assert!(
        !watchdog.fired() && gate.is_closed(),
        "a tick waited for the worker"
    );
    let streaming = d.game.streaming().expect("streaming");
    let released: Vec<_> = waiting
        .iter()
        .filter(|c| !streaming.is_loaded(**c))
        .collect();
    assert!(!released.is_empty(), "no chunk with a job was released");
    for c in &released {
        assert!(d.kit().mesh(**c).is_none(), "{c} kept its mesh");
        assert!(!d.kit().in_flight().contains(c), "{c} kept its job");
    }
    assert!(d.kit().stats().dropped > 0 && meshed_before > 0);
    drop(watchdog);
    gate.open();
    d.kit().wait_idle();

    // 4. The player stops, a few more edits, then none: every complete chunk gets a mesh of its
    //    current version.
    let mut late_edits = 0;
    for k in 0..30u64 {
        if k < 10 {
            late_edits += u64::from(d.edit_near(x, 5.0, k));
        }
        d.tick();
        d.kit().wait_idle();
    }
    let complete = streaming.complete();
    assert!(complete.len() >= 9, "{complete:?}");
    for c in complete {
        let mesh = d.kit().mesh(c).unwrap_or_else(|| panic!("{c} has no mesh"));
        assert_eq!(d.terrain.version(c), Some(mesh.version), "{c}");
    }
    assert!(late_edits > 0, "no edit after the teleport");
    let s = d.kit().stats();
    assert!(s.orphaned > 0, "{s:?}");
    assert!(d.pairs > 1000, "only {} seam pairs compared", d.pairs);
}
