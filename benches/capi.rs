//! The C ABI's per-frame path (docs/reference/engines.md#the-hot-path): a frame that moves 100
//! anchors, runs one tick and drains the chunk events, three ways on the same world: through the C
//! functions (`ws_game_move`, `ws_game_tick`, `ws_game_drain_chunk_events`, called as the extern
//! fns a C program links), through the Rust API (`Game::apply` of a move input, `Game::tick`,
//! `take_events` read with `capi::chunk_event`), and through today's JSON path (format each
//! move line, `ws_game_apply`, `ws_game_drain_events`, parse the array).
//! docs/reference/engines.md#engine-goals asks C ≤ 2× Rust. A second group times the 100 moves
//! alone (the boundary's own cost, without the tick). `cargo bench --bench capi`.

use std::ffi::{c_char, CStr, CString};
use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::{json, Value};
use world_streaming::capi::{
    chunk_event, ws_game_apply, ws_game_drain_chunk_events, ws_game_drain_events, ws_game_free,
    ws_game_move, ws_game_new, ws_game_tick, ws_string_free, WsChunkEvent, WsGame, WsStatus,
};
use world_streaming::files::inputs::{Action, InputLine};
use world_streaming::game::Game;
use world_streaming::grid::{ChunkPos, Position};
use world_streaming::host::{block_hash_values, chunk_hash_data, EntityId, Event, EventData};
use world_streaming::kits::builtin_catalog;

const ANCHORS: usize = 100;

/// 100 players 320 m apart on a line (all on the ground), each with its own radius-1 square;
/// terrain of 4×4 cells on one worker (generation cheap: the frame is the kit and the boundary).
fn scene() -> String {
    let entities: Vec<Value> = (0..ANCHORS)
        .map(|i| {
            json!({"id": format!("p{i}"), "tags": ["player"],
                   "position": {"x": 16.0, "z": 16.0 + 320.0 * i as f64}})
        })
        .collect();
    json!({
        "kits": [
            {"id": "world.ground", "config": {"bounds": {"minX": -64, "minZ": -64, "maxX": 1e6, "maxZ": 33000}}},
            {"id": "world.streaming", "config": {"chunkSize": 32, "radius": 1, "budgetMs": 64, "focus": "players"}},
            {"id": "world.terrain", "config": {"seed": 3, "cellsPerChunk": 4, "workers": 1}}
        ],
        "entities": entities
    })
    .to_string()
}

/// Where anchor `i` is at frame `f`: 4 m east a frame (a chunk crossed every 8 frames).
fn at(i: usize, f: u64) -> (f64, f64) {
    (16.0 + 4.0 * f as f64, 16.0 + 320.0 * i as f64)
}

fn c_game() -> WsGame {
    let scene = CString::new(scene()).unwrap();
    let mut game = 0;
    // SAFETY: valid strings and out-pointer.
    let status = unsafe {
        ws_game_new(
            scene.as_ptr(),
            c".".as_ptr(),
            &mut game,
            std::ptr::null_mut(),
        )
    };
    assert_eq!(status, WsStatus::Ok);
    game
}

fn ok(status: WsStatus) {
    assert_eq!(status, WsStatus::Ok);
}

/// One frame through the C functions; the chunk events into `out`.
fn c_frame(
    game: WsGame,
    ids: &[CString],
    f: u64,
    buffer: &mut [WsChunkEvent],
    out: &mut Vec<WsChunkEvent>,
) {
    let null = std::ptr::null_mut();
    for (i, id) in ids.iter().enumerate() {
        let (x, z) = at(i, f);
        // SAFETY: a valid string; null out_error.
        ok(unsafe { ws_game_move(game, id.as_ptr(), x, 0.0, z, null) });
    }
    // SAFETY: null out_error.
    ok(unsafe { ws_game_tick(game, 1, null) });
    out.clear();
    loop {
        let mut n = 0;
        // SAFETY: `buffer` holds its length; a writable count.
        ok(unsafe {
            ws_game_drain_chunk_events(game, buffer.as_mut_ptr(), buffer.len(), &mut n, null)
        });
        out.extend_from_slice(&buffer[..n]);
        if n < buffer.len() {
            break;
        }
    }
}

/// One frame through the Rust API.
fn rust_frame(game: &mut Game, ids: &[EntityId], f: u64, out: &mut Vec<WsChunkEvent>) {
    let tick = game.engine().tick_count() + 1;
    for (i, id) in ids.iter().enumerate() {
        let (x, z) = at(i, f);
        let input = InputLine {
            tick,
            action: Action::Move {
                entity: id.clone(),
                to: Position { x, y: 0.0, z },
            },
        };
        game.apply(&input).unwrap();
    }
    game.tick();
    out.clear();
    out.extend(
        game.engine_mut()
            .take_events()
            .iter()
            .filter_map(chunk_event),
    );
}

/// One frame through the JSON functions: format, apply, drain, parse.
fn json_frame(game: WsGame, f: u64, out: &mut Vec<WsChunkEvent>) {
    let null = std::ptr::null_mut();
    for i in 0..ANCHORS {
        let (x, z) = at(i, f);
        let line = CString::new(format!(
            r#"{{"tick": {f}, "do": "move", "entity": "p{i}", "to": {{"x": {x}, "z": {z}}}}}"#
        ))
        .unwrap();
        // SAFETY: a valid string; null out_error.
        ok(unsafe { ws_game_apply(game, line.as_ptr(), null) });
    }
    // SAFETY: null out_error.
    ok(unsafe { ws_game_tick(game, 1, null) });
    let mut json: *mut c_char = std::ptr::null_mut();
    // SAFETY: a writable out-pointer.
    ok(unsafe { ws_game_drain_events(game, &mut json, null) });
    // SAFETY: a string the library handed out, freed once below.
    let events: Vec<Value> =
        serde_json::from_str(unsafe { CStr::from_ptr(json) }.to_str().unwrap()).unwrap();
    // SAFETY: handed out above.
    ok(unsafe { ws_string_free(json) });
    out.clear();
    out.extend(events.into_iter().filter_map(|v| {
        let data = &v["data"];
        let mut event = Event {
            tick: v["tick"].as_u64()?,
            event: v["event"].as_str()?.to_owned().into(),
            data: data.clone().into(),
        };
        // A host reading JSON parses the built hash from its 16 hex digits itself (the typed
        // readers read the number the event carries).
        if let Some(hex) = data["hash"].as_str() {
            let hash = u64::from_str_radix(hex, 16).ok()?;
            let at = ChunkPos::new(data["x"].as_i64()?, data["z"].as_i64()?);
            event.data = match data["level"].as_u64() {
                None => chunk_hash_data(at, hash),
                Some(level) => {
                    EventData::LevelXzHash(block_hash_values(u32::try_from(level).ok()?, at, hash))
                }
            };
        }
        chunk_event(&event)
    }));
}

fn frame(c: &mut Criterion) {
    let c_ids: Vec<CString> = (0..ANCHORS)
        .map(|i| CString::new(format!("p{i}")).unwrap())
        .collect();
    let ids: Vec<EntityId> = (0..ANCHORS)
        .map(|i| EntityId::new(&format!("p{i}")))
        .collect();
    let blank = WsChunkEvent {
        kind: 0,
        level: 0,
        x: 0,
        z: 0,
        hash: 0,
        y: 0,
    };
    let mut buffer = vec![blank; 256];
    let mut out = Vec::new();

    // The three paths see the same chunk events, frame by frame.
    {
        let (cg, jg) = (c_game(), c_game());
        let mut rg =
            Game::from_scene_text(&scene(), "bench", Path::new("."), &builtin_catalog()).unwrap();
        let (mut a, mut b, mut total) = (Vec::new(), Vec::new(), 0);
        for f in 1..=40 {
            c_frame(cg, &c_ids, f, &mut buffer, &mut out);
            rust_frame(&mut rg, &ids, f, &mut a);
            json_frame(jg, f, &mut b);
            assert_eq!(out, a, "frame {f}");
            assert_eq!(out, b, "frame {f}");
            total += out.len();
        }
        assert!(total > 1000, "{total}");
        // SAFETY: null out_error.
        unsafe {
            ok(ws_game_free(cg, std::ptr::null_mut()));
            ok(ws_game_free(jg, std::ptr::null_mut()));
        }
    }

    let mut g = c.benchmark_group("frame: 100 anchors moved, one tick, chunk events drained");
    let game = c_game();
    let mut f = 0;
    g.bench_function("C ABI", |b| {
        b.iter(|| {
            f += 1;
            c_frame(game, &c_ids, f, &mut buffer, &mut out);
        })
    });
    // SAFETY: null out_error.
    ok(unsafe { ws_game_free(game, std::ptr::null_mut()) });
    let mut rg =
        Game::from_scene_text(&scene(), "bench", Path::new("."), &builtin_catalog()).unwrap();
    let mut f = 0;
    g.bench_function("Rust API", |b| {
        b.iter(|| {
            f += 1;
            rust_frame(&mut rg, &ids, f, &mut out);
        })
    });
    let game = c_game();
    let mut f = 0;
    g.bench_function("JSON through C", |b| {
        b.iter(|| {
            f += 1;
            json_frame(game, f, &mut out);
        })
    });
    // SAFETY: null out_error.
    ok(unsafe { ws_game_free(game, std::ptr::null_mut()) });
    g.finish();
}

/// The 100 moves alone (no tick): what the boundary itself costs a frame.
fn moves(c: &mut Criterion) {
    let c_ids: Vec<CString> = (0..ANCHORS)
        .map(|i| CString::new(format!("p{i}")).unwrap())
        .collect();
    let ids: Vec<EntityId> = (0..ANCHORS)
        .map(|i| EntityId::new(&format!("p{i}")))
        .collect();
    let mut g = c.benchmark_group("100 moves, no tick");
    let game = c_game();
    let mut f = 0u64;
    g.bench_function("C ABI ws_game_move", |b| {
        b.iter(|| {
            f += 1;
            for (i, id) in c_ids.iter().enumerate() {
                let (x, z) = at(i, f % 8);
                // SAFETY: a valid string; null out_error.
                ok(unsafe { ws_game_move(game, id.as_ptr(), x, 0.0, z, std::ptr::null_mut()) });
            }
        })
    });
    let mut rg =
        Game::from_scene_text(&scene(), "bench", Path::new("."), &builtin_catalog()).unwrap();
    g.bench_function("Rust API Game::apply", |b| {
        b.iter(|| {
            f += 1;
            for (i, id) in ids.iter().enumerate() {
                let (x, z) = at(i, f % 8);
                let to = Position { x, y: 0.0, z };
                rg.apply(&InputLine {
                    tick: 1,
                    action: Action::Move {
                        entity: id.clone(),
                        to,
                    },
                })
                .unwrap();
            }
        })
    });
    g.bench_function("JSON ws_game_apply", |b| {
        b.iter(|| {
            f += 1;
            for i in 0..ANCHORS {
                let (x, z) = at(i, f % 8);
                let line = CString::new(format!(
                    r#"{{"tick": 1, "do": "move", "entity": "p{i}", "to": {{"x": {x}, "z": {z}}}}}"#
                ))
                .unwrap();
                // SAFETY: a valid string; null out_error.
                ok(unsafe { ws_game_apply(game, line.as_ptr(), std::ptr::null_mut()) });
            }
        })
    });
    // SAFETY: null out_error.
    ok(unsafe { ws_game_free(game, std::ptr::null_mut()) });
    g.finish();
}

criterion_group!(benches, frame, moves);
criterion_main!(benches);
