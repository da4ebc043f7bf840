//! What generating one chunk of terrain costs, by cells per chunk side (docs/terrain.md#what-a-commit-tick-may-wait-for):
//! the least main-thread CPU time of generating `k` chunks in a row, one thread.
//!
//! ```sh
//! cargo run --release --example generate_cost
//! ```

use std::time::Duration;

use world_streaming::grid::ChunkPos;
use world_streaming::kits::terrain::Generator;

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

fn main() {
    println!("| cells per chunk side | chunks | least CPU a chunk | a cell |");
    println!("|---|---|---|---|");
    for (cells, k) in [(32u32, 400i64), (64, 100), (128, 25), (256, 16)] {
        let gen = Generator::new(u64::MAX, cells, 32.0);
        let mut least = Duration::MAX;
        for round in 0..5 {
            let t = cpu();
            for i in 0..k {
                std::hint::black_box(gen.generate(ChunkPos::new(i, round)));
            }
            least = least.min((cpu() - t) / k as u32);
        }
        println!(
            "| {cells} | {k} × 5 rounds | {:.3} ms | {:.0} ns |",
            least.as_secs_f64() * 1e3,
            least.as_secs_f64() * 1e9 / f64::from(cells * cells)
        );
    }
}
