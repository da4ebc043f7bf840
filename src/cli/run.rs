//! `world-streaming run` and `world-streaming replay`.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use clap::Args;
use world_streaming::escape::escape;
use world_streaming::files::display_name;
use world_streaming::files::inputs::{Inputs, MAX_TICK};
use world_streaming::game::Game;
use world_streaming::host::{Event, MOD_ERROR};
use world_streaming::replay::{Recording, Verdict};

#[derive(Args)]
pub struct RunArgs {
    /// The scene file (JSON).
    scene: PathBuf,
    /// Inputs (JSON Lines: `{"tick": N, "do": ACTION, …}`).
    #[arg(long)]
    inputs: Option<PathBuf>,
    /// The target tick (default: the last input's tick, at least 1; at most 10000000).
    #[arg(long, value_parser = clap::value_parser!(u64).range(..=MAX_TICK))]
    ticks: Option<u64>,
    /// Write every event, in emission order, as JSON Lines (`-` = stdout).
    #[arg(long, value_name = "FILE")]
    events: Option<PathBuf>,
    /// Write the final state document (`-` = stdout).
    #[arg(long, value_name = "FILE")]
    state: Option<PathBuf>,
    /// Record a replay (scene, mods, inputs, per-tick event digests) to FILE.
    #[arg(long, value_name = "FILE")]
    record: Option<PathBuf>,
    /// Write a text map of the grid around the foci after the run (`-` = stdout), as the demo
    /// prints them; with `vertical` the slice at the first focus's section row.
    #[arg(long, value_name = "FILE")]
    map: Option<PathBuf>,
    /// After the run, print per-tick cost percentiles and the time spent in each mod's handlers.
    #[arg(long)]
    profile: bool,
    /// Print nothing on stderr but errors: no mod log, no `mod.error` lines, no summary, no
    /// warnings.
    #[arg(long, short)]
    quiet: bool,
    /// Tick (applying the inputs) until ENTITY's focus is ready, then stop: a loading gate.
    /// `--ticks` bounds it (default 10000); exit 1 when it is not ready by then.
    #[arg(long, value_name = "ENTITY")]
    until_ready: Option<String>,
}

/// The default bound of `--until-ready`.
const UNTIL_READY_TICKS: u64 = 10_000;

/// Reads and checks the inputs file (every bad line reported); its `save`/`load` paths are
/// relative to its own directory.
pub fn read_inputs(path: Option<&Path>) -> anyhow::Result<Inputs> {
    let Some(path) = path else {
        return Ok(Inputs::default());
    };
    Inputs::read(path).map_err(|errors| {
        anyhow::anyhow!(errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n"))
    })
}

/// The `mod.error` events of a run, printed one a line as they come, and counted by mod.
#[derive(Default)]
struct ModErrorReport {
    /// Events already looked at.
    seen: usize,
    /// Errors by mod id (sorted: the summary is deterministic).
    by_mod: BTreeMap<String, usize>,
}

impl ModErrorReport {
    /// Looks at the events emitted since the last call.
    fn update(&mut self, events: &[Event], quiet: bool) {
        for e in &events[self.seen.min(events.len())..] {
            if e.event != MOD_ERROR {
                continue;
            }
            // A mod's id, hook and message are text from the scene's mods: escaped.
            let field = |k: &str| escape(e.data[k].as_str().unwrap_or_default()).into_owned();
            let by = field("mod");
            if !quiet {
                eprintln!(
                    "mod.error: tick {}: mod {by}: {}: {}",
                    e.tick,
                    field("hook"),
                    field("message")
                );
            }
            *self.by_mod.entry(by).or_default() += 1;
        }
        self.seen = events.len();
    }

    /// `mod errors: none`, or `mod errors: 5 (a: 3, b: 2)`.
    fn summary(&self) -> String {
        let total: usize = self.by_mod.values().sum();
        if total == 0 {
            return "mod errors: none".to_owned();
        }
        let each: Vec<String> = self
            .by_mod
            .iter()
            .map(|(m, n)| format!("{m}: {n}"))
            .collect();
        format!("mod errors: {total} ({})", each.join(", "))
    }
}

pub fn run(args: RunArgs) -> anyhow::Result<()> {
    let inputs = read_inputs(args.inputs.as_deref())?;
    if args.record.is_some() {
        // Before anything runs: a save or load its replay could not run in its own directory.
        world_streaming::replay::check_recordable(&inputs).map_err(|errors| {
            anyhow::anyhow!(errors
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("\n"))
        })?;
    }
    let mut target = args.ticks.unwrap_or(if args.until_ready.is_some() {
        UNTIL_READY_TICKS
    } else {
        inputs.last_tick().max(1)
    });
    // (Checked by clap: an out-of-range --ticks is a usage error, exit 2, as any bad argument.)
    debug_assert!(target <= MAX_TICK);
    let cut: Vec<_> = inputs
        .lines
        .iter()
        .filter(|l| l.input.tick > target)
        .collect();
    if !args.quiet {
        let paths = args.inputs.as_deref().map(|p| inputs.path_warnings(p));
        for w in world_streaming::mods::scene_mod_warnings(&args.scene)
            .into_iter()
            .chain(paths.into_iter().flatten())
        {
            eprintln!("{w}");
        }
    }
    if let (Some(first), false, None) = (cut.first(), args.quiet, &args.until_ready) {
        eprintln!(
            "warning: --ticks {target} stops before {} input{} of {} (the first at line {}, tick {}); {} never run{}",
            cut.len(),
            if cut.len() == 1 { "" } else { "s" },
            inputs.file,
            first.line,
            first.input.tick,
            if cut.len() == 1 { "it" } else { "they" },
            if cut.len() == 1 { "s" } else { "" },
        );
    }
    let mut game = Game::from_scene_file(&args.scene)?;
    if let Some(entity) = &args.until_ready {
        if game
            .engine()
            .world()
            .get(&world_streaming::host::EntityId::new(entity))
            .is_none()
        {
            bail!(
                "--until-ready: no entity {entity:?} in {}",
                display_name(&args.scene)
            );
        }
        let ticks = game.run_until_ready_with(entity, target, &inputs)?;
        if !args.quiet {
            eprintln!("{} ready after {ticks} ticks", escape(entity));
        }
        target = game.engine().tick_count();
    }
    if let Some(path) = &args.record {
        let recording = Recording::record(&args.scene, &inputs, target)?;
        recording.write(path)?;
    }
    let profile = args
        .profile
        .then(|| crate::cli::profile::Profile::attach(&mut game));
    let bar = crate::cli::demo::progress_bar(target);
    let mut tick_costs = Vec::new();
    // Mod log lines go out as they come: the game keeps none of them across ticks.
    let log = game.mod_log();
    let quiet = args.quiet;
    let print_log = || {
        for line in log.borrow_mut().drain(..) {
            if !quiet {
                eprintln!("[{}] {}", escape(&line.source), escape(&line.message));
            }
        }
    };
    let mut errors = ModErrorReport::default();
    print_log(); // the mods' top levels
    errors.update(game.engine().events(), quiet);
    let result = game.run_with(&inputs, target, |engine, cost| {
        print_log();
        errors.update(engine.events(), quiet);
        if let Some(b) = &bar {
            b.set_position(engine.tick_count());
        }
        if args.profile {
            tick_costs.push(cost);
        }
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    print_log();
    errors.update(game.engine().events(), quiet);
    if !quiet {
        eprintln!("{}", errors.summary());
    }
    if let Err(e) = result {
        // Stopped by a bad input (or a failed save/load): the ticks before it still changed
        // the world, so the last write back runs too (dropping the game could not write the
        // live entities' changes). Both errors are reported; the exit status stays 1.
        return match game.close() {
            Ok(()) => Err(e.into()),
            Err(lost) => bail!("{e}\n{lost}"),
        };
    }
    if let Some(path) = &args.events {
        let mut out = Vec::new();
        for e in game.engine().events() {
            serde_json::to_writer(&mut out, e)?;
            out.push(b'\n');
        }
        write_output(path, &out)?;
    }
    if let Some(path) = &args.state {
        let mut out = serde_json::to_vec_pretty(&game.state())?;
        out.push(b'\n');
        write_output(path, &out)?;
    }
    if let Some(path) = &args.map {
        let text = match game.streaming() {
            Some(s) => crate::cli::demo::map(game.engine(), s.as_ref()),
            None => "  (no world.streaming)\n".to_owned(),
        };
        write_output(path, text.as_bytes())?;
    }
    if let Some(p) = profile {
        p.report(&tick_costs, &mut std::io::stderr())?;
    }
    // The last write back: edits it cannot write are lost, and the run fails (exit 1) naming
    // every region file and how many chunks.
    game.close()?;
    Ok(())
}

fn write_output(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    if path.as_os_str() == "-" {
        let mut out = std::io::stdout().lock();
        out.write_all(bytes)?;
        out.flush()?;
        return Ok(());
    }
    std::fs::write(path, bytes).with_context(|| format!("{}: cannot write", path.display()))
}

pub fn replay(file: &Path) -> anyhow::Result<()> {
    let recording = Recording::read(file)?;
    match recording.verify()? {
        Verdict::Same { ticks } => {
            println!("OK: {ticks} ticks replayed, every digest matches");
            Ok(())
        }
        Verdict::Differs(d) => bail!("{d}"),
    }
}
