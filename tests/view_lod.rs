//! The replay viewer with levels of detail (docs/reference/engines.md#the-viewer): the frames carry
//! the loaded LOD blocks per level, whether each is ready, and (with `world.terrain`) its mean
//! height, checked tick by tick against the game's own state (`state().lod`, the streaming
//! service's readiness, the cells of each block read from the terrain service and averaged here) on
//! a drive with `lod [{2,24},{8,96}]`, an edit under a block and a save loaded back, with and
//! without terrain; a run without `lod` carries none of it; and in a real headless Chromium the
//! page draws the blocks under the chunks, coarser levels under finer ones, shaded by level and
//! height, a block not built hatched and outlined, the counts per level, and the block under the
//! pointer as text. A screenshot goes to `target/view-lod.png`.

#[path = "common/chromium.rs"]
mod chromium;

mod common;
use common::bin;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use world_streaming::files::inputs::Inputs;
use world_streaming::game::Game;
use world_streaming::grid::ChunkPos;
use world_streaming::kits::terrain::{TerrainService, TERRAIN};
use world_streaming::replay::Recording;
use world_streaming::view::{capture, terrain_height};

const HOSTILE_ID: &str = "<img src=x onerror=\"document.title='owned'\">";
const READY: &str = "document.body && document.body.dataset.ready === '1'";
/// The hues of the levels (view.css `--lod-1` …).
const HUES: [f64; 4] = [195.0, 275.0, 330.0, 55.0];
const EMPTY_RGB: [u64; 3] = [0x26, 0x2b, 0x31];
const PENDING_RGB: [u64; 3] = [0xf2, 0xd1, 0x6b];
/// The ticks the drive runs (the example's rings fill until 60, then it drives east).
const TICKS: u64 = 100;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The LOD example (`examples/scenes/lod.json`: radius 8, `lod [{2,24},{8,96}]`) driven as
/// its inputs say to tick 100, with an edit at tick 40 of the cell of chunk (8, 0) that the
/// level-1 block (4, 0) samples (its cell (0, 0)), a save at tick 70 loaded back at tick 90,
/// and a crate whose id is HTML standing out in the rings. `terrain`: keep `world.terrain`;
/// `lod`: keep the `lod` keys.
fn lod_recording(dir: &Path, terrain: bool, lod: bool) -> Recording {
    let mut scene: Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("examples/scenes/lod.json")).unwrap(),
    )
    .unwrap();
    scene.as_object_mut().unwrap().remove("$schema");
    let kits = scene["kits"].as_array_mut().unwrap();
    if !terrain {
        kits.retain(|k| k["id"] != TERRAIN);
    }
    if !lod {
        for k in kits.iter_mut().filter(|k| k["id"] == "world.streaming") {
            let config = k["config"].as_object_mut().unwrap();
            config.remove("lod");
            config.remove("lodBudget");
        }
    }
    scene["entities"].as_array_mut().unwrap().push(json!({
        "id": HOSTILE_ID, "tags": ["crate"], "position": {"x": -1200, "z": 700},
        "data": {"note": "<b>bold</b>"}
    }));
    let path = dir.join("lod.json");
    std::fs::write(&path, scene.to_string()).unwrap();
    let mut lines: Vec<Value> =
        std::fs::read_to_string(repo().join("examples/scenes/lod.inputs.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
    lines.push(json!({"tick": 70, "do": "save", "path": "save.json"}));
    lines.push(json!({"tick": 90, "do": "load", "path": "save.json"}));
    if terrain {
        lines.push(json!({"tick": 40, "do": "edit", "at": {"x": 257, "z": 1}, "height": 65535}));
    }
    lines.sort_by_key(|l| l["tick"].as_u64().unwrap());
    let text: String = lines
        .iter()
        .filter(|l| l["tick"].as_u64().unwrap() <= TICKS)
        .map(|l| format!("{l}\n"))
        .collect();
    let mut inputs = Inputs::parse(&text, "lod.inputs.jsonl").unwrap();
    inputs.dir = Some(dir.to_path_buf());
    Recording::record(&path, &inputs, TICKS).unwrap()
}

/// A block as the game holds it: ready, and (with terrain) the mean of its cells.
type Blocks = BTreeMap<(u32, ChunkPos), (bool, Option<f64>)>;

/// The loaded blocks of the game now, from its state (`lod`), the streaming service's
/// readiness and the terrain's cells (averaged here, rounded down).
fn blocks_of(game: &Game) -> (Option<Vec<Option<u32>>>, Blocks) {
    let Some(levels) = game.state().lod else {
        return (None, Blocks::new());
    };
    let streaming = game.streaming().unwrap();
    let terrain = game.engine().service::<dyn TerrainService>(TERRAIN);
    let mut blocks = Blocks::new();
    for (level, list) in (1u32..).zip(&levels) {
        for &b in list {
            let height = terrain.as_ref().and_then(|t| {
                let data = t.lod_block(level, b.x, b.z)?;
                let n = data.cells;
                let mut sum = 0u64;
                for j in 0..n {
                    for i in 0..n {
                        sum += u64::from(data.height(i, j));
                    }
                }
                Some((sum / u64::from(n * n)) as f64)
            });
            blocks.insert((level, b), (streaming.lod_ready(level, b), height));
        }
    }
    let steps = (1..=levels.len() as u32)
        .map(|l| streaming.lod_step(l))
        .collect();
    (Some(steps), blocks)
}

fn triples(v: &Value, n: usize) -> Vec<Vec<Value>> {
    v.as_array()
        .map(|a| a.chunks(n).map(|c| c.to_vec()).collect())
        .unwrap_or_default()
}

fn key(t: &[Value]) -> (u32, ChunkPos) {
    (
        t[0].as_u64().unwrap() as u32,
        ChunkPos::new(t[1].as_i64().unwrap(), t[2].as_i64().unwrap()),
    )
}

/// What the page rebuilds of the blocks from a frame, done again in Rust.
fn rebuild(
    steps: &mut Option<Vec<Option<u32>>>,
    blocks: &mut Blocks,
    frame: &Value,
    names: &[Value],
) {
    if let Some(ls) = frame.get("ls") {
        *steps = Some(
            ls.as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_u64().map(|s| s as u32))
                .collect(),
        );
    }
    for e in frame["e"].as_array().into_iter().flatten() {
        let e = e.as_array().unwrap();
        if e.len() != 4 {
            continue;
        }
        let k = key(&[e[3].clone(), e[1].clone(), e[2].clone()]);
        match names[e[0].as_u64().unwrap() as usize].as_str().unwrap() {
            "world.lod.loaded" => {
                blocks.insert(k, (false, None));
            }
            "world.lod.unloaded" => {
                blocks.remove(&k);
            }
            _ => {}
        }
    }
    for t in triples(&frame["ba"], 3) {
        blocks.insert(key(&t), (false, None));
    }
    for t in triples(&frame["br"], 3) {
        assert!(
            blocks.remove(&key(&t)).is_some(),
            "a correction of a block held"
        );
    }
    for t in triples(&frame["bb"], 3) {
        blocks.get_mut(&key(&t)).expect("a loaded block built").0 = true;
    }
    for t in triples(&frame["bu"], 3) {
        *blocks.get_mut(&key(&t)).expect("a loaded block unbuilt") = (false, None);
    }
    for t in triples(&frame["bh"], 4) {
        blocks.get_mut(&key(&t)).expect("a loaded block's height").1 = t[3].as_f64();
    }
}

/// Every tick's blocks rebuilt from the frames equal the game's; returns the frames.
fn check_blocks(recording: &Recording) -> Vec<Value> {
    let data = capture(recording, "lod", Some(&terrain_height)).unwrap();
    let json = serde_json::to_value(&data).unwrap();
    let names = json["names"].as_array().unwrap().clone();
    let frames = json["frames"].as_array().unwrap().clone();
    let (_dir, mut game, inputs) = recording.game().unwrap();
    let mut states = vec![blocks_of(&game)];
    game.run_observing(&inputs, recording.ticks, |g, _| states.push(blocks_of(g)))
        .unwrap();
    assert_eq!(frames.len(), states.len());
    let mut steps = None;
    let mut blocks = Blocks::new();
    for (i, (frame, (want_steps, want))) in frames.iter().zip(&states).enumerate() {
        rebuild(&mut steps, &mut blocks, frame, &names);
        assert_eq!(&steps, want_steps, "steps at frame {i}");
        if &blocks != want {
            let differ: Vec<_> = blocks
                .iter()
                .filter(|(k, v)| want.get(k) != Some(v))
                .map(|(k, v)| (k, Some(v), want.get(k)))
                .chain(
                    want.iter()
                        .filter(|(k, _)| !blocks.contains_key(k))
                        .map(|(k, v)| (k, None, Some(v))),
                )
                .take(6)
                .collect();
            panic!("blocks at frame {i}: (block, rebuilt, the game's) {differ:?}");
        }
    }
    frames
}

fn has(frames: &[Value], key: &str) -> bool {
    frames.iter().any(|f| f.get(key).is_some())
}

#[test]
fn the_frames_carry_every_block_as_the_game_holds_it_with_terrain() {
    let dir = tempfile::tempdir().unwrap();
    let recording = lod_recording(dir.path(), true, true);
    let frames = check_blocks(&recording);
    // Before the first tick no level is in force yet.
    assert_eq!(frames[0]["ls"], json!([null, null]));
    assert_eq!(frames[1]["ls"], json!([2, 8]));
    // The drive loads and releases blocks by events, the load restores some without events,
    // blocks are built and get a height, and the edit changes one block's height.
    for k in ["ba", "br", "bb", "bh"] {
        assert!(has(&frames, k), "some frame has {k}");
    }
    let mut heights: BTreeMap<(u32, ChunkPos), BTreeSet<i64>> = BTreeMap::new();
    for f in &frames[..=80] {
        for t in triples(&f["bh"], 4) {
            heights
                .entry(key(&t))
                .or_default()
                .insert(t[3].as_i64().unwrap());
        }
    }
    let edited = &heights[&(1, ChunkPos::new(4, 0))];
    assert_eq!(edited.len(), 2, "the edited block's heights: {edited:?}");
    // Blocks are seen not built on some ticks (they are built a tick after they load).
    let unbuilt = frames.iter().any(|f| {
        f["e"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|e| e.as_array().unwrap().len() == 4)
    });
    assert!(unbuilt, "blocks load by events");
}

#[test]
fn the_frames_carry_every_block_as_the_game_holds_it_without_terrain() {
    let dir = tempfile::tempdir().unwrap();
    let recording = lod_recording(dir.path(), false, true);
    let frames = check_blocks(&recording);
    // Before the first tick no level is in force yet.
    assert_eq!(frames[0]["ls"], json!([null, null]));
    assert_eq!(frames[1]["ls"], json!([2, 8]));
    for k in ["ba", "br", "bb"] {
        assert!(has(&frames, k), "some frame has {k}");
    }
    assert!(!has(&frames, "bh"), "no heights without terrain");
}

#[test]
fn a_run_without_lod_carries_no_block_field() {
    let dir = tempfile::tempdir().unwrap();
    for terrain in [true, false] {
        let recording = lod_recording(dir.path(), terrain, false);
        let data = capture(&recording, "plain", Some(&terrain_height)).unwrap();
        let json = serde_json::to_value(&data).unwrap();
        for f in json["frames"].as_array().unwrap() {
            for key in ["ls", "ba", "br", "bb", "bu", "bh"] {
                assert!(f.get(key).is_none(), "{key} in a frame");
            }
            for e in f["e"].as_array().into_iter().flatten() {
                assert_ne!(e.as_array().unwrap().len(), 4, "a block event {e}");
            }
        }
    }
}

fn write_page(recording: &Recording, dir: &Path) -> PathBuf {
    let replay = dir.join("lod.replay.json");
    recording.write(&replay).unwrap();
    let page = dir.join("lod.html");
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

/// Every pixel of the rectangle `[x, y, w, h]`.
fn area(page: &mut chromium::Page<'_>, r: [i64; 4]) -> Vec<[u64; 3]> {
    let v = page.eval(&format!(
        "Array.from(document.getElementById('grid').getContext('2d').getImageData({}, {}, {}, {}).data)",
        r[0], r[1], r[2], r[3]
    ));
    v.as_array()
        .unwrap()
        .chunks(4)
        .map(|p| [0, 1, 2].map(|i| p[i].as_u64().unwrap()))
        .collect()
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

/// The page's geometry now.
struct Geometry {
    origin: [i64; 2],
    cell: i64,
    offset: [i64; 2],
}

impl Geometry {
    fn read(page: &mut chromium::Page<'_>) -> Geometry {
        let d = page.eval("Object.assign({}, document.getElementById('grid').dataset)");
        let n = |k: &str| d[k].as_str().unwrap().parse::<f64>().unwrap();
        assert_eq!(n("cell").fract(), 0.0, "whole pixels a chunk");
        Geometry {
            origin: [n("originX") as i64, n("originZ") as i64],
            cell: n("cell") as i64,
            offset: [n("ox") as i64, n("oz") as i64],
        }
    }

    fn gap(&self) -> i64 {
        i64::from(self.cell >= 6)
    }

    /// The top-left pixel drawn of chunk `c` (inside the gap).
    fn corner(&self, c: ChunkPos) -> [i64; 2] {
        [
            self.offset[0] + (c.x - self.origin[0]) * self.cell + self.gap(),
            self.offset[1] + (c.z - self.origin[1]) * self.cell + self.gap(),
        ]
    }
}

/// The heights' scale of the page (chunks' and blocks' together, the whole run).
fn height_range(recording: &Recording) -> (f64, f64) {
    let data = capture(recording, "lod", Some(&terrain_height)).unwrap();
    let json = serde_json::to_value(&data).unwrap();
    let mut range = (f64::INFINITY, f64::NEG_INFINITY);
    for f in json["frames"].as_array().unwrap() {
        let h = f["h"].as_array().into_iter().flatten().skip(2).step_by(3);
        let bh = f["bh"].as_array().into_iter().flatten().skip(3).step_by(4);
        for v in h.chain(bh) {
            let v = v.as_f64().unwrap();
            range = (range.0.min(v), range.1.max(v));
        }
    }
    range
}

/// What a built block of `level` with `height` is filled with.
fn block_rgb(level: u32, height: Option<f64>, range: (f64, f64)) -> [u64; 3] {
    let l = match height {
        Some(h) => 14.0 + 34.0 * (h - range.0) / (range.1 - range.0),
        None => 30.0,
    };
    let l: f64 = format!("{l:.1}").parse().unwrap();
    hsl(HUES[level as usize - 1], 40.0, l)
}

/// The outline and hatching of a block of `level` not built.
fn unbuilt_rgb(level: u32) -> [u64; 3] {
    hsl(HUES[level as usize - 1], 75.0, 70.0)
}

/// A pixel to check: where, of what kind, its colour (`None`: a loaded chunk's green), what.
type Sample = ([i64; 2], &'static str, Option<[u64; 3]>, String);

/// What the page must show at a frame, from the game.
struct Snap {
    steps: Vec<u32>,
    blocks: Blocks,
    loaded: BTreeSet<ChunkPos>,
    pending: BTreeSet<ChunkPos>,
    holes: BTreeSet<ChunkPos>,
    /// Entities, foci and predicted foci, in metres.
    markers: Vec<[f64; 2]>,
    size: f64,
    /// The tick's events as the side list writes them: `name {json}`.
    events: Vec<String>,
}

/// The game at each of `frames` (a frame counts ticks run: the load goes back in ticks).
fn snapshots(recording: &Recording, frames: &[u64]) -> BTreeMap<u64, Snap> {
    let snap = |game: &Game, events: Vec<String>| {
        let (steps, blocks) = blocks_of(game);
        let streaming = game.streaming().unwrap();
        let mut markers: Vec<[f64; 2]> = game
            .engine()
            .world()
            .iter()
            .map(|e| [e.position.x, e.position.z])
            .collect();
        markers.extend(streaming.foci().iter().map(|f| [f.x, f.z]));
        markers.extend(
            streaming
                .predicted()
                .unwrap_or_default()
                .iter()
                .map(|f| [f.x, f.z]),
        );
        Snap {
            steps: steps.unwrap().into_iter().map(Option::unwrap).collect(),
            blocks,
            loaded: streaming.loaded().into_iter().collect(),
            pending: streaming.pending().into_iter().collect(),
            holes: streaming
                .hole_chunks()
                .unwrap_or_default()
                .into_iter()
                .collect(),
            markers,
            size: streaming.chunk_size(),
            events,
        }
    };
    let (_dir, mut game, inputs) = recording.game().unwrap();
    let mut out = BTreeMap::new();
    let mut i = 0;
    let mut seen = 0;
    game.run_observing(&inputs, recording.ticks, |g, _| {
        i += 1;
        let all = g.engine().events();
        let events = all[seen..]
            .iter()
            .map(|e| format!("{} {}", e.event, e.data.to_value()))
            .collect();
        seen = all.len();
        if frames.contains(&i) {
            out.insert(i, snap(g, events));
        }
    })
    .unwrap();
    out
}

/// The page at frame `frame` against the game there: the counts per level, and for every
/// loaded block the top-left pixel of its area, which must show the finest thing drawn over
/// that chunk: a loaded or pending chunk, else the finest loaded block covering it (its
/// level's shade and height when built, its outline when not). Returns how many pixels of
/// each kind were checked: [chunk over a block, a block over a coarser one, built, unbuilt].
fn check_blocks_at(
    page: &mut chromium::Page<'_>,
    snap: &Snap,
    frame: u64,
    range: (f64, f64),
) -> [usize; 4] {
    page.slide_to(frame);
    let Snap {
        steps,
        blocks,
        loaded,
        pending,
        holes,
        markers,
        size,
        events,
    } = snap;
    let size = *size;
    // The panel: one line per level.
    let lines = page
        .eval("Array.from(document.querySelectorAll('#lod-counts li')).map((l) => l.textContent)");
    let expected: Vec<String> = (1..=steps.len() as u32)
        .map(|l| {
            let of: Vec<&(bool, Option<f64>)> = blocks
                .iter()
                .filter(|((level, _), _)| *level == l)
                .map(|(_, v)| v)
                .collect();
            let built = of.iter().filter(|b| b.0).count();
            format!(
                "level {l} (step {}): {} blocks (built {built} · not built {})",
                steps[l as usize - 1],
                of.len(),
                of.len() - built
            )
        })
        .collect();
    assert_eq!(lines, json!(expected), "frame {frame}");
    // The side list: block events as `{level, x, z}`, like the rest.
    let listed = page.eval(
        "Array.from(document.querySelectorAll('#events li')).slice(0, 400).map((l) => l.textContent)",
    );
    let n = events.len().min(400);
    assert_eq!(listed, json!(events[..n]), "events of frame {frame}");
    let d = page.eval("Object.assign({}, document.getElementById('grid').dataset)");
    assert_eq!(d["blocksDrawn"], json!(blocks.len().to_string()));
    let unbuilt = blocks.values().filter(|b| !b.0).count();
    assert_eq!(d["blocksUnbuiltDrawn"], json!(unbuilt.to_string()));

    let g = Geometry::read(page);
    let mark = ((g.cell as f64 * 0.3).clamp(3.0, 10.0) + 3.0).ceil() as i64;
    let marker_px: Vec<[i64; 2]> = markers
        .iter()
        .map(|m| {
            [
                g.offset[0] + ((m[0] / size - g.origin[0] as f64) * g.cell as f64) as i64,
                g.offset[1] + ((m[1] / size - g.origin[1] as f64) * g.cell as f64) as i64,
            ]
        })
        .collect();
    let mut samples: Vec<Sample> = Vec::new();
    for &(level, b) in blocks.keys() {
        let s = i64::from(steps[level as usize - 1]);
        let c = ChunkPos::new(b.x * s, b.z * s);
        let p = g.corner(c);
        if holes.contains(&c)
            || marker_px
                .iter()
                .any(|m| (m[0] - p[0]).abs() <= mark && (m[1] - p[1]).abs() <= mark)
            || p[0] < 0
            || p[1] < 0
            || p[0] >= 720
            || p[1] >= 720
        {
            continue;
        }
        let what = format!("block {level} {b} (chunk {c}) at frame {frame}");
        if loaded.contains(&c) {
            samples.push((p, "chunk", None, what));
            continue;
        }
        if pending.contains(&c) {
            samples.push((p, "chunk", Some(PENDING_RGB), what));
            continue;
        }
        // The finest loaded block covering c.
        let (top, state) = (1..=steps.len() as u32)
            .find_map(|l| {
                let s = i64::from(steps[l as usize - 1]);
                let k = (l, ChunkPos::new(c.x.div_euclid(s), c.z.div_euclid(s)));
                blocks.get(&k).map(|v| (l, *v))
            })
            .unwrap();
        let rgb = if state.0 {
            block_rgb(top, state.1, range)
        } else {
            unbuilt_rgb(top)
        };
        let kind = match (top < level, state.0) {
            (true, _) => "finer",
            (false, true) => "built",
            (false, false) => "unbuilt",
        };
        samples.push((p, kind, Some(rgb), what));
    }
    let got = pixels(page, &samples.iter().map(|s| s.0).collect::<Vec<_>>());
    let mut counts = [0; 4];
    for ((_, kind, rgb, what), pixel) in samples.iter().zip(got) {
        match rgb {
            Some(rgb) => assert!(near(pixel, *rgb), "{what}: {pixel:?}, not {rgb:?} ({kind})"),
            // A loaded chunk shaded by its height: green above all.
            None => assert!(
                pixel[1] > pixel[0] && pixel[1] > pixel[2],
                "{what}: {pixel:?} is not a loaded chunk's green"
            ),
        }
        let i = ["chunk", "finer", "built", "unbuilt"]
            .iter()
            .position(|k| k == kind)
            .unwrap();
        counts[i] += 1;
    }
    // A block not built over nothing and under nothing (no chunk, no block of another
    // level): its inside is hatched, the background between.
    let lone = blocks.iter().find(|((level, b), v)| {
        let s = i64::from(steps[*level as usize - 1]);
        !v.0 && (0..s).all(|i| {
            (0..s).all(|j| {
                let c = ChunkPos::new(b.x * s + i, b.z * s + j);
                !loaded.contains(&c)
                    && !pending.contains(&c)
                    && !holes.contains(&c)
                    && (0..steps.len()).all(|k| {
                        if k + 1 == *level as usize {
                            return true;
                        }
                        let s2 = i64::from(steps[k]);
                        let coarse = ChunkPos::new(c.x.div_euclid(s2), c.z.div_euclid(s2));
                        !blocks.contains_key(&(k as u32 + 1, coarse))
                    })
            })
        })
    });
    let lone = lone.filter(|((level, b), _)| {
        let s = i64::from(steps[*level as usize - 1]) as f64 * size;
        let (x0, z0) = (b.x as f64 * s, b.z as f64 * s);
        !markers
            .iter()
            .any(|m| (x0..x0 + s).contains(&m[0]) && (z0..z0 + s).contains(&m[1]))
    });
    if let Some(((level, b), _)) = lone {
        let s = i64::from(steps[*level as usize - 1]);
        let p = g.corner(ChunkPos::new(b.x * s, b.z * s));
        let side = s * g.cell - g.gap();
        let inside = area(page, [p[0] + 1, p[1] + 1, side - 2, side - 2]);
        let hatch = inside
            .iter()
            .filter(|&&q| near(q, unbuilt_rgb(*level)))
            .count();
        let empty = inside.iter().filter(|&&q| near(q, EMPTY_RGB)).count();
        assert!(
            hatch > 0 && empty > 0 && hatch + empty == inside.len(),
            "block {level} {b} not built, frame {frame}: {hatch} hatched, {empty} empty of {}",
            inside.len()
        );
        let edge = area(page, [p[0], p[1], side, 1]);
        assert!(
            edge.iter().all(|&q| near(q, unbuilt_rgb(*level))),
            "its outline"
        );
        counts[3] += 1;
        eprintln!(
            "frame {frame}: block {level} {b} not built, {hatch} of {} pixels hatched",
            inside.len()
        );
    }
    counts
}

#[test]
fn lod_blocks_are_drawn_under_the_chunks_by_level_and_height_in_chromium() {
    let Some(mut browser) = chromium::chromium() else {
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let recording = lod_recording(scratch.path(), true, true);
    let range = height_range(&recording);
    let file = write_page(&recording, scratch.path());
    let mut page = browser.page(1280, 1000);
    page.open(&file, READY);
    for (id, hidden) in [
        ("legend-lod-1", false),
        ("legend-lod-2", false),
        ("legend-lod-3", true),
        ("legend-lod-unbuilt", false),
        ("lod-panel", false),
        ("fit-label", false),
    ] {
        let expr = format!("document.getElementById('{id}').hidden");
        assert_eq!(page.eval(&expr), json!(hidden), "{id}");
    }
    let frames = [1, 2, 3, 12, 41, 62, 75, 90, 91, 119];
    let snaps = snapshots(&recording, &frames);
    let mut counts = [0; 4];
    for frame in frames {
        let c = check_blocks_at(&mut page, &snaps[&frame], frame, range);
        for i in 0..4 {
            counts[i] += c[i];
        }
    }
    eprintln!(
        "pixels checked [chunk over a block, finer over coarser, built, not built]: {counts:?}"
    );
    assert!(counts.iter().all(|&n| n >= 10), "{counts:?}");

    // The fit: every level by default (the outermost ring in view), a chunk a few pixels;
    // level 1 and the chunks alone give bigger cells, and the drawing stays right.
    let mut cells = Vec::new();
    for fit in ["2", "1", "0"] {
        page.eval(&format!(
            "(() => {{ const s = document.getElementById('fit'); s.value = '{fit}'; \
             s.dispatchEvent(new Event('change')); }})()"
        ));
        cells.push(Geometry::read(&mut page).cell);
        check_blocks_at(&mut page, &snaps[&75], 75, range);
    }
    eprintln!("pixels a chunk at frame 75, fitted to every level, level 1, the chunks: {cells:?}");
    assert!(cells[0] < cells[1] && cells[1] < cells[2], "{cells:?}");
    // Every block of level 2 is inside the view fitted to every level.
    page.eval(
        "(() => { const s = document.getElementById('fit'); s.value = '2'; \
         s.dispatchEvent(new Event('change')); })()",
    );
    let blocks = &snaps[&75].blocks;
    let g = Geometry::read(&mut page);
    for &(level, b) in blocks.keys() {
        let s = [2, 8][level as usize - 1];
        let p = g.corner(ChunkPos::new(b.x * s, b.z * s));
        let far = [p[0] + s * g.cell - 1, p[1] + s * g.cell - 1];
        assert!(
            p.iter().chain(&far).all(|&v| (0..720).contains(&v)),
            "block {level} {b} in view"
        );
    }

    // The pointer over a level-2 block away from everything: its level, coordinates, state
    // and height, as text; over the crate whose id is HTML: the id, as text.
    let (&(level, b), &(built, height)) = blocks
        .iter()
        .find(|((level, b), _)| *level == 2 && b.x == -4 && b.z == 4)
        .expect("block 2 (-4, 4) loaded at frame 75");
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
    let rows = point(&mut page, (b.x * 8) as f64 + 4.5, (b.z * 8) as f64 + 4.5);
    let expected = json!([
        "LOD level",
        format!("{level} (step 8)"),
        "block",
        "x -4, z 4",
        "chunks",
        "x -32 – -25, z 32 – 39",
        "built",
        if built { "yes" } else { "no" },
        "height",
        height.map_or("(none)".to_owned(), |h| h.to_string())
    ]);
    assert_eq!(rows, expected);
    let rows = point(&mut page, -1200.0 / 32.0, 700.0 / 32.0);
    assert_eq!(rows[0], json!("id"));
    assert_eq!(rows[1], json!(HOSTILE_ID));
    assert!(
        rows.as_array()
            .unwrap()
            .contains(&json!(r#"{"note":"<b>bold</b>"}"#)),
        "{rows}"
    );
    assert_eq!(
        page.eval("document.querySelectorAll('img, b').length"),
        json!(0)
    );
    assert_ne!(page.eval("document.title"), json!("owned"));

    // The screenshot: the drive at frame 75, the pointer on a level-1 block.
    point(&mut page, 30.5, -16.5);
    std::fs::write(
        chromium::target_dir().join("view-lod.png"),
        page.screenshot(),
    )
    .unwrap();
}
