//! The worst-tick cases of `benches/worst/` (docs/performance.md#worst-tick) stay legal and
//! runnable: every shipped scene, mod and inputs file passes `world-streaming check` as shipped
//! (with its generated files beside it), and each case runs for two ticks in a cheaper variant
//! (smaller radii and budgets, the same keys and mods). No timing is asserted: the numbers come
//! from `cargo run --release --example worst_tick`.

#[path = "../benches/worst/cases.rs"]
mod cases;

use assert_cmd::Command;
use world_streaming::files::inputs::Inputs;
use world_streaming::game::Game;

#[test]
fn every_case_is_listed_and_every_listed_case_is_shipped() {
    let mut dirs: Vec<String> = std::fs::read_dir(cases::shipped_dir())
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    dirs.sort();
    let mut listed: Vec<String> = cases::CASES.iter().map(|c| c.name.to_owned()).collect();
    listed.sort();
    assert_eq!(dirs, listed);
}

#[test]
fn every_case_passes_check_as_shipped_and_runs_two_ticks() {
    for case in cases::CASES {
        let dir = tempfile::tempdir().unwrap();
        let prepared = cases::prepare(case.name, dir.path(), cases::Scale::Cheap);
        // `check` with the scene first: the mods are loaded, the inputs checked against it.
        let mut files = vec![prepared.scene.clone()];
        files.extend(
            std::fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|e| e == "lua")),
        );
        files.extend(prepared.inputs.clone());
        let out = Command::cargo_bin("world-streaming")
            .unwrap()
            .arg("check")
            .args(&files)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}: check failed:\n{}",
            case.name,
            String::from_utf8_lossy(&out.stderr)
        );
        cases::cheapen(case.name, &prepared.scene);
        let mut game =
            Game::from_scene_file(&prepared.scene).unwrap_or_else(|e| panic!("{}: {e}", case.name));
        let inputs = match &prepared.inputs {
            Some(p) => Inputs::read(p).unwrap_or_else(|e| panic!("{}: {e:?}", case.name)),
            None => Inputs::default(),
        };
        game.run(&inputs, 2)
            .unwrap_or_else(|e| panic!("{}: {e}", case.name));
        assert_eq!(game.engine().tick_count(), 2, "{}", case.name);
        let count = |name: &str| {
            game.engine()
                .events()
                .iter()
                .filter(|e| e.event == name)
                .count()
        };
        // What makes each case adversarial did happen.
        match case.name {
            "lua-handlers" => assert_eq!(count("mod.error"), 2, "one tick budget a tick"),
            "tickets-inputs" => assert_eq!(count("world.ticket.refused"), 1021),
            "tickets-lua" => {
                assert_eq!(count("world.ticket.refused"), 1021);
                let log: Vec<String> = game.take_mod_log().into_iter().map(|l| l.message).collect();
                assert_eq!(log, ["tickets held\t3\trefused\t1021"]);
            }
            "limits-streaming" | "limits-streaming-nearest" => {
                assert_eq!(
                    count("world.ticket.refused"),
                    56,
                    "the cheap cap refuses them all"
                )
            }
            "limits-terrain-commit" => {
                assert_eq!(
                    count("world.terrain.built"),
                    25,
                    "tick 2 commits tick 1's loads"
                )
            }
            "district-full-chunks" => assert_eq!(count("world.district.materialised"), 8),
            _ => {}
        }
        game.close()
            .unwrap_or_else(|e| panic!("{}: {e}", case.name));
    }
}
