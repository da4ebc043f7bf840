// world-streaming.js: the world.streaming kit in a browser or in Node, over the wasm build of
// the crate (docs/web.md#the-javascript-api). An ES module with no dependency and no build step:
// it loads `world_streaming.wasm` and drives the C ABI it exports
// (docs/reference/engines.md#c-abi-rules), the functions `include/world_streaming.h` declares,
// through the module's allocator pair for the strings and buffers it passes in. Every string
// the module hands out is read and freed here, and every buffer allocated here is freed before
// the call that needed it returns.

/**
 * The byte size of one `WsChunkEvent` record: `{int32 kind; uint32 level; int64 x; int64 z;
 * uint64 hash; int64 y}` (`y` last, docs/web.md#vertical-sections-in-javascript).
 */
const CHUNK_EVENT_BYTES = 40;
/** How many chunk events one `ws_game_drain_chunk_events` call may take. */
const CHUNK_EVENT_BATCH = 1024;
const STATUS_OK = 0;
const STATUS_INVALID_HANDLE = 3;
const STATUS_NOT_BUILT = 16;
const U64_MAX = (1n << 64n) - 1n;
const I64_MIN = -(1n << 63n);
const I64_MAX = (1n << 63n) - 1n;

/** The functions the module must export; a module without one of them is refused at once. */
const REQUIRED_EXPORTS = [
  "memory",
  "ws_alloc",
  "ws_dealloc",
  "ws_version",
  "ws_status_name",
  "ws_string_free",
  "ws_live_allocations",
  "ws_game_new_with_files",
  "ws_game_free",
  "ws_game_apply",
  "ws_game_tick",
  "ws_game_tick_count",
  "ws_game_move",
  "ws_game_drain_events",
  "ws_game_drain_chunk_events",
  "ws_game_state",
  "ws_game_variable",
  "ws_game_terrain",
  "ws_game_is_loaded_section",
  "ws_game_is_complete",
  "ws_game_terrain_snapshot",
  "ws_game_terrain_version",
  "ws_game_save_text",
  "ws_game_load_text",
];

/** The kinds of `WsChunkEvent` (the header's `WS_CHUNK_EVENT_*`). */
export const ChunkEventKind = Object.freeze({
  LOADED: 0,
  UNLOADED: 1,
  BUILT: 2,
  CHANGED: 3,
  LOD_LOADED: 4,
  LOD_UNLOADED: 5,
  LOD_BUILT: 6,
  COMPLETE: 7,
  INCOMPLETE: 8,
  COLUMN_LOADED: 9,
  COLUMN_UNLOADED: 10,
});

/**
 * An error status of the C ABI: `name` is the status's name (`WS_STATUS_BAD_SCENE`), `status`
 * its number, `message` the ABI's message.
 */
export class WorldStreamingError extends Error {
  constructor(status, name, message) {
    super(message);
    this.name = name;
    this.status = status;
  }
}

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8");

function isNode() {
  return typeof process === "object" && process !== null && typeof process.versions?.node === "string";
}

/** The module's bytes (or compiled module) from what `instantiate` was given. */
async function moduleFrom(source) {
  if (source instanceof WebAssembly.Module) {
    return source;
  }
  if (source instanceof ArrayBuffer || ArrayBuffer.isView(source)) {
    return WebAssembly.compile(source);
  }
  if (typeof Response === "function" && source instanceof Response) {
    return compileResponse(source, source.url || "the response");
  }
  let url;
  if (source instanceof URL) {
    url = source;
  } else if (typeof source === "string") {
    const base =
      typeof document === "object" && document !== null && document.baseURI
        ? document.baseURI
        : isNode()
          ? (await import("node:url")).pathToFileURL(process.cwd() + "/").href
          : undefined;
    url = new URL(source, base);
  } else {
    throw new TypeError(
      "WorldStreaming.instantiate: expected a Uint8Array, an ArrayBuffer, a WebAssembly.Module, a fetch Response, a URL or a URL string, got " +
        describe(source),
    );
  }
  if (url.protocol === "file:" && isNode()) {
    // Node's fetch cannot read file: URLs: read the file.
    const { readFile } = await import("node:fs/promises");
    return WebAssembly.compile(await readFile(url));
  }
  return compileResponse(await fetch(url), url.href);
}

async function compileResponse(response, name) {
  if (!response.ok) {
    throw new Error(`WorldStreaming.instantiate: ${name}: HTTP ${response.status} ${response.statusText}`);
  }
  return WebAssembly.compile(await response.arrayBuffer());
}

function describe(value) {
  if (value === null) return "null";
  if (typeof value === "object") return value.constructor?.name ?? "an object";
  return typeof value;
}

/** The wasm module and its C ABI: makes games. */
export class WorldStreaming {
  #abi;

  /**
   * Loads the wasm module: `source` is its bytes (`Uint8Array`, `ArrayBuffer`), a compiled
   * `WebAssembly.Module`, a `Response` of `fetch`, or a URL (a `URL` or a string, resolved against the page, or in Node
   * against the current directory) to fetch; in Node a `file:` URL is read from disk. Without
   * `source`, the `world_streaming.wasm` beside this file.
   */
  static async instantiate(source = new URL("./world_streaming.wasm", import.meta.url)) {
    const module = await moduleFrom(source);
    const imports = WebAssembly.Module.imports(module);
    if (imports.length > 0) {
      const names = imports.map((i) => `${i.module}.${i.name}`).join(", ");
      throw new Error(`WorldStreaming.instantiate: the module imports ${names}; world_streaming.wasm imports nothing`);
    }
    const instance = await WebAssembly.instantiate(module, {});
    const missing = REQUIRED_EXPORTS.filter((name) => !(name in instance.exports));
    if (missing.length > 0) {
      throw new Error(
        `WorldStreaming.instantiate: the module does not export ${missing.join(", ")}: is it world_streaming.wasm of this version?`,
      );
    }
    return new WorldStreaming(new Abi(instance.exports));
  }

  /** @private Use `WorldStreaming.instantiate`. */
  constructor(abi) {
    if (!(abi instanceof Abi)) {
      throw new TypeError("use WorldStreaming.instantiate(…) to make a WorldStreaming");
    }
    this.#abi = abi;
  }

  /** The version of the `world.streaming` kit the module runs (`ws_version`). */
  get version() {
    return this.#abi.staticString(this.#abi.fn.ws_version() >>> 0);
  }

  /** The name of a status number (`ws_status_name`): `WS_STATUS_BAD_INPUT`, or `WS_STATUS_UNKNOWN`. */
  statusName(status) {
    return this.#abi.statusName(status);
  }

  /**
   * How many allocations of the module are live (its allocation counter): the same number before
   * and after any sequence of calls that frees every game it makes.
   */
  liveAllocations() {
    return this.#abi.liveAllocations();
  }

  /**
   * A new game (`ws_game_new_with_files`): `scene` is the scene file's JSON text or an object;
   * `files` an object of relative path → text standing for the scene's directory (its mods and
   * district files). Throws a `WorldStreamingError` (`WS_STATUS_BAD_SCENE`, …) when the scene is
   * refused.
   */
  newGame(scene, files = {}) {
    const sceneText = jsonText(scene, "scene");
    if (files === null || typeof files !== "object" || Array.isArray(files)) {
      throw new TypeError(`newGame: files: expected an object of relative path → text, got ${describe(files)}`);
    }
    const filesText = JSON.stringify(files);
    const abi = this.#abi;
    const handle = abi.call((f) => {
      const out = f.alloc(8, 8);
      f.check(abi.fn.ws_game_new_with_files(f.string(sceneText, "scene"), f.string(filesText, "files"), out, f.error));
      return f.u64(out);
    });
    return new Game(abi, handle, GAME_KEY);
  }
}

const GAME_KEY = Symbol("Game");

/** A game of the module: free it with `free()` when done. */
export class Game {
  #abi;
  #handle;

  /** @private Use `WorldStreaming#newGame`. */
  constructor(abi, handle, key) {
    if (key !== GAME_KEY) {
      throw new TypeError("use worldStreaming.newGame(…) to make a Game");
    }
    this.#abi = abi;
    this.#handle = handle;
  }

  /** The handle, or a throw when the game was freed. */
  #live(what) {
    if (this.#handle === null) {
      throw new WorldStreamingError(
        STATUS_INVALID_HANDLE,
        this.#abi.statusName(STATUS_INVALID_HANDLE),
        `${what}: this game was freed (free() was called); make a new one with newGame`,
      );
    }
    return this.#handle;
  }

  /** Whether `free()` was called. */
  get freed() {
    return this.#handle === null;
  }

  /**
   * Applies one input line (`ws_game_apply`): its JSON text or an object,
   * `{tick: 1, do: "move", entity: "hero", to: {x: 40, z: 8}}`. A line stamped later than the
   * next tick to run is refused.
   */
  apply(line) {
    const handle = this.#live("apply");
    const text = jsonText(line, "apply: line");
    const abi = this.#abi;
    abi.call((f) => f.check(abi.fn.ws_game_apply(handle, f.string(text, "line"), f.error)));
  }

  /** Runs `n` ticks (`ws_game_tick`). */
  tick(n = 1) {
    const handle = this.#live("tick");
    const count = unsigned64(n, "tick: n");
    const abi = this.#abi;
    abi.call((f) => f.check(abi.fn.ws_game_tick(handle, count, f.error)));
  }

  /** The last tick that ran (0 before the first), `ws_game_tick_count`. */
  tickCount() {
    const handle = this.#live("tickCount");
    const abi = this.#abi;
    return abi.call((f) => {
      const out = f.alloc(8, 8);
      f.check(abi.fn.ws_game_tick_count(handle, out, f.error));
      return Number(f.u64(out));
    });
  }

  /** Moves entity `id` to `(x, y, z)` as a `move` input stamped with the next tick (`ws_game_move`). */
  move(id, x, y, z) {
    const handle = this.#live("move");
    if (typeof id !== "string") {
      throw new TypeError(`move: id: expected a string, got ${describe(id)}`);
    }
    for (const [name, v] of [["x", x], ["y", y], ["z", z]]) {
      if (typeof v !== "number") {
        throw new TypeError(`move: ${name}: expected a number, got ${describe(v)}`);
      }
    }
    const abi = this.#abi;
    abi.call((f) => f.check(abi.fn.ws_game_move(handle, f.string(id, "id"), x, y, z, f.error)));
  }

  /**
   * The events emitted since the last drain, in emission order, as the event log's objects
   * `{tick, event, data}` (`ws_game_drain_events`): line by line what the native `--events` file
   * holds. Chunk events taken by `drainChunkEvents` are not in it.
   */
  drainEvents() {
    const handle = this.#live("drainEvents");
    const abi = this.#abi;
    return JSON.parse(abi.call((f) => f.outString((out) => abi.fn.ws_game_drain_events(handle, out, f.error))));
  }

  /**
   * The chunk events emitted since the last drain, in emission order, as one typed array per
   * `WsChunkEvent` field (`ws_game_drain_chunk_events`): event `i` is `kind[i]` (a
   * `ChunkEventKind`), `level[i]`, `x[i]`, `y[i]`, `z[i]`, `hash[i]`; `count` of them (`y` the
   * section row with `vertical` on, else 0). They are no longer in what `drainEvents` hands out.
   */
  drainChunkEvents() {
    const handle = this.#live("drainChunkEvents");
    const abi = this.#abi;
    const batches = abi.call((f) => {
      const buffer = f.alloc(CHUNK_EVENT_BATCH * CHUNK_EVENT_BYTES, 8);
      const countAt = f.alloc(4, 4);
      const out = [];
      for (;;) {
        f.check(abi.fn.ws_game_drain_chunk_events(handle, buffer, CHUNK_EVENT_BATCH, countAt, f.error));
        const count = f.u32(countAt);
        out.push(abi.bytes(buffer, count * CHUNK_EVENT_BYTES));
        if (count < CHUNK_EVENT_BATCH) {
          return out;
        }
      }
    });
    const count = batches.reduce((n, b) => n + b.length / CHUNK_EVENT_BYTES, 0);
    const events = {
      count,
      kind: new Int32Array(count),
      level: new Uint32Array(count),
      x: new BigInt64Array(count),
      y: new BigInt64Array(count),
      z: new BigInt64Array(count),
      hash: new BigUint64Array(count),
    };
    let i = 0;
    for (const batch of batches) {
      const view = new DataView(batch.buffer, batch.byteOffset, batch.byteLength);
      for (let at = 0; at < batch.length; at += CHUNK_EVENT_BYTES, i++) {
        events.kind[i] = view.getInt32(at, true);
        events.level[i] = view.getUint32(at + 4, true);
        events.x[i] = view.getBigInt64(at + 8, true);
        events.z[i] = view.getBigInt64(at + 16, true);
        events.hash[i] = view.getBigUint64(at + 24, true);
        events.y[i] = view.getBigInt64(at + 32, true);
      }
    }
    return events;
  }

  /** The state document as an object (`ws_game_state`). */
  state() {
    const handle = this.#live("state");
    const abi = this.#abi;
    return JSON.parse(abi.call((f) => f.outString((out) => abi.fn.ws_game_state(handle, out, f.error))));
  }

  /** A numeric engine variable, e.g. `world.chunks.pending` (`ws_game_variable`). */
  variable(name) {
    const handle = this.#live("variable");
    if (typeof name !== "string") {
      throw new TypeError(`variable: name: expected a string, got ${describe(name)}`);
    }
    const abi = this.#abi;
    return abi.call((f) => {
      const out = f.alloc(8, 8);
      f.check(abi.fn.ws_game_variable(handle, f.string(name, "name"), out, f.error));
      return f.f64(out);
    });
  }

  /**
   * The cells of built chunk `(x, z)` (`level` 0) or built LOD block `(x, z)` of `level` ≥ 1, in
   * row order (cell `(i, j)` at `j * cellsPerChunk + i`): `{heights, materials}`, or `null` when it
   * is not built (`ws_game_terrain`'s `WS_STATUS_NOT_BUILT`). A scene without `world.terrain` throws
   * `WS_STATUS_NO_TERRAIN`.
   */
  terrain(x, z, level = 0) {
    const handle = this.#live("terrain");
    const cx = signed64(x, "terrain: x");
    const cz = signed64(z, "terrain: z");
    if (!Number.isInteger(level) || level < 0 || level > 0xffffffff) {
      throw new RangeError(`terrain: level: expected an integer 0..=4294967295, got ${String(level)}`);
    }
    const abi = this.#abi;
    return abi.call((f) => {
      const cellsAt = f.alloc(4, 4);
      // The count first (null buffers, capacity 0), then the cells.
      let status = abi.fn.ws_game_terrain(handle, cx, cz, level, 0, 0, 0, cellsAt, f.error);
      if (status === STATUS_NOT_BUILT) {
        f.discardError();
        return null;
      }
      f.check(status);
      const cells = f.u32(cellsAt);
      const heights = f.alloc(2 * cells, 2);
      const materials = f.alloc(cells, 1);
      f.check(abi.fn.ws_game_terrain(handle, cx, cz, level, heights, materials, cells, cellsAt, f.error));
      const heightBytes = abi.bytes(heights, 2 * cells);
      const out = { heights: new Uint16Array(cells), materials: abi.bytes(materials, cells) };
      const view = new DataView(heightBytes.buffer, heightBytes.byteOffset, heightBytes.byteLength);
      for (let i = 0; i < cells; i++) {
        out.heights[i] = view.getUint16(2 * i, true);
      }
      return out;
    });
  }

  /**
   * Whether section `(x, y, z)` is loaded (`ws_game_is_loaded_section`,
   * docs/web.md#vertical-sections-in-javascript): with `vertical` on the section of row `y` of
   * column `(x, z)`; without it only row 0 exists. A scene without `world.streaming` throws
   * `WS_STATUS_NO_STREAMING`.
   */
  isLoadedSection(x, y, z) {
    const handle = this.#live("isLoadedSection");
    const cx = signed64(x, "isLoadedSection: x");
    const cy = signed64(y, "isLoadedSection: y");
    const cz = signed64(z, "isLoadedSection: z");
    const abi = this.#abi;
    return abi.call((f) => {
      const out = f.alloc(1, 1);
      f.check(abi.fn.ws_game_is_loaded_section(handle, cx, cy, cz, out, f.error));
      return f.u8(out) !== 0;
    });
  }

  /**
   * Whether chunk `(x, z)` is complete (`ws_game_is_complete`, docs/web.md#complete-chunks-and-snapshots):
   * it and every chunk within `neighbours` rings of it that overlaps the ground are loaded and
   * built. A scene without `world.streaming` throws `WS_STATUS_NO_STREAMING`.
   */
  isComplete(x, z) {
    const handle = this.#live("isComplete");
    const cx = signed64(x, "isComplete: x");
    const cz = signed64(z, "isComplete: z");
    const abi = this.#abi;
    return abi.call((f) => {
      const out = f.alloc(1, 1);
      f.check(abi.fn.ws_game_is_complete(handle, cx, cz, out, f.error));
      return f.u8(out) !== 0;
    });
  }

  /**
   * A bordered snapshot of chunk `(x, z)` (`ws_game_terrain_snapshot`): the `side²` cells, `side =
   * cellsPerChunk + 2·skin`, of the chunk and the `skin` cells of its 8 neighbours, in row order
   * (cell `(i, j)` at `j * side + i`, the chunk's first cell at `(skin, skin)`), and the chunk's
   * `version`, taken in one call. `skin` is 0..=8 and at most `cellsPerChunk` (else
   * `WS_STATUS_OUT_OF_RANGE`); a chunk that is not complete (with skin 0: not built) throws
   * `WS_STATUS_NOT_COMPLETE`; a scene without `world.terrain` `WS_STATUS_NO_TERRAIN`.
   */
  snapshot(x, z, skin = 0) {
    const handle = this.#live("snapshot");
    const cx = signed64(x, "snapshot: x");
    const cz = signed64(z, "snapshot: z");
    if (!Number.isInteger(skin) || skin < 0 || skin > 0xffffffff) {
      throw new RangeError(`snapshot: skin: expected an integer 0..=4294967295, got ${String(skin)}`);
    }
    const abi = this.#abi;
    return abi.call((f) => {
      const cellsAt = f.alloc(4, 4);
      const versionAt = f.alloc(8, 8);
      // The count first (null buffers, capacity 0), then the cells: nothing runs in between.
      f.check(abi.fn.ws_game_terrain_snapshot(handle, cx, cz, skin, 0, 0, 0, cellsAt, versionAt, f.error));
      const cells = f.u32(cellsAt);
      const heights = f.alloc(2 * cells, 2);
      const materials = f.alloc(cells, 1);
      f.check(abi.fn.ws_game_terrain_snapshot(handle, cx, cz, skin, heights, materials, cells, cellsAt, versionAt, f.error));
      const out = {
        heights: new Uint16Array(cells),
        materials: abi.bytes(materials, cells),
        side: Math.round(Math.sqrt(cells)),
        skin,
        version: Number(f.u64(versionAt)),
      };
      const heightBytes = abi.bytes(heights, 2 * cells);
      const view = new DataView(heightBytes.buffer, heightBytes.byteOffset, heightBytes.byteLength);
      for (let i = 0; i < cells; i++) {
        out.heights[i] = view.getUint16(2 * i, true);
      }
      return out;
    });
  }

  /**
   * The version of built chunk `(x, z)` (`ws_game_terrain_version`): 1 at its commit, one more at
   * each edit of a cell of it or of a neighbour; `null` when it is not built. A mesh made from a
   * snapshot whose `version` is no longer this is stale.
   */
  terrainVersion(x, z) {
    const handle = this.#live("terrainVersion");
    const cx = signed64(x, "terrainVersion: x");
    const cz = signed64(z, "terrainVersion: z");
    const abi = this.#abi;
    return abi.call((f) => {
      const out = f.alloc(8, 8);
      const status = abi.fn.ws_game_terrain_version(handle, cx, cz, out, f.error);
      if (status === STATUS_NOT_BUILT) {
        f.discardError();
        return null;
      }
      f.check(status);
      return Number(f.u64(out));
    });
  }

  /** The game saved as text (`ws_game_save_text`): what `loadText` takes. */
  saveText() {
    const handle = this.#live("saveText");
    const abi = this.#abi;
    return abi.call((f) => f.outString((out) => abi.fn.ws_game_save_text(handle, out, f.error)));
  }

  /**
   * Loads a save made by `saveText` (its text or an object, `ws_game_load_text`), with every check
   * of a file load; on any problem it throws `WS_STATUS_LOAD_FAILED` and the game is unchanged.
   */
  loadText(text) {
    const handle = this.#live("loadText");
    const json = jsonText(text, "loadText: text");
    const abi = this.#abi;
    abi.call((f) => f.check(abi.fn.ws_game_load_text(handle, f.string(json, "text"), f.error)));
  }

  /**
   * Frees the game (`ws_game_free`). Every later call on it, `free()` included, throws
   * `WS_STATUS_INVALID_HANDLE`.
   */
  free() {
    const handle = this.#live("free");
    // Freed whatever the status says (the C ABI frees the game even when it reports an error).
    this.#handle = null;
    const abi = this.#abi;
    abi.call((f) => f.check(abi.fn.ws_game_free(handle, f.error)));
  }
}

/** JSON text from text or a value. */
function jsonText(value, what) {
  if (typeof value === "string") {
    return value;
  }
  if (value === null || typeof value !== "object") {
    throw new TypeError(`${what}: expected JSON text or an object, got ${describe(value)}`);
  }
  return JSON.stringify(value);
}

function unsigned64(n, what) {
  if (typeof n === "bigint" ? n < 0n || n > U64_MAX : !Number.isSafeInteger(n) || n < 0) {
    throw new RangeError(`${what}: expected a whole number 0..=2^64-1 (a bigint above 2^53), got ${String(n)}`);
  }
  return BigInt(n);
}

function signed64(n, what) {
  if (typeof n === "bigint" ? n < I64_MIN || n > I64_MAX : !Number.isSafeInteger(n)) {
    throw new RangeError(`${what}: expected a whole number (a bigint beyond ±2^53), got ${String(n)}`);
  }
  return BigInt(n);
}

/** The module's exports, and the memory they share with this file. */
class Abi {
  constructor(exports) {
    this.fn = exports;
    this.memory = exports.memory;
  }

  staticString(ptr) {
    return this.#read(ptr);
  }

  statusName(status) {
    return this.#read(this.fn.ws_status_name(status) >>> 0);
  }

  liveAllocations() {
    return Number(this.fn.ws_live_allocations() >>> 0);
  }

  /** A copy of `len` bytes of memory at `ptr`. */
  bytes(ptr, len) {
    return new Uint8Array(this.memory.buffer, ptr, len).slice();
  }

  /** The NUL-terminated UTF-8 string at `ptr`. */
  #read(ptr) {
    const heap = new Uint8Array(this.memory.buffer);
    const end = heap.indexOf(0, ptr);
    if (ptr === 0 || end < 0) {
      throw new Error(`the module handed out no NUL-terminated string at ${ptr}`);
    }
    return decoder.decode(heap.subarray(ptr, end));
  }

  /** Reads and frees a string the module handed out (null: `null`). */
  take(ptr) {
    if (ptr === 0) {
      return null;
    }
    const text = this.#read(ptr);
    const status = this.fn.ws_string_free(ptr);
    if (status !== STATUS_OK) {
      throw new Error(`ws_string_free refused a string the module handed out (${this.statusName(status)})`);
    }
    return text;
  }

  /**
   * Runs `body` with a frame whose allocations are freed when it returns or throws: the only
   * way this file allocates in the module's memory.
   */
  call(body) {
    const frame = new Frame(this);
    try {
      return body(frame);
    } finally {
      frame.release();
    }
  }
}

/** The allocations of one call, and the out-pointer every C function ends with. */
class Frame {
  #abi;
  #allocations = [];

  constructor(abi) {
    this.#abi = abi;
    /** The `char **out_error` of the call. */
    this.error = this.alloc(4, 4);
  }

  /**
   * `size` bytes aligned to `align` (a power of two), zeroed, freed with the frame. `ws_alloc`
   * promises alignment 1 only: the block is `align - 1` bytes longer and the pointer rounded up.
   */
  alloc(size, align) {
    const len = Math.max(1, size + align - 1);
    const raw = this.#abi.fn.ws_alloc(len) >>> 0;
    if (raw === 0) {
      throw new Error(`ws_alloc: the module could not allocate ${len} bytes`);
    }
    this.#allocations.push([raw, len]);
    const ptr = ((raw + align - 1) & ~(align - 1)) >>> 0;
    new Uint8Array(this.#abi.memory.buffer, ptr, size).fill(0);
    return ptr;
  }

  /** `text` as a NUL-terminated UTF-8 string in the module's memory. */
  string(text, what) {
    if (text.includes("\0")) {
      throw new TypeError(`${what}: holds a NUL character, which a C string cannot carry`);
    }
    const bytes = encoder.encode(text);
    const ptr = this.alloc(bytes.length + 1, 1);
    new Uint8Array(this.#abi.memory.buffer, ptr, bytes.length).set(bytes);
    return ptr;
  }

  u8(ptr) {
    return new DataView(this.#abi.memory.buffer).getUint8(ptr);
  }

  u32(ptr) {
    return new DataView(this.#abi.memory.buffer).getUint32(ptr, true);
  }

  u64(ptr) {
    return new DataView(this.#abi.memory.buffer).getBigUint64(ptr, true);
  }

  f64(ptr) {
    return new DataView(this.#abi.memory.buffer).getFloat64(ptr, true);
  }

  /** Frees the message of an error status this call handles itself. */
  discardError() {
    this.#abi.take(this.u32(this.error));
  }

  /** Throws the error a status stands for, with the ABI's message (freed). */
  check(status) {
    const message = this.#abi.take(this.u32(this.error));
    if (status !== STATUS_OK) {
      throw new WorldStreamingError(status, this.#abi.statusName(status), message ?? "");
    }
  }

  /** Calls `call(out)` with a `char **out` and returns the string it hands out (freed). */
  outString(call) {
    const out = this.alloc(4, 4);
    let text;
    try {
      this.check(call(out));
    } finally {
      text = this.#abi.take(this.u32(out));
    }
    return text;
  }

  release() {
    for (const [raw, len] of this.#allocations.reverse()) {
      this.#abi.fn.ws_dealloc(raw, len);
    }
    this.#allocations = [];
  }
}

export default WorldStreaming;
