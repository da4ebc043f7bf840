// The first proof that the wasm build (scripts/build-web.sh) runs: the module is instantiated with
// no imports, drives a shipped example scene through the C ABI exactly as C does (strings passed
// in through ws_alloc'd memory, every string handed out freed with ws_string_free), returns to its
// count of live allocations, and refuses what the web build leaves out with the book's messages
// (docs/reference/web.md#lua-mods-need-the-native-build, docs/reference/web.md#no-file-system).
// Run: scripts/build-web.sh && node --test web/
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, existsSync } from "node:fs";

const root = new URL("../", import.meta.url);
const wasmPath = new URL("target/wasm32-unknown-unknown/release/world_streaming.wasm", root);

function load() {
  assert.ok(
    existsSync(wasmPath),
    `${wasmPath.pathname} is missing: build it with scripts/build-web.sh`,
  );
  const module = new WebAssembly.Module(readFileSync(wasmPath));
  // The module needs nothing from its host: no imports at all.
  assert.deepEqual(WebAssembly.Module.imports(module), []);
  return new WebAssembly.Instance(module, {}).exports;
}

/** The C ABI seen from JS: NUL-terminated strings in and out, out-pointers in scratch memory. */
function abi(x) {
  const enc = new TextEncoder();
  const dec = new TextDecoder("utf-8", { fatal: true });
  const u8 = () => new Uint8Array(x.memory.buffer);
  const view = () => new DataView(x.memory.buffer);
  // A C string in the module's memory, for the length of `f`.
  const withString = (text, f) => {
    const bytes = enc.encode(text);
    const len = bytes.length + 1;
    const ptr = x.ws_alloc(len);
    assert.notEqual(ptr, 0, "ws_alloc");
    u8().set(bytes, ptr);
    u8()[ptr + bytes.length] = 0;
    try {
      return f(ptr);
    } finally {
      x.ws_dealloc(ptr, len);
    }
  };
  // Reads and frees a string the library handed out (the pointer stored at `slot`).
  const takeString = (slot) => {
    const ptr = view().getUint32(slot, true);
    if (ptr === 0) return null;
    const mem = u8();
    let end = ptr;
    while (mem[end] !== 0) end++;
    const text = dec.decode(mem.subarray(ptr, end));
    assert.equal(x.ws_string_free(ptr), 0, "ws_string_free");
    return text;
  };
  // Scratch for out-pointers: an 8-byte handle and two 4-byte string pointers.
  const withOut = (f) => {
    const ptr = x.ws_alloc(16);
    try {
      return f(ptr, ptr + 8, ptr + 12);
    } finally {
      x.ws_dealloc(ptr, 16);
    }
  };
  const status = (s) => {
    const p = x.ws_status_name(s);
    const mem = u8();
    let end = p;
    while (mem[end] !== 0) end++;
    return dec.decode(mem.subarray(p, end));
  };
  // Runs a call whose last argument is `char **out_error`; throws its message on an error.
  const call = (name, errSlot, f) => {
    const s = f();
    const message = takeString(errSlot);
    if (s !== 0) throw Object.assign(new Error(message ?? ""), { name: status(s) });
    assert.equal(message, null, `${name}: no message on success`);
  };
  return {
    newGame(scene) {
      return withOut((game, _json, err) =>
        withString(scene, (s) =>
          withString(".", (base) => {
            call("ws_game_new", err, () => x.ws_game_new(s, base, game, err));
            return view().getBigUint64(game, true);
          }),
        ),
      );
    },
    tick(game, n) {
      withOut((_g, _json, err) => call("ws_game_tick", err, () => x.ws_game_tick(game, BigInt(n), err)));
    },
    json(name, game) {
      return withOut((_g, json, err) => {
        call(name, err, () => x[name](game, json, err));
        return JSON.parse(takeString(json));
      });
    },
    free(game) {
      withOut((_g, _json, err) => call("ws_game_free", err, () => x.ws_game_free(game, err)));
    },
  };
}

const scene = (name) => readFileSync(new URL(`examples/scenes/${name}`, root), "utf8");

test("a shipped scene runs, its events drain, and nothing it allocated stays live", () => {
  const x = load();
  const ws = abi(x);
  const round = () => {
    const game = ws.newGame(scene("defaults.json"));
    ws.tick(game, 5);
    const events = ws.json("ws_game_drain_events", game);
    assert.ok(events.length > 0, "ticks emit events");
    assert.deepEqual(Object.keys(events[0]), ["tick", "event", "data"]);
    assert.ok(events.some((e) => e.event === "world.chunk.loaded"), JSON.stringify(events[0]));
    assert.deepEqual(ws.json("ws_game_drain_log", game), []);
    const state = ws.json("ws_game_state", game);
    assert.equal(state.tick, 5);
    ws.free(game);
    return events;
  };
  // The first round makes the lazy registries (the game table, the string set); a second
  // round must give back everything it took.
  const first = round();
  const before = x.ws_live_allocations();
  const second = round();
  assert.equal(x.ws_live_allocations(), before, "live allocations after a second round");
  assert.deepEqual(second, first, "the same scene gives the same events");
  // An allocation of the caller's own is counted while live.
  const p = x.ws_alloc(10);
  assert.equal(x.ws_live_allocations(), before + 1);
  x.ws_dealloc(p, 10);
  assert.equal(x.ws_live_allocations(), before);
});

test("a terrain scene that asks for workers runs inline: no thread, chunks built at their commit tick", () => {
  const x = load();
  const ws = abi(x);
  // examples/scenes/terrain.json says `"workers": 0` (the cores less one): no thread on wasm.
  const game = ws.newGame(scene("terrain.json"));
  ws.tick(game, 12);
  const events = ws.json("ws_game_drain_events", game);
  const built = events.filter((e) => e.event === "world.terrain.built");
  assert.ok(built.length > 0, "chunks are built");
  // Inline, a chunk is built at its commit tick (commitLatency 2): none before tick 3.
  assert.ok(built.every((e) => e.tick >= 3), JSON.stringify(built[0]));
  const state = ws.json("ws_game_state", game);
  assert.equal(state.tick, 12);
  ws.free(game);
});

test("a Lua mod is refused at start, naming the mod", () => {
  const ws = abi(load());
  const s = JSON.parse(scene("defaults.json"));
  s.mods = ["mods/first.lua", "mods/keep_home.lua"];
  assert.throws(() => ws.newGame(JSON.stringify(s)), (e) => {
    assert.equal(e.name, "WS_STATUS_BAD_SCENE");
    assert.equal(
      e.message,
      "scene: mods[0]: Lua mods need the native build (this build has JSON mods only)\n" +
        "scene: mods[1]: Lua mods need the native build (this build has JSON mods only)",
    );
    return true;
  });
});

test("a worldDir is refused at start, naming the key", () => {
  const ws = abi(load());
  const s = JSON.parse(scene("defaults.json"));
  s.kits.push({ id: "world.terrain", config: { worldDir: "world" } });
  assert.throws(() => ws.newGame(JSON.stringify(s)), (e) => {
    assert.equal(e.name, "WS_STATUS_BAD_SCENE");
    assert.equal(
      e.message,
      "scene: kits[3].config.worldDir: a world directory needs a file system (this build has none)",
    );
    return true;
  });
});
