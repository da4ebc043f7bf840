// Vertical sections from JavaScript (docs/web.md#vertical-sections-in-javascript): the typed
// array `y` of drainChunkEvents, the column kinds and isLoadedSection against the built wasm, each
// checked against the JSON drain of a twin game, and no leak.
import assert from "node:assert/strict";
import { test } from "node:test";

import { ChunkEventKind, WorldStreaming } from "../world-streaming.js";
import { wasmBytes } from "./helpers.js";

const ws = await WorldStreaming.instantiate(wasmBytes());

/** A disc of radius 2 with two rows above and below the hero's, sections 16 m tall. */
const VERTICAL = {
  kits: [
    { id: "world.ground" },
    {
      id: "world.streaming",
      config: { chunkSize: 32, radius: 2, shape: "disc", vertical: { radius: 2, height: 16 }, budgetMs: 24 },
    },
  ],
  entities: [{ id: "hero", tags: ["player"], position: { x: 16, y: 8, z: 16 } }],
};

const KIND_OF = {
  "world.chunk.loaded": ChunkEventKind.LOADED,
  "world.chunk.unloaded": ChunkEventKind.UNLOADED,
  "world.column.loaded": ChunkEventKind.COLUMN_LOADED,
  "world.column.unloaded": ChunkEventKind.COLUMN_UNLOADED,
};

/** Climbs to row 6, dives to row -9, then walks east. */
function at(t) {
  if (t <= 20) return [16, 8 + 5 * t, 16];
  if (t <= 60) return [16, 108 - 6 * (t - 20), 16];
  return [16 + 7 * (t - 60), -132, 16];
}

test("drainChunkEvents carries each section's row in y and the column kinds, as the JSON drain says", () => {
  assert.equal(ChunkEventKind.COLUMN_LOADED, 9);
  assert.equal(ChunkEventKind.COLUMN_UNLOADED, 10);
  const session = () => {
    const json = ws.newGame(VERTICAL);
    const typed = ws.newGame(VERTICAL);
    const sections = new Set();
    const rows = new Set();
    const seen = new Set();
    for (let t = 1; t <= 80; t++) {
      for (const g of [json, typed]) {
        g.move("hero", ...at(t));
        g.tick();
      }
      const expected = json.drainEvents().filter((e) => e.event in KIND_OF);
      const chunks = typed.drainChunkEvents();
      assert.deepEqual(typed.drainEvents().filter((e) => e.event in KIND_OF), []);
      assert.equal(chunks.count, expected.length, `tick ${t}`);
      assert.ok(chunks.y instanceof BigInt64Array && chunks.y.length === chunks.count);
      expected.forEach((e, i) => {
        const kind = KIND_OF[e.event];
        assert.equal(chunks.kind[i], kind, `tick ${t} event ${i}`);
        assert.equal(chunks.x[i], BigInt(e.data.x));
        assert.equal(chunks.z[i], BigInt(e.data.z));
        assert.equal(chunks.level[i], 0);
        assert.equal(chunks.hash[i], 0n);
        seen.add(kind);
        if (kind === ChunkEventKind.LOADED || kind === ChunkEventKind.UNLOADED) {
          assert.equal(typeof e.data.y, "number", `a section event names its row: ${JSON.stringify(e)}`);
          assert.equal(chunks.y[i], BigInt(e.data.y), `tick ${t} event ${i}`);
          const k = `${e.data.x},${e.data.y},${e.data.z}`;
          if (kind === ChunkEventKind.LOADED) {
            sections.add(k);
            rows.add(e.data.y);
          } else {
            sections.delete(k);
          }
        } else {
          assert.equal(chunks.y[i], 0n, "a column event's y is 0");
          assert.equal(e.data.y, undefined, "a column event is {x, z}");
        }
      });
      // isLoadedSection agrees with the events, in the hero's column and the sections told.
      for (const k of sections) {
        const [x, y, z] = k.split(",").map(Number);
        assert.ok(typed.isLoadedSection(x, y, z), `tick ${t}: ${k}`);
      }
      const [hx, hy] = [Math.floor(at(t)[0] / 32), Math.floor(at(t)[1] / 16)];
      for (let y = hy - 5; y <= hy + 5; y++) {
        assert.equal(typed.isLoadedSection(hx, y, 0), sections.has(`${hx},${y},0`), `tick ${t}: row ${y}`);
        assert.equal(typed.isLoadedSection(BigInt(hx), BigInt(y), 0n), sections.has(`${hx},${y},0`));
      }
    }
    for (const k of Object.values(KIND_OF)) {
      assert.ok(seen.has(k), `kind ${k} never drained`);
    }
    assert.ok(Math.min(...rows) < 0 && Math.max(...rows) >= 6, `rows ${[...rows].sort((a, b) => a - b)}`);
    json.free();
    typed.free();
  };
  session(); // the registries (event names among them) are made on first use and stay
  const live = ws.liveAllocations();
  session();
  assert.equal(ws.liveAllocations(), live);
});

test("without vertical only row 0 exists and no column kind is drained", () => {
  const flat = ws.newGame({ ...VERTICAL, kits: [VERTICAL.kits[0], { id: "world.streaming", config: { chunkSize: 32, radius: 2 } }] });
  for (let t = 1; t <= 12; t++) {
    flat.move("hero", 16 + 20 * t, 100 + 40 * t, 16);
    flat.tick();
    const chunks = flat.drainChunkEvents();
    assert.ok(chunks.y.every((y) => y === 0n));
    assert.ok(chunks.kind.every((k) => k === ChunkEventKind.LOADED || k === ChunkEventKind.UNLOADED));
  }
  const hx = Math.floor((16 + 240) / 32);
  assert.ok(flat.isLoadedSection(hx, 0, 0));
  assert.ok(!flat.isLoadedSection(hx, 1, 0) && !flat.isLoadedSection(hx, -1, 0));
  assert.throws(() => flat.isLoadedSection(0, 0.5, 0), RangeError);
  flat.free();
  assert.throws(() => flat.isLoadedSection(0, 0, 0), /freed/);
});
