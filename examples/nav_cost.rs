//! What one node of a `world.nav` search costs (docs/nav.md#limits): floods
//! that expand every built cell, timed in the thread's CPU time (the machine may be shared), so
//! the largest `maxNodes` can be chosen from a cost per node.
//!
//! ```sh
//! cargo run --release --example nav_cost            # every flood, 5 rounds each
//! cargo run --release --example nav_cost -- 20      # 20 rounds
//! ```
//!
//! Each flood searches from the middle of `k × k` generated chunks (seed 7, every cell
//! walkable) to a goal in a built chunk far east, beyond chunks that are not built: the search
//! expands every built cell it can reach and answers `indeterminate` (what an agent whose goal
//! lies past unbuilt ground does every tick), or `budget` at the limit. Printed per flood: the
//! nodes, the least and the median CPU time of a search, and the cost per node.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use world_streaming::grid::ChunkPos;
use world_streaming::kits::nav::search::{search_unmetered, Cell, Ground, Rules};
use world_streaming::kits::terrain::{ChunkData, Generator};

/// The main thread's CPU time.
fn cpu() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec for the call to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// Built chunks of `n` cells.
struct Built {
    n: u32,
    chunks: BTreeMap<ChunkPos, Arc<ChunkData>>,
}

impl Ground for Built {
    fn cells(&self) -> u32 {
        self.n
    }
    fn chunk(&self, c: ChunkPos) -> Option<Arc<ChunkData>> {
        self.chunks.get(&c).cloned()
    }
}

/// `k × k` chunks of `n` cells around chunk (0, 0), and the chunk (1000, 0) (the goal's).
fn ground(k: i64, n: u32) -> Built {
    let gen = Generator::new(7, n, 32.0);
    let mut chunks = BTreeMap::new();
    let r = k / 2;
    for z in -r..k - r {
        for x in -r..k - r {
            let c = ChunkPos::new(x, z);
            chunks.insert(c, Arc::new(gen.generate(c)));
        }
    }
    let far = ChunkPos::new(1000, 0);
    chunks.insert(far, Arc::new(gen.generate(far)));
    Built { n, chunks }
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(5);
    println!("| flood | nodes | answer | least CPU (ms) | median CPU (ms) | ns a node (least) |");
    println!("|---|---|---|---|---|---|");
    for (k, n, diagonal, limit) in [
        (9, 32, true, u64::MAX),
        (9, 32, false, u64::MAX),
        (5, 256, true, 1 << 18),
        (5, 256, false, 1 << 18),
        (5, 256, true, 1 << 19),
        (5, 256, false, 1 << 19),
        (5, 256, true, 1 << 20),
        (5, 256, false, 1 << 20),
        (5, 256, true, 1 << 22),
    ] {
        let g = ground(k, n);
        let rules = Rules {
            max_step: u16::MAX,
            diagonal,
            ..Rules::default()
        };
        let from = Cell::new(i64::from(n) / 2, i64::from(n) / 2);
        let to = Cell::new(1000 * i64::from(n) + 4, 4);
        let mut times = Vec::new();
        let mut last = None;
        for _ in 0..rounds {
            let t = cpu();
            let o = search_unmetered(&g, &rules, from, to, limit);
            times.push(cpu() - t);
            last = Some(o);
        }
        times.sort();
        let o = last.expect("one round at least");
        let least = times[0].as_secs_f64();
        println!(
            "| {k} × {k} chunks of {n}² cells, {}{} | {} | {} | {:.1} | {:.1} | {:.0} |",
            if diagonal {
                "diagonals"
            } else {
                "4 neighbours"
            },
            if limit == u64::MAX {
                String::new()
            } else {
                format!(", limit {limit}")
            },
            o.nodes,
            o.answer.status(),
            least * 1e3,
            times[times.len() / 2].as_secs_f64() * 1e3,
            least * 1e9 / o.nodes as f64
        );
    }
}
