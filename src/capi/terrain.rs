//! The `world.terrain` kit's exports: the cells of a built chunk or LOD block, a chunk's
//! bordered snapshot and its version.

use super::*;
use crate::kits::terrain::SnapshotError;

/// The built LOD block `(x, z)` of `level` (≥ 1,
/// docs/reference/terrain.md#lod-blocks-built-by-terrain): the one place `ws_game_terrain` asks for
/// a block.
fn lod_block_data(
    terrain: &dyn TerrainService,
    level: u32,
    x: i64,
    z: i64,
) -> Option<std::sync::Arc<ChunkData>> {
    terrain.lod_block(level, x, z)
}

/// Copies the cells of built chunk `(x, z)` (`level` 0) or of the built LOD block `(x, z)` of
/// `level` (≥ 1, docs/reference/terrain.md#lod-blocks-built-by-terrain) in row order (cell
/// `(i, j)`, `i` east, `j` north, at `j * cellsPerChunk + i`): heights (0..=65535) to `heights`,
/// materials to `materials`. The buffer contract of [`ws_game_loaded`]: `*out_cells` always
/// receives `cellsPerChunk²`; the cells are written when `capacity` is enough (else
/// `WS_STATUS_BUFFER_TOO_SMALL`, nothing written). Either buffer may be null to skip it; both null
/// with `capacity` 0 asks the count. A chunk that is not built (not loaded yet, still generating,
/// released) is `WS_STATUS_NOT_BUILT`; a scene without `world.terrain` is `WS_STATUS_NO_TERRAIN`.
/// The bytes FNV-1a 64 hashes (docs/reference/terrain.md#chunk-content, the `hash` of the built
/// event) are the heights as little-endian `u16`, then the materials.
///
/// # Safety
/// `heights` and `materials` are null or valid for `capacity` writes; `out_cells` and
/// `out_error` null or writable.
#[no_mangle]
pub unsafe extern "C" fn ws_game_terrain(
    game: WsGame,
    x: i64,
    z: i64,
    level: u32,
    heights: *mut u16,
    materials: *mut u8,
    capacity: usize,
    out_cells: *mut usize,
    out_error: *mut *mut c_char,
) -> WsStatus {
    // SAFETY: the pointers per this function's contract.
    unsafe {
        entry(out_error, || {
            // 0 until the terrain's cellsPerChunk is known (no game, no terrain kit).
            put(out_cells, "out_cells", 0)?;
            if heights.is_null() && materials.is_null() && capacity > 0 {
                return Err(CapiError::Null(
                    "heights and materials (with a capacity above 0)",
                ));
            }
            let (cells, data) = with_game(game, |g| {
                let terrain = g
                    .engine()
                    .service::<dyn TerrainService>(TERRAIN)
                    .ok_or(CapiError::NoTerrain)?;
                let side = terrain.cells_per_chunk() as usize;
                let data = if level == 0 {
                    terrain.chunk(ChunkPos::new(x, z))
                } else {
                    lod_block_data(&*terrain, level, x, z)
                };
                Ok((side * side, data))
            })?;
            out_cells.write(cells);
            let data = data.ok_or_else(|| {
                CapiError::NotBuilt(if level == 0 {
                    format!("chunk ({x}, {z}) is not built")
                } else {
                    format!("LOD block ({x}, {z}) of level {level} is not built")
                })
            })?;
            if heights.is_null() && materials.is_null() {
                return Ok(()); // the count only
            }
            if capacity < cells {
                return Err(CapiError::Cells {
                    capacity,
                    count: cells,
                });
            }
            debug_assert_eq!(data.bytes.len(), 3 * cells);
            let (height_bytes, material_bytes) = data.bytes.split_at(2 * cells);
            if !heights.is_null() {
                for (i, pair) in height_bytes.chunks_exact(2).enumerate() {
                    // SAFETY: i < cells <= capacity, and `heights` holds `capacity` cells.
                    heights.add(i).write(u16::from_le_bytes([pair[0], pair[1]]));
                }
            }
            if !materials.is_null() {
                // SAFETY: `materials` holds `capacity` >= cells bytes; the source is ours.
                std::ptr::copy_nonoverlapping(material_bytes.as_ptr(), materials, cells);
            }
            Ok(())
        })
    }
}

/// Copies a bordered snapshot of chunk `(x, z)` (docs/reference/engines.md#complete-chunks-in-c,
/// the terrain's `snapshot(x, z, skin)`): the `side² = (cellsPerChunk + 2·skin)²` cells of the
/// chunk and the `skin` cells of its 8 neighbours around it, in row order (cell `(i, j)`, `i`
/// east, `j` north, at `j * side + i`; cell `(skin, skin)` is the chunk's own first cell), heights
/// to `heights`, materials to `materials`, and the chunk's version to `*out_version`, all taken
/// in one call. The buffer contract of [`ws_game_terrain`]: `*out_cells` always receives `side²`
/// (0 when there is no terrain, or the skin is out of range); the cells are written when
/// `capacity` is enough (else `WS_STATUS_BUFFER_TOO_SMALL`, nothing written); either buffer may
/// be null to skip it, both null with `capacity` 0 asks the count (and the version). `skin` is
/// 0..=8 and at most `cellsPerChunk` (else `WS_STATUS_OUT_OF_RANGE`). A chunk that is not
/// complete (with skin 0: not built) is `WS_STATUS_NOT_COMPLETE`, `*out_version` 0; a scene
/// without `world.terrain` is `WS_STATUS_NO_TERRAIN`.
///
/// # Safety
/// `heights` and `materials` are null or valid for `capacity` writes; `out_cells`,
/// `out_version` and `out_error` null or writable.
#[no_mangle]
pub unsafe extern "C" fn ws_game_terrain_snapshot(
    game: WsGame,
    x: i64,
    z: i64,
    skin: u32,
    heights: *mut u16,
    materials: *mut u8,
    capacity: usize,
    out_cells: *mut usize,
    out_version: *mut u64,
    out_error: *mut *mut c_char,
) -> WsStatus {
    // SAFETY: the pointers per this function's contract.
    unsafe {
        entry(out_error, || {
            put(out_cells, "out_cells", 0)?;
            put(out_version, "out_version", 0)?;
            if heights.is_null() && materials.is_null() && capacity > 0 {
                return Err(CapiError::Null(
                    "heights and materials (with a capacity above 0)",
                ));
            }
            let chunk = ChunkPos::new(x, z);
            let (side, snapshot) = with_game(game, |g| {
                let terrain = g
                    .engine()
                    .service::<dyn TerrainService>(TERRAIN)
                    .ok_or(CapiError::NoTerrain)?;
                // Saturating: a skin out of range is refused below, never an overflow (wasm32's usize
                // is 32 bits).
                let side = (terrain.cells_per_chunk() as usize)
                    .saturating_add((skin as usize).saturating_mul(2));
                Ok((side, terrain.snapshot(chunk, skin)))
            })?;
            let snapshot = match snapshot {
                Ok(s) => s,
                Err(e @ SnapshotError::Skin { .. }) => return Err(CapiError::Skin(e.to_string())),
                Err(SnapshotError::NotComplete) => {
                    out_cells.write(side * side);
                    return Err(CapiError::NotComplete(if skin == 0 {
                        format!(
                            "chunk ({x}, {z}) is not built (a snapshot with skin 0 needs it built)"
                        )
                    } else {
                        format!(
                            "chunk ({x}, {z}) is not complete (a snapshot with skin {skin} needs \
                             it and its neighbours built)"
                        )
                    }));
                }
            };
            let cells = snapshot.heights.len();
            debug_assert_eq!(cells, (snapshot.side * snapshot.side) as usize);
            debug_assert_eq!(snapshot.materials.len(), cells);
            out_cells.write(cells);
            out_version.write(snapshot.version);
            if heights.is_null() && materials.is_null() {
                return Ok(()); // the count only
            }
            if capacity < cells {
                return Err(CapiError::SnapshotCells {
                    capacity,
                    count: cells,
                });
            }
            if !heights.is_null() {
                // SAFETY: `heights` holds `capacity` >= cells; the source is ours.
                std::ptr::copy_nonoverlapping(snapshot.heights.as_ptr(), heights, cells);
            }
            if !materials.is_null() {
                // SAFETY: `materials` holds `capacity` >= cells; the source is ours.
                std::ptr::copy_nonoverlapping(snapshot.materials.as_ptr(), materials, cells);
            }
            Ok(())
        })
    }
}

/// The version of built chunk `(x, z)` (docs/reference/engines.md#complete-chunks-in-c): 1 at its
/// commit, one more at each edit of a cell of it or of one of its 8 neighbours. A mesh built
/// from a snapshot whose version is no longer this one is stale. `WS_STATUS_NOT_BUILT` when the
/// chunk is not built (`*out_version` 0); `WS_STATUS_NO_TERRAIN` without `world.terrain`.
///
/// # Safety
/// `out_version` and `out_error` are null or writable.
#[no_mangle]
pub unsafe extern "C" fn ws_game_terrain_version(
    game: WsGame,
    x: i64,
    z: i64,
    out_version: *mut u64,
    out_error: *mut *mut c_char,
) -> WsStatus {
    // SAFETY: the out-pointers per this function's contract.
    unsafe {
        entry(out_error, || {
            put(out_version, "out_version", 0)?;
            let version = with_game(game, |g| {
                let terrain = g
                    .engine()
                    .service::<dyn TerrainService>(TERRAIN)
                    .ok_or(CapiError::NoTerrain)?;
                Ok(terrain.version(ChunkPos::new(x, z)))
            })?;
            let version = version
                .ok_or_else(|| CapiError::NotBuilt(format!("chunk ({x}, {z}) is not built")))?;
            out_version.write(version);
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capi::testing::*;

    /// `ws_game_terrain` into buffers of `capacity` cells pre-filled with sentinels.
    fn terrain(
        game: WsGame,
        x: i64,
        z: i64,
        level: u32,
        capacity: usize,
    ) -> (WsStatus, usize, Vec<u16>, Vec<u8>, String) {
        let mut heights = vec![0xBEEF_u16; capacity];
        let mut materials = vec![0xA5_u8; capacity];
        let mut cells = usize::MAX;
        let mut error = std::ptr::null_mut();
        // SAFETY: both buffers hold `capacity` cells; writable out-pointers.
        let status = unsafe {
            ws_game_terrain(
                game,
                x,
                z,
                level,
                heights.as_mut_ptr(),
                materials.as_mut_ptr(),
                capacity,
                &mut cells,
                &mut error,
            )
        };
        (status, cells, heights, materials, take_message(error))
    }

    #[test]
    fn the_terrain_of_a_built_chunk_is_its_cells_and_hashes_to_its_built_event() {
        let (_, game, _) = new_game(&terrain_scene());
        let mut checked = 0;
        for t in 1..=12u64 {
            assert_eq!(
                move_to(game, "hero", 16.0 + 20.0 * t as f64, 0.0, 16.0).0,
                WsStatus::Ok
            );
            tick(game, 1);
            let mut released = std::collections::BTreeSet::new();
            let events = drain_chunks_once(game, 1000);
            for (i, e) in events.iter().enumerate() {
                if e.kind != WS_CHUNK_EVENT_BUILT {
                    continue;
                }
                let later_release = events[i + 1..]
                    .iter()
                    .any(|u| u.kind == WS_CHUNK_EVENT_UNLOADED && (u.x, u.z) == (e.x, e.z));
                let (status, cells, heights, materials, message) = terrain(game, e.x, e.z, 0, 64);
                assert_eq!(cells, 64);
                if later_release {
                    assert_eq!(status, WsStatus::NotBuilt, "{message}");
                    released.insert((e.x, e.z));
                    continue;
                }
                assert_eq!(status, WsStatus::Ok, "{message}");
                let mut bytes: Vec<u8> = heights.iter().flat_map(|h| h.to_le_bytes()).collect();
                bytes.extend(&materials);
                assert_eq!(crate::hash::fnv1a64(&bytes), e.hash);
                let data = with_game(game, |g| {
                    let t = g.engine().service::<dyn TerrainService>(TERRAIN).unwrap();
                    Ok(t.chunk(ChunkPos::new(e.x, e.z)).unwrap())
                })
                .unwrap();
                for j in 0..8u32 {
                    for i in 0..8u32 {
                        let k = (j * 8 + i) as usize;
                        assert_eq!(heights[k], data.height(i, j));
                        assert_eq!(materials[k], data.material(i, j));
                    }
                }
                checked += 1;
            }
        }
        assert!(checked > 10, "{checked}");
        free_game(game);
    }

    /// LOD blocks through the C ABI (docs/reference/terrain.md#lod-blocks-built-by-terrain,
    /// docs/reference/engines.md#the-hot-path): their loaded and built events drained as
    /// `WsChunkEvent`s with their level, and a built block's cells read back with
    /// `ws_game_terrain(level)`, equal to the block the terrain holds and hashing to its event.
    #[test]
    fn lod_blocks_drain_as_chunk_events_and_their_cells_read_back_by_level() {
        let scene = serde_json::json!({
            "kits": [
                {"id": "world.ground"},
                {"id": "world.streaming", "config": {"chunkSize": 32, "radius": 1, "budgetMs": 9,
                    "lod": [{"step": 2, "radius": 3}], "lodBudget": 16}},
                {"id": "world.terrain", "config": {"seed": 7, "cellsPerChunk": 8, "workers": 1}}
            ],
            "entities": [{"id": "hero", "tags": ["player"], "position": {"x": 16, "z": 16}}]
        })
        .to_string();
        let (_, game, _) = new_game(&scene);
        tick(game, 6);
        let events = drain_chunks_once(game, 1000);
        let loaded: Vec<(i64, i64)> = events
            .iter()
            .filter(|e| e.kind == WS_CHUNK_EVENT_LOD_LOADED)
            .map(|e| {
                assert_eq!((e.level, e.hash), (1, 0));
                (e.x, e.z)
            })
            .collect();
        // Level 1 (step 2, radius 3) around chunk (0, 0): blocks -2..=1 each way but block
        // (0, 0), wholly inside the radius-1 square.
        assert_eq!(loaded.len(), 15, "{loaded:?}");
        assert!(!loaded.contains(&(0, 0)));
        let built: Vec<&WsChunkEvent> = events
            .iter()
            .filter(|e| e.kind == WS_CHUNK_EVENT_LOD_BUILT)
            .collect();
        assert_eq!(built.len(), 15);
        for e in built {
            assert_eq!(e.level, 1);
            let (status, cells, heights, materials, message) = terrain(game, e.x, e.z, 1, 64);
            assert_eq!((status, cells), (WsStatus::Ok, 64), "{message}");
            let mut bytes: Vec<u8> = heights.iter().flat_map(|h| h.to_le_bytes()).collect();
            bytes.extend(&materials);
            assert_eq!(crate::hash::fnv1a64(&bytes), e.hash);
            let data = with_game(game, |g| {
                let t = g.engine().service::<dyn TerrainService>(TERRAIN).unwrap();
                Ok(t.lod_block(1, e.x, e.z).unwrap())
            })
            .unwrap();
            assert_eq!(data.hash(), e.hash);
        }
        // The carved block, and a level not in force, are not built.
        assert_eq!(terrain(game, 0, 0, 1, 64).0, WsStatus::NotBuilt);
        assert_eq!(terrain(game, -1, -1, 2, 64).0, WsStatus::NotBuilt);
        free_game(game);
    }

    #[test]
    fn terrain_keeps_the_buffer_contract_and_says_what_is_not_built() {
        let (_, game, _) = new_game(&terrain_scene());
        tick(game, 4); // (0, 0) loaded at tick 1, committed at tick 3
                       // Too small: the count, nothing written.
        let (status, cells, heights, materials, message) = terrain(game, 0, 0, 0, 63);
        assert_eq!((status, cells), (WsStatus::BufferTooSmall, 64), "{message}");
        assert_eq!(
            message,
            "the buffers hold 63 cells; 64 are needed (cellsPerChunk²)"
        );
        assert!(heights.iter().all(|h| *h == 0xBEEF) && materials.iter().all(|m| *m == 0xA5));
        // Room for more: exactly 64 written.
        let (status, cells, heights, materials, _) = terrain(game, 0, 0, 0, 70);
        assert_eq!((status, cells), (WsStatus::Ok, 64));
        assert!(heights[64..].iter().all(|h| *h == 0xBEEF));
        assert!(materials[64..].iter().all(|m| *m == 0xA5));
        assert!(heights[..64].iter().any(|h| *h != 0xBEEF));
        // Not built: far away, and any LOD level (not built on this branch).
        let (status, cells, heights, _, message) = terrain(game, 40, 40, 0, 64);
        assert_eq!((status, cells), (WsStatus::NotBuilt, 64));
        assert_eq!(message, "chunk (40, 40) is not built");
        assert!(heights.iter().all(|h| *h == 0xBEEF));
        let (status, cells, _, _, message) = terrain(game, 0, 0, 1, 64);
        assert_eq!((status, cells), (WsStatus::NotBuilt, 64));
        assert_eq!(message, "LOD block (0, 0) of level 1 is not built");
        // The count only; one buffer only.
        let mut cells = 0usize;
        let mut only = vec![0u8; 64];
        // SAFETY: null buffers with capacity 0; then one buffer of 64 cells.
        unsafe {
            let none = std::ptr::null_mut();
            let status =
                ws_game_terrain(game, 0, 0, 0, none, none.cast(), 0, &mut cells, none.cast());
            assert_eq!((status, cells), (WsStatus::Ok, 64));
            let status = ws_game_terrain(
                game,
                0,
                0,
                0,
                std::ptr::null_mut(),
                only.as_mut_ptr(),
                64,
                &mut cells,
                std::ptr::null_mut(),
            );
            assert_eq!(status, WsStatus::Ok);
            let status = ws_game_terrain(
                game,
                0,
                0,
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                64,
                &mut cells,
                std::ptr::null_mut(),
            );
            assert_eq!(status, WsStatus::NullArgument);
        }
        assert_eq!(only, terrain(game, 0, 0, 0, 64).3);
        free_game(game);
        let (status, cells, _, _, _) = terrain(game, 0, 0, 0, 64);
        assert_eq!((status, cells), (WsStatus::InvalidHandle, 0));
        // No world.terrain in the scene.
        let (_, plain, _) =
            new_game(r#"{"kits":[{"id":"world.ground"},{"id":"world.streaming"}],"entities":[]}"#);
        let (status, cells, _, _, message) = terrain(plain, 0, 0, 0, 64);
        assert_eq!((status, cells), (WsStatus::NoTerrain, 0));
        assert_eq!(message, "the scene does not enable the world.terrain kit");
        free_game(plain);
    }
}
