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

use std::collections::BTreeSet;
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
fn made_page(dir: &Path) -> (PathBuf, Vec<BTreeSet<Section>>) {
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

/// `run --map -` of a flat run: the demo's map of the grid after the last tick, every loaded chunk
/// `#` (no terrain here), the focus `A` on its chunk, no row in the heading.
#[test]
fn run_map_of_a_flat_run_is_the_demos_map() {
    let scratch = tempfile::tempdir().unwrap();
    let scene = json!({
        "kits": common::kits(json!({"chunkSize": 32, "radius": 1})),
        "entities": [{"id": "hero", "tags": ["player"], "position": {"x": 16, "z": 16}}]
    });
    let path = scratch.path().join("flat.json");
    std::fs::write(&path, scene.to_string()).unwrap();
    let out = common::bin()
        .args(["run", "--quiet", "--ticks", "5", "--map", "-"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("  map at tick 5:\n"), "{text}");
    let rows: Vec<&str> = text
        .lines()
        .skip(1)
        .take_while(|l| !l.contains("foci"))
        .map(str::trim)
        .collect();
    // Radius 1 + 2 around the focus: 7 × 7 cells, the 3 × 3 square loaded, the focus at its middle.
    assert_eq!(rows.len(), 7, "{text}");
    assert_eq!(rows[2], "..###..", "{text}");
    assert_eq!(rows[3], "..#A#..", "{text}");
    assert_eq!(rows[4], "..###..", "{text}");
}

// ---- A real vertical run ----

/// A flight over flat ground with `vertical` {radius 1, height 16}, radius 2, a disc: the player
/// stands, climbs three rows, flies east and dives below the ground, 4 loads a tick; with
/// `terrain`, `world.terrain` builds the columns.
fn flight(dir: &Path, terrain: bool) -> Recording {
    let mut kits = common::kits(json!({
        "chunkSize": 32, "radius": 2, "shape": "disc", "budgetMs": 4,
        "vertical": {"radius": 1, "height": 16}
    }));
    if terrain {
        kits.as_array_mut()
            .unwrap()
            .push(json!({"id": "world.terrain", "config": {"seed": 7, "workers": "inline"}}));
    }
    let scene = json!({
        "kits": kits,
        "entities": [{"id": "bird", "tags": ["player"], "position": {"x": 16, "y": 8, "z": 16}}]
    });
    let path = dir.join(if terrain {
        "flight-terrain.json"
    } else {
        "flight.json"
    });
    std::fs::write(&path, scene.to_string()).unwrap();
    let mut lines = Vec::new();
    for (tick, x, y) in [
        (12, 16.0, 24.0),
        (16, 16.0, 40.0),
        (20, 16.0, 56.0),
        (26, 48.0, 56.0),
        (30, 80.0, 56.0),
        (34, 112.0, 40.0),
        (38, 112.0, 8.0),
        (42, 112.0, -24.0),
    ] {
        lines.push(json!({"tick": tick, "do": "move", "entity": "bird", "to": {"x": x, "y": y, "z": 16.0}}));
    }
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(dir.join("flight.inputs.jsonl"), text).unwrap();
    Recording::record(&path, &common::inputs(&lines), 50).unwrap()
}

type Section = (i64, i64, i64);

/// What the page holds at every frame, rebuilt from the data as `view.js` does: `vt`, then the
/// tick's section events, then `la`, `lr`, `pa`, `pr` (triples while `vertical` is in force).
fn rebuild(data: &Value) -> Vec<(BTreeSet<Section>, BTreeSet<Section>)> {
    let names: Vec<&str> = data["names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    let mut vertical = false;
    let (mut loaded, mut pending) = (BTreeSet::new(), BTreeSet::new());
    let mut out = Vec::new();
    let list = |f: &Value, k: &str, v: bool| -> Vec<Section> {
        let n: Vec<i64> = f[k]
            .as_array()
            .map(|a| a.iter().map(|n| n.as_i64().unwrap()).collect())
            .unwrap_or_default();
        if v {
            n.chunks(3).map(|c| (c[0], c[1], c[2])).collect()
        } else {
            n.chunks(2).map(|c| (c[0], 0, c[1])).collect()
        }
    };
    for f in data["frames"].as_array().unwrap() {
        if let Some(vt) = f.get("vt") {
            vertical = !vt.is_null();
        }
        for e in f["e"].as_array().into_iter().flatten() {
            let e = e.as_array().unwrap();
            if e.len() != 2 || !e[1].is_object() || e[1].get("y").is_none() {
                continue;
            }
            let c = (
                e[1]["x"].as_i64().unwrap(),
                e[1]["y"].as_i64().unwrap(),
                e[1]["z"].as_i64().unwrap(),
            );
            match names[e[0].as_u64().unwrap() as usize] {
                "world.chunk.loaded" => {
                    loaded.insert(c);
                    pending.remove(&c);
                }
                "world.chunk.unloaded" => {
                    loaded.remove(&c);
                }
                _ => {}
            }
        }
        loaded.extend(list(f, "la", vertical));
        for c in list(f, "lr", vertical) {
            loaded.remove(&c);
        }
        pending.extend(list(f, "pa", vertical));
        for c in list(f, "pr", vertical) {
            pending.remove(&c);
        }
        out.push((loaded.clone(), pending.clone()));
    }
    out
}

/// The game at every frame: its loaded and pending sections, its focus.
struct GameAt {
    loaded: BTreeSet<Section>,
    pending: BTreeSet<Section>,
    focus: [f64; 3],
}

fn game_states(recording: &Recording) -> Vec<GameAt> {
    let (_dir, mut game, inputs) = recording.game().unwrap();
    let of = |g: &world_streaming::game::Game| {
        let s = g.streaming().unwrap();
        let set = |l: Vec<ChunkPos>| l.into_iter().map(|c| (c.x, c.y, c.z)).collect();
        // No focus before tick 1: the bird's start.
        let focus = s
            .foci()
            .first()
            .map_or([16.0, 8.0, 16.0], |f| [f.x, f.y, f.z]);
        GameAt {
            loaded: set(s.loaded()),
            pending: set(s.pending()),
            focus,
        }
    };
    let mut states = vec![of(&game)];
    game.run_observing(&inputs, recording.ticks, |g, _| states.push(of(g)))
        .unwrap();
    states
}

/// The heights per column, rebuilt as the page does (`world.column.unloaded` forgets one, `h`
/// sets it), are at every frame the terrain's height of every loaded column that has one, and
/// none of another.
fn check_column_heights(recording: &Recording, data: &Value) {
    let names: Vec<&str> = data["names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    let mut page: std::collections::BTreeMap<(i64, i64), f64> = Default::default();
    let mut held = Vec::new();
    for f in data["frames"].as_array().unwrap() {
        for e in f["e"].as_array().into_iter().flatten() {
            if e.as_array().unwrap().len() == 3
                && names[e[0].as_u64().unwrap() as usize] == "world.column.unloaded"
            {
                page.remove(&(e[1].as_i64().unwrap(), e[2].as_i64().unwrap()));
            }
        }
        let h: Vec<f64> = f["h"]
            .as_array()
            .map(|a| a.iter().map(|v| v.as_f64().unwrap()).collect())
            .unwrap_or_default();
        for c in h.chunks(3) {
            page.insert((c[0] as i64, c[1] as i64), c[2]);
        }
        held.push(page.clone());
    }
    let (_dir, mut game, inputs) = recording.game().unwrap();
    let of = |g: &world_streaming::game::Game| -> std::collections::BTreeMap<(i64, i64), f64> {
        let s = g.streaming().unwrap();
        s.columns()
            .into_iter()
            .filter_map(|c| Some(((c.x, c.z), world_streaming::view::terrain_height(g, c)?)))
            .collect()
    };
    let mut states = vec![of(&game)];
    game.run_observing(&inputs, recording.ticks, |g, _| states.push(of(g)))
        .unwrap();
    assert_eq!(held.len(), states.len());
    let mut seen = 0;
    for (i, (page, want)) in held.iter().zip(&states).enumerate() {
        assert_eq!(page, want, "frame {i}: the heights per column");
        seen += want.len();
    }
    assert!(seen >= 200, "{seen}");
}

#[test]
fn the_frames_of_a_vertical_run_carry_its_sections_as_the_game_holds_them() {
    let dir = tempfile::tempdir().unwrap();
    for terrain in [false, true] {
        let recording = flight(dir.path(), terrain);
        let data = serde_json::to_value(
            capture(
                &recording,
                "t",
                Some(&world_streaming::view::terrain_height),
            )
            .unwrap(),
        )
        .unwrap();
        let frames = data["frames"].as_array().unwrap();
        assert_eq!(frames[0]["vt"], json!({"radius": 1, "height": 16}));
        assert!(frames[1..].iter().all(|f| f.get("vt").is_none()));
        let held = rebuild(&data);
        let states = game_states(&recording);
        assert_eq!(held.len(), states.len());
        let mut rows = BTreeSet::new();
        for (i, ((loaded, pending), want)) in held.iter().zip(&states).enumerate() {
            assert_eq!(loaded, &want.loaded, "terrain {terrain}, frame {i}: loaded");
            assert_eq!(
                pending, &want.pending,
                "terrain {terrain}, frame {i}: pending"
            );
            rows.extend(loaded.iter().map(|s| s.1));
        }
        // The flight loads rows from below the ground to well above it.
        assert!(rows.len() >= 6, "rows {rows:?}");
        // Section events only; no correction needed (every change is an event).
        for (i, f) in frames.iter().enumerate().skip(1) {
            assert!(
                f.get("la").is_none() && f.get("lr").is_none(),
                "frame {i}: {f}"
            );
        }
        let text = data.to_string();
        assert!(
            text.contains(r#"{"x":0,"y":0,"z":0}"#),
            "section events as the log writes them"
        );
        // Foci in metres as [x, y, z].
        let f: Vec<f64> = frames[1]["f"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        assert_eq!(f, [16.0, 8.0, 16.0]);
        if terrain {
            check_column_heights(&recording, &data);
        }
    }
}

fn write_page(recording: &Recording, dir: &Path, name: &str) -> PathBuf {
    let replay = dir.join(format!("{name}.replay.json"));
    recording.write(&replay).unwrap();
    let page = dir.join(format!("{name}.html"));
    common::bin()
        .arg("view")
        .arg(&replay)
        .arg("--out")
        .arg(&page)
        .assert()
        .success();
    page
}

const FLIGHT_FRAMES: [u64; 10] = [2, 10, 14, 18, 22, 28, 33, 38, 44, 50];

#[test]
fn a_vertical_runs_page_shows_the_focus_row_and_its_column_in_chromium() {
    let Some(mut browser) = chromium::chromium() else {
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let recording = flight(scratch.path(), false);
    let states = game_states(&recording);
    let file = write_page(&recording, scratch.path(), "flight");
    let mut page = browser.page(1280, 1000);
    page.open(&file, READY);
    let mut checked = [0usize; 3];
    let mut rows_seen = BTreeSet::new();
    for frame in FLIGHT_FRAMES {
        page.slide_to(frame);
        let want = &states[frame as usize];
        let row = (want.focus[1] / 16.0).floor() as i64;
        rows_seen.insert(row);
        let d = dataset(&mut page, "grid");
        assert_eq!(
            (num(&d, "row"), num(&d, "focusRow")),
            (row, row),
            "frame {frame}"
        );
        assert_eq!(num(&d, "sectionsLoaded"), want.loaded.len() as i64);
        let in_row = |set: &BTreeSet<Section>| -> Vec<(i64, i64)> {
            set.iter()
                .filter(|s| s.1 == row)
                .map(|s| (s.0, s.2))
                .collect()
        };
        let (loaded, pending) = (in_row(&want.loaded), in_row(&want.pending));
        assert_eq!(num(&d, "loadedDrawn"), loaded.len() as i64, "frame {frame}");
        assert_eq!(
            num(&d, "pendingDrawn"),
            pending.len() as i64,
            "frame {frame}"
        );
        // Every cell of the slice's columns: loaded, pending or empty at this row (the focus's
        // cell, under its marker, skipped).
        let fc = (
            (want.focus[0] / 32.0).floor() as i64,
            (want.focus[2] / 32.0).floor() as i64,
        );
        let columns: BTreeSet<(i64, i64)> = want
            .loaded
            .iter()
            .chain(&want.pending)
            .map(|s| (s.0, s.2))
            .collect();
        let mut at = Vec::new();
        let mut expect = Vec::new();
        for &(x, z) in columns.iter().filter(|&&c| c != fc) {
            at.push(grid_px(&d, x, z));
            let kind = if loaded.contains(&(x, z)) {
                0
            } else if pending.contains(&(x, z)) {
                1
            } else {
                2
            };
            checked[kind] += 1;
            expect.push([LOADED_RGB, PENDING_RGB, EMPTY_RGB][kind]);
        }
        for ((p, g), w) in at.iter().zip(pixels(&mut page, "grid", &at)).zip(&expect) {
            assert_eq!(&g, w, "frame {frame} row {row}: pixel {p:?}");
        }
        // The side view: the focus's column until the pointer is on the grid.
        let side = dataset(&mut page, "side");
        let column: Vec<i64> = want
            .loaded
            .iter()
            .filter(|s| (s.0, s.2) == fc)
            .map(|s| s.1)
            .collect();
        assert_eq!(
            (num(&side, "x"), num(&side, "z"), num(&side, "loaded")),
            (fc.0, fc.1, column.len() as i64),
            "frame {frame}"
        );
        for y in &column {
            let p = side_px(&side, fc.0, *y);
            assert_eq!(
                pixels(&mut page, "side", &[p])[0],
                LOADED_RGB,
                "frame {frame}: side row {y}"
            );
        }
    }
    eprintln!("slice cells checked [loaded, pending, empty]: {checked:?}; rows {rows_seen:?}");
    assert!(
        checked.iter().all(|&n| n >= 5) && checked[0] >= 100,
        "{checked:?}"
    );
    assert!(rows_seen.len() >= 4, "{rows_seen:?}");
    // A row of the reader's: the row above the focus's at the end (dive), then back.
    page.slide_to(50);
    let top = states[50].loaded.iter().map(|s| s.1).max().unwrap();
    set_row(&mut page, top);
    let d = dataset(&mut page, "grid");
    let n = states[50].loaded.iter().filter(|s| s.1 == top).count();
    assert_eq!((num(&d, "row"), num(&d, "loadedDrawn")), (top, n as i64));
    page.click("row-follow");
    // The screenshot: mid-climb, the pointer on a column of the disc's edge.
    page.slide_to(22);
    let want = &states[22];
    let edge = want.loaded.iter().map(|s| (s.0, s.2)).max().unwrap();
    point(&mut page, edge.0, edge.1);
    std::fs::write(
        chromium::target_dir().join("view-vertical.png"),
        page.screenshot(),
    )
    .unwrap();
}

/// `run --map -` of the flight: the slice at the first focus's section row, as the page opens on
/// (the heading names the row), every cell of it the service's section at that row.
#[test]
fn run_map_of_a_vertical_run_shows_the_focus_row() {
    let dir = tempfile::tempdir().unwrap();
    let recording = flight(dir.path(), false);
    let states = game_states(&recording);
    for tick in [10u64, 22, 44] {
        let out = common::bin()
            .args([
                "run",
                "--quiet",
                "--map",
                "-",
                "--ticks",
                &tick.to_string(),
                "--inputs",
            ])
            .arg(dir.path().join("flight.inputs.jsonl"))
            .arg(dir.path().join("flight.json"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let text = String::from_utf8(out.stdout).unwrap();
        let want = &states[tick as usize];
        let row = (want.focus[1] / 16.0).floor() as i64;
        let (fx, fz) = (
            (want.focus[0] / 32.0).floor() as i64,
            (want.focus[2] / 32.0).floor() as i64,
        );
        let heading = format!("  map at tick {tick}, section row y = {row} (the first focus's):");
        assert_eq!(text.lines().next(), Some(heading.as_str()), "{text}");
        // Radius 2 + 2 around the focus's column, z from the top down.
        let lines: Vec<&str> = text.lines().skip(1).take(9).map(str::trim).collect();
        let mut loaded_cells = 0;
        for (i, line) in lines.iter().enumerate() {
            let z = fz + 4 - i as i64;
            assert_eq!(line.chars().count(), 9, "{text}");
            for (j, ch) in line.chars().enumerate() {
                let x = fx - 4 + j as i64;
                let want_ch = if (x, z) == (fx, fz) {
                    'A'
                } else if want.loaded.contains(&(x, row, z)) {
                    loaded_cells += 1;
                    '#'
                } else if want.pending.contains(&(x, row, z)) {
                    '+'
                } else {
                    '.'
                };
                assert_eq!(
                    ch, want_ch,
                    "tick {tick}: cell ({x}, {row}, {z}) of\n{text}"
                );
            }
        }
        assert!(loaded_cells >= 5, "tick {tick}: {text}");
    }
}
