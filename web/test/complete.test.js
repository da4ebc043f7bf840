// Complete chunks and bordered snapshots from JavaScript (docs/web.md#complete-chunks-and-snapshots):
// the kinds COMPLETE / INCOMPLETE in drainChunkEvents, isComplete, snapshot and terrainVersion
// against the built wasm, their errors, and no leak.
import assert from "node:assert/strict";
import { test } from "node:test";

import { ChunkEventKind, WorldStreaming, WorldStreamingError } from "../world-streaming.js";
import { thrown, wasmBytes } from "./helpers.js";

const ws = await WorldStreaming.instantiate(wasmBytes());

const C = 8; // cellsPerChunk

/** `neighbours: 1`: chunks are loaded one ring further out, and complete once their ring is built. */
const COMPLETE = {
  kits: [
    { id: "world.ground" },
    { id: "world.streaming", config: { chunkSize: 32, radius: 1, neighbours: 1, budgetMs: 6 } },
    { id: "world.terrain", config: { seed: 7, cellsPerChunk: C, workers: 1 } },
  ],
  entities: [{ id: "hero", tags: ["player"], position: { x: 16, z: 16 } }],
};

const key = (x, z) => `${x},${z}`;

/** Asserts `fn` throws the ABI's error `name`, and returns it. */
function throwsStatus(fn, name) {
  const e = thrown(fn);
  assert.ok(e instanceof WorldStreamingError, `${e}`);
  assert.equal(e.name, name, e.message);
  return e;
}

/** Checks snapshot `s` of chunk (x, z) cell for cell against `terrain()` of the chunk and its neighbours. */
function assertSnapshotIsTheTerrain(game, x, z, s) {
  assert.equal(s.side, C + 2 * s.skin);
  assert.equal(s.heights.length, s.side * s.side);
  assert.equal(s.materials.length, s.side * s.side);
  assert.ok(s.heights instanceof Uint16Array && s.materials instanceof Uint8Array);
  const around = new Map();
  for (let dz = -1; dz <= 1; dz++) {
    for (let dx = -1; dx <= 1; dx++) {
      const cells = game.terrain(x + dx, z + dz);
      assert.ok(cells !== null, `neighbour (${x + dx}, ${z + dz}) of a complete chunk is built`);
      around.set(key(dx, dz), cells);
    }
  }
  for (let j = 0; j < s.side; j++) {
    for (let i = 0; i < s.side; i++) {
      const gi = i - s.skin;
      const gj = j - s.skin;
      const dx = gi < 0 ? -1 : gi >= C ? 1 : 0;
      const dz = gj < 0 ? -1 : gj >= C ? 1 : 0;
      const cells = around.get(key(dx, dz));
      const k = (gj - dz * C) * C + (gi - dx * C);
      assert.equal(s.heights[j * s.side + i], cells.heights[k], `(${x}, ${z}) skin ${s.skin} cell (${i}, ${j})`);
      assert.equal(s.materials[j * s.side + i], cells.materials[k]);
    }
  }
}

test("the completeness kinds come through drainChunkEvents in the JSON drain's order, and isComplete agrees", () => {
  assert.equal(ChunkEventKind.COMPLETE, 7);
  assert.equal(ChunkEventKind.INCOMPLETE, 8);
  const json = ws.newGame(COMPLETE); // drains JSON only
  const game = ws.newGame(COMPLETE); // drains the chunk events
  const complete = new Set();
  let told = 0;
  let untold = 0;
  for (let t = 1; t <= 50; t++) {
    const x = t <= 12 ? 16 : 16 + 7 * (t - 12);
    for (const g of [json, game]) {
      g.move("hero", x, 0, 16);
      g.tick();
    }
    const all = json.drainEvents();
    const events = game.drainChunkEvents();
    // The JSON drain holds the same completeness events, in the same places among the chunk events.
    const named = all.filter((e) => e.event === "world.chunk.complete" || e.event === "world.chunk.incomplete");
    const typed = [];
    for (let i = 0; i < events.count; i++) {
      if (events.kind[i] === ChunkEventKind.COMPLETE || events.kind[i] === ChunkEventKind.INCOMPLETE) {
        typed.push({ complete: events.kind[i] === ChunkEventKind.COMPLETE, x: Number(events.x[i]), z: Number(events.z[i]) });
      }
    }
    assert.deepEqual(
      typed,
      named.map((e) => ({ complete: e.event === "world.chunk.complete", x: e.data.x, z: e.data.z })),
      `tick ${t}`,
    );
    for (let i = 0; i < events.count; i++) {
      const k = key(events.x[i], events.z[i]);
      if (events.kind[i] === ChunkEventKind.COMPLETE) {
        assert.ok(!complete.has(k), `tick ${t}: ${k} told complete twice`);
        assert.equal(events.level[i], 0);
        assert.equal(events.hash[i], 0n);
        complete.add(k);
        told++;
      } else if (events.kind[i] === ChunkEventKind.INCOMPLETE) {
        assert.ok(complete.delete(k), `tick ${t}: ${k} told incomplete while not complete`);
        untold++;
      } else if (events.kind[i] === ChunkEventKind.UNLOADED) {
        complete.delete(k);
      }
    }
    for (const c of game.state().loaded) {
      assert.equal(game.isComplete(c.x, c.z), complete.has(key(c.x, c.z)), `tick ${t}: chunk (${c.x}, ${c.z})`);
    }
    assert.equal(game.variable("world.chunks.complete"), complete.size);
  }
  assert.ok(told > 20 && untold > 0, `${told} complete, ${untold} incomplete`);
  assert.equal(game.isComplete(-40n, 40n), false);
  assert.throws(() => game.isComplete(0.5, 0), RangeError);
  json.free();
  game.free();
});

test("snapshot is refused before a chunk is complete and is the terrain's cells after; terrainVersion moves with an edit", () => {
  const game = ws.newGame(COMPLETE);
  let refused = 0;
  let checked = 0;
  for (let t = 1; t <= 40; t++) {
    game.move("hero", t <= 12 ? 16 : 16 + 7 * (t - 12), 0, 16);
    game.tick();
    const events = game.drainChunkEvents();
    for (let i = 0; i < events.count; i++) {
      const [x, z] = [events.x[i], events.z[i]];
      if (events.kind[i] === ChunkEventKind.BUILT && game.terrain(x, z) !== null && !game.isComplete(x, z)) {
        const e = throwsStatus(() => game.snapshot(x, z, 1), "WS_STATUS_NOT_COMPLETE");
        assert.match(e.message, /is not complete/);
        const s0 = game.snapshot(x, z); // skin 0: built is enough
        assert.equal(s0.side, C);
        assert.deepEqual(s0.heights, game.terrain(x, z).heights);
        refused++;
      } else if (events.kind[i] === ChunkEventKind.COMPLETE && game.isComplete(x, z)) {
        for (const skin of [1, 3]) {
          const s = game.snapshot(x, z, skin);
          assert.equal(s.version, 1);
          assert.equal(game.terrainVersion(x, z), s.version);
          assertSnapshotIsTheTerrain(game, Number(x), Number(z), s);
        }
        checked++;
      }
    }
  }
  assert.ok(refused > 10 && checked > 15, `${refused} refused, ${checked} checked`);
  // An edit of the chunk's first cell: the version moves and the snapshot shows it.
  const c = game.state().loaded.find((c) => game.isComplete(c.x, c.z));
  const before = game.terrainVersion(c.x, c.z);
  game.apply({ tick: game.tickCount() + 1, do: "edit", at: { x: c.x * 32 + 1, z: c.z * 32 + 1 }, height: 4242 });
  game.tick();
  const s = game.snapshot(c.x, c.z, 2);
  assert.equal(s.version, before + 1);
  assert.equal(game.terrainVersion(c.x, c.z), before + 1);
  assert.equal(s.heights[2 * s.side + 2], 4242);
  assertSnapshotIsTheTerrain(game, c.x, c.z, s);
  // Errors by status.
  assert.equal(game.snapshot(c.x, c.z, 8).side, C + 16);
  assert.match(throwsStatus(() => game.snapshot(c.x, c.z, 9), "WS_STATUS_OUT_OF_RANGE").message, /skin 9 is out of range/);
  throwsStatus(() => game.snapshot(c.x, c.z, 0xffffffff), "WS_STATUS_OUT_OF_RANGE");
  assert.match(throwsStatus(() => game.snapshot(-40, 40, 0), "WS_STATUS_NOT_COMPLETE").message, /is not built/);
  assert.equal(game.terrainVersion(-40, 40), null);
  assert.throws(() => game.snapshot(0, 0, -1), RangeError);
  assert.throws(() => game.snapshot(0, 0, 1.5), RangeError);
  game.free();
  for (const call of [() => game.snapshot(0, 0, 1), () => game.isComplete(0, 0), () => game.terrainVersion(0, 0)]) {
    assert.match(throwsStatus(call, "WS_STATUS_INVALID_HANDLE").message, /this game was freed/);
  }
  const plain = ws.newGame({ kits: [{ id: "world.ground" }, { id: "world.streaming" }] });
  throwsStatus(() => plain.snapshot(0, 0, 1), "WS_STATUS_NO_TERRAIN");
  throwsStatus(() => plain.terrainVersion(0, 0), "WS_STATUS_NO_TERRAIN");
  assert.equal(plain.isComplete(0, 0), false);
  plain.free();
});

test("complete chunks and snapshots leak no string and no buffer", () => {
  const session = () => {
    const game = ws.newGame(COMPLETE);
    for (let t = 1; t <= 16; t++) {
      game.move("hero", 16 + 4 * t, 0, 16);
      game.tick();
      const events = game.drainChunkEvents();
      for (let i = 0; i < events.count; i++) {
        game.isComplete(events.x[i], events.z[i]);
        game.terrainVersion(events.x[i], events.z[i]);
        try {
          game.snapshot(events.x[i], events.z[i], 2);
        } catch (e) {
          assert.equal(e.name, "WS_STATUS_NOT_COMPLETE");
        }
      }
    }
    thrown(() => game.snapshot(0, 0, 9));
    game.free();
  };
  session(); // the registries are made on first use and stay
  const before = ws.liveAllocations();
  session();
  assert.equal(ws.liveAllocations(), before);
});
