//! `run --profile`: per-tick cost percentiles of the run, and the time spent in each mod's
//! handlers, so mod authors can see what their mod costs. Wall-clock time is measured here only,
//! never inside the simulation.

use std::io::Write;
use std::time::Duration;

use world_streaming::game::Game;

pub struct Profile {
    hooks: world_streaming::host::HookProfile,
}

impl Profile {
    pub fn attach(game: &mut Game) -> Profile {
        Profile {
            hooks: game.engine_mut().hooks_mut().enable_profiling(),
        }
    }

    pub fn report(self, ticks: &[Duration], out: &mut impl Write) -> std::io::Result<()> {
        let mut sorted = ticks.to_vec();
        sorted.sort();
        let pct = |p: f64| -> Duration {
            if sorted.is_empty() {
                return Duration::ZERO;
            }
            let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
            sorted[i]
        };
        writeln!(out, "profile: {} ticks", sorted.len())?;
        writeln!(
            out,
            "  tick cost   p50 {:>10?}   p99 {:>10?}   max {:>10?}",
            pct(0.5),
            pct(0.99),
            sorted.last().copied().unwrap_or_default()
        )?;
        let hooks = self.hooks.borrow();
        if hooks.is_empty() {
            writeln!(out, "  no mod handlers were asked")?;
        }
        for (label, stat) in hooks.iter() {
            let mean = stat
                .total
                .checked_div(stat.calls as u32)
                .unwrap_or_default();
            writeln!(
                out,
                "  {label:<40} {:>8} asks   total {:>10?}   mean {:>9?}",
                stat.calls, stat.total, mean
            )?;
        }
        Ok(())
    }
}
