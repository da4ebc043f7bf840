//! The replay viewer with `neighbours` (docs/viewer.md#complete-chunks): the frames carry the
//! neighbours in force and the complete chunks (through the tick's `world.chunk.complete` /
//! `incomplete` / `unloaded` events and the corrections `ca` / `cr`), checked tick by tick against
//! the streaming service's `complete()` on the shipped example `examples/scenes/complete.json`
//! (a drive with `neighbours: 1`), with and without terrain, with a save loaded back; a run
//! with `neighbours` absent or 0 carries none of it (the same data either way); and in a real
//! headless Chromium the page draws complete chunks in the loaded green (shaded by height) and
//! loaded chunks that are not complete in grey, the legend's two swatches being those colours,
//! with the counts drawn, the caption and the chunk under the pointer. A screenshot goes to
//! `target/view-complete.png`.

#[path = "common/chromium.rs"]
mod chromium;

mod common;
use common::bin;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use world_streaming::files::inputs::Inputs;
use world_streaming::grid::ChunkPos;
use world_streaming::replay::Recording;
use world_streaming::view::{capture, terrain_height};

const READY: &str = "document.body && document.body.dataset.ready === '1'";
/// view.css `--loaded` and `--incomplete`.
const LOADED_RGB: [u64; 3] = [0x3f, 0xa3, 0x4d];
const INCOMPLETE_RGB: [u64; 3] = [0x5c, 0x66, 0x70];
/// The ticks the drive runs (the example fills its square, drives east to tick 52, then stops).
const TICKS: u64 = 60;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The shipped example driven as its inputs say to tick 60: `terrain` keeps `world.terrain`;
/// `neighbours` sets the key (`None`: removes it); `save_load` adds a save at tick 30 loaded
/// back at tick 40.
fn recording(dir: &Path, terrain: bool, neighbours: Option<u32>, save_load: bool) -> Recording {
    let mut scene: Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("examples/scenes/complete.json")).unwrap(),
    )
    .unwrap();
    scene.as_object_mut().unwrap().remove("$schema");
    let kits = scene["kits"].as_array_mut().unwrap();
    if !terrain {
        kits.retain(|k| k["id"] != "world.terrain");
    }
    for k in kits.iter_mut().filter(|k| k["id"] == "world.streaming") {
        let config = k["config"].as_object_mut().unwrap();
        assert_eq!(
            config["neighbours"],
            json!(1),
            "the example uses neighbours 1"
        );
        match neighbours {
            Some(n) => config.insert("neighbours".into(), json!(n)),
            None => config.remove("neighbours"),
        };
    }
    let path = dir.join("complete.json");
    std::fs::write(&path, scene.to_string()).unwrap();
    let mut lines: Vec<Value> =
        std::fs::read_to_string(repo().join("examples/scenes/complete.inputs.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
    if save_load {
        lines.push(json!({"tick": 30, "do": "save", "path": "save.json"}));
        lines.push(json!({"tick": 40, "do": "load", "path": "save.json"}));
    }
    lines.sort_by_key(|l| l["tick"].as_u64().unwrap());
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let mut inputs = Inputs::parse(&text, "complete.inputs.jsonl").unwrap();
    inputs.dir = Some(dir.to_path_buf());
    Recording::record(&path, &inputs, TICKS).unwrap()
}

fn chunks(flat: &Value) -> Vec<ChunkPos> {
    let v: Vec<i64> = flat
        .as_array()
        .map(|a| a.iter().map(|n| n.as_i64().unwrap()).collect())
        .unwrap_or_default();
    v.chunks(2).map(|c| ChunkPos::new(c[0], c[1])).collect()
}

/// What the page holds at a frame: the neighbours in force and the complete chunks.
type Held = (u32, BTreeSet<ChunkPos>);

/// The page's complete chunks at every frame, rebuilt from the data as `view.js` does: `nb`, then
/// the events in order (`world.chunk.complete` adds while k > 0, `incomplete` and `unloaded`
/// remove), then `ca` and `cr`.
fn rebuild(data: &Value) -> Vec<Held> {
    let names: Vec<&str> = data["names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    let mut held: Held = (0, BTreeSet::new());
    let mut out = Vec::new();
    for f in data["frames"].as_array().unwrap() {
        if let Some(k) = f.get("nb") {
            held.0 = u32::try_from(k.as_u64().unwrap()).unwrap();
            if held.0 == 0 {
                held.1.clear();
            }
        }
        for e in f["e"].as_array().into_iter().flatten() {
            let e = e.as_array().unwrap();
            if e.len() != 3 {
                continue;
            }
            let c = ChunkPos::new(e[1].as_i64().unwrap(), e[2].as_i64().unwrap());
            match names[e[0].as_u64().unwrap() as usize] {
                "world.chunk.complete" if held.0 > 0 => {
                    held.1.insert(c);
                }
                "world.chunk.incomplete" | "world.chunk.unloaded" => {
                    held.1.remove(&c);
                }
                _ => {}
            }
        }
        held.1.extend(chunks(&f["ca"]));
        for c in chunks(&f["cr"]) {
            held.1.remove(&c);
        }
        out.push(held.clone());
    }
    out
}

/// The game at every frame: the neighbours in force, its complete chunks (the service's) and its
/// loaded ones.
fn game_states(recording: &Recording) -> Vec<(u32, BTreeSet<ChunkPos>, BTreeSet<ChunkPos>)> {
    let (_dir, mut game, inputs) = recording.game().unwrap();
    let of = |g: &world_streaming::game::Game| {
        let s = g.streaming().unwrap();
        (
            s.neighbours(),
            s.complete().into_iter().collect(),
            s.loaded().into_iter().collect(),
        )
    };
    let mut states = vec![of(&game)];
    game.run_observing(&inputs, recording.ticks, |g, _| states.push(of(g)))
        .unwrap();
    states
}

fn has(frames: &[Value], key: &str) -> bool {
    frames.iter().any(|f| f.get(key).is_some())
}

/// At every frame the page's complete chunks are the game's; some frames hold complete and
/// incomplete loaded chunks both; the load of the save needs a correction.
fn check_complete(recording: &Recording) -> Value {
    let data =
        serde_json::to_value(capture(recording, "test", Some(&terrain_height)).unwrap()).unwrap();
    let held = rebuild(&data);
    let states = game_states(recording);
    assert_eq!(held.len(), states.len());
    let mut both = 0;
    for (frame, ((k, page), (want_k, want, loaded))) in held.iter().zip(&states).enumerate() {
        assert_eq!(k, want_k, "frame {frame}: the neighbours");
        assert_eq!(page, want, "frame {frame}: the complete chunks");
        assert!(want.is_subset(loaded), "frame {frame}: complete is loaded");
        if !want.is_empty() && want.len() < loaded.len() {
            both += 1;
        }
    }
    assert!(
        both >= 30,
        "only {both} frames with complete and incomplete chunks"
    );
    data
}

#[test]
fn the_frames_carry_the_complete_chunks_as_the_game_holds_them_with_terrain() {
    let dir = tempfile::tempdir().unwrap();
    let data = check_complete(&recording(dir.path(), true, Some(1), true));
    let frames = data["frames"].as_array().unwrap();
    assert_eq!(
        frames[0]["nb"],
        json!(1),
        "the first frame says the neighbours"
    );
    assert!(frames[1..].iter().all(|f| f.get("nb").is_none()));
    // The load of the save (frame 40) restores chunks without events: corrections.
    assert!(has(&frames[40..=40], "ca") || has(&frames[40..=40], "cr"));
    // Elsewhere the events tell it all.
    for (i, f) in frames.iter().enumerate().filter(|(i, _)| *i != 40) {
        assert!(
            f.get("ca").is_none() && f.get("cr").is_none(),
            "frame {i}: {f}"
        );
    }
}

#[test]
fn the_frames_carry_the_complete_chunks_as_the_game_holds_them_without_terrain() {
    let dir = tempfile::tempdir().unwrap();
    check_complete(&recording(dir.path(), false, Some(1), true));
    check_complete(&recording(dir.path(), false, Some(2), false));
}

#[test]
fn a_run_without_neighbours_carries_no_complete_field_and_the_same_data_as_neighbours_0() {
    for terrain in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let pages: Vec<String> = [None, Some(0)]
            .into_iter()
            .map(|k| {
                let data = capture(
                    &recording(dir.path(), terrain, k, true),
                    "test",
                    Some(&terrain_height),
                )
                .unwrap();
                serde_json::to_string(&data).unwrap()
            })
            .collect();
        assert_eq!(pages[0], pages[1], "terrain {terrain}: absent and 0");
        let data: Value = serde_json::from_str(&pages[0]).unwrap();
        for f in data["frames"].as_array().unwrap() {
            for key in ["nb", "ca", "cr"] {
                assert!(f.get(key).is_none(), "terrain {terrain}: {key} in {f}");
            }
        }
        let names = data["names"].as_array().unwrap();
        assert!(!names.contains(&json!("world.chunk.complete")));
    }
}

// ---- In the browser ----

fn write_page(recording: &Recording, dir: &Path, name: &str) -> PathBuf {
    let replay = dir.join(format!("{name}.replay.json"));
    recording.write(&replay).unwrap();
    let page = dir.join(format!("{name}.html"));
    bin()
        .arg("view")
        .arg(&replay)
        .arg("--out")
        .arg(&page)
        .assert()
        .success();
    page
}

/// The canvas pixels at each `[x, y]` pixel.
fn pixels(page: &mut chromium::Page<'_>, at: &[[i64; 2]]) -> Vec<[u64; 3]> {
    let v = page.eval(&format!(
        "(() => {{ const ctx = document.getElementById('grid').getContext('2d'); \
         return {at:?}.map(([x, y]) => Array.from(ctx.getImageData(x, y, 1, 1).data.slice(0, 3))); }})()"
    ));
    v.as_array()
        .unwrap()
        .iter()
        .map(|p| [0, 1, 2].map(|i| p[i].as_u64().unwrap()))
        .collect()
}

/// The background colour of the legend's swatch in `li`, as `[r, g, b]`.
fn swatch(page: &mut chromium::Page<'_>, li: &str) -> [u64; 3] {
    let v = page.eval(&format!(
        "getComputedStyle(document.querySelector('#{li} .sw')).backgroundColor"
    ));
    let text = v.as_str().unwrap();
    let inner = text
        .strip_prefix("rgb(")
        .and_then(|t| t.strip_suffix(')'))
        .unwrap_or_else(|| panic!("{li}: {text}"));
    let n: Vec<u64> = inner.split(", ").map(|n| n.parse().unwrap()).collect();
    [n[0], n[1], n[2]]
}

/// `hsl(h, s%, l%)` as the browser draws it.
fn hsl(h: f64, s: f64, l: f64) -> [u64; 3] {
    let (s, l) = (s / 100.0, l / 100.0);
    let a = s * l.min(1.0 - l);
    let f = |n: f64| {
        let k = (n + h / 30.0) % 12.0;
        let v = l - a * (k - 3.0).min(9.0 - k).clamp(-1.0, 1.0);
        (v * 255.0).round() as u64
    };
    [f(0.0), f(8.0), f(4.0)]
}

fn near(a: [u64; 3], b: [u64; 3]) -> bool {
    (0..3).all(|i| a[i].abs_diff(b[i]) <= 2)
}

/// What the page must show at a frame, from the game.
struct Snap {
    complete: BTreeSet<ChunkPos>,
    loaded: BTreeSet<ChunkPos>,
    heights: BTreeMap<ChunkPos, f64>,
    /// Entities and foci, in metres.
    markers: Vec<[f64; 2]>,
}

fn snapshots(recording: &Recording, frames: &[u64]) -> BTreeMap<u64, Snap> {
    let (_dir, mut game, inputs) = recording.game().unwrap();
    let mut out = BTreeMap::new();
    let mut frame = 0;
    let mut take = |g: &world_streaming::game::Game, frame: u64| {
        if !frames.contains(&frame) {
            return;
        }
        let s = g.streaming().unwrap();
        let loaded: BTreeSet<ChunkPos> = s.loaded().into_iter().collect();
        let heights = loaded
            .iter()
            .filter_map(|&c| Some((c, terrain_height(g, c)?)))
            .collect();
        let markers = s
            .foci()
            .into_iter()
            .chain(g.engine().world().iter().map(|e| e.position))
            .map(|p| [p.x, p.z])
            .collect();
        out.insert(
            frame,
            Snap {
                complete: s.complete().into_iter().collect(),
                loaded,
                heights,
                markers,
            },
        );
    };
    take(&game, 0);
    game.run_observing(&inputs, recording.ticks, |g, _| {
        frame += 1;
        take(g, frame);
    })
    .unwrap();
    out
}

/// The heights' scale of the page (the whole run's).
fn height_range(recording: &Recording) -> (f64, f64) {
    let data =
        serde_json::to_value(capture(recording, "t", Some(&terrain_height)).unwrap()).unwrap();
    let mut range = (f64::INFINITY, f64::NEG_INFINITY);
    for f in data["frames"].as_array().unwrap() {
        for v in f["h"].as_array().into_iter().flatten().skip(2).step_by(3) {
            let v = v.as_f64().unwrap();
            range = (range.0.min(v), range.1.max(v));
        }
    }
    range
}

/// The expected colour of a loaded chunk: complete or not, with its height or none.
fn expected_rgb(complete: bool, height: Option<f64>, range: (f64, f64)) -> [u64; 3] {
    let t = |h: f64| {
        if range.1 > range.0 {
            (h - range.0) / (range.1 - range.0)
        } else {
            0.5
        }
    };
    let l = |v: f64| -> f64 { format!("{v:.1}").parse().unwrap() };
    match (complete, height) {
        (true, None) => LOADED_RGB,
        (false, None) => INCOMPLETE_RGB,
        (true, Some(h)) => hsl(128.0, 45.0, l(20.0 + 45.0 * t(h))),
        (false, Some(h)) => hsl(210.0, 10.0, l(28.0 + 40.0 * t(h))),
    }
}

/// The page at `frame` against the game: the counts drawn, the caption and each loaded chunk's
/// top-left pixel (those under a marker skipped). Answers the pixels checked, [complete,
/// incomplete], and one sampled pixel of each. `meshing`: the run has `neighbours` > 0 (else
/// every loaded chunk is drawn as loaded, and nothing is counted or captioned as complete).
fn check_at(
    page: &mut chromium::Page<'_>,
    snap: &Snap,
    frame: u64,
    range: (f64, f64),
    meshing: bool,
) -> ([usize; 2], [Option<[u64; 3]>; 2]) {
    page.slide_to(frame);
    let d = page.eval("Object.assign({}, document.getElementById('grid').dataset)");
    let caption = page.eval("document.getElementById('counts').textContent");
    let caption = caption.as_str().unwrap();
    if meshing {
        let incomplete = snap.loaded.len() - snap.complete.len();
        assert_eq!(
            d["completeDrawn"],
            json!(snap.complete.len().to_string()),
            "frame {frame}"
        );
        assert_eq!(
            d["incompleteDrawn"],
            json!(incomplete.to_string()),
            "frame {frame}"
        );
        let want = format!(
            "loaded {} (complete {}) · pending ",
            snap.loaded.len(),
            snap.complete.len()
        );
        assert!(caption.starts_with(&want), "{caption} vs {want}");
    } else {
        assert!(d.get("completeDrawn").is_none(), "{d}");
        let want = format!("loaded {} · pending ", snap.loaded.len());
        assert!(caption.starts_with(&want), "{caption} vs {want}");
    }
    let n = |k: &str| d[k].as_str().unwrap().parse::<f64>().unwrap();
    let (cell, ox, oz) = (n("cell") as i64, n("ox") as i64, n("oz") as i64);
    let origin = [n("originX") as i64, n("originZ") as i64];
    let gap = i64::from(cell >= 6);
    let mark = ((cell as f64 * 0.3).clamp(3.0, 10.0) + 3.0).ceil() as i64;
    let size = 32.0;
    let marker_px: Vec<[i64; 2]> = snap
        .markers
        .iter()
        .map(|m| {
            [
                ox + ((m[0] / size - origin[0] as f64) * cell as f64) as i64,
                oz + ((m[1] / size - origin[1] as f64) * cell as f64) as i64,
            ]
        })
        .collect();
    let mut at = Vec::new();
    let mut which = Vec::new();
    for &c in &snap.loaded {
        let p = [
            ox + (c.x - origin[0]) * cell + gap,
            oz + (c.z - origin[1]) * cell + gap,
        ];
        if marker_px
            .iter()
            .any(|m| (m[0] - p[0]).abs() <= mark && (m[1] - p[1]).abs() <= mark)
        {
            continue;
        }
        at.push(p);
        which.push(c);
    }
    let mut counts = [0, 0];
    let mut seen = [None, None];
    for (c, rgb) in which.iter().zip(pixels(page, &at)) {
        let complete = !meshing || snap.complete.contains(c);
        let want = expected_rgb(complete, snap.heights.get(c).copied(), range);
        assert!(
            near(rgb, want),
            "frame {frame}: chunk {c} (complete {complete}) drawn {rgb:?}, expected {want:?}"
        );
        let i = usize::from(!complete);
        counts[i] += 1;
        seen[i].get_or_insert(rgb);
    }
    (counts, seen)
}

const FRAMES: [u64; 8] = [3, 6, 10, 14, 21, 33, 47, 60];

#[test]
fn complete_and_incomplete_chunks_are_drawn_apart_in_chromium() {
    let Some(mut browser) = chromium::chromium() else {
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    // Without terrain: flat colours, the legend's.
    let flat = recording(scratch.path(), false, Some(1), false);
    let file = write_page(&flat, scratch.path(), "flat");
    let mut page = browser.page(1280, 1000);
    page.open(&file, READY);
    for (id, hidden) in [
        ("legend-loaded", true),
        ("legend-complete", false),
        ("legend-incomplete", false),
    ] {
        let expr = format!("document.getElementById('{id}').hidden");
        assert_eq!(page.eval(&expr), json!(hidden), "{id}");
    }
    assert_eq!(
        page.eval("document.getElementById('legend-k').textContent"),
        json!("1 ring")
    );
    let legend = [
        swatch(&mut page, "legend-complete"),
        swatch(&mut page, "legend-incomplete"),
    ];
    assert_eq!(legend, [LOADED_RGB, INCOMPLETE_RGB]);
    let snaps = snapshots(&flat, &FRAMES);
    let mut total = [0, 0];
    for frame in FRAMES {
        let (counts, seen) = check_at(&mut page, &snaps[&frame], frame, (0.0, 0.0), true);
        for i in 0..2 {
            total[i] += counts[i];
            if let Some(rgb) = seen[i] {
                assert_eq!(rgb, legend[i], "frame {frame}: the legend's colour");
            }
        }
    }
    eprintln!("flat: pixels checked [complete, not complete]: {total:?}");
    assert!(total.iter().all(|&n| n >= 50), "{total:?}");
    assert_ne!(legend[0], legend[1]);

    // The chunk under the pointer: complete or not.
    let point = |page: &mut chromium::Page<'_>, x: f64, z: f64| {
        page.eval(&format!(
            "(() => {{ const c = document.getElementById('grid'); const d = c.dataset; \
             const r = c.getBoundingClientRect(); const cell = Number(d.cell); \
             const px = Number(d.ox) + ({x} - Number(d.originX)) * cell; \
             const pz = Number(d.oz) + ({z} - Number(d.originZ)) * cell; \
             c.dispatchEvent(new MouseEvent('mousemove', {{ clientX: r.left + px * r.width / c.width, \
               clientY: r.top + pz * r.height / c.height, bubbles: true }})); }})()"
        ));
        page.eval("Array.from(document.querySelectorAll('#detail dt, #detail dd')).map((d) => d.textContent)")
    };
    page.slide_to(60);
    let snap = &snaps[&60];
    let outer = *snap.loaded.difference(&snap.complete).next().unwrap();
    let rows = point(&mut page, outer.x as f64 + 0.25, outer.z as f64 + 0.25);
    let where_ = format!("x {}, z {}", outer.x, outer.z);
    assert_eq!(
        rows,
        json!(["chunk", where_, "complete", "no (loaded, not complete)"])
    );
    let inner = *snap.complete.iter().next().unwrap();
    let rows = point(&mut page, inner.x as f64 + 0.25, inner.z as f64 + 0.25);
    let where_ = format!("x {}, z {}", inner.x, inner.z);
    assert_eq!(rows, json!(["chunk", where_, "complete", "yes"]));

    // With terrain: shaded by height, green when complete, grey when not.
    let shaded = recording(scratch.path(), true, Some(1), false);
    let range = height_range(&shaded);
    let file = write_page(&shaded, scratch.path(), "complete");
    page.open(&file, READY);
    let snaps = snapshots(&shaded, &FRAMES);
    let mut total = [0, 0];
    for frame in FRAMES {
        let (counts, _) = check_at(&mut page, &snaps[&frame], frame, range, true);
        total[0] += counts[0];
        total[1] += counts[1];
    }
    eprintln!("terrain: pixels checked [complete, not complete]: {total:?}");
    assert!(total.iter().all(|&n| n >= 50), "{total:?}");
    // The screenshot: mid-drive, the pointer on a chunk not complete at the leading edge.
    page.slide_to(33);
    let snap = &snaps[&33];
    let edge = snap
        .loaded
        .difference(&snap.complete)
        .max_by_key(|c| (c.x, -c.z.abs()))
        .copied()
        .unwrap();
    point(&mut page, edge.x as f64 + 0.5, edge.z as f64 + 0.5);
    std::fs::write(
        chromium::target_dir().join("view-complete.png"),
        page.screenshot(),
    )
    .unwrap();

    // neighbours 0: the legend as before, every loaded chunk drawn as loaded.
    let zero = recording(scratch.path(), false, Some(0), false);
    let file = write_page(&zero, scratch.path(), "zero");
    page.open(&file, READY);
    for (id, hidden) in [
        ("legend-loaded", false),
        ("legend-complete", true),
        ("legend-incomplete", true),
    ] {
        let expr = format!("document.getElementById('{id}').hidden");
        assert_eq!(page.eval(&expr), json!(hidden), "{id}");
    }
    let snaps = snapshots(&zero, &FRAMES);
    let mut total = [0, 0];
    for frame in FRAMES {
        let (counts, _) = check_at(&mut page, &snaps[&frame], frame, (0.0, 0.0), false);
        total[0] += counts[0];
        total[1] += counts[1];
    }
    assert!(total[0] >= 50 && total[1] == 0, "{total:?}");
}
