//! `world-streaming play`: a scene as one self-contained page that runs it in the browser
//! (docs/web.md#the-live-page).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use world_streaming::files::display_name;
use world_streaming::replay::{Recording, REPLAY_FORMAT};
use world_streaming::view;

/// The wasm module `scripts/build-web.sh` writes, in this crate's target directory.
const BUILT_WASM: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/target/wasm32-unknown-unknown/release/world_streaming.wasm"
);

/// Where the kit's wasm module is: `--wasm`, else `$WS_WASM`, else the one
/// `scripts/build-web.sh` writes in this crate's target directory.
fn wasm_path(wasm: Option<&Path>) -> PathBuf {
    wasm.map(Path::to_path_buf)
        .or_else(|| std::env::var_os("WS_WASM").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from(BUILT_WASM))
}

pub fn run(
    scene: &Path,
    inputs: Option<&Path>,
    out: &Path,
    wasm: Option<&Path>,
) -> anyhow::Result<()> {
    // A recording (`run --record`) plays its scene and inputs and checks its steps.
    let text = world_streaming::files::read_text(scene)?;
    let is_recording = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .is_some_and(|v| v.get("format").and_then(|f| f.as_str()) == Some(REPLAY_FORMAT));
    let recording = if is_recording {
        if inputs.is_some() {
            bail!(
                "{}: a recording carries its inputs: --inputs goes with a scene file",
                display_name(scene)
            );
        }
        Recording::read(scene)?
    } else {
        let inputs = super::run::read_inputs(inputs)?;
        Recording::record(scene, &inputs, 0)?
    };
    // What the page could not run is refused before the module is looked for.
    view::check_playable(&recording)?;
    let wasm_file = wasm_path(wasm);
    let module = std::fs::read(&wasm_file).with_context(|| {
        format!(
            "{}: cannot read the kit's wasm module (build it with scripts/build-web.sh, or name \
             one with --wasm)",
            display_name(&wasm_file)
        )
    })?;
    let stem = scene
        .file_stem()
        .map_or_else(|| "play".to_owned(), |n| n.to_string_lossy().into_owned());
    let stem = stem.strip_suffix(".replay").unwrap_or(&stem).to_owned();
    let title = scene
        .file_name()
        .map_or_else(|| display_name(scene), |n| n.to_string_lossy().into_owned());
    let page = view::play_page(&recording, &title, &format!("{stem}.replay.json"), &module)?;
    if out.as_os_str() == "-" {
        use std::io::Write;
        let mut stdout = std::io::stdout().lock();
        stdout.write_all(page.as_bytes())?;
        stdout.flush()?;
    } else {
        world_streaming::files::write_atomic(out, page.as_bytes())
            .with_context(|| format!("{}: cannot write the page", out.display()))?;
        eprintln!("wrote {} ({} bytes)", display_name(out), page.len());
    }
    Ok(())
}
