"use strict";
// The live page's controller (docs/web.md#the-live-page): starts the kit's wasm module embedded
// in the page, makes a play session of the embedded recording (the scene, its mods' and district
// files, the inputs that play first) and hands the replay viewer's drawing core (`wsViewer`, the
// same code a `view` page draws with) a `live` source: Step and Start run ticks in the module,
// which captures each tick's frame as `view` does. The arrow keys and WASD move the player (the
// controlled entity, else the first `player`), a click sends it to the chunk clicked: each a
// `move` input stamped with the next tick. "Save recording" downloads the session as a recording
// the native `world-streaming replay` verifies: the module writes it, with each tick's digest made
// from the canonical events it wrote itself.
//
// Text from the run (ids, messages) is only ever put in the page as text, never as markup.
(async () => {
  const $ = (id) => document.getElementById(id);
  const page = JSON.parse($("play").textContent);
  const status = $("play-status");
  const say = (text, bad) => {
    status.textContent = text;
    status.classList.toggle("bad", !!bad);
  };

  let abi;
  try {
    const text = $("wasm").textContent.trim();
    const binary = atob(text);
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    const { instance } = await WebAssembly.instantiate(bytes, {});
    abi = instance.exports;
  } catch (e) {
    say("The kit's module did not start: " + e.message, true);
    document.body.dataset.failed = "1";
    return;
  }

  // The C ABI by hand: strings in through ws_alloc, out through an out-pointer and freed with
  // ws_string_free; an error status throws the ABI's message, named by the status.
  const encoder = new TextEncoder();
  const decoder = new TextDecoder();
  const bytesAt = (p, n) => new Uint8Array(abi.memory.buffer, p, n);
  function cString(p) {
    const m = new Uint8Array(abi.memory.buffer);
    let end = p;
    while (m[end] !== 0) end++;
    return decoder.decode(m.subarray(p, end));
  }
  // Runs `f(arg, out)`: `arg(text)` passes a string, `out(size)` a zeroed slot of `size` bytes
  // aligned to 8 (read with `u64(p)` / `str(p)`), `err` the error out-pointer; frees everything.
  function call(f) {
    const held = [];
    const alloc = (n) => {
      const raw = abi.ws_alloc(n + 8) >>> 0;
      if (raw === 0) throw new Error("ws_alloc: out of memory");
      held.push([raw, n + 8]);
      const p = (raw + 7) & ~7;
      bytesAt(p, n).fill(0);
      return p;
    };
    const arg = (text) => {
      const b = encoder.encode(text);
      const p = alloc(b.length + 1);
      bytesAt(p, b.length).set(b);
      return p;
    };
    const handed = [];
    const str = (at) => {
      const p = new DataView(abi.memory.buffer).getUint32(at, true);
      if (p === 0) return null;
      handed.push(p);
      return cString(p);
    };
    const u64 = (at) => new DataView(abi.memory.buffer).getBigUint64(at, true);
    const err = alloc(4);
    try {
      const st = f(arg, alloc, err, { str, u64 });
      if (st !== 0) {
        const e = new Error(str(err) || "status " + st);
        e.name = cString(abi.ws_status_name(st));
        throw e;
      }
      return { str, u64 };
    } finally {
      for (const p of handed) abi.ws_string_free(p);
      for (const [p, n] of held) abi.ws_dealloc(p, n);
    }
  }
  // A call that hands out one string (JSON).
  function text(fn, handle) {
    let out = null;
    call((arg, alloc, err, r) => {
      const at = alloc(4);
      const st = fn(handle, at, err);
      if (st === 0) out = r.str(at);
      return st;
    });
    return out;
  }

  let session = null;
  function open() {
    if (session !== null) abi.ws_play_free(session, 0);
    session = null;
    call((arg, alloc, err, r) => {
      const at = alloc(8);
      const st = abi.ws_play_new(arg(JSON.stringify(page.recording)), arg(page.title), at, err);
      if (st === 0) session = r.u64(at);
      return st;
    });
    return JSON.parse(text(abi.ws_play_header, session));
  }
  const frames = () => JSON.parse(text(abi.ws_play_frames, session));
  const state = () => JSON.parse(text(abi.ws_play_status, session));

  // What the page says beside the controls: the tick, the inputs, the player, the check.
  function report(extra) {
    const s = state();
    const parts = ["tick " + s.tick];
    parts.push(s.player ? "player " + s.player.id : "no player to move");
    if (s.pending) parts.push(s.pending + " input(s) queued");
    const c = s.check;
    if (c.recorded > 0) {
      parts.push(c.differs
        ? "differs from the recording at tick " + c.differs.tick + " (expected digest " + c.differs.expected +
          ", got " + c.differs.actual + ")"
        : c.checked + " of the recording's " + c.recorded + " ticks replayed exactly");
    }
    say(parts.join(" · ") + (extra ? " · " + extra : ""), !!c.differs || !!extra);
    const d = document.body.dataset;
    d.tick = String(s.tick);
    d.checked = String(c.checked);
    d.differs = c.differs ? String(c.differs.tick) : "";
  }

  function input(line) {
    try {
      call((arg, alloc, err) => abi.ws_play_input(session, arg(JSON.stringify(line)), err));
      report();
    } catch (e) {
      report(e.message);
    }
  }
  // A move of the player: `to(at)` gives where to, from where it will be.
  function move(to) {
    const s = state();
    if (!s.player) {
      report("no player to move (no controlled entity, none tagged player)");
      return false;
    }
    const at = to(s.player);
    input({ tick: s.tick + 1, do: "move", entity: s.player.id, to: { x: at[0], y: s.player.y, z: at[1] } });
    return true;
  }

  let header;
  try {
    header = open();
  } catch (e) {
    say("The scene did not start: " + e.message, true);
    document.body.dataset.failed = "1";
    return;
  }
  const first = frames();
  header.names = first.names;
  header.ids = first.ids;
  header.frames = first.frames;
  header.ticks = first.frames.length - 1;
  const stride = header.chunkSize / 2;
  const KEYS = {
    ArrowUp: [0, -1], w: [0, -1], W: [0, -1],
    ArrowDown: [0, 1], s: [0, 1], S: [0, 1],
    ArrowLeft: [-1, 0], a: [-1, 0], A: [-1, 0],
    ArrowRight: [1, 0], d: [1, 0], D: [1, 0],
  };
  const live = {
    more(n) {
      try {
        call((arg, alloc, err) => abi.ws_play_tick(session, BigInt(n), err));
      } catch (e) {
        const got = frames();
        report(e.message);
        return got;
      }
      return frames();
    },
    reset() {
      open();
      return frames();
    },
    key(e) {
      const d = KEYS[e.key];
      if (!d) return false;
      move((p) => [p.x + d[0] * stride, p.z + d[1] * stride]);
      return true;
    },
    click(x, z) {
      move(() => [x, z]);
    },
    shown() {
      report();
    },
  };
  const viewer = wsViewer(header, live);

  $("save").addEventListener("click", () => {
    const recording = text(abi.ws_play_recording, session);
    const a = document.createElement("a");
    a.href = URL.createObjectURL(new Blob([recording], { type: "application/json" }));
    a.download = page.file;
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 1000);
  });
  $("save").disabled = false;
  // The recording's own ticks (a page made from a recording checks them): played at once when
  // the page is opened with #replay.
  if (location.hash === "#replay" && page.recording.ticks > 0) {
    viewer.step(page.recording.ticks - viewer.last());
  }
  document.body.dataset.playReady = "1";
})();
