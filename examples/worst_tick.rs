//! The worst tick (docs/performance.md#worst-tick): runs each adversarial but legal case of
//! `benches/worst/` for 50 ticks, each in a process of its own, and prints, per case, the
//! slowest tick (wall clock, and the main thread's CPU time) and the process's peak resident
//! set (`ru_maxrss` of the child, what `/usr/bin/time -f %M` reports).
//!
//! ```sh
//! cargo run --release --example worst_tick                     # every case, a table
//! cargo run --release --example worst_tick -- lua-handlers     # some cases
//! cargo run --release --example worst_tick -- --ticks 10
//! ```
//!
//! A tick here is what a game loop sees: the inputs stamped with it applied, then the tick run.
//! Each child runs under an address-space limit of 8 GiB (`--limit-gib N`), so a case that would
//! take the machine's memory fails instead, and is killed after 600 s (`--timeout SECONDS`);
//! both are reported as such.

#[path = "../benches/worst/cases.rs"]
mod cases;

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use world_streaming::files::inputs::Inputs;
use world_streaming::game::Game;

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

/// Runs one case in this process: prints `wall_ms wall_tick cpu_ms cpu_tick later_ms later_tick
/// ticks`: the slowest tick by wall clock and by the main thread's CPU time (the machine may be
/// shared: other processes' turns count in the wall clock, not in the CPU time), and the slowest
/// by CPU time after the first tick (a scene's first tick loads what its budget allows at once).
fn child(case: &str, ticks: u64) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let prepared = cases::prepare(case, dir.path(), cases::Scale::Full);
    let mut game = Game::from_scene_file(&prepared.scene).unwrap_or_else(|e| {
        eprintln!("{case}: {e}");
        std::process::exit(2)
    });
    let inputs = match &prepared.inputs {
        Some(path) => Inputs::read(path).unwrap_or_else(|e| {
            eprintln!("{case}: {e:?}");
            std::process::exit(2)
        }),
        None => Inputs::default(),
    };
    let (mut slowest, mut slowest_tick) = (Duration::ZERO, 0);
    let (mut slowest_cpu, mut slowest_cpu_tick) = (Duration::ZERO, 0);
    let (mut slowest_later, mut slowest_later_tick) = (Duration::ZERO, 0);
    let mut next = 0;
    for tick in 1..=ticks {
        let (start, start_cpu) = (Instant::now(), cpu());
        while let Some(line) = inputs.lines.get(next) {
            if line.input.tick > tick {
                break;
            }
            next += 1;
            if let Err(e) = game.apply_in(&line.input, &inputs) {
                eprintln!("{case}: line {}: {e}", line.line);
                std::process::exit(2);
            }
        }
        game.tick();
        let (took, took_cpu) = (start.elapsed(), cpu() - start_cpu);
        if took > slowest {
            (slowest, slowest_tick) = (took, tick);
        }
        if took_cpu > slowest_cpu {
            (slowest_cpu, slowest_cpu_tick) = (took_cpu, tick);
        }
        if tick > 1 && took_cpu > slowest_later {
            (slowest_later, slowest_later_tick) = (took_cpu, tick);
        }
        // A long run does not keep what the game reports.
        let _ = game.engine_mut().take_events();
        let _ = game.take_mod_log();
    }
    println!(
        "{:.1} {slowest_tick} {:.1} {slowest_cpu_tick} {:.1} {slowest_later_tick} {ticks}",
        slowest.as_secs_f64() * 1e3,
        slowest_cpu.as_secs_f64() * 1e3,
        slowest_later.as_secs_f64() * 1e3
    );
}

/// Runs `case` as a child process (killed after `timeout`); its output line and peak RSS in
/// KiB. The child is reaped by `wait4` (for its own `rusage`), not by `Child::wait`.
#[allow(clippy::zombie_processes)]
fn spawn(
    case: &str,
    ticks: u64,
    limit_gib: u64,
    timeout: Duration,
) -> (Result<String, String>, i64) {
    let exe = std::env::current_exe().expect("this program");
    let mut command = Command::new(exe);
    command
        .args(["--child", case, "--ticks", &ticks.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let limit = limit_gib << 30;
    // SAFETY: only async-signal-safe calls (setrlimit) between fork and exec.
    unsafe {
        use std::os::unix::process::CommandExt;
        command.pre_exec(move || {
            let r = libc::rlimit {
                rlim_cur: limit,
                rlim_max: limit,
            };
            libc::setrlimit(libc::RLIMIT_AS, &r);
            Ok(())
        });
    }
    let mut child = command.spawn().expect("the child starts");
    let pid = child.id() as i32;
    let (done, watch) = std::sync::mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        let late = watch.recv_timeout(timeout).is_err();
        if late {
            // SAFETY: our own child, not yet reaped (the main thread reaps it only after this
            // thread was told it exited, or after this kill).
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        late
    });
    let (mut out, mut err) = (String::new(), String::new());
    let mut stderr = child.stderr.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let _ = child.stdout.take().expect("piped").read_to_string(&mut out);
    err.push_str(&reader.join().unwrap_or_default());
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid; `wait4` fills it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: an all-zero siginfo is valid; `waitid` fills it.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // Wait for the exit without reaping it, so that the watchdog never signals a reaped pid.
    // SAFETY: `pid` is our child; `info` is a valid siginfo to fill.
    unsafe {
        libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOWAIT,
        )
    };
    let _ = done.send(());
    let late = watchdog.join().unwrap_or(false);
    // SAFETY: the pid is our child's, not yet reaped (`child` is never waited on).
    let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert!(reaped > 0, "wait4 failed");
    if late {
        return (
            Err(format!("no result within {} s (killed)", timeout.as_secs())),
            usage.ru_maxrss,
        );
    }
    let ok = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
    let result = if ok {
        Ok(out.trim().to_owned())
    } else {
        let last = err.lines().last().unwrap_or("").to_owned();
        Err(if libc::WIFSIGNALED(status) {
            format!("killed by signal {} {last}", libc::WTERMSIG(status))
        } else {
            format!("exit {} {last}", libc::WEXITSTATUS(status))
        })
    };
    (result, usage.ru_maxrss)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut ticks = 50;
    let mut limit_gib = 8;
    let mut timeout = 600;
    let mut chosen = Vec::new();
    let mut child_case = None;
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--ticks" => {
                i += 1;
                ticks = args[i].parse().expect("--ticks N");
            }
            "--limit-gib" => {
                i += 1;
                limit_gib = args[i].parse().expect("--limit-gib N");
            }
            "--timeout" => {
                i += 1;
                timeout = args[i].parse().expect("--timeout SECONDS");
            }
            "--child" => {
                i += 1;
                child_case = Some(args[i].clone());
            }
            name => chosen.push(name.to_owned()),
        }
        i += 1;
    }
    if let Some(case) = child_case {
        child(&case, ticks);
        return;
    }
    let names: Vec<&str> = if chosen.is_empty() {
        cases::CASES.iter().map(|c| c.name).collect()
    } else {
        chosen.iter().map(String::as_str).collect()
    };
    println!(
        "| case | slowest tick, wall (ms) | at tick | slowest tick, main-thread CPU (ms) | at tick | slowest after tick 1, CPU (ms) | at tick | peak RSS (MiB) |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for name in names {
        let (result, rss_kib) = spawn(name, ticks, limit_gib, Duration::from_secs(timeout));
        let rss = format!("{:.0}", rss_kib as f64 / 1024.0);
        match result {
            Ok(line) => {
                let f: Vec<&str> = line.split_whitespace().collect();
                let field = |i: usize| f.get(i).copied().unwrap_or("?");
                println!(
                    "| {name} | {} | {} | {} | {} | {} | {} | {rss} |",
                    field(0),
                    field(1),
                    field(2),
                    field(3),
                    field(4),
                    field(5)
                );
            }
            Err(why) => println!("| {name} | failed: {why} | | | | | | {rss} |"),
        }
    }
}
