//! Replays: recorded runs of every example scene replay OK, and an altered recording is caught at
//! the right tick, through the binary and through the library.

mod common;
use common::bin;
use std::path::Path;

use serde_json::{json, Value};
use world_streaming::files::inputs::Inputs;
use world_streaming::replay::{compare, Recording, Verdict};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The digest a recorded step's `events` make (a test altering them keeps the step consistent).
fn digest_of(step: &Value) -> String {
    let events: Vec<&str> = step["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    world_streaming::replay::Step::digest_of(&events)
}

fn record(name: &str, dir: &Path) -> std::path::PathBuf {
    let out = dir.join(format!("{name}.replay.json"));
    let mut cmd = bin();
    cmd.current_dir(repo())
        .args(["run", &format!("examples/scenes/{name}.json"), "--record"])
        .arg(&out);
    let inputs = format!("examples/scenes/{name}.inputs.jsonl");
    if repo().join(&inputs).exists() {
        cmd.args(["--inputs", &inputs]);
    } else {
        cmd.args(["--ticks", "40"]);
    }
    cmd.assert().success();
    out
}

#[test]
fn recorded_runs_of_every_example_scene_replay_ok() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["seed", "defaults", "drive", "two_scenes", "demo", "town"] {
        let file = record(name, dir.path());
        let out = bin().arg("replay").arg(&file).output().unwrap();
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            String::from_utf8_lossy(&out.stdout).starts_with("OK"),
            "{name}"
        );
    }
}

#[test]
fn an_altered_recording_is_caught_at_the_right_tick() {
    let dir = tempfile::tempdir().unwrap();
    let file = record("drive", dir.path());
    let mut rec: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    // Alter the events of the first tick after 30 that has any: pretend a different chunk loaded.
    let step = rec["steps"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|s| s["tick"].as_u64().unwrap() > 30 && !s["events"].as_array().unwrap().is_empty())
        .expect("the drive streams after tick 30");
    let tick = step["tick"].as_u64().unwrap();
    let original = step["events"][0].as_str().unwrap().to_owned();
    let altered = original.replacen("\"x\":", "\"x\":1", 1);
    step["events"][0] = Value::String(altered.clone());
    step["digest"] = Value::String(digest_of(step));
    std::fs::write(&file, rec.to_string()).unwrap();
    let out = bin().arg("replay").arg(&file).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with(&format!("tick {tick}: the events differ")),
        "{err}"
    );
    assert!(
        err.contains(&altered) && err.contains(&original),
        "both sides shown: {err}"
    );
}

#[test]
fn an_altered_input_is_caught_where_it_first_changes_the_events() {
    let dir = tempfile::tempdir().unwrap();
    let file = record("drive", dir.path());
    let mut rec: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    // The truck jumps far away at tick 60 instead of driving on.
    let input = rec["inputs"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|i| i["tick"] == 60)
        .unwrap();
    input["to"]["x"] = serde_json::json!(-200.0);
    std::fs::write(&file, rec.to_string()).unwrap();
    let out = bin().arg("replay").arg(&file).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("tick 60:"));
}

#[test]
fn the_library_records_and_verifies_runs_for_users_tests() {
    let text =
        std::fs::read_to_string(repo().join("examples/scenes/two_scenes.inputs.jsonl")).unwrap();
    let inputs = Inputs::parse(&text, "two_scenes.inputs.jsonl").unwrap();
    let rec =
        Recording::record(&repo().join("examples/scenes/two_scenes.json"), &inputs, 20).unwrap();
    assert_eq!(rec.steps.len(), 20);
    assert_eq!(rec.verify().unwrap(), Verdict::Same { ticks: 20 });
    let mut other = rec.steps.clone();
    other[7].digest = "0000000000000000".into();
    match compare(&rec.steps, &other) {
        Verdict::Differs(d) => assert_eq!(d.tick, 8),
        v => panic!("expected a divergence, got {v:?}"),
    }
    let dir = tempfile::tempdir().unwrap();
    rec.write(&dir.path().join("r.json")).unwrap();
    assert_eq!(Recording::read(&dir.path().join("r.json")).unwrap(), rec);
}

#[test]
fn a_file_that_is_not_a_recording_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("x.json"), "{\"kits\": []}").unwrap();
    let out = bin()
        .current_dir(dir.path())
        .args(["replay", "x.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("x.json: format: expected \"world-streaming-replay\""));
}

#[test]
fn a_recording_that_would_run_forever_or_from_the_future_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = record("seed", dir.path());
    let good: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    for (key, value, expect) in [
        (
            "ticks",
            serde_json::json!(1_000_000_000_000_000u64),
            "ticks: expected at most 10000000",
        ),
        (
            "version",
            serde_json::json!(99),
            "version: replay version 99 is newer than this build reads (version 1)",
        ),
        (
            "version",
            serde_json::json!(0),
            "version: replay version 0 is older than this build reads (version 1); record the run again",
        ),
        (
            "version",
            serde_json::json!("one"),
            "version: expected a replay version (this build reads 1), got \"one\"",
        ),
    ] {
        let mut rec = good.clone();
        rec[key] = value;
        std::fs::write(&file, rec.to_string()).unwrap();
        let out = bin()
            .arg("replay")
            .arg(&file)
            .timeout(std::time::Duration::from_secs(20))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(expect),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn a_replay_that_saves_writes_nothing_where_it_runs() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let scene = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/scenes/seed.json");
    std::fs::write(
        dir.path().join("in.jsonl"),
        "{\"tick\": 2, \"do\": \"save\", \"path\": \"mid.save.json\"}\n{\"tick\": 4, \"do\": \"load\", \"path\": \"mid.save.json\"}\n",
    )
    .unwrap();
    let out = bin()
        .current_dir(&work)
        .arg("run")
        .arg(&scene)
        .args([
            "--inputs",
            "../in.jsonl",
            "--ticks",
            "6",
            "--record",
            "r.replay.json",
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        work.join("mid.save.json").is_file(),
        "the run saved in its current directory \
         (docs/reference/files-and-cli.md#save-and-load-paths)"
    );
    std::fs::remove_file(work.join("mid.save.json")).unwrap();
    let out = bin()
        .current_dir(&work)
        .args(["replay", "r.replay.json"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .chain(std::fs::read_dir(&work).unwrap())
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(
        left,
        ["in.jsonl", "r.replay.json", "work"],
        "the replay wrote nothing"
    );
}

/// A recording of the seed scene that saves at tick 2 and loads at tick 4, made by `run
/// --record` in `work`; returns its JSON.
fn recording_with_a_save(work: &Path) -> Value {
    std::fs::create_dir_all(work).unwrap();
    std::fs::write(
        work.join("in.jsonl"),
        "{\"tick\": 2, \"do\": \"save\", \"path\": \"mid.save.json\"}\n{\"tick\": 4, \"do\": \"load\", \"path\": \"mid.save.json\"}\n",
    )
    .unwrap();
    bin()
        .current_dir(work)
        .arg("run")
        .arg(repo().join("examples/scenes/seed.json"))
        .args([
            "--inputs",
            "in.jsonl",
            "--ticks",
            "6",
            "--record",
            "r.replay.json",
        ])
        .assert()
        .success();
    serde_json::from_str(&std::fs::read_to_string(work.join("r.replay.json")).unwrap()).unwrap()
}

#[test]
fn a_recording_whose_save_leads_out_of_the_replay_directory_is_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    let tmp = dir.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let good = recording_with_a_save(&work);
    let outside = dir.path().join("escaped.json");
    // The replay's directory is TMPDIR/.tmpXXXX/files: three `..` lead to `dir`.
    let cases = [
        (
            outside.to_string_lossy().into_owned(),
            "is an absolute path",
        ),
        ("../../../escaped.json".to_owned(), "has a `..` component"),
        ("../x".to_owned(), "has a `..` component"),
        ("saves/../../x".to_owned(), "has a `..` component"),
        ("".to_owned(), "is empty"),
        ("./.".to_owned(), "names no file"),
    ];
    for (path, problem) in &cases {
        for (step, what, tick) in [(0, "save", 2), (1, "load", 4)] {
            let mut rec = good.clone();
            rec["inputs"][step]["path"] = Value::String(path.clone());
            std::fs::write(work.join("bad.replay.json"), rec.to_string()).unwrap();
            let expect = format!(
                "bad.replay.json: inputs[{step}].path: step {} (a {what} at tick {tick}): {path:?} {problem}; ",
                step + 1
            );
            for args in [
                &["replay", "bad.replay.json"][..],
                &["view", "bad.replay.json", "--out", "page.html"][..],
            ] {
                let out = bin()
                    .current_dir(&work)
                    .env("TMPDIR", &tmp)
                    .args(args)
                    .output()
                    .unwrap();
                let err = String::from_utf8_lossy(&out.stderr);
                assert_eq!(out.status.code(), Some(1), "{args:?} {path}: {err}");
                assert!(err.starts_with(&expect), "{args:?} {path}: {err}");
                assert!(!outside.exists(), "{args:?} {path}: wrote {outside:?}");
                assert!(!work.join("page.html").exists(), "{args:?} {path}");
                assert_eq!(
                    std::fs::read_dir(&tmp).unwrap().count(),
                    0,
                    "{args:?} {path}: the replay made its directory before refusing"
                );
            }
        }
    }
}

#[test]
fn a_recording_built_in_memory_with_an_absolute_save_is_refused_by_verify() {
    let dir = tempfile::tempdir().unwrap();
    let good = recording_with_a_save(&dir.path().join("work"));
    let mut rec: Recording = serde_json::from_value(good).unwrap();
    let outside = dir.path().join("escaped.json");
    if let world_streaming::files::inputs::Action::Save { path } = &mut rec.inputs[0].action {
        *path = outside.to_string_lossy().into_owned();
    }
    let err = rec.verify().unwrap_err().to_string();
    assert!(
        err.starts_with("replay: inputs[0].path: step 1 (a save at tick 2): "),
        "{err}"
    );
    assert!(!outside.exists());
}

#[test]
fn run_record_refuses_saves_and_loads_its_replay_could_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let outside = dir.path().join("abs.save.json");
    std::fs::write(
        work.join("in.jsonl"),
        format!(
            "{}\n{}\n{}\n",
            serde_json::json!({"tick": 1, "do": "save", "path": outside}),
            serde_json::json!({"tick": 2, "do": "save", "path": "ok.save.json"}),
            serde_json::json!({"tick": 3, "do": "load", "path": "../up.save.json"}),
        ),
    )
    .unwrap();
    let out = bin()
        .current_dir(&work)
        .arg("run")
        .arg(repo().join("examples/scenes/seed.json"))
        .args(["--inputs", "in.jsonl", "--record", "r.replay.json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(
        lines[0].starts_with(&format!(
            "in.jsonl: line 1: path: {:?} is an absolute path; a recorded run's save and load paths must be relative",
            outside.to_string_lossy()
        )),
        "{err}"
    );
    assert!(
        lines[1].starts_with("in.jsonl: line 3: path: \"../up.save.json\" has a `..` component; "),
        "{err}"
    );
    // Nothing ran: no save, no recording.
    assert!(!outside.exists());
    let left: Vec<_> = std::fs::read_dir(&work).unwrap().collect();
    assert_eq!(left.len(), 1, "only in.jsonl: {left:?}");
    // Without --record the same inputs run (docs/reference/files-and-cli.md#save-and-load-paths
    // lets a run save where it likes).
    bin()
        .current_dir(&work)
        .arg("run")
        .arg(repo().join("examples/scenes/seed.json"))
        .args(["--inputs", "in.jsonl", "--ticks", "2"])
        .assert()
        .success();
    assert!(outside.is_file());
}

#[test]
fn a_recorded_save_into_a_subdirectory_replays() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(work.join("saves")).unwrap();
    std::fs::write(
        work.join("in.jsonl"),
        "{\"tick\": 2, \"do\": \"save\", \"path\": \"saves/./mid.json\"}\n{\"tick\": 4, \"do\": \"load\", \"path\": \"saves/mid.json\"}\n",
    )
    .unwrap();
    bin()
        .current_dir(&work)
        .arg("run")
        .arg(repo().join("examples/scenes/seed.json"))
        .args([
            "--inputs",
            "in.jsonl",
            "--ticks",
            "6",
            "--record",
            "r.replay.json",
        ])
        .assert()
        .success();
    let out = bin()
        .current_dir(&work)
        .args(["replay", "r.replay.json"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The control bytes of `out` (C0 but line feed, DEL, and the C1 controls as UTF-8), if any.
fn control_bytes(out: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(out);
    text.chars()
        .filter(|c| *c != '\n' && c.is_control())
        .map(|c| format!("U+{:04X}", u32::from(c)))
        .collect()
}

#[test]
fn a_tampered_recordings_events_reach_the_terminal_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let file = record("drive", dir.path());
    let good: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let at = good["steps"]
        .as_array()
        .unwrap()
        .iter()
        .position(|s| !s["events"].as_array().unwrap().is_empty())
        .expect("the drive has events");
    let tick = good["steps"][at]["tick"].as_u64().unwrap();
    let hostile =
        "\u{1b}]0;pwned\u{7}\r\u{1b}[2J\u{9b}2J\nOK: 999 ticks replayed, every digest matches";
    // Consistent with itself (the digest made of the hostile events): the replay differs
    // there and prints the recorded events, escaped. Inconsistent (a hostile digest): refused
    // as read, the digest escaped.
    let mut consistent = good.clone();
    let step = &mut consistent["steps"][at];
    step["events"][0] = Value::String(hostile.into());
    let digest = digest_of(step);
    step["digest"] = Value::String(digest.clone());
    let mut inconsistent = good.clone();
    inconsistent["steps"][at]["digest"] = Value::String("\u{1b}[31mdeadbeef\r".into());
    for (rec, expected) in [
        (
            consistent,
            vec![
                format!("tick {tick}: the events differ (expected digest {digest}, got "),
                "\n  \\u{1b}]0;pwned\\u{7}\\u{d}\\u{1b}[2J\\u{9b}2J\\u{a}OK: 999 ticks replayed, every digest matches\n".to_owned(),
            ],
        ),
        (
            inconsistent,
            vec![format!(
                "steps[{at}].events: the events do not make the step's digest \\u{{1b}}[31mdeadbeef\\u{{d}}"
            )],
        ),
    ] {
        std::fs::write(&file, rec.to_string()).unwrap();
        for args in [
            &["replay", file.to_str().unwrap()][..],
            &["view", file.to_str().unwrap(), "--out", "-"][..],
        ] {
            let out = bin().args(args).output().unwrap();
            assert_eq!(out.status.code(), Some(1), "{args:?}");
            let (stdout, stderr) = (
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr),
            );
            assert_eq!(control_bytes(&out.stdout), Vec::<String>::new(), "{stdout}");
            assert_eq!(control_bytes(&out.stderr), Vec::<String>::new(), "{stderr}");
            for e in &expected {
                assert!(stderr.contains(e.as_str()), "{args:?}: {e:?} in {stderr}");
            }
            assert!(
                !stdout
                    .lines()
                    .chain(stderr.lines())
                    .any(|l| l.starts_with("OK")),
                "a fake OK line: {stderr}"
            );
        }
    }
}

/// A recording is consistent with itself or refused, and a replay reports the tick it was at:
/// a step removed or relabelled is named by the replay's tick; a claimed `ticks` past the
/// recorded steps stops at the first tick with no step (not run to its end first).
#[test]
fn a_recording_s_steps_are_checked_and_the_replay_s_own_tick_is_told() {
    let dir = tempfile::tempdir().unwrap();
    let file = record("drive", dir.path());
    let good: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let steps = good["steps"].as_array().unwrap().len();
    let replay = |rec: &Value| {
        std::fs::write(&file, rec.to_string()).unwrap();
        let out = bin().arg("replay").arg(&file).output().unwrap();
        assert_eq!(out.status.code(), Some(1));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let mut removed = good.clone();
    removed["steps"].as_array_mut().unwrap().remove(50);
    let err = replay(&removed);
    assert!(
        err.starts_with("tick 51: the recording's step for it is labelled tick 52"),
        "{err}"
    );
    let mut relabelled = good.clone();
    relabelled["steps"][5]["tick"] = json!(7);
    let err = replay(&relabelled);
    assert!(
        err.starts_with("tick 6: the recording's step for it is labelled tick 7"),
        "{err}"
    );
    let mut forged = good.clone();
    forged["steps"][5]["events"] = json!(["forged"]);
    let err = replay(&forged);
    assert!(
        err.contains("steps[5].events: the events do not make the step's digest"),
        "{err}"
    );
    let mut claimed = good.clone();
    claimed["ticks"] = json!(10_000_000);
    let err = replay(&claimed);
    assert!(
        err.starts_with(&format!(
            "tick {}: the recording holds no step for it",
            steps + 1
        )),
        "{err}"
    );
    // It stopped there: the replay ran one tick past the recorded steps, not 10 000 000.
    let rec = world_streaming::replay::Recording::read(&file).unwrap();
    match rec.verify().unwrap() {
        world_streaming::replay::Verdict::Differs(d) => assert_eq!(d.ticks_run, steps + 1),
        other => panic!("{other:?}"),
    }
}

/// `run --record` writes nothing `replay` and `view` could not read: a recording over the cap
/// they read (16 MiB) is refused, naming its size, and no file is left.
#[test]
fn a_recording_over_the_cap_replay_reads_is_not_written() {
    let dir = tempfile::tempdir().unwrap();
    let file = record("seed", dir.path());
    let mut rec: world_streaming::replay::Recording =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let big = "x".repeat(1 << 20);
    let events: Vec<String> = (0..17).map(|_| big.clone()).collect();
    let last = rec.steps.last().unwrap().tick;
    rec.steps.push(world_streaming::replay::Step {
        tick: last + 1,
        digest: String::new(),
        events,
    });
    let out = dir.path().join("big.replay.json");
    let err = rec.write(&out).unwrap_err().to_string();
    assert!(err.contains("big.replay.json"), "{err}");
    assert!(
        err.contains("more than the 16777216 bytes replay and view read"),
        "{err}"
    );
    assert!(!out.exists());
}
