//! Replays: recorded runs of every example scene replay OK, and an altered recording is caught at
//! the right tick, through the binary and through the library.

use std::path::Path;

use assert_cmd::Command;
use serde_json::Value;
use world_streaming::files::inputs::Inputs;
use world_streaming::replay::{compare, Recording, Verdict};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn bin() -> Command {
    Command::cargo_bin("world-streaming").unwrap()
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
    for name in ["seed", "defaults", "drive", "two_scenes", "demo"] {
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
    let joined: Vec<&str> = step["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    step["digest"] = Value::String(format!(
        "{:016x}",
        world_streaming::replay::fnv1a64(joined.join("\n").as_bytes())
    ));
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
        "the run saved in its current directory (SPEC §10)"
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
