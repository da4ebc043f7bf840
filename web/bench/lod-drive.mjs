// The LOD drive of docs/lod.md in the wasm build, timed: `node web/bench/lod-drive.mjs SCENE INPUTS
// TICKS RUNS` prints one JSON line `{"runs": [ms, ...], "events": N}`. scripts/bench-web.sh runs it
// beside the native build on the same machine, in one run, and prints the ratio
// (docs/web.md#measured).
//
// Each run makes a game from the scene, applies each input after ticking up to the tick before
// its own (as `run --inputs` does), ticks to TICKS and drains the event log every tick, as a page
// would; the time is from `newGame` to the last drain. Instantiating the module is not counted.
import { readFile } from "node:fs/promises";
import { WorldStreaming } from "../world-streaming.js";

const [scenePath, inputsPath, ticksText, runsText] = process.argv.slice(2);
if (!scenePath || !inputsPath || !ticksText) {
  console.error("usage: node web/bench/lod-drive.mjs SCENE INPUTS TICKS [RUNS]");
  process.exit(2);
}
const scene = await readFile(scenePath, "utf8");
const inputs = (await readFile(inputsPath, "utf8"))
  .split("\n")
  .filter((line) => line.trim() !== "")
  .map((line) => ({ tick: JSON.parse(line).tick, line }));
const ticks = Number(ticksText);
const runs = Number(runsText ?? 3);

const ws = await WorldStreaming.instantiate();
const times = [];
let events = 0;
for (let run = 0; run < runs; run++) {
  const start = performance.now();
  const game = ws.newGame(scene);
  let seen = 0;
  let next = 0;
  try {
    while (game.tickCount() < ticks) {
      while (next < inputs.length && inputs[next].tick <= game.tickCount() + 1) {
        game.apply(inputs[next].line);
        next++;
      }
      game.tick();
      seen += game.drainEvents().length;
    }
  } finally {
    game.free();
  }
  times.push(performance.now() - start);
  events = seen;
}
console.log(JSON.stringify({ runs: times.map((t) => Math.round(t * 10) / 10), events }));
