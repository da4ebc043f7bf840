//! `world-streaming view`: a recorded run as one self-contained HTML page.

use std::path::Path;

use anyhow::Context;
use world_streaming::files::display_name;
use world_streaming::replay::Recording;
use world_streaming::view;

pub fn run(replay: &Path, out: &Path) -> anyhow::Result<()> {
    let recording = Recording::read(replay)?;
    let title = replay.file_name().map_or_else(
        || display_name(replay),
        |n| n.to_string_lossy().into_owned(),
    );
    // Terrain heights when the run builds terrain (asking every loaded chunk each tick of a
    // run without it would only cost time).
    let probe: Option<&view::HeightProbe> = if view::has_terrain(&recording) {
        Some(&view::terrain_height)
    } else {
        None
    };
    let data = view::capture(&recording, &title, probe)?;
    let page = view::render(&data);
    if out.as_os_str() == "-" {
        use std::io::Write;
        let mut stdout = std::io::stdout().lock();
        stdout.write_all(page.as_bytes())?;
        stdout.flush()?;
    } else {
        world_streaming::files::write_atomic(out, page.as_bytes())
            .with_context(|| format!("{}: cannot write the page", out.display()))?;
        eprintln!(
            "wrote {} ({} ticks, {} bytes)",
            display_name(out),
            data.ticks,
            page.len()
        );
    }
    Ok(())
}
