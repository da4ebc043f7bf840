//! The C# binding for Unity (`bindings/csharp/WorldStreaming.cs`) from C#: its test program
//! (`bindings/csharp/tests/WorldStreamingTest.cs`: the seed example, a terrain drive with every
//! built chunk read back and hashed, entity data, the error paths, complete chunks and their
//! snapshots, vertical sections and their columns) is compiled with Mono's `mcs`
//! (C# 7, Debian's `mono-mcs`) and run with `mono` (`mono-runtime`) against the crate's `cdylib`.
//! Without `mcs` the test is skipped with a message, except under `CI=true` (`.ci/run` installs
//! both), where their absence fails it.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The directory holding `libworld_streaming.so` (next to the test binary, as for the C tests).
fn library_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary");
    let deps = exe.parent().expect("target/…/deps").to_path_buf();
    for dir in [deps.clone(), deps.parent().expect("target/…").to_path_buf()] {
        if dir.join("libworld_streaming.so").is_file() {
            return dir;
        }
    }
    panic!("libworld_streaming.so not found next to {}", exe.display());
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

#[test]
fn the_csharp_binding_drives_the_seed_example_a_terrain_drive_and_the_error_paths() {
    let ci = std::env::var_os("CI").is_some_and(|v| v == "true");
    if !on_path("mcs") || !on_path("mono") {
        assert!(
            !ci,
            "CI=true but mcs or mono is not on the PATH (.ci/run installs mono-mcs and mono-runtime)"
        );
        eprintln!(
            "\n*** mcs or mono is not installed: the C# binding is NOT tested \
             (apt-get install mono-mcs mono-runtime) ***\n"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("WorldStreamingTest.exe");
    let csharp = repo().join("bindings/csharp");
    let status = Command::new("mcs")
        .args(["-langversion:7", "-warnaserror+", "-nologo"])
        .arg(format!("-out:{}", exe.display()))
        .arg(csharp.join("WorldStreaming.cs"))
        .arg(csharp.join("tests/WorldStreamingTest.cs"))
        .status()
        .expect("run mcs");
    assert!(status.success(), "mcs failed");
    // The library just built, first on the search path (as tests/capi_c.rs does).
    let mut paths = vec![library_dir()];
    paths.extend(std::env::split_paths(
        &std::env::var_os("LD_LIBRARY_PATH").unwrap_or_default(),
    ));
    let scratch = tempfile::tempdir().unwrap();
    let out = Command::new("mono")
        .arg(&exe)
        .arg(repo())
        .arg(scratch.path())
        .env("LD_LIBRARY_PATH", std::env::join_paths(paths).unwrap())
        .output()
        .expect("run mono");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("WorldStreamingTest: every check passed"),
        "mono exited with {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status.code()
    );
    for line in [
        "seed example: every number as docs/reference/tick.md#the-worked-example has it",
        "read back and hashed",
        "WS_STATUS_NO_TERRAIN",
        "WS_STATUS_INVALID_UTF8",
        "WS_STATUS_INVALID_HANDLE",
        "scene files and saves as text: the same game from text as from disk",
        "WS_STATUS_BAD_SCENE: files: \"../x\": expected a path inside",
        "WS_STATUS_LOAD_FAILED: load: save: line 1 column 1",
        "complete chunks: ",
        "WS_STATUS_OUT_OF_RANGE: skin 9 is out of range",
        "WS_STATUS_BUFFER_TOO_SMALL: the buffers hold 10 cells; 100 are needed",
        "vertical sections: rows ",
    ] {
        assert!(stdout.contains(line), "{line} missing:\n{stdout}");
    }
    assert!(scratch.path().join("seed.save.json").is_file());
}
