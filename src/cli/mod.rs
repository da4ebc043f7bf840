//! Command-line parsing and the subcommands. Exit status: 0 ok, 1 bad input, 2 usage.

mod check;
mod demo;
mod play;
mod profile;
mod run;
mod schema;
mod view;
mod world;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// Deterministic chunk streaming around a focus: run scenes, check files, write schemas.
#[derive(Parser)]
#[command(
    name = "world-streaming",
    version,
    about,
    long_about = "Runs the world.streaming kit on a scene file and its inputs, deterministically.\n\
                  With no arguments, runs the bundled demo: a player driving across a bounded world.",
    after_help = "Examples:\n  \
        world-streaming                                   # the demo\n  \
        world-streaming run examples/scenes/seed.json --inputs examples/scenes/seed.inputs.jsonl --state -\n  \
        world-streaming check examples/scenes/*.json mods/*\n  \
        world-streaming schema --check\n  \
        world-streaming view run.replay.json --out view.html\n  \
        world-streaming play examples/scenes/drive.json --inputs examples/scenes/drive.inputs.jsonl --out play.html\n  \
        world-streaming world verify saves/world\n\n\
        Exit status: 0 ok, 1 bad input (the message names the file and JSON path or line), 2 usage."
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Load a scene, apply the inputs, run N ticks, write the event log and the final state.
    #[command(after_help = "Examples:\n  \
        world-streaming run scene.json --ticks 5 --state -\n  \
        world-streaming run scene.json --inputs inputs.jsonl --events events.jsonl --state state.json\n  \
        world-streaming run scene.json --inputs inputs.jsonl --record run.replay.json")]
    Run(run::RunArgs),
    /// Validate scene, mod (JSON or Lua), inputs and save files; report every problem found.
    #[command(
        after_help = "Examples:\n  world-streaming check scene.json mods/keep_home.json mods/keep_home.lua inputs.jsonl\n  \
                      world-streaming check scene.json inputs.jsonl --ticks 100   # inputs against the scene"
    )]
    Check {
        /// Files to check (kind told by extension and content). Inputs files that follow a
        /// scene file are also checked against it.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// The tick target the inputs will run to: a `save` or `load` stamped later is an error.
        #[arg(long, value_parser = clap::value_parser!(u64).range(..=world_streaming::limits::MAX_TICK))]
        ticks: Option<u64>,
    },
    /// Write the JSON Schemas of the file formats, or check the checked-in ones.
    #[command(
        after_help = "Examples:\n  world-streaming schema --out schemas\n  world-streaming schema --check"
    )]
    Schema {
        /// Directory to write the schemas to (default: print the scene schema to stdout).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Compare with the schemas in DIR (default `schemas`) and fail with a diff if they drift.
        #[arg(long, value_name = "DIR", num_args = 0..=1, default_missing_value = "schemas")]
        check: Option<PathBuf>,
    },
    /// Re-run a recorded replay; print OK, or the first tick whose events differ (exit 1).
    #[command(after_help = "Examples:\n  world-streaming replay run.replay.json")]
    Replay {
        /// The replay file written by `run --record`.
        file: PathBuf,
    },
    /// Write a recorded run as one self-contained HTML page: the grid tick by tick, its events,
    /// Start / Pause / Reset / Step and a tick slider (no network; open it from disk).
    #[command(
        after_help = "Examples:\n  world-streaming run scene.json --inputs inputs.jsonl --record run.replay.json\n  \
                      world-streaming view run.replay.json --out view.html"
    )]
    View {
        /// The replay file written by `run --record`.
        replay: PathBuf,
        /// Where to write the page (`-` = stdout).
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
    },
    /// Write a page that runs the scene in the browser (the kit's wasm module, the scene and its
    /// files embedded; no network): Start / Pause / Reset / Step, the player moved with the
    /// arrows / WASD or a click, the grid drawn as `view` draws it, "Save recording".
    #[command(
        after_help = "Examples:\n  world-streaming play examples/scenes/drive.json --inputs examples/scenes/drive.inputs.jsonl --out play.html\n  \
                      world-streaming play run.replay.json --out play.html   # plays a recording's inputs, checks its digests\n\n\
                      The wasm module comes from scripts/build-web.sh (or --wasm FILE, or $WS_WASM)."
    )]
    Play {
        /// The scene file, or a recording written by `run --record` (its scene and inputs play,
        /// and each tick's digest is checked against it).
        scene: PathBuf,
        /// Inputs (JSON Lines) that play first, each before the tick it is stamped with.
        #[arg(long)]
        inputs: Option<PathBuf>,
        /// Where to write the page (`-` = stdout).
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
        /// The kit's wasm module (default: `$WS_WASM`, else the one scripts/build-web.sh writes).
        #[arg(long, value_name = "FILE")]
        wasm: Option<PathBuf>,
    },
    /// Inspect or verify the region files of a world directory (the terrain kit's `worldDir`),
    /// reading only.
    World {
        #[command(subcommand)]
        command: world::WorldCommand,
    },
}

/// Runs the command line; returns the exit status.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    let result = match cli.command {
        None => demo::run(),
        Some(Command::Run(args)) => run::run(args),
        Some(Command::Check { files, ticks }) => check::run(&files, ticks),
        Some(Command::Schema { out, check }) => schema::run(out, check),
        Some(Command::Replay { file }) => run::replay(&file),
        Some(Command::View { replay, out }) => view::run(&replay, &out),
        Some(Command::Play {
            scene,
            inputs,
            out,
            wasm,
        }) => play::run(&scene, inputs.as_deref(), &out, wasm.as_deref()),
        Some(Command::World { command }) => world::run(command),
    };
    match result {
        Ok(()) => 0,
        Err(e) => {
            // The last guard: whatever text from a file an error quotes, no control character
            // but the line breaks of the message itself reaches the terminal.
            eprintln!(
                "{}",
                world_streaming::escape::escape_lines(&format!("{e:#}"))
            );
            1
        }
    }
}
