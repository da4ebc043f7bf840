//! The C ABI from C: the programs in `tests/c/` (and the book's C example, `docs/capi.md`) are compiled with
//! the system C compiler (`$CC`, else `cc`) against `include/world_streaming.h`, linked against
//! the crate's `cdylib`, and run. When `valgrind` is on the PATH they run under it, and any
//! memory error or leak fails the test; `.ci/run` installs valgrind and sets
//! `WS_REQUIRE_VALGRIND=1`, so in CI its absence is a failure, not a skip.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The directory holding `libworld_streaming.so`: cargo builds the library's every crate type
/// before the integration tests, into the directory of the test binary (`target/…/deps`).
fn library_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary");
    let deps = exe.parent().expect("target/…/deps").to_path_buf();
    for dir in [deps.clone(), deps.parent().expect("target/…").to_path_buf()] {
        if dir.join(dylib_name()).is_file() {
            return dir;
        }
    }
    panic!("{} not found next to {}", dylib_name(), exe.display());
}

fn dylib_name() -> &'static str {
    if cfg!(target_os = "macos") {
        "libworld_streaming.dylib"
    } else {
        "libworld_streaming.so"
    }
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

/// Compiles `source` into `out` with warnings as errors.
fn compile(source: &Path, out: &Path) {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    let lib = library_dir();
    let status = Command::new(&cc)
        .args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-g"])
        .arg("-I")
        .arg(repo().join("include"))
        .arg(source)
        .arg("-o")
        .arg(out)
        .arg("-L")
        .arg(&lib)
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .args(["-lworld_streaming", "-pthread"])
        .status()
        .unwrap_or_else(|e| panic!("cannot run the C compiler `{cc}`: {e}"));
    assert!(status.success(), "{cc} failed on {}", source.display());
}

/// Runs a compiled C program (under valgrind when there is one) and returns its stdout.
fn run(program: &Path, args: &[&Path]) -> String {
    let required = std::env::var_os("WS_REQUIRE_VALGRIND").is_some_and(|v| v == "1");
    let mut command = if on_path("valgrind") {
        let mut c = Command::new("valgrind");
        c.args([
            "--quiet",
            "--error-exitcode=99",
            "--leak-check=full",
            "--show-leak-kinds=definite,indirect",
            "--errors-for-leak-kinds=definite,indirect",
            "--track-origins=yes",
        ])
        .arg(program);
        c
    } else {
        assert!(
            !required,
            "WS_REQUIRE_VALGRIND=1 but valgrind is not on the PATH (.ci/run installs it)"
        );
        eprintln!(
            "\n*** valgrind is not installed: running {} WITHOUT leak and memory checks ***\n",
            program.display()
        );
        Command::new(program)
    };
    // The library just built, not a stale copy: cargo's LD_LIBRARY_PATH lists `target/debug`
    // (where only `cargo build` refreshes the library) and outranks the program's rpath.
    let mut paths = vec![library_dir()];
    paths.extend(std::env::split_paths(
        &std::env::var_os("LD_LIBRARY_PATH").unwrap_or_default(),
    ));
    command.env(
        "LD_LIBRARY_PATH",
        std::env::join_paths(paths).expect("library paths"),
    );
    let out = command.args(args).output().expect("run the C program");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{} exited with {:?} (99 = valgrind found errors or leaks)\nstdout:\n{stdout}\nstderr:\n{stderr}",
        program.display(),
        out.status.code(),
    );
    stdout
}

fn build_and_run(source: &Path, args: &[&Path]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let stem = source.file_stem().unwrap().to_str().unwrap();
    let program = dir.path().join(stem);
    compile(source, &program);
    run(&program, args)
}

#[test]
fn the_seed_example_runs_through_the_c_abi_with_its_exact_numbers() {
    let scratch = tempfile::tempdir().unwrap();
    let out = build_and_run(&repo().join("tests/c/seed_example.c"), &[scratch.path()]);
    assert!(out.contains("seed_example: every check passed"), "{out}");
    assert!(scratch.path().join("seed.save.json").is_file());
}

/// The `staticlib` works too: the seed example linked statically (with the system libraries
/// Rust's standard library needs), run without valgrind (the dynamic run above has it).
#[test]
fn the_seed_example_links_against_the_static_library_too() {
    let lib = library_dir().join("libworld_streaming.a");
    assert!(lib.is_file(), "{} was not built", lib.display());
    let dir = tempfile::tempdir().unwrap();
    let program = dir.path().join("seed_static");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    let status = Command::new(&cc)
        .args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"])
        .arg("-I")
        .arg(repo().join("include"))
        .arg(repo().join("tests/c/seed_example.c"))
        .arg(&lib)
        .arg("-o")
        .arg(&program)
        .args(["-pthread", "-ldl", "-lm"])
        .status()
        .unwrap_or_else(|e| panic!("cannot run the C compiler `{cc}`: {e}"));
    assert!(status.success(), "{cc} failed to link the static library");
    let scratch = tempfile::tempdir().unwrap();
    let out = Command::new(&program).arg(scratch.path()).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("seed_example: every check passed"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Nothing of the dynamic library is needed at run time.
    let ldd = Command::new("ldd").arg(&program).output();
    if let Ok(ldd) = ldd {
        assert!(!String::from_utf8_lossy(&ldd.stdout).contains("world_streaming"));
    }
}

#[test]
fn bad_input_null_pointers_and_freed_handles_are_errors_not_crashes() {
    let scratch = tempfile::tempdir().unwrap();
    let out = build_and_run(&repo().join("tests/c/misuse.c"), &[scratch.path(), repo()]);
    assert!(out.contains("misuse: every check passed"), "{out}");
    // Every refusal printed its status and a message.
    for status in [
        "WS_STATUS_NULL_ARGUMENT",
        "WS_STATUS_INVALID_UTF8",
        "WS_STATUS_BAD_SCENE",
        "WS_STATUS_BAD_INPUT",
        "WS_STATUS_INPUT_FAILED",
        "WS_STATUS_OUT_OF_RANGE",
        "WS_STATUS_BUFFER_TOO_SMALL",
        "WS_STATUS_NO_SUCH_VARIABLE",
        "WS_STATUS_SAVE_FAILED",
        "WS_STATUS_LOAD_FAILED",
        "WS_STATUS_NO_STREAMING",
        "WS_STATUS_INVALID_HANDLE",
    ] {
        assert!(out.contains(status), "{status} never reported:\n{out}");
    }
}

/// The book's C example (`docs/capi.md`), compiled and run exactly as printed there.
#[test]
fn the_book_c_example_compiles_and_runs() {
    let section = std::fs::read_to_string(repo().join("docs/capi.md")).unwrap();
    let code = section
        .split("```c\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the section has a ```c block");
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("readme_example.c");
    std::fs::write(&source, code).unwrap();
    let out = build_and_run(&source, &[]);
    assert!(out.contains("loaded 9"), "{out}");
}

/// The round-3 functions (docs/reference/engines.md#the-hot-path) from C: a drive across
/// `examples/scenes/terrain.json` moved with `ws_game_move`, its chunk events drained as structs,
/// every built chunk's cells read into a mesh-sized buffer and hashed (FNV-1a 64,
/// docs/reference/terrain.md#chunk-content) against its built event; entity data; and the new
/// functions' refusals.
#[test]
fn a_terrain_drive_reads_every_built_chunk_back_with_its_event_hash() {
    let out = build_and_run(&repo().join("tests/c/terrain_drive.c"), &[repo()]);
    assert!(out.contains("terrain_drive: every check passed"), "{out}");
    for status in [
        "WS_STATUS_NOT_BUILT",
        "WS_STATUS_BUFFER_TOO_SMALL",
        "WS_STATUS_NO_TERRAIN",
        "WS_STATUS_NO_SUCH_ENTITY",
        "WS_STATUS_BAD_INPUT",
        "WS_STATUS_INPUT_FAILED",
        "WS_STATUS_INVALID_HANDLE",
    ] {
        assert!(out.contains(status), "{status} never reported:\n{out}");
    }
}

/// A scene's files and saves as text from C (docs/reference/engines.md#scene-files-as-text,
/// docs/reference/engines.md#saves-as-text): the town scene with a JSON mod run from disk and
/// from `files_json` with the same events and state tick by tick; every refusal of
/// `files_json`; `ws_game_save_text` byte for byte the file `ws_game_save` writes, a round trip
/// through `ws_game_load_text`, and bad saves refused with the game unchanged.
#[test]
fn scene_files_and_saves_as_text_work_from_c() {
    let scratch = tempfile::tempdir().unwrap();
    let out = build_and_run(
        &repo().join("tests/c/text_abi.c"),
        &[scratch.path(), repo()],
    );
    assert!(out.contains("text_abi: every check passed"), "{out}");
    for status in [
        "WS_STATUS_BAD_SCENE",
        "WS_STATUS_LOAD_FAILED",
        "WS_STATUS_NULL_ARGUMENT",
        "WS_STATUS_INVALID_UTF8",
        "WS_STATUS_INVALID_HANDLE",
    ] {
        assert!(out.contains(status), "{status} never reported:\n{out}");
    }
}

/// Complete chunks and bordered snapshots from C (docs/reference/engines.md#complete-chunks-in-c):
/// a drive with `neighbours: 1` whose `WS_CHUNK_EVENT_COMPLETE` / `WS_CHUNK_EVENT_INCOMPLETE`
/// come after the tick's other chunk events in row order and agree with `ws_game_is_complete`
/// and `world.chunks.complete`; snapshots refused with `WS_STATUS_NOT_COMPLETE` before a chunk is
/// complete and equal, cell for cell, to `ws_game_terrain` of the chunk and its neighbours after,
/// with the version `ws_game_terrain_version` gives; an edit moving the version; the buffer
/// contract, bad skins, `neighbours` 0 and the refusals.
#[test]
fn complete_chunks_and_their_snapshots_read_back_from_c() {
    let out = build_and_run(&repo().join("tests/c/complete_chunks.c"), &[]);
    assert!(out.contains("complete_chunks: every check passed"), "{out}");
    assert!(
        out.contains("WS_CHUNK_EVENT_COMPLETE = 7, WS_CHUNK_EVENT_INCOMPLETE = 8, WS_STATUS_NOT_COMPLETE = 19"),
        "{out}"
    );
    for status in [
        "WS_STATUS_NOT_COMPLETE",
        "WS_STATUS_BUFFER_TOO_SMALL",
        "WS_STATUS_OUT_OF_RANGE",
        "WS_STATUS_NULL_ARGUMENT",
        "WS_STATUS_NOT_BUILT",
        "WS_STATUS_NO_TERRAIN",
        "WS_STATUS_NO_STREAMING",
        "WS_STATUS_NO_SUCH_VARIABLE",
        "WS_STATUS_INVALID_HANDLE",
    ] {
        assert!(out.contains(status), "{status} never reported:\n{out}");
    }
}

/// Vertical sections from C (docs/reference/engines.md#vertical-sections-in-c): a disc scene with
/// `vertical` whose hero climbs, dives and walks; the drained records carry each section's row
/// in `y` (the record is 40 bytes, `y` at offset 32), `WS_CHUNK_EVENT_COLUMN_LOADED` /
/// `WS_CHUNK_EVENT_COLUMN_UNLOADED` come with a column's first and last section, and
/// `ws_game_is_loaded_section` agrees with the events; a flat scene's records have `y` 0 and no
/// column kind.
#[test]
fn vertical_sections_and_their_columns_read_back_from_c() {
    let out = build_and_run(&repo().join("tests/c/vertical_sections.c"), &[]);
    assert!(
        out.contains("vertical_sections: every check passed"),
        "{out}"
    );
    assert!(
        out.contains(
            "WS_CHUNK_EVENT_COLUMN_LOADED = 9, WS_CHUNK_EVENT_COLUMN_UNLOADED = 10, \
             sizeof(WsChunkEvent) = 40, offsetof(WsChunkEvent, y) = 32"
        ),
        "{out}"
    );
    assert!(out.contains("flat: "), "{out}");
    for status in [
        "WS_STATUS_NULL_ARGUMENT",
        "WS_STATUS_INVALID_HANDLE",
        "WS_STATUS_NO_STREAMING",
    ] {
        assert!(out.contains(status), "{status} never reported:\n{out}");
    }
}
