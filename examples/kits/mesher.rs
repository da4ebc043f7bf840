//! `example.mesher`, an example kit that draws what `world.streaming` says is *complete*
//! (docs/meshing.md#the-mesher-walkthrough): on `world.chunk.complete` it takes the chunk's
//! bordered snapshot with a skin of one cell (`TerrainService::snapshot(chunk, 1)`), builds a
//! triangle mesh from it on its own worker thread (two triangles a cell, a vertex at every cell
//! corner, normals from central differences that read the skin), and installs the mesh only if
//! the snapshot's version is still the chunk's `version` — else the result is stale: discarded
//! and asked for again. A version that moves (`world.terrain.changed`) withdraws the mesh at
//! once and asks for a new one; a release drops the chunk's mesh, and forgets its job, at once,
//! never waiting for the worker.
//!
//! `examples/mesher.rs` runs it (`cargo run --example mesher`); `tests/mesher.rs` drives a
//! player across a terrain world with edits and checks, at every tick, that neighbouring
//! meshes share their edge vertices and normals bit for bit, that no stale mesh is installed,
//! and that a release never waits for the worker.
//!
//! The file is included by `#[path]` in the example, its test and its bench, each of which uses
//! a part of it.
#![allow(dead_code)]

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use world_streaming::grid::ChunkPos;
use world_streaming::host::{
    Ctx, Event, Kit, KitError, KitFactory, KitManifest, KitSpec, Problem, Services,
};
use world_streaming::kits::streaming::{ChunkSubscription, StreamingService, STREAMING};
use world_streaming::kits::terrain::{Snapshot, TerrainEvent, TerrainService, TERRAIN};

/// The kit's id.
pub const ID: &str = "example.mesher";

/// Metres per unit of terrain height (heights are 0..=65 535: 0 to 256 m).
pub const HEIGHT_SCALE: f64 = 1.0 / 256.0;

/// The skin the mesher asks for: one cell of each neighbour, what a corner's height and normal
/// read.
pub const SKIN: u32 = 1;

// ---------------------------------------------------------------------------------------------
// The mesh: a pure function of a snapshot.
// ---------------------------------------------------------------------------------------------

/// A chunk's triangle mesh: a vertex at every cell corner, `(cells + 1)²` of them, corner
/// `(i, j)` (`i` east, `j` north, `0..=cells`) at index `j·(cells + 1) + i`; two triangles a
/// cell, counter-clockwise seen from above (`y` up).
#[derive(Debug, Clone, PartialEq)]
pub struct Mesh {
    /// The chunk.
    pub chunk: ChunkPos,
    /// The version of the snapshot it was built from.
    pub version: u64,
    /// Cells per chunk side.
    pub cells: u32,
    /// Vertex positions in metres: `x` east, `y` up, `z` north.
    pub positions: Vec<[f32; 3]>,
    /// Unit normals, one a vertex.
    pub normals: Vec<[f32; 3]>,
    /// Three vertex indices a triangle.
    pub indices: Vec<u32>,
}

/// A side of a chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// `i = 0`.
    West,
    /// `i = cells`.
    East,
    /// `j = 0`.
    South,
    /// `j = cells`.
    North,
}

impl Mesh {
    /// The vertex index of corner `(i, j)`.
    pub fn index(&self, i: u32, j: u32) -> usize {
        (j * (self.cells + 1) + i) as usize
    }

    /// The vertex indices along `side`, from south to north or from west to east.
    pub fn side(&self, side: Side) -> Vec<usize> {
        let n = self.cells;
        (0..=n)
            .map(|k| match side {
                Side::West => self.index(0, k),
                Side::East => self.index(n, k),
                Side::South => self.index(k, 0),
                Side::North => self.index(k, n),
            })
            .collect()
    }

    /// The bits of vertex `v`'s position and normal: what two meshes must share on an edge.
    pub fn vertex_bits(&self, v: usize) -> [u32; 6] {
        let (p, n) = (self.positions[v], self.normals[v]);
        [p[0], p[1], p[2], n[0], n[1], n[2]].map(f32::to_bits)
    }

    /// Triangles in the mesh.
    pub fn triangles(&self) -> usize {
        self.indices.len() / 3
    }
}

/// Builds the mesh of `snapshot`'s chunk (its skin at least one cell; `chunk_size` in metres).
///
/// Corner `(i, j)` of the chunk lies between cells `i − 1, i` and `j − 1, j` (cell `−1` and cell
/// `cells` are the skin). Its height is the mean of those four cells; its normal comes from the
/// central differences across the corner (the east pair's mean minus the west pair's, the north
/// pair's minus the south pair's, over one cell). Positions are computed from the corner's
/// *world* index (`chunk.x · cells + i`) times the cell size, never from the chunk's origin plus
/// a local offset, so the two chunks of an edge compute each shared vertex from the same
/// numbers, in the same order, and get the same bits.
pub fn build(snapshot: &Snapshot, chunk_size: f64) -> Mesh {
    assert!(snapshot.skin >= 1, "the mesher needs a skin of one cell");
    let skin = i64::from(snapshot.skin);
    let n = snapshot.side - 2 * snapshot.skin;
    let chunk = snapshot.chunk;
    let cell = chunk_size / f64::from(n);
    // The height of cell (i, j) of the chunk, i and j in -1..=n (the skin beyond 0..n).
    let h = |i: i64, j: i64| -> i64 {
        i64::from(snapshot.height((i + skin) as u32, (j + skin) as u32))
    };
    let side = (n + 1) as usize;
    let mut positions = Vec::with_capacity(side * side);
    let mut normals = Vec::with_capacity(side * side);
    for j in 0..=i64::from(n) {
        for i in 0..=i64::from(n) {
            let (sw, se, nw, ne) = (h(i - 1, j - 1), h(i, j - 1), h(i - 1, j), h(i, j));
            let world_i = chunk.x * i64::from(n) + i;
            let world_j = chunk.z * i64::from(n) + j;
            let y = (sw + se + nw + ne) as f64 * (HEIGHT_SCALE / 4.0);
            positions.push([
                (world_i as f64 * cell) as f32,
                y as f32,
                (world_j as f64 * cell) as f32,
            ]);
            // Slopes in metres per metre: (east mean - west mean) / cell, likewise north.
            let dx = ((se + ne) - (sw + nw)) as f64 * (HEIGHT_SCALE / 2.0) / cell;
            let dz = ((nw + ne) - (sw + se)) as f64 * (HEIGHT_SCALE / 2.0) / cell;
            let len = (dx * dx + 1.0 + dz * dz).sqrt();
            normals.push([(-dx / len) as f32, (1.0 / len) as f32, (-dz / len) as f32]);
        }
    }
    let mut indices = Vec::with_capacity((n * n * 6) as usize);
    let at = |i: u32, j: u32| j * (n + 1) + i;
    for j in 0..n {
        for i in 0..n {
            let (sw, se, nw, ne) = (at(i, j), at(i + 1, j), at(i, j + 1), at(i + 1, j + 1));
            indices.extend_from_slice(&[sw, nw, se, se, nw, ne]);
        }
    }
    Mesh {
        chunk,
        version: snapshot.version,
        cells: n,
        positions,
        normals,
        indices,
    }
}

/// One mismatch on a shared edge: the two chunks and the first differing vertex of each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seam {
    /// The chunk to the west or south (or south-west / south-east of a corner).
    pub a: ChunkPos,
    /// Its neighbour.
    pub b: ChunkPos,
    /// The vertex of `a`.
    pub a_vertex: usize,
    /// The vertex of `b`.
    pub b_vertex: usize,
}

/// Compares every pair of neighbouring chunks of `meshes` that both have a mesh: the east and
/// north edges (each of their vertices), and the north-east and north-west corners (the one
/// vertex a diagonal neighbour shares), bit for bit, positions and normals. Returns how many
/// pairs were compared, or the first seam.
pub fn check_seams(meshes: &BTreeMap<ChunkPos, Arc<Mesh>>) -> Result<usize, Seam> {
    let mut pairs = 0;
    for (&c, a) in meshes {
        let pairs_of = [
            (ChunkPos::new(c.x + 1, c.z), Side::East, Side::West),
            (ChunkPos::new(c.x, c.z + 1), Side::North, Side::South),
        ];
        for (n, mine, theirs) in pairs_of {
            let Some(b) = meshes.get(&n) else { continue };
            pairs += 1;
            for (va, vb) in a.side(mine).into_iter().zip(b.side(theirs)) {
                if a.vertex_bits(va) != b.vertex_bits(vb) {
                    return Err(Seam {
                        a: c,
                        b: n,
                        a_vertex: va,
                        b_vertex: vb,
                    });
                }
            }
        }
        let k = a.cells;
        let corners = [
            (ChunkPos::new(c.x + 1, c.z + 1), (k, k), (0, 0)),
            (ChunkPos::new(c.x - 1, c.z + 1), (0, k), (k, 0)),
        ];
        for (n, (ai, aj), (bi, bj)) in corners {
            let Some(b) = meshes.get(&n) else { continue };
            pairs += 1;
            let (va, vb) = (a.index(ai, aj), b.index(bi, bj));
            if a.vertex_bits(va) != b.vertex_bits(vb) {
                return Err(Seam {
                    a: c,
                    b: n,
                    a_vertex: va,
                    b_vertex: vb,
                });
            }
        }
    }
    Ok(pairs)
}

// ---------------------------------------------------------------------------------------------
// The worker: one std thread, a channel of jobs in and of meshes out.
// ---------------------------------------------------------------------------------------------

/// A gate the worker passes before each job. Open by default; a test closes it to hold the
/// worker while chunks are released (a release must not wait for it).
#[derive(Debug, Default)]
pub struct Gate {
    state: Mutex<GateState>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct GateState {
    closed: bool,
    stopped: bool,
}

impl Gate {
    /// An open gate.
    pub fn new() -> Arc<Gate> {
        Arc::new(Gate::default())
    }

    /// Holds the worker before its next job.
    pub fn close(&self) {
        self.state.lock().unwrap().closed = true;
    }

    /// Lets the worker go on.
    pub fn open(&self) {
        self.state.lock().unwrap().closed = false;
        self.changed.notify_all();
    }

    /// Whether the gate is closed.
    pub fn is_closed(&self) -> bool {
        self.state.lock().unwrap().closed
    }

    /// Waits until the gate is open; `false` when the worker is to stop.
    fn pass(&self) -> bool {
        let mut s = self.state.lock().unwrap();
        while s.closed && !s.stopped {
            s = self.changed.wait(s).unwrap();
        }
        !s.stopped
    }

    fn stop(&self) {
        self.state.lock().unwrap().stopped = true;
        self.changed.notify_all();
    }
}

/// A job: the snapshot it owns (nothing shared with the world) and its number.
struct Job {
    id: u64,
    snapshot: Snapshot,
    chunk_size: f64,
}

/// The worker thread and its channels.
struct Worker {
    jobs: Option<Sender<Job>>,
    results: Receiver<(u64, Mesh)>,
    /// Jobs sent whose mesh has not been sent back yet.
    busy: Arc<AtomicUsize>,
    gate: Arc<Gate>,
    thread: Option<JoinHandle<()>>,
}

impl Worker {
    fn start(gate: Arc<Gate>) -> std::io::Result<Worker> {
        let (jobs, inbox) = mpsc::channel::<Job>();
        let (outbox, results) = mpsc::channel();
        let busy = Arc::new(AtomicUsize::new(0));
        let (g, b) = (gate.clone(), busy.clone());
        let thread = std::thread::Builder::new()
            .name("example.mesher".into())
            .spawn(move || {
                while let Ok(job) = inbox.recv() {
                    if !g.pass() {
                        return;
                    }
                    let mesh = build(&job.snapshot, job.chunk_size);
                    let sent = outbox.send((job.id, mesh));
                    b.fetch_sub(1, Ordering::AcqRel);
                    if sent.is_err() {
                        return;
                    }
                }
            })?;
        Ok(Worker {
            jobs: Some(jobs),
            results,
            busy,
            gate,
            thread: Some(thread),
        })
    }

    fn send(&self, job: Job) {
        self.busy.fetch_add(1, Ordering::AcqRel);
        if let Some(jobs) = &self.jobs {
            if jobs.send(job).is_err() {
                self.busy.fetch_sub(1, Ordering::AcqRel);
            }
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        // The game is going away: the worker stops at its next job (a closed gate included).
        self.jobs = None;
        self.gate.stop();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The kit.
// ---------------------------------------------------------------------------------------------

/// What the mesher did so far (timing decides how the worker's turns fall between ticks, so
/// these counts, unlike the game's events, may differ from run to run).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Snapshots taken and sent to the worker.
    pub jobs: u64,
    /// Meshes installed.
    pub installed: u64,
    /// Of those, meshes that replaced or followed a mesh of an older version of the chunk.
    pub remeshed: u64,
    /// Results discarded because the chunk's version had moved (asked for again).
    pub stale: u64,
    /// Results discarded because the chunk was released meanwhile.
    pub orphaned: u64,
    /// Meshes withdrawn because their chunk's version moved.
    pub withdrawn: u64,
    /// Meshes dropped on a release.
    pub dropped: u64,
    /// Chunks asked for that were no longer complete (the next `world.chunk.complete` asks
    /// again).
    pub not_complete: u64,
}

/// What the callbacks and the tick share.
#[derive(Default)]
struct State {
    /// The installed meshes: each one's version is its chunk's version now.
    installed: BTreeMap<ChunkPos, Arc<Mesh>>,
    /// Chunks to mesh (again) at the end of the tick.
    wanted: BTreeSet<ChunkPos>,
    /// The job in flight for a chunk (at most one), by its number.
    in_flight: BTreeMap<ChunkPos, u64>,
    /// The loaded chunks that had a mesh installed since they loaded, so a new mesh knows it
    /// is a re-mesh.
    had_mesh: BTreeSet<ChunkPos>,
    next_job: u64,
    stats: Stats,
}

impl State {
    /// A release: the chunk's mesh and job are forgotten now (the job's result, when it
    /// comes, finds no job and is dropped).
    fn release(&mut self, chunk: ChunkPos) {
        if self.installed.remove(&chunk).is_some() {
            self.stats.dropped += 1;
        }
        self.wanted.remove(&chunk);
        self.in_flight.remove(&chunk);
        self.had_mesh.remove(&chunk);
    }
}

/// The kit.
pub struct MesherKit {
    state: Rc<RefCell<State>>,
    worker: Worker,
    terrain: Option<Rc<dyn TerrainService>>,
    chunk_size: f64,
    _subscription: Option<ChunkSubscription>,
}

/// The kit's manifest: it needs `world.streaming` with complete chunks (1.3) and
/// `world.terrain` with versions and snapshots.
pub fn manifest() -> KitManifest {
    let mut m = KitManifest::simple(ID, "1.0.0");
    m.requires
        .insert(STREAMING.into(), "^1.3".parse().expect("a requirement"));
    m.requires
        .insert(TERRAIN.into(), "^1".parse().expect("a requirement"));
    m
}

/// The catalog factory of a kit whose worker passes `gate` before each job.
pub fn factory(gate: Arc<Gate>) -> KitFactory {
    Box::new(
        move |spec: &KitSpec<'_>| -> Result<Box<dyn Kit>, Vec<Problem>> {
            let worker = Worker::start(gate.clone()).map_err(|e| {
                vec![Problem::new(
                    spec.config_path.clone(),
                    format!("{ID} could not start its worker: {e}"),
                )]
            })?;
            Ok(Box::new(MesherKit {
                state: Rc::default(),
                worker,
                terrain: None,
                chunk_size: 0.0,
                _subscription: None,
            }))
        },
    )
}

/// The built-in catalog plus `example.mesher` (its worker gated by `gate`).
pub fn catalog(gate: Arc<Gate>) -> world_streaming::host::KitCatalog {
    let mut catalog = world_streaming::kits::builtin_catalog();
    catalog.add(manifest(), factory(gate));
    catalog
}

impl MesherKit {
    /// The installed meshes, row order.
    pub fn meshes(&self) -> BTreeMap<ChunkPos, Arc<Mesh>> {
        self.state.borrow().installed.clone()
    }

    /// The installed mesh of `chunk`.
    pub fn mesh(&self, chunk: ChunkPos) -> Option<Arc<Mesh>> {
        self.state.borrow().installed.get(&chunk).cloned()
    }

    /// The chunks with a job in flight, row order.
    pub fn in_flight(&self) -> Vec<ChunkPos> {
        self.state.borrow().in_flight.keys().copied().collect()
    }

    /// What the mesher did so far.
    pub fn stats(&self) -> Stats {
        self.state.borrow().stats
    }

    /// Jobs the worker has not answered yet.
    pub fn busy(&self) -> usize {
        self.worker.busy.load(Ordering::Acquire)
    }

    /// Waits until the worker has answered every job sent (the time a frame gives it): the
    /// next tick then installs every result. Never call it with the gate closed.
    pub fn wait_idle(&self) {
        while self.busy() > 0 {
            std::thread::yield_now();
        }
    }

    /// Installs the results that arrived, then sends a job for every chunk asked for.
    fn pump(&mut self) {
        let Some(terrain) = self.terrain.clone() else {
            return;
        };
        let mut state = self.state.borrow_mut();
        let state = &mut *state;
        // 1. Results: install only what is still the chunk's version.
        while let Ok((id, mesh)) = self.worker.results.try_recv() {
            let chunk = mesh.chunk;
            if state.in_flight.get(&chunk) != Some(&id) {
                state.stats.orphaned += 1; // released (and maybe loaded again) meanwhile
                continue;
            }
            state.in_flight.remove(&chunk);
            if terrain.version(chunk) != Some(mesh.version) {
                state.stats.stale += 1;
                state.wanted.insert(chunk);
                continue;
            }
            state.stats.installed += 1;
            if !state.had_mesh.insert(chunk) {
                state.stats.remeshed += 1;
            }
            state.installed.insert(chunk, Arc::new(mesh));
        }
        // 2. Jobs: a snapshot for every chunk asked for with no job in flight.
        let asked: Vec<ChunkPos> = state.wanted.iter().copied().collect();
        for chunk in asked {
            if state.in_flight.contains_key(&chunk) {
                continue; // its result comes first; stale, it asks again
            }
            state.wanted.remove(&chunk);
            let current = terrain.version(chunk);
            if current.is_some() && state.installed.get(&chunk).map(|m| m.version) == current {
                continue; // already current
            }
            match terrain.snapshot(chunk, SKIN) {
                Ok(snapshot) => {
                    state.next_job += 1;
                    state.in_flight.insert(chunk, state.next_job);
                    state.stats.jobs += 1;
                    self.worker.send(Job {
                        id: state.next_job,
                        snapshot,
                        chunk_size: self.chunk_size,
                    });
                }
                Err(_) => state.stats.not_complete += 1,
            }
        }
    }
}

fn missing(service: &str) -> KitError {
    KitError::MissingService {
        kit: ID.into(),
        service: service.into(),
    }
}

impl Kit for MesherKit {
    fn id(&self) -> &str {
        ID
    }

    fn start(&mut self, services: &Services) -> Result<(), KitError> {
        let streaming = services
            .get::<dyn StreamingService>(STREAMING)
            .ok_or_else(|| missing(STREAMING))?;
        let terrain = services
            .get::<dyn TerrainService>(TERRAIN)
            .ok_or_else(|| missing(TERRAIN))?;
        self.chunk_size = streaming.chunk_size();
        self.terrain = Some(terrain);
        // Complete: mesh it at the end of this tick. Incomplete (a neighbour released): the
        // mesh stays, its data has not changed (a change moves its version, below).
        let complete = self.state.clone();
        streaming.on_complete(Box::new(move |chunk, is_complete| {
            if is_complete {
                complete.borrow_mut().wanted.insert(chunk);
            }
        }));
        // Released: mesh and job forgotten at once; the worker is not waited for.
        let released = self.state.clone();
        self._subscription = Some(streaming.on_chunk(Box::new(move |chunk, loaded| {
            if !loaded {
                released.borrow_mut().release(chunk);
            }
        })));
        Ok(())
    }

    fn on_event(&mut self, event: &Event, _ctx: &mut Ctx<'_>) {
        // The chunk's version moved (an edit in it or next door): its mesh is stale now, so it
        // is withdrawn, and a new one is asked for at the end of the tick.
        let Some((0, chunk)) = TerrainEvent::changed(event) else {
            return;
        };
        let version = self.terrain.as_ref().and_then(|t| t.version(chunk));
        let mut state = self.state.borrow_mut();
        if let Some(mesh) = state.installed.get(&chunk) {
            if Some(mesh.version) != version {
                state.installed.remove(&chunk);
                state.stats.withdrawn += 1;
            }
        }
        if version.is_some() {
            state.wanted.insert(chunk);
        }
    }

    fn end_tick(&mut self, _ctx: &mut Ctx<'_>) {
        self.pump();
    }

    fn after_load(&mut self, ctx: &mut Ctx<'_>) {
        // A loaded save brings other chunks and versions: start again from what is complete.
        let complete = ctx
            .services
            .get::<dyn StreamingService>(STREAMING)
            .map(|s| s.complete())
            .unwrap_or_default();
        let mut state = self.state.borrow_mut();
        state.installed.clear();
        state.in_flight.clear();
        state.had_mesh.clear();
        state.wanted = complete.into_iter().collect();
    }
}
