//! The event drains: the events taken from the engine, the chunk events in their C form (each
//! read through its kit's typed reader: `StreamingEvent`, `TerrainEvent`), every other event as
//! JSON, in emission order.

use super::*;
use crate::kits::streaming::StreamingEvent;
use crate::kits::terrain::TerrainEvent;

/// The event as a [`WsChunkEvent`], when it is one of the eleven chunk events, read through the
/// kits' own readers (the streaming kit's [`StreamingEvent`] for the chunk, LOD block,
/// completeness and column events (a section's `y` as the event carries it), the terrain kit's [`TerrainEvent`] for the built and changed ones, the
/// hash as the built event carries it); `None` for every other event.
pub fn chunk_event(event: &Event) -> Option<WsChunkEvent> {
    let c = |kind, level, at: ChunkPos, hash| WsChunkEvent {
        kind,
        level,
        x: at.x,
        z: at.z,
        hash,
        y: at.y,
    };
    if let Some(streaming) = StreamingEvent::from_event(event) {
        return Some(match streaming {
            StreamingEvent::ChunkLoaded(chunk) => c(WS_CHUNK_EVENT_LOADED, 0, chunk, 0),
            StreamingEvent::ChunkUnloaded(chunk) => c(WS_CHUNK_EVENT_UNLOADED, 0, chunk, 0),
            StreamingEvent::LodLoaded { level, block } => {
                c(WS_CHUNK_EVENT_LOD_LOADED, level, block, 0)
            }
            StreamingEvent::LodUnloaded { level, block } => {
                c(WS_CHUNK_EVENT_LOD_UNLOADED, level, block, 0)
            }
            StreamingEvent::ChunkComplete(chunk) => c(WS_CHUNK_EVENT_COMPLETE, 0, chunk, 0),
            StreamingEvent::ChunkIncomplete(chunk) => c(WS_CHUNK_EVENT_INCOMPLETE, 0, chunk, 0),
            StreamingEvent::ColumnLoaded(column) => {
                c(WS_CHUNK_EVENT_COLUMN_LOADED, 0, column.column(), 0)
            }
            StreamingEvent::ColumnUnloaded(column) => {
                c(WS_CHUNK_EVENT_COLUMN_UNLOADED, 0, column.column(), 0)
            }
            _ => return None, // tickets and the cap: not chunk events
        });
    }
    Some(match TerrainEvent::from_event(event)? {
        TerrainEvent::Built { chunk, hash } => c(WS_CHUNK_EVENT_BUILT, 0, chunk, hash),
        TerrainEvent::LodBuilt { level, block, hash } => {
            c(WS_CHUNK_EVENT_LOD_BUILT, level, block, hash)
        }
        TerrainEvent::Changed { level, at } => c(WS_CHUNK_EVENT_CHANGED, level, at, 0),
        _ => return None,
    })
}

/// The events taken from the engine and not yet handed out, split so each drain costs what it
/// hands out: the chunk events (already in their C form, with the event they stand for) and
/// every other event, each with its emission sequence number so `ws_game_drain_events` can
/// merge them back in emission order.
#[derive(Debug, Default)]
pub(super) struct EventQueue {
    chunks: VecDeque<(u64, WsChunkEvent, Event)>,
    others: VecDeque<(u64, Event)>,
    next: u64,
}

impl EventQueue {
    /// Moves the engine's delivered events into the queue.
    pub(super) fn pull(&mut self, game: &mut Game) {
        for event in game.engine_mut().take_events() {
            let seq = self.next;
            self.next += 1;
            match chunk_event(&event) {
                Some(c) => self.chunks.push_back((seq, c, event)),
                None => self.others.push_back((seq, event)),
            }
        }
    }

    /// Every event not handed out yet, in emission order (the queue is left empty).
    pub(super) fn take_all(&mut self, game: &mut Game) -> Vec<Event> {
        if self.chunks.is_empty() && self.others.is_empty() {
            return game.engine_mut().take_events(); // nothing held back: the engine's log as is
        }
        self.pull(game);
        let mut out = Vec::with_capacity(self.chunks.len() + self.others.len());
        loop {
            let chunk_first = match (self.chunks.front(), self.others.front()) {
                (Some(c), Some(o)) => c.0 < o.0,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => break,
            };
            if chunk_first {
                out.extend(self.chunks.pop_front().map(|c| c.2));
            } else {
                out.extend(self.others.pop_front().map(|o| o.1));
            }
        }
        out
    }
}

/// Takes the events emitted since the last drain, as a JSON array of the event log's objects
/// (`[{"tick": 1, "event": "world.chunk.loaded", "data": {"x": 0, "z": 0}}, …]`, emission
/// order). The game keeps every event until it is drained: drain after every tick or few. The
/// chunk events already handed out by [`ws_game_drain_chunk_events`] are not in it; those it
/// has not handed out are, in their place.
///
/// # Safety
/// `out_json` and `out_error` are null or writable; free `*out_json` with `ws_string_free`.
#[no_mangle]
pub unsafe extern "C" fn ws_game_drain_events(
    game: WsGame,
    out_json: *mut *mut c_char,
    out_error: *mut *mut c_char,
) -> WsStatus {
    // SAFETY: the out-pointers per this function's contract.
    unsafe {
        entry(out_error, || {
            if out_json.is_null() {
                return Err(CapiError::Null("out_json"));
            }
            let events = with_slot(game, |slot| Ok(slot.queue.take_all(&mut slot.game)))?;
            let json = serde_json::to_string(&events).expect("events are JSON");
            put(out_json, "out_json", hand_out(json))
        })
    }
}

/// Takes at most `capacity` of the chunk events emitted since the last drain (the
/// `WS_CHUNK_EVENT_*` kinds), in emission order, into `out`, and writes how many to
/// `*out_count`: call again while it equals `capacity`. The events it hands out are no longer
/// in what [`ws_game_drain_events`] hands out, which keeps every other event (and the chunk
/// events not taken yet) in emission order. `out` may be null with `capacity` 0.
///
/// # Safety
/// `out` is null or valid for `capacity` writes; `out_count` and `out_error` null or writable.
#[no_mangle]
pub unsafe extern "C" fn ws_game_drain_chunk_events(
    game: WsGame,
    out: *mut WsChunkEvent,
    capacity: usize,
    out_count: *mut usize,
    out_error: *mut *mut c_char,
) -> WsStatus {
    // SAFETY: the out-pointers per this function's contract.
    unsafe {
        entry(out_error, || {
            if out_count.is_null() {
                return Err(CapiError::Null("out_count"));
            }
            if out.is_null() && capacity > 0 {
                return Err(CapiError::Null("out (with a capacity above 0)"));
            }
            let written = with_slot(game, |slot| {
                slot.queue.pull(&mut slot.game);
                let n = capacity.min(slot.queue.chunks.len());
                for (i, (_, event, _)) in slot.queue.chunks.drain(..n).enumerate() {
                    // SAFETY: i < n <= capacity, and `out` holds `capacity` events.
                    out.add(i).write(event);
                }
                Ok(n)
            })?;
            put(out_count, "out_count", written)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capi::testing::*;
    use crate::host::{block_hash_values, EventData};
    use crate::kits::streaming::{CHUNK_LOADED, LOD_LOADED, LOD_UNLOADED};
    use crate::kits::terrain::{TERRAIN_BUILT, TERRAIN_CHANGED, TERRAIN_LOD_BUILT as LOD_BUILT};

    #[test]
    fn drained_chunk_events_leave_the_json_drain_and_every_other_event_keeps_its_order() {
        // `all` drains JSON only; `split` drains a few chunk events every tick and JSON every
        // 4th tick, at the same ticks as `all`.
        let (_, all, _) = new_game(&terrain_scene());
        let (_, split, _) = new_game(&terrain_scene());
        let mut handed: Vec<WsChunkEvent> = Vec::new();
        let mut kinds = std::collections::BTreeSet::new();
        let mut others = 0;
        for t in 1..=48u64 {
            let x = 16.0 + 12.0 * t as f64;
            for g in [all, split] {
                assert_eq!(move_to(g, "hero", x, 0.0, 16.0).0, WsStatus::Ok);
                // An event of another kind between the ticks' chunk events.
                let line =
                    format!(r#"{{"tick": {t}, "do": "player.moved", "at": {{"x": {x}, "z": 1}}}}"#);
                assert_eq!(apply(g, &line).0, WsStatus::Ok);
                tick(g, 1);
            }
            handed.extend(drain_chunks_once(split, (t % 3) as usize * 2));
            if t % 4 == 0 {
                let segment = drain_json(all);
                let rest = drain_json(split);
                // The events handed out are the segment's first chunk events, in order...
                let chunk_events: Vec<WsChunkEvent> =
                    segment.iter().filter_map(chunk_event_of_json).collect();
                assert!(handed.len() <= chunk_events.len());
                assert_eq!(handed, chunk_events[..handed.len()], "tick {t}");
                // ... and the JSON drain holds the rest, every event in its place.
                let mut skip = handed.len();
                let expected: Vec<Value> = segment
                    .into_iter()
                    .filter(|e| {
                        if skip > 0 && chunk_event_of_json(e).is_some() {
                            skip -= 1;
                            return false;
                        }
                        true
                    })
                    .collect();
                assert_eq!(rest, expected, "tick {t}");
                others += rest.iter().filter(|e| e["event"] == "player.moved").count();
                kinds.extend(handed.iter().map(|e| e.kind));
                handed.clear();
            }
        }
        assert_eq!(
            kinds.into_iter().collect::<Vec<_>>(),
            [
                WS_CHUNK_EVENT_LOADED,
                WS_CHUNK_EVENT_UNLOADED,
                WS_CHUNK_EVENT_BUILT
            ]
        );
        assert!(others > 40, "{others}");
        free_game(all);
        free_game(split);
    }

    #[test]
    fn chunk_events_drained_until_short_are_every_chunk_event_with_the_built_hashes() {
        let (_, all, _) = new_game(&terrain_scene());
        let (_, chunks, _) = new_game(&terrain_scene());
        let mut built = 0;
        for t in 1..=20u64 {
            for g in [all, chunks] {
                assert_eq!(
                    move_to(g, "hero", 16.0 + 20.0 * t as f64, 0.0, 16.0).0,
                    WsStatus::Ok
                );
                tick(g, 1);
            }
            let mut got = Vec::new();
            for round in 0.. {
                assert!(round < 1000, "the drain never came up short");
                let batch = drain_chunks_once(chunks, 3);
                let full = batch.len() == 3;
                got.extend(batch);
                if !full {
                    break;
                }
            }
            let expected: Vec<WsChunkEvent> = drain_json(all)
                .iter()
                .filter_map(chunk_event_of_json)
                .collect();
            assert_eq!(got, expected, "tick {t}");
            for e in got.iter().filter(|e| e.kind == WS_CHUNK_EVENT_BUILT) {
                assert_eq!(e.level, 0);
                let hash = with_game(chunks, |g| {
                    let terrain = g
                        .engine()
                        .service::<dyn crate::kits::terrain::TerrainService>(
                            crate::kits::terrain::TERRAIN,
                        )
                        .unwrap();
                    Ok(terrain.chunk(ChunkPos::new(e.x, e.z)).map(|c| c.hash()))
                })
                .unwrap();
                if let Some(hash) = hash {
                    assert_eq!(e.hash, hash);
                    assert_ne!(hash, 0);
                    built += 1;
                }
            }
            // Nothing but the other events is left for the JSON drain.
            assert!(drain_json(chunks)
                .iter()
                .all(|e| chunk_event_of_json(e).is_none()));
        }
        assert!(built > 10, "{built}");
        free_game(all);
        free_game(chunks);
    }

    #[test]
    fn the_lod_events_and_a_changed_block_read_back_with_their_level() {
        let event = |name: &'static str, data: EventData| Event {
            tick: 3,
            event: name.into(),
            data,
        };
        let c = |kind, level, x, z, hash| WsChunkEvent {
            kind,
            level,
            x,
            z,
            hash,
            y: 0,
        };
        for (e, want) in [
            (
                event(LOD_LOADED, json!({"level": 2, "x": -1, "z": 4}).into()),
                Some(c(WS_CHUNK_EVENT_LOD_LOADED, 2, -1, 4, 0)),
            ),
            (
                event(LOD_UNLOADED, json!({"level": 1, "x": 3, "z": 0}).into()),
                Some(c(WS_CHUNK_EVENT_LOD_UNLOADED, 1, 3, 0, 0)),
            ),
            (
                event(
                    LOD_BUILT,
                    EventData::LevelXzHash(block_hash_values(
                        1,
                        ChunkPos::new(0, -2),
                        0x9d01_eaa5_47c9_a46c,
                    )),
                ),
                Some(c(WS_CHUNK_EVENT_LOD_BUILT, 1, 0, -2, 0x9d01_eaa5_47c9_a46c)),
            ),
            (
                // The hash is read as the event carries it, never parsed back from its text:
                // a payload that holds only the text is not the terrain kit's.
                event(
                    LOD_BUILT,
                    json!({"level": 1, "x": 0, "z": -2, "hash": "9d01eaa547c9a46c"}).into(),
                ),
                None,
            ),
            (
                event(TERRAIN_CHANGED, json!({"x": 5, "z": 6, "level": 3}).into()),
                Some(c(WS_CHUNK_EVENT_CHANGED, 3, 5, 6, 0)),
            ),
            (
                event(TERRAIN_CHANGED, json!({"x": 5, "z": 6}).into()),
                Some(c(WS_CHUNK_EVENT_CHANGED, 0, 5, 6, 0)),
            ),
            (
                event(
                    TERRAIN_BUILT,
                    crate::host::chunk_hash_data(ChunkPos::new(-7, 8), u64::MAX),
                ),
                Some(c(WS_CHUNK_EVENT_BUILT, 0, -7, 8, u64::MAX)),
            ),
            (event(CHUNK_LOADED, json!({"x": 1}).into()), None),
            (
                event(
                    LOD_BUILT,
                    json!({"level": 1, "x": 0, "z": 0, "hash": "xyz"}).into(),
                ),
                None,
            ),
            (
                event(
                    crate::kits::district::STORED,
                    json!({"x": 1, "z": 2, "count": 3}).into(),
                ),
                None,
            ),
        ] {
            assert_eq!(chunk_event(&e), want, "{}", e.event);
        }
    }

    /// The completeness events (docs/reference/engines.md#complete-chunks-in-c) read back as
    /// kinds 7 and 8 through the streaming kit's reader, whatever their payload's form; a
    /// malformed one, and the kit's other events (tickets), are not chunk events.
    #[test]
    fn the_completeness_events_read_back_as_kinds_7_and_8() {
        use crate::kits::streaming::{CHUNK_COMPLETE, CHUNK_INCOMPLETE, TICKET_READY};
        let event = |name: &'static str, data: EventData| Event {
            tick: 3,
            event: name.into(),
            data,
        };
        let c = |kind, x, z| WsChunkEvent {
            kind,
            level: 0,
            x,
            z,
            hash: 0,
            y: 0,
        };
        for (e, want) in [
            (
                event(CHUNK_COMPLETE, json!({"x": -3, "z": 9}).into()),
                Some(c(WS_CHUNK_EVENT_COMPLETE, -3, 9)),
            ),
            (
                event(
                    CHUNK_INCOMPLETE,
                    crate::host::chunk_data(ChunkPos::new(4, -1)),
                ),
                Some(c(WS_CHUNK_EVENT_INCOMPLETE, 4, -1)),
            ),
            (event(CHUNK_COMPLETE, json!({"x": 1}).into()), None),
            (event(TICKET_READY, json!({"id": "spawn"}).into()), None),
        ] {
            assert_eq!(chunk_event(&e), want, "{}", e.event);
        }
        assert_eq!((WS_CHUNK_EVENT_COMPLETE, WS_CHUNK_EVENT_INCOMPLETE), (7, 8));
    }

    /// The vertical events (docs/reference/engines.md#vertical-sections-in-c): a section's
    /// events carry its row in `y`, whatever their payload's form; the column events read back
    /// as kinds 9 and 10 with `y` 0; a malformed one is not a chunk event.
    #[test]
    fn sections_keep_their_row_and_the_column_events_read_back_as_kinds_9_and_10() {
        use crate::kits::streaming::{
            CHUNK_COMPLETE, CHUNK_UNLOADED, COLUMN_LOADED, COLUMN_UNLOADED,
        };
        let event = |name: &'static str, data: EventData| Event {
            tick: 3,
            event: name.into(),
            data,
        };
        let c = |kind, x, y, z| WsChunkEvent {
            kind,
            level: 0,
            x,
            z,
            hash: 0,
            y,
        };
        for (e, want) in [
            (
                event(
                    CHUNK_LOADED,
                    crate::host::section_data(ChunkPos::section(2, -3, 5)),
                ),
                Some(c(WS_CHUNK_EVENT_LOADED, 2, -3, 5)),
            ),
            (
                event(CHUNK_UNLOADED, json!({"x": 1, "y": 7, "z": -1}).into()),
                Some(c(WS_CHUNK_EVENT_UNLOADED, 1, 7, -1)),
            ),
            (
                event(
                    CHUNK_COMPLETE,
                    crate::host::section_data(ChunkPos::section(0, 0, 4)),
                ),
                Some(c(WS_CHUNK_EVENT_COMPLETE, 0, 0, 4)),
            ),
            (
                event(COLUMN_LOADED, json!({"x": -6, "z": 9}).into()),
                Some(c(WS_CHUNK_EVENT_COLUMN_LOADED, -6, 0, 9)),
            ),
            (
                event(
                    COLUMN_UNLOADED,
                    crate::host::chunk_data(ChunkPos::new(3, 3)),
                ),
                Some(c(WS_CHUNK_EVENT_COLUMN_UNLOADED, 3, 0, 3)),
            ),
            (event(COLUMN_LOADED, json!({"x": 1}).into()), None),
        ] {
            assert_eq!(chunk_event(&e), want, "{}", e.event);
        }
        assert_eq!(
            (WS_CHUNK_EVENT_COLUMN_LOADED, WS_CHUNK_EVENT_COLUMN_UNLOADED),
            (9, 10)
        );
    }

    /// `y` is the last field (docs/reference/engines.md#vertical-sections-in-c): every earlier
    /// field keeps the offset it had, and the record is 40 bytes, 8-aligned (the JS view's).
    #[test]
    fn the_chunk_event_gains_y_as_its_last_field_and_keeps_every_earlier_offset() {
        use std::mem::{align_of, offset_of, size_of};
        assert_eq!(
            [
                offset_of!(WsChunkEvent, kind),
                offset_of!(WsChunkEvent, level),
                offset_of!(WsChunkEvent, x),
                offset_of!(WsChunkEvent, z),
                offset_of!(WsChunkEvent, hash),
                offset_of!(WsChunkEvent, y),
            ],
            [0, 4, 8, 16, 24, 32]
        );
        assert_eq!(
            (size_of::<WsChunkEvent>(), align_of::<WsChunkEvent>()),
            (40, 8)
        );
    }

    #[test]
    fn a_chunk_drain_with_null_pointers_or_a_freed_handle_is_refused_and_takes_nothing() {
        let (_, game, _) = new_game(&terrain_scene());
        tick(game, 3);
        let mut count = 7usize;
        let mut error = std::ptr::null_mut();
        // SAFETY: null pointers are refused before any write.
        let status = unsafe {
            ws_game_drain_chunk_events(game, std::ptr::null_mut(), 4, &mut count, &mut error)
        };
        assert_eq!(status, WsStatus::NullArgument);
        assert_eq!(take_message(error), "out (with a capacity above 0) is null");
        let mut one = [WsChunkEvent {
            kind: 0,
            level: 0,
            x: 0,
            z: 0,
            hash: 0,
            y: 0,
        }];
        // SAFETY: as above.
        let status = unsafe {
            ws_game_drain_chunk_events(game, one.as_mut_ptr(), 1, std::ptr::null_mut(), &mut error)
        };
        assert_eq!(status, WsStatus::NullArgument);
        assert_eq!(take_message(error), "out_count is null");
        // Capacity 0: nothing taken, the count is 0.
        // SAFETY: null `out` with capacity 0 is allowed.
        let status = unsafe {
            ws_game_drain_chunk_events(game, std::ptr::null_mut(), 0, &mut count, &mut error)
        };
        assert_eq!((status, count), (WsStatus::Ok, 0));
        // Nothing was taken by the refused calls: the JSON drain still has every chunk event.
        let loaded = drain_json(game)
            .iter()
            .filter(|e| e["event"] == CHUNK_LOADED)
            .count();
        assert_eq!(loaded, 9);
        free_game(game);
        // SAFETY: valid pointers; the handle is freed.
        let status = unsafe {
            ws_game_drain_chunk_events(game, one.as_mut_ptr(), 1, &mut count, &mut error)
        };
        assert_eq!(status, WsStatus::InvalidHandle);
        assert!(take_message(error).contains(&format!("handle {game}")));
    }
}
