//! `world-streaming schema`: write or check the JSON Schemas.

use std::path::PathBuf;

use anyhow::{bail, Context};
use world_streaming::files::schemas;

pub fn run(out: Option<PathBuf>, check: Option<PathBuf>) -> anyhow::Result<()> {
    if let Some(dir) = check {
        let mut drift = Vec::new();
        for (name, text) in schemas::all() {
            let path = dir.join(name);
            let on_disk = world_streaming::files::read_text(&path).unwrap_or_default();
            if on_disk != text {
                drift.push(format!("{}:\n{}", path.display(), diff(&on_disk, &text)));
            }
        }
        if !drift.is_empty() {
            bail!(
                "the checked-in schemas differ from the Rust types:\n{}\nregenerate them with: {}",
                drift.join("\n"),
                schemas::REGENERATE
            );
        }
        println!("schemas are up to date");
        return Ok(());
    }
    match out {
        Some(dir) => {
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("{}: cannot create", dir.display()))?;
            for (name, text) in schemas::all() {
                let path = dir.join(name);
                std::fs::write(&path, text)
                    .with_context(|| format!("{}: cannot write", path.display()))?;
                println!("wrote {}", path.display());
            }
        }
        None => print!("{}", schemas::all()[0].1),
    }
    Ok(())
}

/// A line diff good enough to see what drifted: lines only in one side, with their numbers.
fn diff(old: &str, new: &str) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (old.lines().collect(), new.lines().collect());
    let mut out = String::new();
    let n = a.len().max(b.len());
    let mut shown = 0;
    for i in 0..n {
        let (x, y) = (a.get(i), b.get(i));
        if x != y {
            if let Some(x) = x {
                out.push_str(&format!("  {:>4} - {x}\n", i + 1));
            }
            if let Some(y) = y {
                out.push_str(&format!("  {:>4} + {y}\n", i + 1));
            }
            shown += 1;
            if shown >= 20 {
                out.push_str("  …\n");
                break;
            }
        }
    }
    out
}
