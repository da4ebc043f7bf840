// What the JS tests share: the built module, the repository's files, and FNV-1a 64.
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const webDir = dirname(dirname(fileURLToPath(import.meta.url)));
export const repo = dirname(webDir);

/**
 * The wasm the tests run: `WS_WASM` if set, else `web/world_streaming.wasm` (where
 * scripts/build-web.sh copies the build). Missing, every test fails saying how to build it.
 */
export const wasmPath = process.env.WS_WASM ?? join(webDir, "world_streaming.wasm");

export function wasmBytes() {
  if (!existsSync(wasmPath)) {
    throw new Error(`${wasmPath} is missing: build it with scripts/build-web.sh`);
  }
  return readFileSync(wasmPath);
}

export function repoText(path) {
  return readFileSync(join(repo, path), "utf8");
}

/** A scene of the repository as `newGame` takes it: its text and its files beside it. */
export function sceneWithFiles(scenePath, names) {
  const dir = dirname(scenePath);
  const files = {};
  for (const name of names) {
    files[name] = repoText(join(dir, name));
  }
  return { scene: repoText(scenePath), files };
}

/** The lines of a JSON Lines file, parsed. */
export function jsonLines(path) {
  return repoText(path)
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l));
}

/** FNV-1a 64 of `bytes` (the crate's one stable hash) as 16 hex digits, in four 16-bit limbs. */
export function fnv1a64(bytes) {
  let h0 = 0x2325, h1 = 0x8422, h2 = 0x9ce4, h3 = 0xcbf2;
  for (let i = 0; i < bytes.length; i++) {
    h0 ^= bytes[i];
    // h * (2^40 + 0x1b3) mod 2^64.
    let t0 = h0 * 0x1b3;
    let t1 = h1 * 0x1b3;
    let t2 = h2 * 0x1b3 + (h0 << 8);
    let t3 = h3 * 0x1b3 + (h1 << 8);
    t1 += t0 >>> 16;
    t2 += t1 >>> 16;
    t3 += t2 >>> 16;
    h0 = t0 & 0xffff;
    h1 = t1 & 0xffff;
    h2 = t2 & 0xffff;
    h3 = t3 & 0xffff;
  }
  return [h3, h2, h1, h0].map((h) => h.toString(16).padStart(4, "0")).join("");
}

/** The little-endian bytes of the heights, then the materials: what a built event's hash covers. */
export function cellBytes({ heights, materials }) {
  const out = new Uint8Array(2 * heights.length + materials.length);
  const view = new DataView(out.buffer);
  heights.forEach((h, i) => view.setUint16(2 * i, h, true));
  out.set(materials, 2 * heights.length);
  return out;
}

/** Runs `fn` and returns what it threw (failing when it throws nothing). */
export function thrown(fn) {
  try {
    fn();
  } catch (e) {
    return e;
  }
  throw new Error("expected a throw");
}
