//! Ticks to count instructions in (docs/performance.md#counting-instructions): on a shared
//! machine a timing moves with the load, an instruction count does not. Each scenario builds a
//! game, fills it (ticks until nothing is pending), then runs `N` ticks of one kind; run it under
//! callgrind with `N` and with 0, and the difference over `N` is the instructions of one tick:
//!
//! ```text
//! cargo build --release --example tick_instructions
//! valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.0 \
//!     target/release/examples/tick_instructions standing-square 0
//! valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.2000 \
//!     target/release/examples/tick_instructions standing-square 2000
//! ```
//!
//! Scenarios (the scenes of `benches/vertical.rs`: one player, `chunkSize` 32, radius 8, budget
//! 4): `standing-square`, `standing-disc`, `standing-cylinder` (the seed's cylinder, `vertical`
//! radius 4), `driving-square` (east 0.5 m a tick), and `move-square-east`,
//! `move-cylinder-east`, `move-cylinder-up` (one section back and forth between two loaded
//! cylinders, nothing loading or releasing). The count is the same on every run (within a few
//! dozen instructions of the allocator's).

#[path = "../benches/common/pilot.rs"]
mod pilot;

use pilot::{at, fill, game, move_to};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(scenario), Some(n)) = (args.get(1), args.get(2).and_then(|n| n.parse::<u64>().ok()))
    else {
        eprintln!("usage: tick_instructions SCENARIO TICKS (see the file's first lines)");
        std::process::exit(2);
    };
    let cylinder = (Some("disc"), Some(4));
    let (world, moves) = match scenario.as_str() {
        "standing-square" | "driving-square" => ((None, None), None),
        "standing-disc" => ((Some("disc"), None), None),
        "standing-cylinder" => (cylinder, None),
        "move-square-east" => ((None, None), Some(at(48.0, 16.0))),
        "move-cylinder-east" => (cylinder, Some(at(48.0, 16.0))),
        "move-cylinder-up" => (cylinder, Some(at(16.0, 48.0))),
        other => {
            eprintln!("unknown scenario {other:?}");
            std::process::exit(2);
        }
    };
    let budget = if moves.is_some() { 1e9 } else { 4.0 };
    let mut g = game(world.0, world.1, budget);
    fill(&mut g);
    let home = at(16.0, 16.0);
    if let Some(there) = moves {
        move_to(&mut g, there);
        fill(&mut g);
    }
    let (mut x, mut away) = (16.0, true);
    for _ in 0..n {
        if scenario == "driving-square" {
            x += 0.5;
            move_to(&mut g, at(x, 16.0));
        } else if let Some(there) = moves {
            away = !away;
            move_to(&mut g, if away { there } else { home });
        }
        g.tick();
        g.engine_mut().take_events();
    }
    println!(
        "{scenario}: {n} ticks after filling; {} sections loaded",
        g.streaming().unwrap().loaded().len()
    );
}
