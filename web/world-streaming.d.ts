// world-streaming.d.ts: the types of world-streaming.js, the world.streaming kit's wasm build
// driven from JavaScript (docs/web.md#the-javascript-api).

/** The kinds of a chunk event (`WsChunkEvent.kind`, the C header's `WS_CHUNK_EVENT_*`). */
export declare const ChunkEventKind: Readonly<{
  /** `world.chunk.loaded {x, z}`. */
  LOADED: 0;
  /** `world.chunk.unloaded {x, z}`. */
  UNLOADED: 1;
  /** `world.terrain.built {x, z, hash}`. */
  BUILT: 2;
  /** `world.terrain.changed {x, z}` (with `level` for an LOD block). */
  CHANGED: 3;
  /** `world.lod.loaded {level, x, z}`. */
  LOD_LOADED: 4;
  /** `world.lod.unloaded {level, x, z}`. */
  LOD_UNLOADED: 5;
  /** `world.terrain.lod.built {level, x, z, hash}`. */
  LOD_BUILT: 6;
  /** `world.chunk.complete {x, z}`: the chunk and its neighbours within `neighbours` rings are loaded and built. */
  COMPLETE: 7;
  /** `world.chunk.incomplete {x, z}`: a chunk complete at the end of the last tick is loaded but not complete now. */
  INCOMPLETE: 8;
  /** `world.column.loaded {x, z}`: the first section of a column loaded (only with `vertical`; `y` 0). */
  COLUMN_LOADED: 9;
  /** `world.column.unloaded {x, z}`: the last section of a column released (only with `vertical`; `y` 0). */
  COLUMN_UNLOADED: 10;
}>;

/** The name of a status of the C ABI (`include/world_streaming.h`'s `WsStatus`). */
export type StatusName =
  | "WS_STATUS_NULL_ARGUMENT"
  | "WS_STATUS_INVALID_UTF8"
  | "WS_STATUS_INVALID_HANDLE"
  | "WS_STATUS_POISONED"
  | "WS_STATUS_BAD_SCENE"
  | "WS_STATUS_BAD_INPUT"
  | "WS_STATUS_INPUT_FAILED"
  | "WS_STATUS_NO_STREAMING"
  | "WS_STATUS_SAVE_FAILED"
  | "WS_STATUS_LOAD_FAILED"
  | "WS_STATUS_OUT_OF_RANGE"
  | "WS_STATUS_BUFFER_TOO_SMALL"
  | "WS_STATUS_NO_SUCH_VARIABLE"
  | "WS_STATUS_UNKNOWN_STRING"
  | "WS_STATUS_PANIC"
  | "WS_STATUS_NOT_BUILT"
  | "WS_STATUS_WORLD_IN_USE"
  | "WS_STATUS_EDITS_LOST"
  | "WS_STATUS_NO_TERRAIN"
  | "WS_STATUS_NO_SUCH_ENTITY"
  | "WS_STATUS_NOT_COMPLETE"
  | "WS_STATUS_UNKNOWN";

/**
 * What every method throws when the C ABI answers an error status: `name` is the status's name
 * (`WS_STATUS_BAD_SCENE`), `status` its number, `message` the ABI's message. A `Game` used after
 * `free()` throws one named `WS_STATUS_INVALID_HANDLE`. (Arguments of the wrong JavaScript type
 * throw a `TypeError` or `RangeError` before the module is called.)
 */
export declare class WorldStreamingError extends Error {
  /** The status's name, e.g. `WS_STATUS_BAD_INPUT`. */
  name: StatusName;
  /** The status's number, e.g. 6. */
  status: number;
}

/** One entry of the event log: a line of the native `run --events` file, as an object. */
export interface LogEvent {
  /** The tick that emitted it (0 before the first tick). */
  tick: number;
  /** The event's name, e.g. `world.chunk.loaded`. */
  event: string;
  /** Its payload, e.g. `{x: 0, z: 0}` (a hash as its 16 hex digits). */
  data: any;
}

/**
 * The chunk events of one drain, one typed array per field of the C struct
 * `WsChunkEvent {int32_t kind; uint32_t level; int64_t x; int64_t z; uint64_t hash; int64_t y}`:
 * event `i` is `kind[i]`, `level[i]`, `x[i]`, `y[i]`, `z[i]`, `hash[i]`, for `i < count`, in
 * emission order.
 */
export interface ChunkEvents {
  /** How many events (every array's length). */
  count: number;
  /** One of `ChunkEventKind`. */
  kind: Int32Array;
  /** 0 for a chunk; the LOD level (1 = the first `lod` entry) for a block. */
  level: Uint32Array;
  /** Column of the chunk (or block), exact as the C `int64_t` (`Number(x[i])` for arithmetic). */
  x: BigInt64Array;
  /**
   * Section row of the chunk with `vertical` on (docs/web.md#vertical-sections-in-javascript);
   * 0 without it, and for the column, terrain and LOD kinds.
   */
  y: BigInt64Array;
  /** Row of the chunk (or block), exact as the C `int64_t`. */
  z: BigInt64Array;
  /**
   * FNV-1a 64 of the built bytes for `BUILT` and `LOD_BUILT`, else 0: the built event's `hash`,
   * whose 16 hex digits are `hash[i].toString(16).padStart(16, "0")`.
   */
  hash: BigUint64Array;
}

/** The cells of a built chunk or LOD block, in row order (cell `(i, j)` at `j * cellsPerChunk + i`). */
export interface Terrain {
  /** Heights, 0..=65535, `cellsPerChunk²` of them. */
  heights: Uint16Array;
  /** Materials, `cellsPerChunk²` of them. */
  materials: Uint8Array;
}

/**
 * A bordered snapshot of a chunk (`Game.snapshot`): `side × side` cells, `side = cellsPerChunk +
 * 2·skin`, in row order (cell `(i, j)` at `j * side + i`, `i` east, `j` north), the chunk's own
 * first cell at `(skin, skin)`, and the chunk's version when it was taken.
 */
export interface Snapshot {
  /** Heights, 0..=65535, `side²` of them. */
  heights: Uint16Array;
  /** Materials, `side²` of them. */
  materials: Uint8Array;
  /** `cellsPerChunk + 2·skin`. */
  side: number;
  /** The skin asked for. */
  skin: number;
  /** The chunk's version (1 at its commit, one more at each edit of it or of a neighbour). */
  version: number;
}

/** A scene, an input line or a save: its JSON text, or the object that text stands for. */
export type JsonText = string | object;

/** A game of the module. Free it with `free()`; every call after that throws. */
export declare class Game {
  private constructor();
  /** Whether `free()` was called. */
  readonly freed: boolean;
  /**
   * Applies one input line in the inputs file's format (`ws_game_apply`), as text or an object:
   * `{tick: 1, do: "move", entity: "hero", to: {x: 40, z: 8}}`. An input stamped `t` belongs before
   * tick `t`: a line stamped later than the next tick to run throws `WS_STATUS_BAD_INPUT`; one
   * that cannot be applied (an unknown entity) `WS_STATUS_INPUT_FAILED`.
   */
  apply(line: JsonText): void;
  /** Runs `n` ticks (`ws_game_tick`; default 1). */
  tick(n?: number | bigint): void;
  /** The last tick that ran, 0 before the first (`ws_game_tick_count`). */
  tickCount(): number;
  /**
   * Moves entity `id` to `(x, y, z)` as a `move` input stamped with the next tick would, without
   * JSON (`ws_game_move`): the per-frame transform sync.
   */
  move(id: string, x: number, y: number, z: number): void;
  /**
   * The events emitted since the last drain, in emission order (`ws_game_drain_events`): line by
   * line what the native `run --events` file holds. The game keeps every event until drained.
   * Chunk events already taken by `drainChunkEvents` are not in it.
   */
  drainEvents(): LogEvent[];
  /**
   * The chunk events emitted since the last drain, without JSON (`ws_game_drain_chunk_events`).
   * They are no longer in what `drainEvents` hands out; every other event stays there in order.
   */
  drainChunkEvents(): ChunkEvents;
  /** The state document (`ws_game_state`), e.g. `{tick, scene, loaded, …}`. */
  state(): any;
  /**
   * A numeric engine variable, e.g. `world.chunks.pending` (`ws_game_variable`); an unknown name
   * throws `WS_STATUS_NO_SUCH_VARIABLE`.
   */
  variable(name: string): number;
  /**
   * The cells of built chunk `(x, z)` (`level` 0, the default) or of built LOD block `(x, z)` of
   * `level` ≥ 1 (`ws_game_terrain`), or `null` when it is not built (not loaded yet, still
   * generating, released). A scene without `world.terrain` throws `WS_STATUS_NO_TERRAIN`.
   */
  terrain(x: number | bigint, z: number | bigint, level?: number): Terrain | null;
  /**
   * Whether section `(x, y, z)` is loaded (`ws_game_is_loaded_section`): with `vertical` on the
   * section of row `y` of column `(x, z)`; without `vertical` only row 0 exists. A scene without
   * `world.streaming` throws `WS_STATUS_NO_STREAMING`.
   */
  isLoadedSection(x: number | bigint, y: number | bigint, z: number | bigint): boolean;
  /**
   * Whether chunk `(x, z)` is complete (`ws_game_is_complete`): it and every chunk within
   * `neighbours` rings of it that overlaps the ground are loaded and built (with `neighbours` 0:
   * the chunk itself). A scene without `world.streaming` throws `WS_STATUS_NO_STREAMING`.
   */
  isComplete(x: number | bigint, z: number | bigint): boolean;
  /**
   * A bordered snapshot of chunk `(x, z)` with `skin` (0..=8, at most `cellsPerChunk`; default 0)
   * taken in one call (`ws_game_terrain_snapshot`). A chunk that is not complete (with skin 0: not
   * built) throws `WS_STATUS_NOT_COMPLETE`; a skin out of range `WS_STATUS_OUT_OF_RANGE`; a scene
   * without `world.terrain` `WS_STATUS_NO_TERRAIN`.
   */
  snapshot(x: number | bigint, z: number | bigint, skin?: number): Snapshot;
  /**
   * The version of built chunk `(x, z)` (`ws_game_terrain_version`), or `null` when it is not
   * built: a mesh made from a snapshot whose `version` is no longer this one is stale.
   */
  terrainVersion(x: number | bigint, z: number | bigint): number | null;
  /** The game saved as JSON text (`ws_game_save_text`), for `loadText`. */
  saveText(): string;
  /**
   * Loads a save made by `saveText` (`ws_game_load_text`), the tick counter included, with every
   * check of a file load: a bad save throws `WS_STATUS_LOAD_FAILED` and leaves the game unchanged.
   */
  loadText(text: JsonText): void;
  /** Frees the game (`ws_game_free`). Every later call, `free()` included, throws. */
  free(): void;
}

/** The wasm module: makes games. */
export declare class WorldStreaming {
  private constructor();
  /**
   * Loads and instantiates `world_streaming.wasm`: `source` is its bytes, a compiled module, a
   * `Response` of `fetch` (not yet read), or a URL to fetch (a `URL` or a string, relative to the page's base URL, in Node to the current
   * directory). In Node a `file:` URL is read from disk (Node's `fetch` cannot read files). Without
   * `source`, the `world_streaming.wasm` beside `world-streaming.js` (where the package has it).
   */
  static instantiate(
    source?: Uint8Array | ArrayBuffer | ArrayBufferView | WebAssembly.Module | Response | URL | string,
  ): Promise<WorldStreaming>;
  /** The version of the `world.streaming` kit the module runs (`ws_version`), e.g. `1.8.0`. */
  readonly version: string;
  /** The name of a status number (`ws_status_name`). */
  statusName(status: number): StatusName | "WS_STATUS_OK";
  /**
   * How many of the module's allocations are live: equal before and after any sequence of calls
   * that frees the games it makes (nothing leaks).
   */
  liveAllocations(): number;
  /**
   * A new game (`ws_game_new_with_files`) from the scene file's JSON text or object. `files`
   * stands for the scene's directory, relative path → text: its JSON mods and district files are
   * read from it and nowhere else. The first scene is entered; no tick has run. A refused scene
   * throws `WS_STATUS_BAD_SCENE` with every problem in the message.
   */
  newGame(scene: JsonText, files?: Record<string, string>): Game;
}

export default WorldStreaming;
