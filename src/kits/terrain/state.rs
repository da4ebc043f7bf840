//! The kit's state, shared between the kit (which ticks) and the service handle (`handle.rs`):
//! chunks in flight, built, modified and dirty, and the commit queue.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::rc::Rc;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::grid::{ChunkPos, Position};
use crate::kits::streaming::{BuilderId, StreamingService};

use super::pool::{BlockDone, BlockJob, Built, BuiltBlock, Job, Pool};
use super::region::Diff;
use super::snapshot;
use super::store::{self, Reported, Store};
use super::*;
use crate::host::EventData;

/// A chunk dispatched and not committed yet.
#[derive(Debug)]
pub(super) struct Flight {
    pub(super) version: u64,
    pub(super) commit_at: u64,
    /// What its worker sent back, once it has (`Some(None)`: the worker failed, and the
    /// commit builds the chunk itself).
    pub(super) done: Option<Option<Built>>,
}

/// A LOD block dispatched and not committed yet (docs/reference/lod.md#blocks).
#[derive(Debug)]
pub(super) struct BlockFlight {
    pub(super) version: u64,
    pub(super) commit_at: u64,
    pub(super) step: u32,
    pub(super) done: Option<Option<BuiltBlock>>,
    /// Inline (docs/reference/terrain.md#inline): the job as dispatched, built at the commit
    /// (with the resident diffs of its dispatch, as a worker would have had them).
    pub(super) job: Option<Box<BlockJob>>,
}

/// A LOD block: (level, block).
pub(super) type BlockKey = (u32, ChunkPos);

/// A LOD block the terrain holds: built, in flight, or both (rebuilt after an edit).
#[derive(Debug, Default)]
pub(super) struct BlockSlot {
    /// Its cells and the step they were built with, once committed.
    pub(super) built: Option<(u32, Arc<ChunkData>)>,
    /// Its dispatch not committed yet.
    pub(super) flight: Option<BlockFlight>,
}

/// The LOD blocks of the terrain (docs/reference/terrain.md#lod-blocks-built-by-terrain): in
/// flight, built, dirty, and their commit queue.
#[derive(Debug, Default)]
pub(super) struct Blocks {
    pub(super) next_version: u64,
    /// Every block built or in flight, one hashed entry each (looked up once on every
    /// dispatch, result, commit and release; a save sorts them). No slot is empty.
    pub(super) slots: FxHashMap<BlockKey, BlockSlot>,
    /// How many of their flights wait for their worker's result.
    pub(super) awaited: usize,
    /// Commits due, in (tick, dispatch order).
    pub(super) commits: VecDeque<(u64, u64, BlockKey)>,
    pub(super) jobs: Vec<BlockJob>,
    /// Blocks an edit changed: told `world.terrain.changed {x, z, level}` at the end of the
    /// tick and rebuilt.
    pub(super) dirty: BTreeSet<BlockKey>,
    /// The step of each level (index = level − 1) blocks were last dispatched with.
    pub(super) steps: [u32; 4],
}

impl Blocks {
    /// Block `key`'s cells and their step, if built.
    pub(super) fn built(&self, key: &BlockKey) -> Option<&(u32, Arc<ChunkData>)> {
        self.slots.get(key)?.built.as_ref()
    }

    /// Block `key`'s dispatch not committed yet, if any.
    #[cfg(test)]
    pub(super) fn flight(&self, key: &BlockKey) -> Option<&BlockFlight> {
        self.slots.get(key)?.flight.as_ref()
    }

    /// The built blocks (hash order).
    pub(super) fn all_built(&self) -> impl Iterator<Item = (&BlockKey, &(u32, Arc<ChunkData>))> {
        self.slots
            .iter()
            .filter_map(|(k, s)| Some((k, s.built.as_ref()?)))
    }

    /// The dispatches not committed yet (hash order).
    pub(super) fn flights(&self) -> impl Iterator<Item = (&BlockKey, &BlockFlight)> {
        self.slots
            .iter()
            .filter_map(|(k, s)| Some((k, s.flight.as_ref()?)))
    }
}

pub(super) struct State {
    pub(super) config: TerrainConfig,
    pub(super) chunk_size: f64,
    /// Built once, in [`Kit::start`], when the chunk size is known (see [`State::generator`]).
    pub(super) generator: Option<Arc<Generator>>,
    /// The save thread (dropped after the pool, whose workers ask it).
    pub(super) pool: Option<Pool>,
    pub(super) store: Option<Store>,
    pub(super) next_version: u64,
    /// Chunks dispatched and not committed, with their results once back (hashed: looked up
    /// on every result, commit and release; saves sort them).
    pub(super) in_flight: FxHashMap<ChunkPos, Flight>,
    /// How many of `in_flight` have their result.
    pub(super) arrived: usize,
    /// Commits due, in (tick, dispatch order): a queue, since dispatches come in that order
    /// (a commit tick is the dispatch tick plus a fixed latency).
    pub(super) commits: VecDeque<(u64, u64, ChunkPos)>,
    /// Jobs dispatched this tick and released chunks' data, handed to the pool together at
    /// the end of the tick (one lock, at most one wake) or before waiting for a result.
    pub(super) jobs: Vec<Job>,
    pub(super) trash: Vec<Arc<ChunkData>>,
    /// Built chunks (hashed; saves list them in row order).
    pub(super) built: FxHashMap<ChunkPos, Arc<ChunkData>>,
    /// Each built chunk's version (docs/reference/terrain.md#versions), the same keys as `built`.
    pub(super) versions: FxHashMap<ChunkPos, u64>,
    /// Built chunks that differ from their baseline: the cells that differ (*modified*).
    pub(super) diffs: BTreeMap<ChunkPos, Diff>,
    /// Built chunks whose stored form is behind (`diffs` changed since the last write back).
    pub(super) unsaved: BTreeSet<ChunkPos>,
    /// Chunks released unsaved this tick, with their diffs (`None`: back to the baseline),
    /// written back together.
    pub(super) released: Vec<(ChunkPos, Option<Diff>)>,
    /// Built chunks to rebuild (*dirty*): told `world.terrain.changed` at the end of the tick.
    pub(super) dirty: BTreeSet<ChunkPos>,
    /// Stored edits found damaged, reported at the start of the next tick.
    pub(super) errors: Vec<Reported>,
    /// The outcome of the last periodic write back, heard at the next one (its failures become
    /// `world.terrain.error` events then: the same tick whatever the threads' timing).
    pub(super) outcome: Option<store::Outcome>,
    /// Whether the last outcome heard had regions not written (retried even with no new edit).
    pub(super) failing: bool,
    /// Closed ([`TerrainKit::close`]): dropping the kit writes nothing more.
    pub(super) closed: bool,
    pub(super) waits: u64,
    pub(super) builder: Option<(Rc<dyn StreamingService>, BuilderId)>,
    pub(super) subscribers: Rc<RefCell<Vec<Rc<RefCell<BuiltCallback>>>>>,
    pub(super) outbox: crate::host::Outbox,
    pub(super) blocks: Blocks,
}

impl State {
    pub(super) fn dispatch(&mut self, chunk: ChunkPos, commit_at: u64) {
        self.send_released(); // before the job: its worker may ask for this chunk
        let version = self.next_version;
        self.next_version += 1;
        let flight = Flight {
            version,
            commit_at,
            done: None,
        };
        if let Some(old) = self.in_flight.insert(chunk, flight) {
            self.arrived -= usize::from(old.done.is_some());
        }
        // In order at the back, except after a load whose saved commits come later.
        let entry = (commit_at, version, chunk);
        if self
            .commits
            .back()
            .is_none_or(|&(t, v, _)| (t, v) < (commit_at, version))
        {
            self.commits.push_back(entry);
        } else {
            let at = self
                .commits
                .partition_point(|&(t, v, _)| (t, v) < (commit_at, version));
            self.commits.insert(at, entry);
        }
        if !self.config.runs_inline() {
            self.jobs.push(Job { chunk, version });
        }
    }

    pub(super) fn release(&mut self, chunk: ChunkPos) {
        // A result still on its way is discarded when it arrives (its version is gone).
        if let Some(flight) = self.in_flight.remove(&chunk) {
            self.arrived -= usize::from(flight.done.is_some());
            // Not handed to the pool yet (dispatched this tick): never generated at all.
            self.jobs.retain(|j| j.chunk != chunk);
        }
        if let Some(data) = self.built.remove(&chunk) {
            self.trash.push(data); // freed by a worker, off the tick
        }
        self.versions.remove(&chunk); // forgotten: a reload starts again at 1
        self.dirty.remove(&chunk);
        let diff = self.diffs.remove(&chunk);
        // Written back on release (docs/reference/world-dir.md#write-back): gathered, and sent as
        // one write at the end of the tick — or before any dispatch, so that a reload asks the save
        // thread after it has the chunk (the thread answers in the order it is asked).
        if self.unsaved.remove(&chunk) {
            self.released.push((chunk, diff));
        }
    }

    /// Hands the tick's chunk and block jobs and released data to the pool (one lock, at
    /// most one wake). Inline (no pool) there is nothing to hand over: released data is freed
    /// here.
    pub(super) fn submit(&mut self) {
        match &self.pool {
            Some(pool) => pool.submit_all(&mut self.jobs, &mut self.blocks.jobs, &mut self.trash),
            None => {
                self.jobs.clear();
                self.blocks.jobs.clear();
                self.trash.clear();
            }
        }
    }

    /// Sends the released chunks' write back, if any (one message, one rewrite a region).
    pub(super) fn send_released(&mut self) {
        if !self.released.is_empty() {
            let changes = std::mem::take(&mut self.released);
            if let Some(store) = &self.store {
                store.write(changes);
            }
        }
    }

    /// The write back of every released and every unsaved chunk.
    pub(super) fn take_unsaved(&mut self) -> Vec<(ChunkPos, Option<Diff>)> {
        let mut changes = std::mem::take(&mut self.released);
        changes.extend(
            std::mem::take(&mut self.unsaved)
                .into_iter()
                .map(|c| (c, self.diffs.get(&c).cloned())),
        );
        changes
    }

    /// Writes back every released and unsaved chunk and waits until it is stored. On failure
    /// the resident chunks stay unsaved (and the save thread, which has them all, retries
    /// their regions with every later write).
    pub(super) fn flush(&mut self) -> Result<(), store::StoreError> {
        if self.store.is_none() {
            return Ok(());
        }
        let unsaved = self.unsaved.clone();
        let changes = self.take_unsaved();
        let store = self.store.as_ref().expect("checked above");
        let result = store.flush(changes);
        if result.is_err() {
            self.unsaved = unsaved;
        }
        result
    }

    /// The generator: built once, when the kit starts (the chunk size is the streaming kit's);
    /// nothing builds, edits or loads a save before that.
    pub(super) fn generator(&self) -> &Arc<Generator> {
        self.generator
            .as_ref()
            .expect("the terrain kit is started before it builds, edits or loads")
    }

    /// Builds a chunk on this thread (a worker failed): the baseline and its stored diff.
    pub(super) fn build_here(&self, chunk: ChunkPos) -> Built {
        Built::make(
            self.generator(),
            self.store.as_ref().and_then(Store::reader).as_ref(),
            chunk,
        )
    }

    /// Files a finished result with its flight if it is still wanted; drops a stale one.
    pub(super) fn take(&mut self, done: pool::Done) {
        if let Some(flight) = self.in_flight.get_mut(&done.job.chunk) {
            if flight.version == done.job.version && flight.done.is_none() {
                flight.done = Some(done.built);
                self.arrived += 1;
            }
        }
    }

    /// Files every result the workers have sent back.
    pub(super) fn drain(&mut self) {
        while let Some(done) = self.pool.as_ref().and_then(Pool::try_recv) {
            self.take(done);
        }
    }

    /// Commits the in-flight `chunk` if it is still the dispatch `version`, waiting for its
    /// worker if needed: its terrain and whether it waited.
    pub(super) fn land(&mut self, chunk: ChunkPos, version: u64) -> Option<(Built, bool)> {
        let mut waited = false;
        loop {
            let flight = self
                .in_flight
                .get(&chunk)
                .filter(|f| f.version == version)?;
            let flight_due = flight.commit_at;
            if flight.done.is_some() {
                let flight = self.in_flight.remove(&chunk).expect("just found");
                self.arrived -= 1;
                let built = flight.done.flatten();
                return Some((built.unwrap_or_else(|| self.build_here(chunk)), waited));
            }
            if self.config.runs_inline() {
                // Inline (docs/reference/terrain.md#inline): its job runs now, here; no wait.
                self.in_flight.remove(&chunk);
                return Some((self.build_here(chunk), false));
            }
            waited = true;
            // The job may still be here; if no worker has taken it yet, build it here rather
            // than wait for one to (the tick's thread works instead of sleeping; the same bytes
            // either way).
            self.submit();
            let job = Job { chunk, version };
            if self.pool.as_ref().is_some_and(|p| p.take_queued(job)) {
                self.in_flight.remove(&chunk); // not done: `arrived` does not count it
                return Some((self.build_here(chunk), waited));
            }
            // A worker has it. Its result may be back already; if not, build the next queued
            // chunk due by the same tick meanwhile (this tick commits it too), and sleep only
            // when none is left.
            self.drain();
            if self.in_flight.get(&chunk).is_some_and(|f| f.done.is_some()) {
                continue;
            }
            let (in_flight, due) = (&self.in_flight, flight_due);
            let next = self.pool.as_ref().and_then(|p| {
                p.take_front_if(|j| {
                    in_flight
                        .get(&j.chunk)
                        .is_some_and(|f| f.version == j.version && f.commit_at <= due)
                })
            });
            if let Some(next) = next {
                let built = self.build_here(next.chunk);
                self.take(pool::Done {
                    job: next,
                    built: Some(built),
                });
                continue;
            }
            match self.pool.as_ref().and_then(Pool::recv) {
                Some(done) => self.take(done),
                // No worker left (cannot happen while the pool lives): build here.
                None => {
                    self.in_flight.remove(&chunk);
                    return Some((self.build_here(chunk), waited));
                }
            }
        }
    }

    /// Dispatches LOD block `key` of `step` to commit at `commit_at`: the diffs of its built
    /// sampled chunks go with the job (theirs are the tick's), the rest are read by the worker.
    pub(super) fn dispatch_block(&mut self, key: BlockKey, step: u32, commit_at: u64) {
        self.send_released(); // a released chunk's edits reach the save thread first
        let resident = self.resident_of(key.1, step);
        let b = &mut self.blocks;
        let version = b.next_version;
        b.next_version += 1;
        if let Some(k) = key.0.checked_sub(1).filter(|k| *k < 4) {
            b.steps[k as usize] = step;
        }
        let job = BlockJob {
            level: key.0,
            block: key.1,
            step,
            version,
            resident,
        };
        // Inline the flight keeps its job for the commit; else a worker gets it.
        let (job, inline) = if self.config.runs_inline() {
            (None, Some(Box::new(job)))
        } else {
            (Some(job), None)
        };
        let flight = BlockFlight {
            version,
            commit_at,
            step,
            done: None,
            job: inline,
        };
        b.awaited += 1;
        if let Some(old) = b.slots.entry(key).or_default().flight.replace(flight) {
            // Dispatched again: a job of the old dispatch not handed over yet is dropped (only
            // a block in flight has one).
            b.awaited -= usize::from(old.done.is_none());
            b.jobs.retain(|j| (j.level, j.block) != key);
        }
        let entry = (commit_at, version, key);
        if b.commits
            .back()
            .is_none_or(|&(t, v, _)| (t, v) < (commit_at, version))
        {
            b.commits.push_back(entry);
        } else {
            let at = b
                .commits
                .partition_point(|&(t, v, _)| (t, v) < (commit_at, version));
            b.commits.insert(at, entry);
        }
        b.jobs.extend(job);
    }

    /// The built chunks a block samples whose stored form the worker must not read, with
    /// their diffs (`None`: the baseline), row order: those with a diff, and those whose
    /// stored form is behind (`unsaved`). Any other built chunk is stored as it is, and the
    /// save thread answers the worker's read after every write sent before the dispatch (the
    /// released chunks are sent first). With nothing edited, nothing goes and no sampled chunk
    /// is looked up.
    fn resident_of(&self, block: ChunkPos, step: u32) -> Vec<(ChunkPos, Option<Diff>)> {
        if self.diffs.is_empty() && self.unsaved.is_empty() {
            return Vec::new();
        }
        let cells = self.config.cells_per_chunk.get();
        super::generate::sampled_chunks(block, step, cells)
            .into_iter()
            .filter_map(|c| match self.diffs.get(&c) {
                Some(d) => Some((c, Some(d.clone()))),
                None => self.unsaved.contains(&c).then_some((c, None)),
            })
            .collect()
    }

    /// A LOD block was released: its job dropped (not handed over yet) or its result
    /// discarded on arrival, its data freed off the tick.
    pub(super) fn release_block(&mut self, key: BlockKey) {
        let b = &mut self.blocks;
        if let Some(slot) = b.slots.remove(&key) {
            if let Some(f) = slot.flight {
                b.awaited -= usize::from(f.done.is_none());
                b.jobs.retain(|j| (j.level, j.block) != key);
            }
            if let Some((_, data)) = slot.built {
                self.trash.push(data);
            }
        }
        if !b.dirty.is_empty() {
            b.dirty.remove(&key);
        }
    }

    /// Files a block result if it is still wanted; drops a stale one.
    pub(super) fn take_block(&mut self, done: BlockDone) {
        let key = (done.level, done.block);
        if let Some(f) = self
            .blocks
            .slots
            .get_mut(&key)
            .and_then(|s| s.flight.as_mut())
        {
            if f.version == done.version && f.done.is_none() {
                f.done = Some(done.built);
                self.blocks.awaited -= 1;
            }
        }
    }

    /// Files every block result the workers have sent back.
    pub(super) fn drain_blocks(&mut self) {
        while let Some(done) = self.pool.as_ref().and_then(Pool::try_recv_block) {
            self.take_block(done);
        }
    }

    /// Builds a block on this thread (a worker failed, or no pool).
    fn build_block_here(&self, key: BlockKey, step: u32) -> BuiltBlock {
        BlockJob {
            level: key.0,
            block: key.1,
            step,
            version: 0,
            resident: self.resident_of(key.1, step),
        }
        .build(
            self.generator(),
            self.store.as_ref().and_then(Store::reader).as_ref(),
        )
    }

    /// Commits the in-flight block `key` if it is still dispatch `version`, waiting for its
    /// worker if needed: its cells replace those it had, and the answer is the payload of its
    /// `world.terrain.lod.built` and whether it waited.
    pub(super) fn land_block(&mut self, key: BlockKey, version: u64) -> Option<(EventData, bool)> {
        let mut waited = false;
        loop {
            let slot = self.blocks.slots.get_mut(&key)?;
            let f = slot.flight.as_ref().filter(|f| f.version == version)?;
            let step = f.step;
            let built = match &f.done {
                Some(Some(_)) => {
                    // The usual path: one lookup lands it.
                    let f = slot.flight.take().expect("just found");
                    let built = f.done.flatten().expect("just found");
                    if let Some((_, old)) = slot.built.replace((step, built.data)) {
                        self.trash.push(old);
                    }
                    return Some((EventData::LevelXzHash(built.event), waited));
                }
                Some(None) => None, // its worker failed
                None if f.job.is_some() => {
                    // Inline (docs/reference/terrain.md#inline): its job runs now, here.
                    let job = slot.flight.as_mut().and_then(|f| f.job.take());
                    self.blocks.awaited -= 1;
                    let job = job.expect("just found");
                    Some(job.build(
                        self.generator(),
                        self.store.as_ref().and_then(Store::reader).as_ref(),
                    ))
                }
                None => {
                    waited = true;
                    self.submit();
                    match self.pool.as_ref().and_then(Pool::recv_block) {
                        Some(done) => {
                            self.take_block(done);
                            continue;
                        }
                        None => {
                            self.blocks.awaited -= 1; // no pool: it is built here
                            None
                        }
                    }
                }
            };
            let built = built.unwrap_or_else(|| self.build_block_here(key, step));
            let slot = self.blocks.slots.entry(key).or_default();
            slot.flight = None;
            if let Some((_, old)) = slot.built.replace((step, built.data)) {
                self.trash.push(old);
            }
            return Some((EventData::LevelXzHash(built.event), waited));
        }
    }

    /// An edit set cell `(i, j)` of `chunk` to `(height, material)`: every built block that
    /// samples it takes the value at once and is marked dirty (told and rebuilt at the end of
    /// the tick), and so is a block in flight (dispatched again: its result would be stale).
    fn edit_blocks(&mut self, chunk: ChunkPos, i: u32, j: u32, value: (u16, u8)) {
        let cells = self.config.cells_per_chunk.get();
        for level in 1..=4u32 {
            let step = self.blocks.steps[level as usize - 1];
            if step == 0 {
                continue;
            }
            let Some((block, bi, bj)) = super::generate::sampled_by(chunk, step, cells, i, j)
            else {
                continue;
            };
            let key = (level, block);
            let Some(slot) = self.blocks.slots.get_mut(&key) else {
                continue;
            };
            let mut hit = slot.flight.is_some();
            if let Some((s, data)) = &mut slot.built {
                if *s == step {
                    Arc::make_mut(data).set(bi, bj, value.0, value.1);
                    hit = true;
                }
            }
            if hit {
                self.blocks.dirty.insert(key);
            }
        }
    }

    /// `neighbours` in force (docs/reference/streaming.md#complete-chunks); 0 before the kit starts.
    pub(super) fn neighbours(&self) -> u32 {
        self.builder.as_ref().map_or(0, |(s, _)| s.neighbours())
    }

    /// A bordered snapshot of `chunk` (docs/reference/terrain.md#bordered-snapshots): a skin
    /// out of range is refused first; then a skin of 0 needs the chunk built, a wider one the
    /// chunk complete — with `neighbours` > 0 as the streaming kit answers, with 0 the chunk
    /// and each of its 8 neighbours that overlaps the ground built.
    pub(super) fn snapshot(&self, chunk: ChunkPos, skin: u32) -> Result<Snapshot, SnapshotError> {
        let max = snapshot::max_skin(self.config.cells_per_chunk.get());
        if skin > max {
            return Err(SnapshotError::Skin { skin, max });
        }
        let (Some(data), Some(&version)) = (self.built.get(&chunk), self.versions.get(&chunk))
        else {
            return Err(SnapshotError::NotComplete);
        };
        let mut around: [Option<&ChunkData>; 9] = [None; 9];
        around[4] = Some(&**data);
        if skin > 0 {
            let streaming = self.builder.as_ref().map(|(s, _)| s);
            if self.neighbours() > 0 && !streaming.is_some_and(|s| s.is_complete(chunk)) {
                return Err(SnapshotError::NotComplete);
            }
            let bounds = streaming.and_then(|s| s.bounds());
            let grid = crate::grid::Grid::new(self.chunk_size);
            for (k, slot) in around.iter_mut().enumerate() {
                let (dx, dz) = (k as i64 % 3 - 1, k as i64 / 3 - 1);
                let c = ChunkPos::new(chunk.x + dx, chunk.z + dz);
                if k == 4 || !grid.overlaps(c, bounds.as_ref()) {
                    continue; // outside the ground: its skin repeats the nearest cells
                }
                // Complete with `neighbours` > 0 means built; with 0 it is checked here.
                *slot = Some(&**self.built.get(&c).ok_or(SnapshotError::NotComplete)?);
            }
        }
        Ok(snapshot::copy(chunk, skin, version, &around))
    }

    /// The chunk and cell `(i, j)` containing `pos`.
    pub(super) fn cell_of(&self, pos: Position) -> (ChunkPos, u32, u32) {
        let size = self.chunk_size;
        let chunk = crate::grid::Grid::new(size).chunk_of(pos);
        let n = self.config.cells_per_chunk.get();
        let cell = size / f64::from(n);
        let local = |v: f64, c: i64| {
            let i = ((v - c as f64 * size) / cell).floor();
            (i.max(0.0) as u32).min(n - 1)
        };
        (chunk, local(pos.x, chunk.x), local(pos.z, chunk.z))
    }

    pub(super) fn edit(
        &mut self,
        at: Position,
        height: u16,
        material: Option<u8>,
    ) -> Result<(), EditRefused> {
        let (chunk, i, j) = self.cell_of(at);
        let Some(data) = self.built.get_mut(&chunk) else {
            let loaded = self
                .builder
                .as_ref()
                .is_some_and(|(s, _)| s.is_column_loaded(chunk));
            return Err(if loaded {
                EditRefused::NotBuilt
            } else {
                EditRefused::NotLoaded
            });
        };
        let now = (data.height(i, j), data.material(i, j));
        let new = (height, material.unwrap_or(now.1));
        if new == now {
            return Ok(());
        }
        Arc::make_mut(data).set(i, j, new.0, new.1);
        let n = data.cells;
        let index = j * n + i;
        let baseline = self.generator().cell(chunk, i, j);
        let diff = self.diffs.entry(chunk).or_default();
        if new == baseline {
            diff.cells.remove(&index);
        } else {
            diff.cells.insert(index, new);
        }
        if diff.is_empty() {
            self.diffs.remove(&chunk);
        }
        self.unsaved.insert(chunk);
        if !self.blocks.steps.iter().all(|s| *s == 0) {
            self.edit_blocks(chunk, i, j, new);
        }
        // Every built chunk of the 3 × 3 around it moves its version
        // (docs/reference/terrain.md#versions). With `neighbours` > 0 each is dirty; with 0 only
        // the chunk and the neighbours across the edges (and corner) the cell lies on, as ever.
        let whole = self.neighbours() > 0;
        let side = |k: u32| match (k == 0, k == n - 1) {
            (true, true) => [true, true, true],
            (true, false) => [true, true, false],
            (false, true) => [false, true, true],
            (false, false) => [false, true, false],
        };
        let (rows, columns) = (side(j), side(i));
        for dz in -1..=1i64 {
            for dx in -1..=1i64 {
                let c = ChunkPos::new(chunk.x + dx, chunk.z + dz);
                let Some(version) = self.versions.get_mut(&c) else {
                    continue;
                };
                *version += 1;
                if whole || (rows[(dz + 1) as usize] && columns[(dx + 1) as usize]) {
                    self.dirty.insert(c);
                }
            }
        }
        Ok(())
    }
}
