//! The replay viewer, the live page and the CLI's text map of a vertical world
//! (docs/viewer.md#vertical-worlds): with `vertical` in force the frames say so (`vt`), carry the
//! sections as triples and the section events as `{x, y, z}`; the page draws a slice at the first
//! focus's section row by default, the row control (a number, "the focus's row", PageUp /
//! PageDown) changes the row, and the side view shows the (x, y) plane through the column under
//! the pointer, its sections by row. Checked in a real headless Chromium, pixel by pixel, on a
//! page of frames made here (every case at once: rows, a pending section, a column with a gap) and
//! on a page of a real vertical run checked tick by tick against the streaming service. A
//! screenshot goes to `target/view-vertical.png`. A flat run's frames carry none of it (the other
//! viewer tests hold them byte for byte).

#[path = "common/chromium.rs"]
mod chromium;

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use world_streaming::files::inputs::Inputs;
use world_streaming::grid::ChunkPos;
use world_streaming::replay::Recording;
use world_streaming::view::{capture, render, Frame, ViewData};

const READY: &str = "document.body && document.body.dataset.ready === '1'";
/// view.css `--loaded`, `--pending`, `--empty`.
const LOADED_RGB: [u64; 3] = [0x3f, 0xa3, 0x4d];
const PENDING_RGB: [u64; 3] = [0xf2, 0xd1, 0x6b];
const EMPTY_RGB: [u64; 3] = [0x26, 0x2b, 0x31];

/// A small flat run: its page's header and drawings, to put frames of our own in.
fn flat_recording(dir: &Path) -> Recording {
    let scene = json!({
        "kits": common::kits(json!({"chunkSize": 32, "radius": 1})),
        "entities": [{"id": "hero", "tags": ["player"], "position": {"x": 16, "z": 16}}]
    });
    let path = dir.join("flat.json");
    std::fs::write(&path, scene.to_string()).unwrap();
    Recording::record(&path, &Inputs::default(), 2).unwrap()
}

fn sections(list: &[(i64, i64, i64)]) -> Vec<i64> {
    list.iter().flat_map(|&(x, y, z)| [x, y, z]).collect()
}

/// The page of frames made here: chunkSize 32, `vertical` {radius 1, height 16}.
/// Frame 0: sections in columns x, z in -1..=1 at rows -1, 0, 1, but column (1, 1) has no row 0
/// and column (-1, -1)'s row 1 is pending; column (2, 0) holds rows 1 and 2 only; the focus at
/// (16, 8, 16) (row 0). Frame 1: (1, 0, 1) loads, the focus climbs to y 20 (row 1). Frame 2:
/// (2, 2, 0) is released.
fn made_page(dir: &Path) -> (PathBuf, Vec<BTreeSet<(i64, i64, i64)>>) {
    let mut data: ViewData = capture(&flat_recording(dir), "made", None).unwrap();
    let mut loaded = BTreeSet::new();
    let mut pending = Vec::new();
    for x in -1..=1 {
        for z in -1..=1 {
            for y in -1..=1 {
                if (x, z, y) == (1, 1, 0) {
                    continue;
                }
                if (x, z, y) == (-1, -1, 1) {
                    pending.push((x, y, z));
                    continue;
                }
                loaded.insert((x, y, z));
            }
        }
    }
    loaded.insert((2, 1, 0));
    loaded.insert((2, 2, 0));
    let mut f0: Frame = serde_json::from_value(json!({
        "vt": {"radius": 1, "height": 16},
        "f": [16.0, 8.0, 16.0],
    }))
    .unwrap();
    f0.loaded_add = sections(&loaded.iter().copied().collect::<Vec<_>>());
    f0.pending_add = sections(&pending);
    let f1: Frame = serde_json::from_value(json!({
        "e": [[0, {"x": 1, "y": 0, "z": 1}]],
        "f": [16.0, 20.0, 16.0],
    }))
    .unwrap();
    let f2: Frame = serde_json::from_value(json!({
        "e": [[1, {"x": 2, "y": 2, "z": 0}]],
    }))
    .unwrap();
    let mut states = vec![loaded.clone()];
    loaded.insert((1, 0, 1));
    states.push(loaded.clone());
    loaded.remove(&(2, 2, 0));
    states.push(loaded);
    data.names = vec!["world.chunk.loaded".into(), "world.chunk.unloaded".into()];
    data.ids = Vec::new();
    data.frames = vec![f0, f1, f2];
    data.ticks = 2;
    data.start = 0;
    let page = dir.join("made.html");
    std::fs::write(&page, render(&data)).unwrap();
    (page, states)
}

/// The canvas `id`'s pixels at each `[x, y]` pixel.
fn pixels(page: &mut chromium::Page<'_>, id: &str, at: &[[i64; 2]]) -> Vec<[u64; 3]> {
    let v = page.eval(&format!(
        "(() => {{ const ctx = document.getElementById('{id}').getContext('2d'); \
         return {at:?}.map(([x, y]) => Array.from(ctx.getImageData(x, y, 1, 1).data.slice(0, 3))); }})()"
    ));
    v.as_array()
        .unwrap()
        .iter()
        .map(|p| [0, 1, 2].map(|i| p[i].as_u64().unwrap()))
        .collect()
}

fn dataset(page: &mut chromium::Page<'_>, id: &str) -> Value {
    page.eval(&format!(
        "Object.assign({{}}, document.getElementById('{id}').dataset)"
    ))
}

fn num(d: &Value, k: &str) -> i64 {
    d[k].as_str()
        .unwrap_or_else(|| panic!("{k} in {d}"))
        .parse::<f64>()
        .unwrap() as i64
}

/// The grid's top-left pixel inside chunk (x, z), from the drawing's data attributes.
fn grid_px(d: &Value, x: i64, z: i64) -> [i64; 2] {
    let cell = num(d, "cell");
    let gap = i64::from(cell >= 6);
    [
        num(d, "ox") + (x - num(d, "originX")) * cell + gap + 1,
        num(d, "oz") + (z - num(d, "originZ")) * cell + gap + 1,
    ]
}

/// The side view's top-left pixel inside section column x at row y.
fn side_px(d: &Value, x: i64, y: i64) -> [i64; 2] {
    let cell = num(d, "cell");
    let gap = i64::from(cell >= 6);
    [
        num(d, "ox") + (x - num(d, "originX")) * cell + gap + 2,
        num(d, "oy") + (num(d, "maxY") - y) * cell + gap + 2,
    ]
}

/// Moves the pointer over the middle of chunk (x, z) of the grid.
fn point(page: &mut chromium::Page<'_>, x: i64, z: i64) -> Value {
    page.eval(&format!(
        "(() => {{ const c = document.getElementById('grid'); const d = c.dataset; \
         const r = c.getBoundingClientRect(); const cell = Number(d.cell); \
         const px = Number(d.ox) + ({x} + 0.5 - Number(d.originX)) * cell; \
         const pz = Number(d.oz) + ({z} + 0.5 - Number(d.originZ)) * cell; \
         c.dispatchEvent(new MouseEvent('mousemove', {{ clientX: r.left + px * r.width / c.width, \
           clientY: r.top + pz * r.height / c.height, bubbles: true }})); }})()"
    ));
    page.eval(
        "Array.from(document.querySelectorAll('#detail dt, #detail dd')).map((d) => d.textContent)",
    )
}

fn set_row(page: &mut chromium::Page<'_>, row: i64) {
    page.eval(&format!(
        "(() => {{ const i = document.getElementById('row'); i.value = '{row}'; \
         i.dispatchEvent(new Event('change')); }})()"
    ));
}

fn key(page: &mut chromium::Page<'_>, key: &str) {
    page.eval(&format!(
        "document.dispatchEvent(new KeyboardEvent('keydown', {{ key: '{key}', bubbles: true }}))"
    ));
}

/// The slice at `row` against the sections: every cell of the drawn columns -2..=3 × -2..=2 is
/// loaded green, pending yellow or empty as the sections at that row say (the focus's cell,
/// under its marker, skipped). Answers how many cells were loaded.
fn check_slice(
    page: &mut chromium::Page<'_>,
    loaded: &BTreeSet<(i64, i64, i64)>,
    pending: &BTreeSet<(i64, i64, i64)>,
    row: i64,
    skip: (i64, i64),
) -> usize {
    let d = dataset(page, "grid");
    assert_eq!(num(&d, "row"), row, "{d}");
    let mut at = Vec::new();
    let mut want = Vec::new();
    let n = loaded.iter().filter(|s| s.1 == row).count();
    for x in -1..=2 {
        for z in -1..=1 {
            if (x, z) == skip {
                continue;
            }
            at.push(grid_px(&d, x, z));
            want.push(if loaded.contains(&(x, row, z)) {
                LOADED_RGB
            } else if pending.contains(&(x, row, z)) {
                PENDING_RGB
            } else {
                EMPTY_RGB
            });
        }
    }
    let got = pixels(page, "grid", &at);
    for ((p, g), w) in at.iter().zip(&got).zip(&want) {
        assert_eq!(g, w, "row {row}: pixel {p:?}");
    }
    assert_eq!(num(&d, "loadedDrawn"), n as i64, "row {row}");
    n
}

#[test]
fn the_page_draws_a_slice_at_the_focus_row_a_row_control_and_a_side_view_in_chromium() {
    let Some(mut browser) = chromium::chromium() else {
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let (file, states) = made_page(scratch.path());
    let pending: BTreeSet<(i64, i64, i64)> = [(-1, 1, -1)].into();
    let mut page = browser.page(1280, 1000);
    page.open(&file, READY);
    // The controls and the side view show (a flat page hides them).
    for id in ["row-label", "side-panel"] {
        assert_eq!(
            page.eval(&format!("document.getElementById('{id}').hidden")),
            json!(false),
            "{id}"
        );
    }
    // Frame 0: the focus's row 0, followed.
    let d = dataset(&mut page, "grid");
    assert_eq!(
        (num(&d, "focusRow"), d["rowFollows"].clone()),
        (0, json!("1"))
    );
    assert_eq!(num(&d, "sectionsLoaded"), states[0].len() as i64);
    let set = |i: usize| states[i].iter().map(|&(x, y, z)| (x, y, z)).collect();
    let s0: BTreeSet<(i64, i64, i64)> = set(0);
    assert_eq!(check_slice(&mut page, &s0, &pending, 0, (0, 0)), 8);
    assert_eq!(
        page.eval("document.getElementById('row').value"),
        json!("0")
    );
    let caption = page.eval("document.getElementById('counts').textContent");
    let want = format!(
        "loaded {} sections (row 0: 8) · pending 1 (row 0: 0) · ",
        s0.len()
    );
    assert!(caption.as_str().unwrap().starts_with(&want), "{caption}");
    // The row control: row 1 (the pending section, column (2, 0)), then PageUp to row 2, PageDown
    // back to 1.
    set_row(&mut page, 1);
    assert_eq!(dataset(&mut page, "grid")["rowFollows"], json!("0"));
    assert_eq!(check_slice(&mut page, &s0, &pending, 1, (0, 0)), 9);
    assert_eq!(num(&dataset(&mut page, "grid"), "pendingDrawn"), 1);
    key(&mut page, "PageUp");
    assert_eq!(check_slice(&mut page, &s0, &pending, 2, (0, 0)), 1);
    key(&mut page, "PageDown");
    key(&mut page, "PageDown");
    assert_eq!(check_slice(&mut page, &s0, &pending, 0, (0, 0)), 8);
    set_row(&mut page, -1);
    assert_eq!(check_slice(&mut page, &s0, &pending, -1, (0, 0)), 9);
    // "The focus's row" again: the row follows the focus as it climbs (frame 1: row 1).
    page.click("row-follow");
    assert_eq!(dataset(&mut page, "grid")["rowFollows"], json!("1"));
    assert_eq!(check_slice(&mut page, &s0, &pending, 0, (0, 0)), 8);
    page.slide_to(1);
    let s1: BTreeSet<(i64, i64, i64)> = set(1);
    assert_eq!(num(&dataset(&mut page, "grid"), "focusRow"), 1);
    assert_eq!(check_slice(&mut page, &s1, &pending, 1, (0, 0)), 9);
    assert_eq!(
        page.eval("document.getElementById('events').textContent"),
        json!(r#"world.chunk.loaded {"x":1,"y":0,"z":1}"#)
    );
    // The side view follows the pointer: column (1, 1) now holds rows -1, 0, 1.
    let rows = point(&mut page, 1, 1);
    assert_eq!(
        rows,
        json!([
            "section",
            "x 1, y 1, z 1",
            "state",
            "loaded",
            "column",
            "3 sections loaded (rows -1, 0, 1), 0 pending"
        ])
    );
    let side = dataset(&mut page, "side");
    assert_eq!(
        (num(&side, "x"), num(&side, "z"), num(&side, "loaded")),
        (1, 1, 3)
    );
    assert_eq!(
        page.eval("document.getElementById('side-where').textContent"),
        json!("column x 1, z 1: 3 loaded, 0 pending")
    );
    // The plane z = 1, by row: x -1..=1 loaded at rows -1..=1, x 2 empty, rows 2 and -2 empty.
    let mut at = Vec::new();
    let mut want = Vec::new();
    for x in -1..=2 {
        for y in -2..=2 {
            at.push(side_px(&side, x, y));
            want.push(if s1.contains(&(x, y, 1)) {
                LOADED_RGB
            } else {
                EMPTY_RGB
            });
        }
    }
    for ((p, g), w) in at.iter().zip(pixels(&mut page, "side", &at)).zip(&want) {
        assert_eq!(&g, w, "side view pixel {p:?}");
    }
    // Column (-1, -1): its pending row 1; the plane z = -1.
    point(&mut page, -1, -1);
    let side = dataset(&mut page, "side");
    assert_eq!(
        (
            num(&side, "x"),
            num(&side, "z"),
            num(&side, "loaded"),
            num(&side, "pending")
        ),
        (-1, -1, 2, 1)
    );
    let got = pixels(
        &mut page,
        "side",
        &[
            side_px(&side, -1, 1),
            side_px(&side, -1, 0),
            side_px(&side, 2, 1),
        ],
    );
    assert_eq!(got, [PENDING_RGB, LOADED_RGB, EMPTY_RGB]);
    // Frame 2: (2, 2, 0) released; column (2, 0) keeps row 1.
    page.slide_to(2);
    point(&mut page, 2, 0);
    let side = dataset(&mut page, "side");
    assert_eq!((num(&side, "x"), num(&side, "loaded")), (2, 1));
    let got = pixels(
        &mut page,
        "side",
        &[side_px(&side, 2, 1), side_px(&side, 2, 2)],
    );
    assert_eq!(got, [LOADED_RGB, EMPTY_RGB]);
    std::fs::write(
        chromium::target_dir().join("view-vertical-made.png"),
        page.screenshot(),
    )
    .unwrap();
}

#[test]
fn a_flat_page_shows_no_row_control_and_no_side_view_in_chromium() {
    let Some(mut browser) = chromium::chromium() else {
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let data = capture(&flat_recording(scratch.path()), "flat", None).unwrap();
    let text = serde_json::to_string(&data).unwrap();
    assert!(!text.contains("\"vt\""), "{text}");
    let file = scratch.path().join("flat.html");
    std::fs::write(&file, render(&data)).unwrap();
    let mut page = browser.page(1280, 1000);
    page.open(&file, READY);
    for id in ["row-label", "side-panel"] {
        assert_eq!(
            page.eval(&format!("document.getElementById('{id}').hidden")),
            json!(true),
            "{id}"
        );
    }
    let d = dataset(&mut page, "grid");
    assert!(d.get("row").is_none() && d.get("focusRow").is_none(), "{d}");
    let caption = page.eval("document.getElementById('counts').textContent");
    let caption = caption.as_str().unwrap();
    assert!(
        caption.starts_with("loaded ") && !caption.contains("sections") && !caption.contains("row"),
        "{caption}"
    );
}

#[allow(dead_code)]
fn unused(_: BTreeMap<ChunkPos, ()>) {}
