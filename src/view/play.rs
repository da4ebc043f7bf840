//! The live page (docs/web.md#the-live-page): `world-streaming play SCENE --out play.html` writes
//! one self-contained page that runs the scene in the kit's wasm module, embedded with the
//! scene's files, and draws it with the replay viewer's page and drawing core (`page.html`,
//! `view.js`, the layers' drawings) in its live mode, its controller `play.js` beside this file.

use serde_json::json;

use super::live::{recording_files, Live};
use super::render::{page, script_json, Variant};
use super::ViewError;
use crate::replay::Recording;

/// The controller of a live page.
const PLAY_JS: &str = include_str!("play.js");

/// What the live page adds to the page's style.
const PLAY_CSS: &str = "#play-status { color: var(--muted); font-variant-numeric: tabular-nums; } \
                        #play-status.bad { color: var(--load-refused); } \
                        #grid { cursor: crosshair; }";

/// Why a scene cannot run in a browser, before anything is written: a Lua mod (the VM is
/// native only), a world directory or a `save`/`load` input (a browser has no file system).
pub fn check_playable(recording: &Recording) -> Result<(), ViewError> {
    for (i, m) in recording.mods.iter().enumerate() {
        if m.path.to_ascii_lowercase().ends_with(".lua") {
            return Err(ViewError::Live(format!(
                "mods[{i}]: Lua mods need the native build (the live page runs the wasm build, \
                 which has JSON mods only): {}",
                crate::escape::escape(&m.path)
            )));
        }
    }
    if let Some(key) = crate::replay::world_dir_key(&recording.scene) {
        return Err(ViewError::Live(format!(
            "{key}: a world directory needs a file system, which the live page (the wasm build) \
             does not have"
        )));
    }
    for (i, input) in recording.inputs.iter().enumerate() {
        if let crate::files::inputs::Action::Save { .. }
        | crate::files::inputs::Action::Load { .. } = &input.action
        {
            return Err(ViewError::Live(format!(
                "inputs[{i}] (tick {}): a save or load needs a file system, which the live page \
                 (the wasm build) does not have",
                input.tick
            )));
        }
    }
    recording_files(recording).map(drop)
}

/// The live page of `recording` (its scene, mods' and district files, and the inputs that play
/// first; its steps, when it has any, are checked as the page runs): `wasm` is the kit's module
/// (`scripts/build-web.sh`), `title` names the page, `file` the recording it saves. The scene is
/// started here first, natively, so a scene that cannot start is refused before a page is
/// written.
pub fn play_page(
    recording: &Recording,
    title: &str,
    file: &str,
    wasm: &[u8],
) -> Result<String, ViewError> {
    check_playable(recording)?;
    let live = Live::from_recording(recording, title)?;
    let payload = json!({ "title": title, "file": file, "recording": recording });
    let play = format!(
        "<style>{PLAY_CSS}</style>\n<script type=\"application/json\" id=\"play\">{}</script>\n\
         <script type=\"application/octet-stream\" id=\"wasm\">{}</script>\n<script>{PLAY_JS}</script>",
        script_json(&payload.to_string()),
        base64(wasm)
    );
    let variant = Variant {
        csp: " 'wasm-unsafe-eval'",
        kind: "play",
        body: " data-live=\"\"",
        step: "Step: run one tick (.)",
        controls: " <button id=\"save\" type=\"button\" title=\"Download the session as a \
                   recording (the format run --record writes; world-streaming replay verifies \
                   it)\" disabled>Save recording</button>\n  <output id=\"play-status\" \
                   aria-live=\"polite\">starting…</output>",
        keys: "Keys: arrows or WASD move the player · click a chunk to send it there · Space \
               start/pause · . step · , back · Home or R restart · End last tick. x grows to the \
               right, z downwards.",
        play: &play,
    };
    Ok(page(title, "null", &live.header().scripts, &variant))
}

/// Standard base64 with padding.
fn base64(bytes: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | (b as u32) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ABC[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_is_the_standard_one() {
        for (bytes, text) in [
            (&b""[..], ""),
            (b"f", "Zg=="),
            (b"fo", "Zm8="),
            (b"foo", "Zm9v"),
            (b"foob", "Zm9vYg=="),
            (b"\xff\x00\xfe", "/wD+"),
        ] {
            assert_eq!(base64(bytes), text);
        }
    }
}
