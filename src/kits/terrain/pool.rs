//! The worker pool of `seeds/chunk_streaming_server.txt`: one shared job queue feeding the
//! workers, one result queue back, both `crossbeam-channel` (the job queue needs several
//! consumers, which `std::sync::mpsc` does not allow). Workers share one immutable generator.
//! Dropping the pool stops the workers and joins them: a worker finishes at most the chunk it is
//! generating, then sees the stop flag; queued jobs are abandoned.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender};

use crate::grid::ChunkPos;

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

/// A chunk as a worker built it: the baseline with its stored diff applied.
#[derive(Debug)]
pub struct Built {
    /// The terrain.
    pub data: ChunkData,
    /// The stored diff it carries, if the chunk is modified.
    pub diff: Option<Diff>,
}

impl Built {
    /// Generates `chunk` and applies its stored diff, read through `reader` (the save thread).
    pub fn make(generator: &Generator, reader: Option<&Reader>, chunk: ChunkPos) -> Built {
        let mut data = generator.generate(chunk);
        let diff = reader.and_then(|r| r.read(chunk));
        if let Some(d) = &diff {
            data.apply(d);
        }
        Built { data, diff }
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

/// The pool.
pub struct Pool {
    jobs: Option<Sender<Job>>,
    results: Receiver<Done>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("workers", &self.threads.len())
            .finish_non_exhaustive()
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
        let (job_tx, job_rx) = crossbeam_channel::unbounded::<Job>();
        let (result_tx, result_rx) = crossbeam_channel::unbounded::<Done>();
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::new();
        for i in 0..workers.max(1) {
            let (jobs, results, stop, generator, reader) = (
                job_rx.clone(),
                result_tx.clone(),
                stop.clone(),
                generator.clone(),
                reader.clone(),
            );
            threads.push(
                std::thread::Builder::new()
                    .name(format!("world.terrain worker {i}"))
                    .spawn(move || {
                        while let Ok(job) = jobs.recv() {
                            if stop.load(Ordering::Acquire) {
                                break;
                            }
                            let built =
                                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                                    Built::make(&generator, reader.as_ref(), job.chunk)
                                }))
                                .ok();
                            if results.send(Done { job, built }).is_err() {
                                break;
                            }
                        }
                    })?,
            );
        }
        // The templates are dropped here, so the channels disconnect once the pool's own ends go.
        drop((job_rx, result_tx));
        Ok(Pool {
            jobs: Some(job_tx),
            results: result_rx,
            stop,
            threads,
        })
    }

    /// How many workers run.
    pub fn workers(&self) -> usize {
        self.threads.len()
    }

    /// Queues a job.
    pub fn dispatch(&self, job: Job) {
        if let Some(jobs) = &self.jobs {
            // Workers only stop when the pool is dropped, so the queue is open here.
            let _ = jobs.send(job);
        }
    }

    /// A finished chunk, if one is waiting.
    pub fn try_recv(&self) -> Option<Done> {
        self.results.try_recv().ok()
    }

    /// The next finished chunk, waiting for it (`None` only if every worker is gone).
    pub fn recv(&self) -> Option<Done> {
        self.results.recv().ok()
    }

    /// Jobs queued and not yet taken by a worker.
    pub fn queued(&self) -> usize {
        self.jobs.as_ref().map_or(0, Sender::len)
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        self.jobs = None; // disconnects the queue: idle workers wake up and leave
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}
