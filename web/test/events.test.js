// The event log of the wasm build is the native one, byte for byte: every shipped example scene
// without mods or a world directory, driven as `world-streaming run SCENE --inputs INPUTS
// --events FILE` drives it (docs/reference/tick.md#inputs-before-ticks), its drained events written
// as JSON Lines, against the native log's line count and FNV-1a 64 in native-events.json
// (tests/web_js.rs checks those against the native binary).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { WorldStreaming } from "../world-streaming.js";
import { fnv1a64, jsonLines, sceneWithFiles, wasmBytes } from "./helpers.js";

const ws = await WorldStreaming.instantiate(wasmBytes());
const manifest = JSON.parse(readFileSync(new URL("./native-events.json", import.meta.url), "utf8"));
const encoder = new TextEncoder();

/** The run loop of the CLI: before each tick, every input stamped at most the next tick. */
function replay(run) {
  const { scene, files } = sceneWithFiles(run.scene, run.files);
  const inputs = run.inputs ? jsonLines(run.inputs) : [];
  const target = run.ticks ?? Math.max(1, ...inputs.map((l) => l.tick));
  const game = ws.newGame(scene, files);
  const lines = [];
  try {
    let next = 0;
    while (game.tickCount() < target) {
      while (next < inputs.length && inputs[next].tick <= game.tickCount() + 1) {
        game.apply(inputs[next++]);
      }
      if (game.tickCount() >= target) {
        break; // a load input may have moved the counter
      }
      game.tick();
      // Drained every tick: the log is whole across drains.
      for (const event of game.drainEvents()) {
        lines.push(JSON.stringify(event) + "\n");
      }
    }
    for (const event of game.drainEvents()) {
      lines.push(JSON.stringify(event) + "\n");
    }
  } finally {
    game.free();
  }
  return lines;
}

for (const run of manifest.runs) {
  test(`${run.scene}: the wasm build's events are the native --events log`, () => {
    assert.match(run.fnv1a64, /^[0-9a-f]{16}$/, "native-events.json is blessed (WS_BLESS=1 cargo test --test web_js)");
    const lines = replay(run);
    const text = lines.join("");
    assert.equal(lines.length, run.lines, `${run.scene}: first lines:\n${lines.slice(0, 3).join("")}`);
    assert.equal(fnv1a64(encoder.encode(text)), run.fnv1a64, `${run.scene}: same count, other bytes`);
  });
}

test("the comparison can fail: one event less or one byte changed is another hash", () => {
  const run = manifest.runs.find((r) => r.scene.endsWith("/seed.json"));
  const lines = replay(run);
  assert.ok(lines.length > 1);
  assert.notEqual(fnv1a64(encoder.encode(lines.slice(1).join(""))), run.fnv1a64);
  assert.notEqual(fnv1a64(encoder.encode(lines.join("").replace('"x":0', '"x":1'))), run.fnv1a64);
});
