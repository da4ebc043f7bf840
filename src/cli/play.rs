//! `world-streaming play`: a scene as one self-contained page that runs it in the browser
//! (docs/web.md#the-live-page).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use world_streaming::files::display_name;
use world_streaming::replay::{Recording, REPLAY_FORMAT};
use world_streaming::user_file::{read_regular, Links, Regular};
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

/// The most a wasm module may weigh: the release build is about 2.6 MB; a page embeds it in
/// base64, so a file far past it is not the kit's module.
const MAX_MODULE_BYTES: u64 = 64 * 1024 * 1024;

/// The kit's wasm module at `path`: a regular file (not a FIFO or a device, which would block
/// or never end), at most [`MAX_MODULE_BYTES`], that starts as every wasm module does.
fn read_module(path: &Path) -> anyhow::Result<Vec<u8>> {
    let name = display_name(path);
    let bytes = match read_regular(path, MAX_MODULE_BYTES, Links::Follow).with_context(|| {
        format!(
            "{name}: cannot read the kit's wasm module (build it with scripts/build-web.sh, or \
             name one with --wasm)"
        )
    })? {
        Regular::Bytes(bytes) => bytes,
        Regular::TooLarge => bail!(
            "{name}: expected the kit's wasm module, got a file over {MAX_MODULE_BYTES} bytes"
        ),
        Regular::NotRegular(kind) => bail!(
            "{name}: expected the kit's wasm module, a regular file, got {}",
            kind.words()
        ),
    };
    if !bytes.starts_with(b"\0asm") {
        bail!("{name}: expected the kit's wasm module, got a file that is not WebAssembly");
    }
    Ok(bytes)
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
    let module = read_module(&wasm_path(wasm))?;
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
