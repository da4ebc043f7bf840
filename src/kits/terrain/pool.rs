//! The worker pool of a chunk-streaming server (docs/reference/terrain.md#off-the-tick): one shared
//! job queue feeding the workers, one result queue back. Workers share one immutable generator.
//! Dropping the pool stops the workers and joins them: a worker finishes at most the chunk it is
//! generating, then sees the stop flag; queued jobs are abandoned.
//!
//! The job queue is a `Mutex<VecDeque>` with a `Condvar`, so that queuing jobs and waking a
//! worker are one step a tick, not one a chunk: waking a sleeping thread is a `futex` system
//! call and an interrupt to the idle core (microseconds: the book's Terrain chapter measures it), which a
//! channel pays on every send that finds a worker asleep, and even taking the lock costs a
//! cache miss when a worker took it last. The terrain kit gathers a tick's jobs and calls
//! [`Pool::submit`] once at the end of the tick: one lock, and at most one wake (a worker that
//! takes a job and sees more queued wakes the next one itself), however many chunks the tick
//! loaded and however many workers there are. For 50 ms after its last job a worker only dozes:
//! it looks at the queue every 0.5 ms by itself, and the tick does not wake it at all (a drive
//! loads chunks on several ticks in a row). Results come back on a `crossbeam-channel` (nobody
//! sleeps on it while a tick runs, so a send costs no wake).
//!
//! A worker hands back everything the commit needs ready-made ([`Built`]): the terrain already
//! shared (`Arc`), and the payload of its `world.terrain.built` event. The pool also takes
//! released chunks (the `trash` of [`Pool::submit`]): their buffers (3 KB at 32×32 cells,
//! allocated by a worker) are freed by a worker when it next looks at the queue, not on the
//! tick.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};

use crate::grid::ChunkPos;
use crate::host::{chunk_hash_data, EventData};

use super::generate::{ChunkData, Generator};
use super::region::Diff;
use super::store::Reader;

/// A chunk to generate; `version` tells a stale result from the current one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Job {
    /// The chunk.
    pub chunk: ChunkPos,
    /// The dispatch it answers.
    pub version: u64,
}

/// A chunk as a worker built it (the baseline with its stored diff applied), with what its
/// commit needs made ready, so that the tick only moves it.
#[derive(Debug)]
pub struct Built {
    /// The terrain.
    pub data: Arc<ChunkData>,
    /// The stored diff it carries, if the chunk is modified.
    pub diff: Option<Diff>,
    /// The payload of its `world.terrain.built` event: `{x, z, hash}`.
    pub event: EventData,
}

impl Built {
    /// `data`, the terrain of `chunk` carrying `diff`.
    pub fn new(chunk: ChunkPos, data: ChunkData, diff: Option<Diff>) -> Built {
        Built {
            event: chunk_hash_data(chunk, data.hash()),
            data: Arc::new(data),
            diff,
        }
    }

    /// Generates `chunk` and applies its stored diff, read through `reader` (the save thread).
    pub fn make(generator: &Generator, reader: Option<&Reader>, chunk: ChunkPos) -> Built {
        let mut data = generator.generate(chunk);
        let diff = reader.and_then(|r| r.read(chunk));
        if let Some(d) = &diff {
            data.apply(d);
        }
        Built::new(chunk, data, diff)
    }
}

/// A generated chunk.
#[derive(Debug)]
pub struct Done {
    /// The job it answers.
    pub job: Job,
    /// The chunk's terrain; `None` if the worker panicked (the caller builds it itself).
    pub built: Option<Built>,
}

/// A LOD block to build (docs/reference/lod.md#lod-levels): its level, block, step and dispatch,
/// and the diffs of the sampled chunks that are built on the tick (theirs are authoritative: `None`
/// there means the baseline); any other sampled chunk's diff is read from the save thread.
#[derive(Debug, Clone, PartialEq)]
pub struct BlockJob {
    /// Level (1 = the first `lod` entry).
    pub level: u32,
    /// The block.
    pub block: ChunkPos,
    /// Its side in chunks.
    pub step: u32,
    /// The dispatch it answers.
    pub version: u64,
    /// Built sampled chunks and their diffs, row order.
    pub resident: Vec<(ChunkPos, Option<Diff>)>,
}

impl BlockJob {
    /// Builds the block (the payload of `world.terrain.lod.built` made ready).
    pub fn build(&self, generator: &Generator, reader: Option<&Reader>) -> BuiltBlock {
        let data = generator.generate_block(self.block, self.step, |c| {
            match self.resident.binary_search_by(|(r, _)| r.cmp(&c)) {
                Ok(k) => self.resident[k].1.clone(),
                Err(_) => reader.and_then(|r| r.read(c)),
            }
        });
        BuiltBlock {
            event: crate::host::block_hash_values(self.level, self.block, data.hash()),
            data: Arc::new(data),
        }
    }
}

/// A block as a worker built it.
#[derive(Debug)]
pub struct BuiltBlock {
    /// Its cells.
    pub data: Arc<ChunkData>,
    /// The payload of its `world.terrain.lod.built` event, `{level, x, z, hash}`
    /// ([`EventData::LevelXzHash`]'s values: 8 bytes to carry).
    pub event: Box<([serde_json::Value; 3], crate::host::Hashed)>,
}

/// A built block.
#[derive(Debug)]
pub struct BlockDone {
    /// Which dispatch it answers: (level, block, version).
    pub level: u32,
    /// The block.
    pub block: ChunkPos,
    /// The dispatch.
    pub version: u64,
    /// `None` if the worker panicked (the caller builds it itself).
    pub built: Option<BuiltBlock>,
}

/// Released chunks kept for the workers to free beyond this many wake a worker at the next
/// [`Pool::submit`] even with no job queued (below it they wait for the next job).
const TRASH_WAKE: usize = 64;

/// For this long after its last job a worker stays warm: it looks at the queue every [`POLL`]
/// by itself, woken by its own timer, so the tick queues work without a `futex` wake.
const WARM: Duration = Duration::from_millis(50);

/// How often a warm worker looks at the queue (the most a job waits for a warm worker).
const POLL: Duration = Duration::from_micros(500);

/// What the workers and the pool share, under the queue's lock.
#[derive(Default)]
struct Queue {
    jobs: VecDeque<Job>,
    /// LOD blocks, taken after the chunks.
    blocks: VecDeque<BlockJob>,
    /// Released chunks for a worker to drop.
    trash: Vec<Arc<ChunkData>>,
    /// Workers waiting on the condition variable until woken.
    sleeping: usize,
    /// Workers waiting on it for at most [`POLL`] (they look at the queue again by themselves).
    polling: usize,
}

impl Queue {
    /// Removes `job` if it is queued (the queue is in ascending `version`: one binary search).
    fn take(&mut self, job: Job) -> bool {
        match self.jobs.binary_search_by_key(&job.version, |j| j.version) {
            Ok(i) if self.jobs[i] == job => {
                self.jobs.remove(i);
                true
            }
            _ => false,
        }
    }

    /// Removes the first queued job if `due` says so.
    fn take_front_if(&mut self, due: impl FnOnce(&Job) -> bool) -> Option<Job> {
        if self.jobs.front().is_some_and(due) {
            self.jobs.pop_front()
        } else {
            None
        }
    }

    /// Whether to wake a sleeping worker: one sleeps and there is work (a busy worker comes
    /// back to the queue by itself).
    fn wants_worker(&self) -> bool {
        self.sleeping > 0
            && self.polling == 0
            && (!self.jobs.is_empty() || !self.blocks.is_empty() || self.trash.len() >= TRASH_WAKE)
    }
}

struct Shared {
    queue: Mutex<Queue>,
    work: Condvar,
    stop: AtomicBool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        // Nothing panics while holding the lock; a poisoned lock still holds a sound queue.
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The pool.
pub struct Pool {
    shared: Arc<Shared>,
    results: Receiver<Done>,
    block_results: Receiver<BlockDone>,
    threads: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("workers", &self.threads.len())
            .finish_non_exhaustive()
    }
}

/// A worker: takes jobs until the stop flag is set or the pool's result end is gone.
fn work(
    shared: &Shared,
    results: &Sender<Done>,
    blocks: &Sender<BlockDone>,
    generator: &Generator,
    reader: Option<&Reader>,
) {
    let mut last_job = Instant::now();
    loop {
        let (job, block, trash) = {
            let mut q = shared.lock();
            loop {
                if shared.stop.load(Ordering::Acquire) {
                    return;
                }
                if !q.trash.is_empty() {
                    break (None, None, std::mem::take(&mut q.trash));
                }
                if let Some(job) = q.jobs.pop_front() {
                    if !(q.jobs.is_empty() && q.blocks.is_empty()) && q.sleeping + q.polling > 0 {
                        // More work: the next worker, asleep or warm (this wake is off the tick).
                        shared.work.notify_one();
                    }
                    break (Some(job), None, Vec::new());
                }
                if let Some(block) = q.blocks.pop_front() {
                    if !q.blocks.is_empty() && q.sleeping + q.polling > 0 {
                        shared.work.notify_one();
                    }
                    break (None, Some(block), Vec::new());
                }
                if last_job.elapsed() < WARM {
                    q.polling += 1;
                    q = shared
                        .work
                        .wait_timeout(q, POLL)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0;
                    q.polling -= 1;
                } else {
                    q.sleeping += 1;
                    q = shared.work.wait(q).unwrap_or_else(PoisonError::into_inner);
                    q.sleeping -= 1;
                }
            }
        };
        drop(trash); // outside the lock
        if let Some(job) = job {
            let built = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                Built::make(generator, reader, job.chunk)
            }))
            .ok();
            if results.send(Done { job, built }).is_err() {
                return;
            }
            last_job = Instant::now();
        }
        if let Some(b) = block {
            let built = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                b.build(generator, reader)
            }))
            .ok();
            let done = BlockDone {
                level: b.level,
                block: b.block,
                version: b.version,
                built,
            };
            if blocks.send(done).is_err() {
                return;
            }
            last_job = Instant::now();
        }
    }
}

impl Pool {
    /// Starts `workers` threads (at least 1); with a `reader`, each worker asks the save thread
    /// for the stored diff of every chunk it generates.
    pub fn new(
        workers: usize,
        generator: Arc<Generator>,
        reader: Option<Reader>,
    ) -> std::io::Result<Pool> {
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue::default()),
            work: Condvar::new(),
            stop: AtomicBool::new(false),
        });
        let (result_tx, result_rx) = crossbeam_channel::unbounded::<Done>();
        let (block_tx, block_rx) = crossbeam_channel::unbounded::<BlockDone>();
        let mut pool = Pool {
            shared,
            results: result_rx,
            block_results: block_rx,
            threads: Vec::new(),
        };
        for i in 0..workers.max(1) {
            let (shared, results, blocks, generator, reader) = (
                pool.shared.clone(),
                result_tx.clone(),
                block_tx.clone(),
                generator.clone(),
                reader.clone(),
            );
            // On an error the pool built so far is dropped: its workers are stopped and joined.
            pool.threads.push(
                std::thread::Builder::new()
                    .name(format!("world.terrain worker {i}"))
                    .spawn(move || work(&shared, &results, &blocks, &generator, reader.as_ref()))?,
            );
        }
        // The template is dropped here, so the result queue disconnects once the workers go.
        drop(result_tx);
        drop(block_tx);
        Ok(pool)
    }

    /// How many workers run.
    pub fn workers(&self) -> usize {
        self.threads.len()
    }

    /// Queues `jobs` in order and hands over `trash`, released chunks' data for a worker to
    /// free (when it next looks at the queue), leaving both empty: [`Pool::submit_all`]
    /// without blocks.
    pub fn submit(&self, jobs: &mut Vec<Job>, trash: &mut Vec<Arc<ChunkData>>) {
        self.submit_all(jobs, &mut Vec::new(), trash);
    }

    /// Queues chunk `jobs` and LOD `blocks` in order (a worker takes any chunk job before a
    /// block) and hands over `trash`, leaving all three empty: one lock. Wakes one sleeping
    /// worker if there is work and no worker is awake to take it (a worker that takes a job
    /// wakes the next one if more are queued): one `futex` call at most, none when nothing was
    /// queued.
    pub fn submit_all(
        &self,
        jobs: &mut Vec<Job>,
        blocks: &mut Vec<BlockJob>,
        trash: &mut Vec<Arc<ChunkData>>,
    ) {
        if jobs.is_empty() && blocks.is_empty() && trash.is_empty() {
            return;
        }
        let mut q = self.shared.lock();
        q.jobs.extend(jobs.drain(..));
        q.blocks.extend(blocks.drain(..));
        q.trash.append(trash);
        if q.wants_worker() {
            self.shared.work.notify_one();
        }
    }

    /// A built block, if one is waiting.
    pub fn try_recv_block(&self) -> Option<BlockDone> {
        self.block_results.try_recv().ok()
    }

    /// The next built block, waiting for it (`None` only if every worker is gone).
    pub fn recv_block(&self) -> Option<BlockDone> {
        {
            let q = self.shared.lock();
            if !(q.jobs.is_empty() && q.blocks.is_empty()) && q.sleeping + q.polling > 0 {
                self.shared.work.notify_one();
            }
        }
        self.block_results.recv().ok()
    }

    /// A finished chunk, if one is waiting.
    pub fn try_recv(&self) -> Option<Done> {
        self.results.try_recv().ok()
    }

    /// The next finished chunk, waiting for it (`None` only if every worker is gone). About to
    /// block, it wakes a warm worker too rather than let it finish its poll.
    pub fn recv(&self) -> Option<Done> {
        {
            let q = self.shared.lock();
            if !(q.jobs.is_empty() && q.blocks.is_empty()) && q.sleeping + q.polling > 0 {
                self.shared.work.notify_one();
            }
        }
        self.results.recv().ok()
    }

    /// Takes `job` back from the queue if no worker has taken it yet (the tick, which must
    /// commit it now, builds it itself rather than wait). Jobs are queued in dispatch order,
    /// so the queue is in ascending `version` and one binary search finds it.
    pub fn take_queued(&self, job: Job) -> bool {
        self.shared.lock().take(job)
    }

    /// Takes the first queued job if `due` says it is wanted now (the tick, waiting for a
    /// chunk a worker is building, builds the next one due rather than sleep).
    pub fn take_front_if(&self, due: impl FnOnce(&Job) -> bool) -> Option<Job> {
        self.shared.lock().take_front_if(due)
    }

    /// Jobs queued and not yet taken by a worker.
    pub fn queued(&self) -> usize {
        self.shared.lock().jobs.len()
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        {
            // Under the lock, so that no worker is between its stop check and its wait.
            let _q = self.shared.lock();
            self.shared.stop.store(true, Ordering::Release);
            self.shared.work.notify_all();
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(i: i64) -> Job {
        Job {
            chunk: ChunkPos::new(i, -i),
            version: i as u64,
        }
    }

    #[test]
    fn a_queued_job_is_taken_back_and_one_a_worker_took_is_not() {
        let job = |x: i64, version: u64| Job {
            chunk: ChunkPos::new(x, 0),
            version,
        };
        let mut q = Queue::default();
        q.jobs.extend([job(0, 3), job(1, 4), job(2, 7), job(3, 9)]);
        assert!(q.take(job(2, 7)));
        assert!(!q.take(job(2, 7)), "taken once");
        assert!(
            !q.take(job(5, 5)),
            "a job no longer queued (a worker has it)"
        );
        assert!(!q.take(job(9, 4)), "another chunk's version");
        assert!(q.take(job(0, 3)));
        let left: Vec<u64> = q.jobs.iter().map(|j| j.version).collect();
        assert_eq!(left, [4, 9]);
    }

    #[test]
    fn the_first_queued_job_is_taken_only_when_it_is_due() {
        let job = |x: i64, version: u64| Job {
            chunk: ChunkPos::new(x, 0),
            version,
        };
        let mut q = Queue::default();
        assert_eq!(q.take_front_if(|_| true), None, "nothing queued");
        q.jobs.extend([job(0, 3), job(1, 4)]);
        assert_eq!(q.take_front_if(|j| j.version > 3), None, "not due");
        assert_eq!(q.jobs.len(), 2, "left queued");
        assert_eq!(q.take_front_if(|j| j.version == 3), Some(job(0, 3)));
        assert_eq!(q.take_front_if(|_| true), Some(job(1, 4)));
        assert!(q.jobs.is_empty());
    }

    #[test]
    fn submitted_jobs_wake_sleeping_workers() {
        let gen = Arc::new(Generator::new(3, 4, 32.0));
        for workers in [1, 3] {
            let pool = Pool::new(workers, gen.clone(), None).unwrap();
            // Let the workers go to sleep (past their warm time), then submit: one wakes.
            std::thread::sleep(WARM + Duration::from_millis(20));
            let mut jobs: Vec<Job> = (0..10).map(job).collect();
            pool.submit(&mut jobs, &mut Vec::new());
            assert!(jobs.is_empty());
            let mut got: Vec<u64> = (0..10).map(|_| pool.recv().unwrap().job.version).collect();
            got.sort_unstable();
            assert_eq!(got, (0..10).collect::<Vec<_>>());
            let done = {
                std::thread::sleep(WARM + Duration::from_millis(20));
                pool.submit(&mut vec![job(11)], &mut Vec::new());
                pool.recv().unwrap()
            };
            assert_eq!(done.job, job(11));
            let built = done.built.unwrap();
            assert_eq!(*built.data, gen.generate(job(11).chunk));
            assert_eq!(
                built.event,
                crate::host::chunk_hash_data(job(11).chunk, built.data.hash())
            );
            assert_eq!(pool.queued(), 0);
        }
    }

    #[test]
    fn discarded_chunks_are_freed_by_a_worker() {
        let gen = Arc::new(Generator::new(3, 4, 32.0));
        let pool = Pool::new(1, gen.clone(), None).unwrap();
        let data = Arc::new(gen.generate(ChunkPos::new(0, 0)));
        let weak = Arc::downgrade(&data);
        pool.submit(&mut Vec::new(), &mut vec![data]);
        pool.submit(&mut vec![job(1)], &mut Vec::new());
        pool.recv().unwrap();
        assert!(weak.upgrade().is_none(), "dropped before the next job ran");
    }

    #[test]
    fn dropping_the_pool_joins_sleeping_and_warm_workers() {
        let gen = Arc::new(Generator::new(3, 4, 32.0));
        let pool = Pool::new(4, gen.clone(), None).unwrap();
        drop(pool); // warm
        let pool = Pool::new(4, gen, None).unwrap();
        std::thread::sleep(WARM + Duration::from_millis(20));
        drop(pool); // asleep
    }
}
