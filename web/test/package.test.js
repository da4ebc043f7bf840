// The npm package: `npm pack` in web/ yields a tarball holding the module, its types and the wasm;
// a scratch project installs it offline and runs the example of docs/web.md#a-complete-example
// from it.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

import { repoText, wasmBytes, webDir } from "./helpers.js";

const pkg = JSON.parse(readFileSync(join(webDir, "package.json"), "utf8"));

test("the package's version is the crate's", () => {
  const version = repoText("Cargo.toml").match(/^version = "([^"]+)"$/m)[1];
  assert.equal(pkg.version, version);
  assert.equal(pkg.name, "world-streaming");
  assert.equal(pkg.type, "module");
  assert.equal(pkg.dependencies, undefined);
});

test("npm pack yields a tarball a scratch project installs offline and runs", () => {
  wasmBytes(); // fails first, saying how to build it, when the wasm is missing
  const dir = mkdtempSync(join(tmpdir(), "ws-npm-"));
  try {
    const npm = (args, cwd) => execFileSync("npm", args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    const packed = JSON.parse(npm(["pack", "--json", "--pack-destination", dir], webDir));
    assert.equal(packed.length, 1);
    assert.equal(packed[0].filename, `world-streaming-${pkg.version}.tgz`);
    const files = packed[0].files.map((f) => f.path).sort();
    assert.deepEqual(files, ["package.json", "world-streaming.d.ts", "world-streaming.js", "world_streaming.wasm"]);

    const project = join(dir, "project");
    execFileSync("mkdir", [project]);
    writeFileSync(join(project, "package.json"), JSON.stringify({ name: "scratch", private: true, type: "module" }));
    npm(["install", join(dir, packed[0].filename), "--offline", "--no-audit", "--no-fund"], project);
    const installed = JSON.parse(readFileSync(join(project, "node_modules/world-streaming/package.json"), "utf8"));
    assert.equal(installed.version, pkg.version);

    // The example of the book, as it is, from the installed package.
    copyFileSync(join(webDir, "example.mjs"), join(project, "example.mjs"));
    const out = execFileSync("node", ["example.mjs"], { cwd: project, encoding: "utf8" });
    const lines = out.split("\n");
    assert.equal(lines[0], "tick 5: 9 chunks loaded, 9 events");
    assert.ok(lines.some((l) => /^tick \d+: chunk \(\d+, -?\d+\) loaded$/.test(l)), out);
    assert.ok(lines.some((l) => /^tick \d+: chunk \(-1, -?\d+\) unloaded$/.test(l)), out);
    assert.ok(lines.some((l) => l.startsWith("WS_STATUS_LOAD_FAILED: load: ")), out);
    assert.ok(lines.includes('focus {"x":128,"z":8}'), out);

    // The types resolve from the package root too.
    const probe = join(project, "probe.mjs");
    writeFileSync(
      probe,
      'import { WorldStreaming } from "world-streaming";\n' +
        "const ws = await WorldStreaming.instantiate();\n" +
        'const g = ws.newGame({kits: [{id: "world.ground"}, {id: "world.streaming"}], entities: [{id: "p", tags: ["player"], position: {x: 1, z: 1}}]});\n' +
        "g.tick(); console.log(g.tickCount(), ws.version); g.free();\n",
    );
    assert.match(execFileSync("node", [probe], { cwd: project, encoding: "utf8" }), /^1 \d+\.\d+\.\d+\n$/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
