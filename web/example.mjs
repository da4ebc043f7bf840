// The complete example of docs/web.md#a-complete-example: the seed scene in Node, through the
// installed package. In a page it is the same code in a <script type="module">, importing
// "./world-streaming.js".
import { ChunkEventKind, WorldStreaming } from "world-streaming";

// Without an argument: the world_streaming.wasm the package ships beside the module.
const ws = await WorldStreaming.instantiate();
const game = ws.newGame({
  kits: [
    { id: "world.ground" },
    { id: "world.streaming", config: { chunkSize: 32, radius: 1, budgetMs: 2 } },
  ],
  entities: [{ id: "hero", tags: ["player"], position: { x: 8, z: 8 } }],
});
try {
  game.tick(5);
  const first = game.drainChunkEvents(); // the chunk events of ticks 1 to 5
  console.log(`tick ${game.tickCount()}: ${game.variable("world.chunks.loaded")} chunks loaded, ${first.count} events`);

  // The hot path: move the player every frame, take the chunk events without JSON.
  for (let frame = 1; frame <= 10; frame++) {
    game.move("hero", 8 + 12 * frame, 0, 8);
    game.tick();
    const chunks = game.drainChunkEvents();
    for (let i = 0; i < chunks.count; i++) {
      const what = chunks.kind[i] === ChunkEventKind.LOADED ? "loaded" : "unloaded";
      console.log(`tick ${game.tickCount()}: chunk (${chunks.x[i]}, ${chunks.z[i]}) ${what}`);
    }
  }

  // Every other event, as the native event log has it.
  const rest = game.drainEvents().map((e) => e.event);
  console.log(`other events: ${rest.length}`);

  // Saves as text; a bad one throws an Error named by its status and changes nothing.
  const saved = game.saveText();
  try {
    game.loadText("{}");
  } catch (e) {
    console.log(`${e.name}: ${e.message.split("\n")[0]}`);
  }
  game.loadText(saved);
  console.log(`focus ${JSON.stringify(game.state().focus)}`);
} finally {
  game.free();
}
