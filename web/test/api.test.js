// world-streaming.js against the built wasm: every function, every error, and no leak.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { pathToFileURL } from "node:url";
import { test } from "node:test";

import WorldStreamingDefault, { ChunkEventKind, Game, WorldStreaming, WorldStreamingError } from "../world-streaming.js";
import { cellBytes, fnv1a64, repoText, thrown, wasmBytes, wasmPath } from "./helpers.js";

const ws = await WorldStreaming.instantiate(wasmBytes());

const SEED = {
  kits: [
    { id: "world.ground" },
    { id: "world.streaming", config: { chunkSize: 32, radius: 1, budgetMs: 2 } },
  ],
  entities: [{ id: "hero", tags: ["player"], position: { x: 8, z: 8 } }],
};

/** A terrain scene on the tick thread: chunks build one tick after they load. */
const TERRAIN = {
  kits: [
    { id: "world.ground" },
    { id: "world.streaming", config: { chunkSize: 32, radius: 2, budgetMs: 3, lod: [{ step: 2, radius: 6 }], lodBudget: 40 } },
    { id: "world.terrain", config: { seed: 7, cellsPerChunk: 8, workers: 1, commitLatency: 1 } },
  ],
  entities: [{ id: "hero", tags: ["player"], position: { x: 16, z: 16 } }],
};

/** Asserts `fn` throws the ABI's error `name`, and returns it. */
function throwsStatus(fn, name) {
  const e = thrown(fn);
  assert.ok(e instanceof WorldStreamingError, `${e}`);
  assert.ok(e instanceof Error);
  assert.equal(e.name, name, e.message);
  assert.equal(ws.statusName(e.status), name);
  assert.ok(e.message.length > 0);
  return e;
}

test("instantiate takes bytes, an ArrayBuffer, a module, a file URL, a path and nothing", async () => {
  const bytes = wasmBytes();
  const buffer = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
  const module = await WebAssembly.compile(bytes);
  const sources = [bytes, buffer, new Uint8Array(buffer), module, pathToFileURL(wasmPath), pathToFileURL(wasmPath).href];
  sources.push(relative(process.cwd(), wasmPath)); // a relative string: against the current directory
  if (wasmPath === join(new URL("..", import.meta.url).pathname, "world_streaming.wasm")) {
    sources.push(undefined); // the default: the wasm beside world-streaming.js
  }
  for (const source of sources) {
    const other = await WorldStreaming.instantiate(source);
    assert.equal(other.version, ws.version);
    const game = other.newGame(SEED);
    game.tick(5);
    assert.equal(game.state().loaded.length, 9);
    game.free();
  }
  assert.equal(WorldStreamingDefault, WorldStreaming);
});

test("instantiate fetches an http URL, takes a Response, and names the URL when it cannot", async () => {
  const bytes = wasmBytes();
  const server = createServer((req, res) => {
    if (req.url === "/world_streaming.wasm") {
      res.writeHead(200, { "content-type": "application/wasm" });
      res.end(bytes);
    } else {
      res.writeHead(404);
      res.end();
    }
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    const base = `http://127.0.0.1:${server.address().port}`;
    const other = await WorldStreaming.instantiate(`${base}/world_streaming.wasm`);
    assert.equal(other.version, ws.version);
    const fromResponse = await WorldStreaming.instantiate(await fetch(`${base}/world_streaming.wasm`));
    assert.equal(fromResponse.version, ws.version);
    await assert.rejects(WorldStreaming.instantiate(await fetch(`${base}/gone.wasm`)), {
      message: `WorldStreaming.instantiate: ${base}/gone.wasm: HTTP 404 Not Found`,
    });
    await assert.rejects(WorldStreaming.instantiate(new URL(`${base}/nothing.wasm`)), {
      message: `WorldStreaming.instantiate: ${base}/nothing.wasm: HTTP 404 Not Found`,
    });
  } finally {
    server.close();
  }
});

test("instantiate refuses what is not a module, naming it", async () => {
  await assert.rejects(WorldStreaming.instantiate(42), TypeError);
  await assert.rejects(WorldStreaming.instantiate(null), TypeError);
  const dir = mkdtempSync(join(tmpdir(), "ws-js-"));
  try {
    await assert.rejects(WorldStreaming.instantiate(pathToFileURL(join(dir, "none.wasm"))), { code: "ENOENT" });
    // A wasm module that is not the kit's: what it lacks is named.
    const empty = new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0]);
    await assert.rejects(WorldStreaming.instantiate(empty), /does not export memory, ws_alloc, ws_dealloc, /);
  } finally {
    rmSync(dir, { recursive: true });
  }
  assert.throws(() => new WorldStreaming({}), TypeError);
  assert.throws(() => new Game({}, 1n), TypeError);
});

test("the version is the kit's and every status has its header name", () => {
  const kit = JSON.parse(repoText("src/kits/streaming/kit.json"));
  assert.equal(ws.version, kit.version);
  assert.equal(ws.statusName(0), "WS_STATUS_OK");
  assert.equal(ws.statusName(5), "WS_STATUS_BAD_SCENE");
  assert.equal(ws.statusName(16), "WS_STATUS_NOT_BUILT");
  assert.equal(ws.statusName(999), "WS_STATUS_UNKNOWN");
});

test("a game from text or an object ticks, applies lines and moves", () => {
  const byText = ws.newGame(JSON.stringify(SEED));
  const byObject = ws.newGame(SEED);
  assert.equal(byText.tickCount(), 0);
  byText.tick();
  byText.tick(4);
  byObject.tick(5n);
  assert.equal(byText.tickCount(), 5);
  assert.deepEqual(byText.state(), byObject.state());
  assert.equal(byText.state().tick, 5);
  assert.deepEqual(byText.state().focus, { x: 8, z: 8 });

  byText.apply('{"tick": 6, "do": "move", "entity": "hero", "to": {"x": 200, "z": 8}}');
  byObject.apply({ tick: 6, do: "move", entity: "hero", to: { x: 200, z: 8 } });
  byText.tick();
  byObject.tick();
  assert.deepEqual(byText.state(), byObject.state());
  assert.deepEqual(byText.state().focus, { x: 200, z: 8 });
  assert.deepEqual(byText.drainEvents(), byObject.drainEvents());

  // move is the move line stamped with the next tick.
  byText.move("hero", 8, 0, 300);
  byObject.apply({ tick: 7, do: "move", entity: "hero", to: { x: 8, y: 0, z: 300 } });
  byText.tick(3);
  byObject.tick(3);
  assert.deepEqual(byText.state(), byObject.state());
  assert.deepEqual(byText.state().focus, { x: 8, z: 300 });
  assert.deepEqual(byText.drainEvents(), byObject.drainEvents());
  byText.free();
  byObject.free();
});

test("drainEvents hands out each event once, in emission order, as the log's objects", () => {
  const game = ws.newGame(SEED);
  game.tick(5);
  const events = game.drainEvents();
  assert.ok(events.length >= 9);
  assert.deepEqual(events[0], { tick: 1, event: "world.chunk.loaded", data: { x: 0, z: 0 } });
  const loaded = events.filter((e) => e.event === "world.chunk.loaded");
  assert.equal(loaded.length, 9);
  for (let i = 1; i < events.length; i++) {
    assert.ok(events[i - 1].tick <= events[i].tick);
  }
  assert.deepEqual(game.drainEvents(), []);
  game.free();
});

test("drainChunkEvents takes the chunk events as typed arrays; drainEvents keeps the rest in order", () => {
  const json = ws.newGame(TERRAIN); // drains JSON only
  const split = ws.newGame(TERRAIN); // drains the chunk events, then JSON
  const kindOf = {
    "world.chunk.loaded": ChunkEventKind.LOADED,
    "world.chunk.unloaded": ChunkEventKind.UNLOADED,
    "world.terrain.built": ChunkEventKind.BUILT,
    "world.terrain.changed": ChunkEventKind.CHANGED,
    "world.lod.loaded": ChunkEventKind.LOD_LOADED,
    "world.lod.unloaded": ChunkEventKind.LOD_UNLOADED,
    "world.terrain.lod.built": ChunkEventKind.LOD_BUILT,
  };
  const kinds = new Set();
  let total = 0;
  for (let t = 1; t <= 40; t++) {
    for (const g of [json, split]) {
      g.move("hero", 16 + 14 * t, 0, 16);
      g.apply({ tick: t, do: "player.moved", at: { x: t, z: 1 } });
      g.tick();
    }
    const all = json.drainEvents();
    const chunks = split.drainChunkEvents();
    const rest = split.drainEvents();
    const expected = all.filter((e) => e.event in kindOf);
    assert.equal(chunks.count, expected.length, `tick ${t}`);
    for (const field of ["kind", "level", "x", "y", "z", "hash"]) {
      assert.equal(chunks[field].length, chunks.count);
    }
    assert.ok(chunks.kind instanceof Int32Array && chunks.level instanceof Uint32Array);
    assert.ok(chunks.x instanceof BigInt64Array && chunks.y instanceof BigInt64Array && chunks.z instanceof BigInt64Array);
    assert.ok(chunks.hash instanceof BigUint64Array);
    expected.forEach((e, i) => {
      assert.equal(chunks.kind[i], kindOf[e.event], `tick ${t} event ${i}`);
      assert.equal(chunks.level[i], e.data.level ?? 0);
      assert.equal(chunks.x[i], BigInt(e.data.x));
      assert.equal(chunks.z[i], BigInt(e.data.z));
      assert.equal(chunks.y[i], 0n); // no `vertical`: row 0
      assert.equal(chunks.hash[i].toString(16).padStart(16, "0"), e.data.hash ?? "0000000000000000");
      kinds.add(chunks.kind[i]);
    });
    assert.deepEqual(rest, all.filter((e) => !(e.event in kindOf)), `tick ${t}`);
    assert.equal(split.drainChunkEvents().count, 0);
    total += chunks.count;
  }
  assert.ok(total > 100, `${total}`);
  for (const k of ["LOADED", "UNLOADED", "BUILT", "LOD_LOADED", "LOD_UNLOADED", "LOD_BUILT"]) {
    assert.ok(kinds.has(ChunkEventKind[k]), k);
  }
  json.free();
  split.free();
});

test("one drainChunkEvents takes more than one batch of the C drain, in order", () => {
  const wide = structuredClone(TERRAIN);
  wide.kits[1].config = { chunkSize: 32, radius: 6, budgetMs: 100 };
  const [json, split] = [ws.newGame(wide), ws.newGame(wide)];
  for (const g of [json, split]) {
    g.tick(4);
    g.move("hero", 20000, 0, 16);
    g.tick(4);
    g.move("hero", 16, 0, 16);
    g.tick(4);
  }
  const all = json.drainEvents().filter((e) => e.event.startsWith("world.chunk.") || e.event === "world.terrain.built");
  const chunks = split.drainChunkEvents();
  assert.ok(chunks.count > 1024, `${chunks.count}`); // the wrapper asks 1024 at a time
  assert.equal(chunks.count, all.length);
  all.forEach((e, i) => {
    assert.equal(chunks.x[i], BigInt(e.data.x), `event ${i}`);
    assert.equal(chunks.z[i], BigInt(e.data.z), `event ${i}`);
    assert.equal(chunks.y[i], 0n, `event ${i}`);
    assert.equal(chunks.hash[i].toString(16).padStart(16, "0"), e.data.hash ?? "0000000000000000");
  });
  assert.deepEqual(split.drainEvents(), []);
  json.free();
  split.free();
});

test("terrain copies a built chunk's cells, whose bytes hash to its built event; null when not built", () => {
  const game = ws.newGame(TERRAIN);
  assert.equal(game.terrain(0, 0), null); // nothing loaded before tick 1
  game.tick(6);
  const built = game.drainEvents().filter((e) => e.event === "world.terrain.built" || e.event === "world.terrain.lod.built");
  assert.ok(built.some((e) => e.data.level !== undefined));
  let checked = 0;
  for (const e of built) {
    const cells = e.data.level === undefined ? game.terrain(e.data.x, e.data.z) : game.terrain(BigInt(e.data.x), BigInt(e.data.z), e.data.level);
    if (cells === null) continue; // released since
    assert.ok(cells.heights instanceof Uint16Array && cells.materials instanceof Uint8Array);
    assert.equal(cells.heights.length, 64);
    assert.equal(cells.materials.length, 64);
    assert.equal(fnv1a64(cellBytes(cells)), e.data.hash);
    checked++;
  }
  assert.ok(checked > 10, `${checked}`);
  assert.equal(game.terrain(5000, 5000), null);
  assert.equal(game.terrain(0, 0, 7), null); // a level the game does not have
  assert.throws(() => game.terrain(0.5, 0), RangeError);
  assert.throws(() => game.terrain(0, 0, -1), RangeError);
  game.free();
  const plain = ws.newGame(SEED);
  plain.tick();
  const e = throwsStatus(() => plain.terrain(0, 0), "WS_STATUS_NO_TERRAIN");
  assert.equal(e.message, "the scene does not enable the world.terrain kit");
  plain.free();
});

test("variable reads an engine variable and names an unknown one", () => {
  const game = ws.newGame(SEED);
  game.tick(5);
  assert.equal(game.variable("world.chunks.loaded"), 9);
  assert.equal(game.variable("world.chunks.pending"), 0);
  const e = throwsStatus(() => game.variable("no.such"), "WS_STATUS_NO_SUCH_VARIABLE");
  assert.equal(e.message, "no numeric engine variable named `no.such`");
  game.free();
});

test("saveText and loadText round-trip; a bad save leaves the game unchanged", () => {
  const game = ws.newGame(TERRAIN);
  game.tick(5);
  const saved = game.saveText();
  assert.equal(typeof saved, "string");
  const atSave = game.state();
  game.move("hero", 400, 0, 16);
  game.tick(7);
  assert.notDeepEqual(game.state(), atSave);
  game.loadText(saved);
  assert.equal(game.tickCount(), 5);
  assert.deepEqual(withoutWaits(game.state()), withoutWaits(atSave));
  game.loadText(JSON.parse(saved)); // an object too
  assert.equal(game.tickCount(), 5);

  game.tick(3);
  const before = game.state();
  const beforeSave = game.saveText();
  for (const bad of ["not json", "{}", saved.replace('"tick"', '"tock"'), JSON.stringify({ ...JSON.parse(saved), version: 99 })]) {
    const e = throwsStatus(() => game.loadText(bad), "WS_STATUS_LOAD_FAILED");
    assert.match(e.message, /^load: /);
    assert.deepEqual(game.state(), before);
    assert.equal(game.saveText(), beforeSave);
  }
  game.free();
});

function withoutWaits(state) {
  const copy = structuredClone(state);
  delete copy.variables?.["world.terrain.waits"];
  return copy;
}

test("every error status throws an Error named by the status, with the ABI's message", () => {
  // Bad scenes.
  let e = throwsStatus(() => ws.newGame("{"), "WS_STATUS_BAD_SCENE");
  assert.equal(e.status, 5);
  assert.match(e.message, /^scene/);
  e = throwsStatus(() => ws.newGame({ kits: [{ id: "world.nope" }], entities: [] }), "WS_STATUS_BAD_SCENE");
  assert.match(e.message, /world\.nope/);
  e = throwsStatus(() => ws.newGame({ ...SEED, mods: ["missing.json"] }), "WS_STATUS_BAD_SCENE");
  assert.match(e.message, /missing\.json/);
  e = throwsStatus(() => ws.newGame({ ...SEED, mods: ["../outside.json"] }, { "../outside.json": "{}" }), "WS_STATUS_BAD_SCENE");
  assert.match(e.message, /\.\.\/outside\.json/);

  const game = ws.newGame(SEED);
  // A malformed line, a line stamped past the next tick, an input that cannot be applied.
  e = throwsStatus(() => game.apply("{not json"), "WS_STATUS_BAD_INPUT");
  assert.match(e.message, /^input: /);
  e = throwsStatus(() => game.apply({ tick: 3, do: "move", entity: "hero", to: { x: 1, z: 1 } }), "WS_STATUS_BAD_INPUT");
  assert.equal(e.message, "input: tick: the line is stamped 3 but the next tick to run is 1; apply it after ticking to 2");
  e = throwsStatus(() => game.apply({ tick: 1, do: "move", entity: "ghost", to: { x: 1, z: 1 } }), "WS_STATUS_INPUT_FAILED");
  assert.match(e.message, /ghost/);
  e = throwsStatus(() => game.move("ghost", 1, 0, 1), "WS_STATUS_INPUT_FAILED");
  assert.match(e.message, /ghost/);
  e = throwsStatus(() => game.move("hero", NaN, 0, 1), "WS_STATUS_BAD_INPUT");
  assert.match(e.message, /^input: to\.x: expected a finite number/);
  e = throwsStatus(() => game.tick(2n ** 64n - 1n), "WS_STATUS_OUT_OF_RANGE");
  assert.match(e.message, /^ticks: /);
  // Nothing above changed the game.
  assert.equal(game.tickCount(), 0);
  assert.deepEqual(game.drainEvents(), []);

  // What JavaScript refuses before the module sees it.
  assert.throws(() => game.tick(-1), RangeError);
  assert.throws(() => game.tick(1.5), RangeError);
  assert.throws(() => game.apply(42), TypeError);
  assert.throws(() => game.move("hero", "1", 0, 0), TypeError);
  assert.throws(() => game.move("he\0ro", 1, 0, 0), TypeError);
  assert.throws(() => game.variable(7), TypeError);
  assert.throws(() => ws.newGame(SEED, "files"), TypeError);
  game.free();
});

test("a Lua mod is refused at start with the wasm build's message; a JSON mod from files runs", () => {
  const keepHome = repoText("mods/keep_home.json");
  const lua = repoText("mods/dice.lua");
  const e = throwsStatus(
    () => ws.newGame({ ...SEED, mods: ["keep_home.json", "dice.lua"] }, { "keep_home.json": keepHome, "dice.lua": lua }),
    "WS_STATUS_BAD_SCENE",
  );
  assert.match(e.message, /mods\[1\]: Lua mods need the native build \(this build has JSON mods only\)/);
  // keep_home refuses to unload chunk (0, 0): kept with the mod, released without it.
  const withMod = ws.newGame({ ...SEED, mods: ["mods/keep_home.json"] }, { "mods/keep_home.json": keepHome });
  const without = ws.newGame(SEED);
  for (const game of [withMod, without]) {
    game.tick(5);
    game.move("hero", 500, 0, 8);
    game.tick(10);
  }
  const home = (game) => game.state().loaded.some((c) => c.x === 0 && c.z === 0);
  assert.equal(home(withMod), true);
  assert.equal(home(without), false);
  withMod.free();
  without.free();
});

test("a game used after free() throws, free() included", () => {
  const game = ws.newGame(SEED);
  game.tick();
  assert.equal(game.freed, false);
  game.free();
  assert.equal(game.freed, true);
  const calls = [
    () => game.apply({ tick: 2, do: "move", entity: "hero", to: { x: 1, z: 1 } }),
    () => game.tick(),
    () => game.tickCount(),
    () => game.move("hero", 1, 0, 1),
    () => game.drainEvents(),
    () => game.drainChunkEvents(),
    () => game.state(),
    () => game.variable("world.chunks.loaded"),
    () => game.terrain(0, 0),
    () => game.saveText(),
    () => game.loadText("{}"),
    () => game.free(),
  ];
  for (const call of calls) {
    const e = throwsStatus(call, "WS_STATUS_INVALID_HANDLE");
    assert.match(e.message, /this game was freed/);
  }
});

/** Every method and every kind of error of a game's life, the game freed at the end. */
function session() {
  const game = ws.newGame(TERRAIN);
  for (let t = 1; t <= 12; t++) {
    game.move("hero", 16 + 20 * t, 0, 16);
    game.apply({ tick: t, do: "player.moved", at: { x: t, z: 0 } });
    game.tick();
    game.drainChunkEvents();
    game.drainEvents();
    game.state();
    game.variable("world.chunks.loaded");
    game.terrain(t, 0);
    game.terrain(0, 0, 1);
    game.tickCount();
  }
  const saved = game.saveText();
  game.loadText(saved);
  // Every kind of error: its message is freed too.
  thrown(() => game.loadText("{}"));
  thrown(() => game.apply("{"));
  thrown(() => game.apply({ tick: 99, do: "move", entity: "hero", to: { x: 0, z: 0 } }));
  thrown(() => game.move("ghost", 0, 0, 0));
  thrown(() => game.variable("nope"));
  thrown(() => game.tick(2n ** 64n - 1n));
  thrown(() => ws.newGame("{"));
  thrown(() => ws.newGame({ ...SEED, mods: ["x.lua"] }, { "x.lua": "" }));
  thrown(() => ws.newGame({ ...SEED, mods: ["missing.json"] }));
  game.free();
  thrown(() => game.free());
  const plain = ws.newGame(SEED);
  thrown(() => plain.terrain(0, 0));
  plain.free();
}

test("a whole session leaks no string and no buffer", () => {
  // The module's registries are made on first use and stay: the baseline is taken after a first
  // session, and a second one must come back to it.
  session();
  const before = ws.liveAllocations();
  const game = ws.newGame(TERRAIN);
  game.tick(3);
  assert.ok(ws.liveAllocations() > before, "a live game holds allocations: the counter counts");
  game.free();
  assert.equal(ws.liveAllocations(), before);
  session();
  assert.equal(ws.liveAllocations(), before);
});
