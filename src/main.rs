//! The `world-streaming` command: run scenes, check files, write schemas, verify replays, and (with
//! no arguments) show the bundled demo.

mod cli;

fn main() {
    std::process::exit(cli::main());
}
