"use strict";
// The replay viewer: rebuilds each tick's state from the embedded frames (each the difference
// from the tick before) and draws it. States are kept every K frames as the page moves forward,
// so a jump anywhere (the slider, Reset, a step back) replays at most K - 1 frames. Positions
// (`s.tick`, the slider) count frames; the tick shown is the engine's, which a `load` input in
// the run may set back or forward (the frame then carries it in `t`).
(() => {
  const data = JSON.parse(document.getElementById("data").textContent);
  const frames = data.frames;
  const last = data.ticks;
  const size = data.chunkSize;
  const K = 256;
  const $ = (id) => document.getElementById(id);
  const key = (x, z) => x + "," + z;
  const tickOf = [];
  for (let i = 0, t = 0; i < frames.length; i++) {
    t = frames[i].t !== undefined ? frames[i].t : i === 0 ? 0 : t + 1;
    tickOf.push(t);
  }
  const jumps = frames.some((f) => f.t !== undefined);
  const hasAgents = frames.some((f) => f.a && f.a.length > 0);
  const LOADED = data.names.indexOf("world.chunk.loaded");
  const UNLOADED = data.names.indexOf("world.chunk.unloaded");
  // SPEC §17: a run that uses `lod` says so in its first frame (`ls`, the levels' steps).
  const hasLod = frames.some((f) => f.ls !== undefined);
  const LOD_LOADED = data.names.indexOf("world.lod.loaded");
  const LOD_UNLOADED = data.names.indexOf("world.lod.unloaded");
  const bkey = (level, x, z) => level + ":" + x + "," + z;

  // Terrain heights: a loaded chunk has one once its terrain is built, until it is released.
  // The shading's scale is the whole run's.
  let hMin = Infinity;
  let hMax = -Infinity;
  for (const f of frames) {
    if (f.h) {
      for (let i = 2; i < f.h.length; i += 3) {
        hMin = Math.min(hMin, f.h[i]);
        hMax = Math.max(hMax, f.h[i]);
      }
    }
    // LOD blocks' heights share the chunks' scale (they sample the same terrain).
    if (f.bh) {
      for (let i = 3; i < f.bh.length; i += 4) {
        hMin = Math.min(hMin, f.bh[i]);
        hMax = Math.max(hMax, f.bh[i]);
      }
    }
  }

  function emptyState() {
    return {
      tick: -1, loaded: new Map(), pending: new Map(), heights: new Map(), refusals: [], foci: [],
      tickets: [], dormant: [], variables: {}, scene: null,
      predicted: [], holes: null, entities: new Map(), district: null, agents: new Map(),
      lodSteps: [], blocks: new Map(),
    };
  }

  function copy(s) {
    return {
      tick: s.tick, loaded: new Map(s.loaded), pending: new Map(s.pending),
      heights: new Map(s.heights), refusals: s.refusals,
      foci: s.foci, tickets: s.tickets, dormant: s.dormant,
      variables: Object.assign({}, s.variables), scene: s.scene,
      predicted: s.predicted, holes: s.holes, entities: new Map(s.entities), district: s.district,
      agents: new Map(s.agents), lodSteps: s.lodSteps, blocks: new Map(s.blocks),
    };
  }

  function addFlat(map, list) {
    for (let i = 0; i < list.length; i += 2) map.set(key(list[i], list[i + 1]), [list[i], list[i + 1]]);
  }

  function removeFlat(map, list) {
    for (let i = 0; i < list.length; i += 2) map.delete(key(list[i], list[i + 1]));
  }

  // Frame `t` takes the state of tick t - 1 to tick t: the chunk events first, then the rest.
  function apply(s, f, t) {
    if (f.e) {
      for (const ev of f.e) {
        // A LOD block's event, [name, x, z, level]: a load is not built and has no height.
        if (ev.length === 4) {
          if (ev[0] === LOD_LOADED) s.blocks.set(bkey(ev[3], ev[1], ev[2]), [ev[3], ev[1], ev[2], false, null]);
          else if (ev[0] === LOD_UNLOADED) s.blocks.delete(bkey(ev[3], ev[1], ev[2]));
          continue;
        }
        if (ev.length !== 3) continue;
        const k = key(ev[1], ev[2]);
        if (ev[0] === LOADED) {
          s.loaded.set(k, [ev[1], ev[2]]);
          s.pending.delete(k);
        } else if (ev[0] === UNLOADED) {
          s.loaded.delete(k);
          s.heights.delete(k);
        }
      }
    }
    if (f.la) addFlat(s.loaded, f.la);
    if (f.lr) {
      removeFlat(s.loaded, f.lr);
      removeFlat(s.heights, f.lr);
    }
    if (f.h) for (let i = 0; i < f.h.length; i += 3) s.heights.set(key(f.h[i], f.h[i + 1]), f.h[i + 2]);
    if (f.pa) addFlat(s.pending, f.pa);
    if (f.pr) removeFlat(s.pending, f.pr);
    if (f.r) s.refusals = f.r;
    if (f.f) s.foci = f.f;
    if (f.k) s.tickets = f.k;
    if (f.d) s.dormant = f.d;
    if (f.v) Object.assign(s.variables, f.v);
    if ("s" in f) s.scene = f.s;
    if (f.p) s.predicted = f.p;
    if (f.o) s.holes = f.o;
    // Entities by index in data.ids: [id, kind, x, z, tags, data], replaced whole when they
    // change, so a kept state never shares a changed record.
    if (f.n) for (const e of f.n) s.entities.set(e[0], [data.ids[e[0]], e[1], e[2], e[3], e[4], e[5]]);
    if (f.m) {
      for (let i = 0; i < f.m.length; i += 3) {
        const e = s.entities.get(f.m[i]);
        s.entities.set(f.m[i], [e[0], e[1], f.m[i + 1], f.m[i + 2], e[4], e[5]]);
      }
    }
    if (f.nr) for (const i of f.nr) s.entities.delete(i);
    if (f.c) s.district = f.c;
    // world.nav's agents by id index: [gx, gz, path, wait, stuck, arrived], replaced whole;
    // `as` drops the first cells of a path (the cells stepped into).
    if (f.a) for (const a of f.a) s.agents.set(a[0], [a[1], a[2], a[3], a[4], a[5], a[6]]);
    if (f.as) {
      for (let i = 0; i < f.as.length; i += 2) {
        const a = s.agents.get(f.as[i]);
        s.agents.set(f.as[i], [a[0], a[1], a[2].slice(2 * f.as[i + 1]), a[3], a[4], a[5]]);
      }
    }
    if (f.ar) for (const i of f.ar) s.agents.delete(i);
    // SPEC §17's blocks: [level, x, z, built, height], replaced whole when they change.
    if (f.ls) s.lodSteps = f.ls;
    if (f.ba) for (let i = 0; i < f.ba.length; i += 3) s.blocks.set(bkey(f.ba[i], f.ba[i + 1], f.ba[i + 2]), [f.ba[i], f.ba[i + 1], f.ba[i + 2], false, null]);
    if (f.br) for (let i = 0; i < f.br.length; i += 3) s.blocks.delete(bkey(f.br[i], f.br[i + 1], f.br[i + 2]));
    const block = (list, i, built, h) => {
      const k = bkey(list[i], list[i + 1], list[i + 2]);
      const b = s.blocks.get(k);
      s.blocks.set(k, [b[0], b[1], b[2], built === undefined ? b[3] : built, h === undefined ? b[4] : h]);
    };
    if (f.bb) for (let i = 0; i < f.bb.length; i += 3) block(f.bb, i, true, undefined);
    if (f.bu) for (let i = 0; i < f.bu.length; i += 3) block(f.bu, i, false, null);
    if (f.bh) for (let i = 0; i < f.bh.length; i += 4) block(f.bh, i, undefined, f.bh[i + 3]);
    s.tick = t;
  }

  let cur = emptyState();
  apply(cur, frames[0], 0);
  const snaps = [copy(cur)];

  function goTo(t) {
    t = Math.max(0, Math.min(last, t | 0));
    if (t === cur.tick) return;
    const j = Math.min(Math.floor(t / K), snaps.length - 1);
    if (t < cur.tick || j * K > cur.tick) cur = copy(snaps[j]);
    while (cur.tick < t) {
      const n = cur.tick + 1;
      apply(cur, frames[n], n);
      if (n % K === 0 && snaps.length === n / K) snaps.push(copy(cur));
    }
  }

  // Drawing.
  const canvas = $("grid");
  const ctx = canvas.getContext("2d");
  const style = getComputedStyle(document.documentElement);
  const color = (name) => style.getPropertyValue(name).trim();
  const C = {
    loaded: color("--loaded"), pending: color("--pending"), loadRefused: color("--load-refused"),
    unloadRefused: color("--unload-refused"), focus: color("--focus"), ticket: color("--ticket"),
    dormant: color("--dormant"), empty: color("--empty"), predicted: color("--predicted"),
    hole: color("--hole"), agent: color("--agent"), path: color("--path"), waiting: color("--waiting"),
    stuck: color("--stuck"),
    kind: { p: color("--player"), v: color("--vehicle"), d: color("--district"), e: color("--entity") },
  };
  const KIND = { p: "player", v: "vehicle", d: "district entity", e: "entity" };
  // An agent's state, in this order of precedence: arrived, stuck, waiting (for a chunk not
  // built), walking (it holds a path), else idle (it waits its turn for the tick's nodes).
  const agentState = (a) =>
    a[5] ? "arrived" : a[4] !== null ? "stuck" : a[3] !== null ? "waiting" : a[2].length ? "walking" : "idle";
  const cellSize = data.cellsPerChunk ? size / data.cellsPerChunk : 1;
  // Where the last drawing put things, for the pointer.
  let geometry = null;
  const W = canvas.width;
  const H = canvas.height;

  function heightColor(h) {
    const t = hMax > hMin ? (h - hMin) / (hMax - hMin) : 0.5;
    return "hsl(128, 45%, " + (20 + 45 * t).toFixed(1) + "%)";
  }

  // SPEC §17: each level its hue (from the CSS), darker and greyer than the chunks; a built
  // block's lightness follows its height (14–48 %, the run's scale), 30 % without one; a block
  // not built yet is hatched and outlined in a light tint of its hue, over whatever lies under it.
  const LOD_HUES = [1, 2, 3, 4].map((l) => Number(color("--lod-" + l)));
  const blockColor = (level, h) => {
    const t = hMax > hMin ? (h - hMin) / (hMax - hMin) : 0.5;
    return "hsl(" + LOD_HUES[level - 1] + ", 40%, " + (h === null ? 30 : 14 + 34 * t).toFixed(1) + "%)";
  };
  const unbuiltColor = (level) => "hsl(" + LOD_HUES[level - 1] + ", 75%, 70%)";
  // Hatching: one-pixel diagonals every 6 px, crisp (no smoothing), fixed to the canvas.
  const hatch = LOD_HUES.map((_, i) => {
    const tile = document.createElement("canvas");
    tile.width = tile.height = 6;
    const t = tile.getContext("2d");
    t.fillStyle = unbuiltColor(i + 1);
    for (let y = 0; y < 6; y++) t.fillRect((6 - y) % 6, y, 1, 1);
    return ctx.createPattern(tile, "repeat");
  });
  // What the view is fitted to: the blocks of levels up to `fit` (0: the chunks only). It
  // opens on the outermost level, so every ring is in view.
  const fitSelect = $("fit");
  const blockStep = (s, level) => (s.lodSteps[level - 1] === undefined ? null : s.lodSteps[level - 1]);

  function draw() {
    const s = cur;
    let minX = Infinity, maxX = -Infinity, minZ = Infinity, maxZ = -Infinity;
    const extend = (x, z) => {
      if (x < minX) minX = x;
      if (x > maxX) maxX = x;
      if (z < minZ) minZ = z;
      if (z > maxZ) maxZ = z;
    };
    for (const [x, z] of s.loaded.values()) extend(x, z);
    for (const [x, z] of s.pending.values()) extend(x, z);
    for (const r of s.refusals) extend(r[0], r[1]);
    for (let i = 0; i < s.foci.length; i += 2) {
      extend(Math.floor(s.foci[i] / size), Math.floor(s.foci[i + 1] / size));
    }
    for (const t of s.tickets) {
      const cx = Math.floor(t[1] / size), cz = Math.floor(t[2] / size), r = t[3];
      extend(cx - r, cz - r);
      extend(cx + r, cz + r);
    }
    for (const d of s.dormant) extend(Math.floor(d[1] / size), Math.floor(d[2] / size));
    for (let i = 0; i < s.predicted.length; i += 2) {
      extend(Math.floor(s.predicted[i] / size), Math.floor(s.predicted[i + 1] / size));
    }
    if (s.holes) for (let i = 0; i < s.holes.length; i += 2) extend(s.holes[i], s.holes[i + 1]);
    for (const e of s.entities.values()) extend(Math.floor(e[2] / size), Math.floor(e[3] / size));
    for (const a of s.agents.values()) {
      if (a[3] !== null) extend(a[3][0], a[3][1]);
      for (let i = 0; i < a[2].length; i += 2) {
        extend(Math.floor(((a[2][i] + 0.5) * cellSize) / size), Math.floor(((a[2][i + 1] + 0.5) * cellSize) / size));
      }
    }
    const fit = hasLod ? Number(fitSelect.value) : 0;
    for (const b of s.blocks.values()) {
      const st = blockStep(s, b[0]);
      if (st === null || b[0] > fit) continue;
      extend(b[1] * st, b[2] * st);
      extend(b[1] * st + st - 1, b[2] * st + st - 1);
    }
    if (minX === Infinity) minX = maxX = minZ = maxZ = 0;
    minX -= 1; minZ -= 1; maxX += 1; maxZ += 1;
    const w = maxX - minX + 1, h = maxZ - minZ + 1;
    let cell = Math.min(W / w, H / h);
    if (cell >= 2) cell = Math.floor(cell);
    const ox = Math.floor((W - w * cell) / 2), oz = Math.floor((H - h * cell) / 2);
    const px = (x) => ox + (x - minX) * cell;
    const pz = (z) => oz + (z - minZ) * cell;
    const gap = cell >= 6 ? 1 : 0;
    const fill = (x, z, c) => {
      ctx.fillStyle = c;
      ctx.fillRect(px(x) + gap, pz(z) + gap, cell - gap, cell - gap);
    };

    ctx.fillStyle = C.empty;
    ctx.fillRect(0, 0, W, H);
    // LOD blocks under everything, the coarsest level first so finer ones lie on top.
    const levels = [];
    for (const b of s.blocks.values()) {
      while (levels.length < b[0]) levels.push([]);
      levels[b[0] - 1].push(b);
    }
    const blockCounts = levels.map(() => [0, 0]);
    let blocksDrawn = 0;
    let unbuiltDrawn = 0;
    for (let l = levels.length; l >= 1; l--) {
      for (const b of levels[l - 1]) {
        blockCounts[l - 1][b[3] ? 0 : 1]++;
        const st = blockStep(s, l);
        if (st === null) continue;
        const x0 = px(b[1] * st) + gap, z0 = pz(b[2] * st) + gap, side = st * cell - gap;
        if (b[3]) {
          ctx.fillStyle = blockColor(l, b[4]);
          ctx.fillRect(x0, z0, side, side);
        } else {
          ctx.fillStyle = hatch[l - 1];
          ctx.fillRect(x0, z0, side, side);
          ctx.fillStyle = unbuiltColor(l);
          ctx.fillRect(x0, z0, side, 1);
          ctx.fillRect(x0, z0 + side - 1, side, 1);
          ctx.fillRect(x0, z0, 1, side);
          ctx.fillRect(x0 + side - 1, z0, 1, side);
          unbuiltDrawn++;
        }
        blocksDrawn++;
      }
    }
    for (const [x, z] of s.pending.values()) fill(x, z, C.pending);
    const held = new Set();
    for (const r of s.refusals) {
      if (r[2] === "load") fill(r[0], r[1], C.loadRefused);
      else held.add(key(r[0], r[1]));
    }
    let loadedDrawn = 0;
    for (const [k, [x, z]] of s.loaded) {
      let c = C.loaded;
      if (held.has(k)) c = C.unloadRefused;
      else if (s.heights.has(k)) c = heightColor(s.heights.get(k));
      fill(x, z, c);
      loadedDrawn++;
    }
    // Holes (SPEC §16): a frame inside the cell, whatever the cell shows.
    let holesDrawn = 0;
    if (s.holes) {
      const b = Math.max(2, Math.floor(cell / 8));
      ctx.fillStyle = C.hole;
      for (let i = 0; i < s.holes.length; i += 2) {
        const x0 = px(s.holes[i]) + gap, z0 = pz(s.holes[i + 1]) + gap, side = cell - gap;
        ctx.fillRect(x0, z0, side, b);
        ctx.fillRect(x0, z0 + side - b, side, b);
        ctx.fillRect(x0, z0, b, side);
        ctx.fillRect(x0 + side - b, z0, b, side);
        holesDrawn++;
      }
    }
    ctx.setLineDash([Math.max(2, cell / 4), Math.max(2, cell / 4)]);
    ctx.strokeStyle = C.ticket;
    ctx.lineWidth = 2;
    ctx.font = "12px sans-serif";
    ctx.fillStyle = C.ticket;
    for (const t of s.tickets) {
      const cx = Math.floor(t[1] / size), cz = Math.floor(t[2] / size), r = t[3];
      ctx.strokeRect(px(cx - r) + 1, pz(cz - r) + 1, (2 * r + 1) * cell - 2, (2 * r + 1) * cell - 2);
      ctx.fillText(String(t[0]), px(cx - r) + 4, pz(cz - r) + 14);
    }
    ctx.setLineDash([]);
    const mark = Math.max(3, Math.min(cell * 0.3, 10));
    // world.nav: each agent's path, a line from where it stands through the centres of the
    // cells still to step into; a waiting agent's chunk framed (dashed) and tied to it.
    const mx = (x) => ox + (x / size - minX) * cell;
    const agentCounts = { walking: 0, waiting: 0, stuck: 0, arrived: 0, idle: 0 };
    let pathCellsDrawn = 0;
    const waitChunks = new Set();
    for (const [i, a] of s.agents) {
      agentCounts[agentState(a)]++;
      const e = s.entities.get(i);
      if (!e || agentState(a) !== "waiting") continue;
      const [cx, cz] = a[3];
      ctx.strokeStyle = C.waiting;
      ctx.lineWidth = 2;
      ctx.setLineDash([Math.max(2, cell / 6), Math.max(2, cell / 6)]);
      if (!waitChunks.has(key(cx, cz))) {
        ctx.strokeRect(px(cx) + 2, pz(cz) + 2, cell - 4, cell - 4);
        waitChunks.add(key(cx, cz));
      }
      ctx.beginPath();
      ctx.moveTo(mx(e[2]), oz + (e[3] / size - minZ) * cell);
      ctx.lineTo(px(cx) + cell / 2, pz(cz) + cell / 2);
      ctx.stroke();
      ctx.setLineDash([]);
    }
    // The paths over the waits' marks.
    ctx.strokeStyle = C.path;
    ctx.lineWidth = 2;
    for (const [i, a] of s.agents) {
      const e = s.entities.get(i);
      if (!e || !a[2].length) continue;
      ctx.beginPath();
      ctx.moveTo(mx(e[2]), oz + (e[3] / size - minZ) * cell);
      for (let k = 0; k < a[2].length; k += 2) {
        ctx.lineTo(mx((a[2][k] + 0.5) * cellSize), oz + (((a[2][k + 1] + 0.5) * cellSize) / size - minZ) * cell);
        pathCellsDrawn++;
      }
      ctx.stroke();
    }
    // Live entities where they stand, by kind: a player a triangle, a vehicle a square, a
    // district entity or any other a small disc.
    const kinds = { p: 0, v: 0, d: 0, e: 0 };
    ctx.lineWidth = 1;
    ctx.strokeStyle = "#000";
    for (const [i, e] of s.entities) {
      const x = ox + (e[2] / size - minX) * cell, z = oz + (e[3] / size - minZ) * cell;
      const m = mark * 0.8;
      const agent = s.agents.get(i);
      ctx.fillStyle = C.kind[e[1]];
      ctx.beginPath();
      if (agent && e[1] === "e") {
        // An agent: a disc with a ring, coloured by its state.
        const st = agentState(agent);
        ctx.fillStyle = st === "waiting" ? C.waiting : st === "stuck" ? C.stuck : C.agent;
        ctx.arc(x, z, m, 0, 2 * Math.PI);
      } else if (e[1] === "p") {
        ctx.moveTo(x, z - m);
        ctx.lineTo(x + m, z + m * 0.8);
        ctx.lineTo(x - m, z + m * 0.8);
        ctx.closePath();
      } else if (e[1] === "v") {
        ctx.rect(x - m * 0.8, z - m * 0.8, m * 1.6, m * 1.6);
      } else {
        ctx.arc(x, z, m * 0.7, 0, 2 * Math.PI);
      }
      ctx.fill();
      ctx.stroke();
      kinds[e[1]]++;
    }
    ctx.fillStyle = C.dormant;
    for (const d of s.dormant) {
      const x = ox + (d[1] / size - minX) * cell, z = oz + (d[2] / size - minZ) * cell;
      ctx.beginPath();
      ctx.moveTo(x, z - mark);
      ctx.lineTo(x + mark, z);
      ctx.lineTo(x, z + mark);
      ctx.lineTo(x - mark, z);
      ctx.closePath();
      ctx.fill();
    }
    ctx.lineWidth = 2;
    ctx.strokeStyle = "#000";
    // Predicted foci (SPEC §16) under the real ones: another colour, the same disc.
    ctx.fillStyle = C.predicted;
    for (let i = 0; i < s.predicted.length; i += 2) {
      const x = ox + (s.predicted[i] / size - minX) * cell;
      const z = oz + (s.predicted[i + 1] / size - minZ) * cell;
      ctx.beginPath();
      ctx.arc(x, z, mark, 0, 2 * Math.PI);
      ctx.fill();
      ctx.stroke();
    }
    ctx.fillStyle = C.focus;
    for (let i = 0; i < s.foci.length; i += 2) {
      const x = ox + (s.foci[i] / size - minX) * cell, z = oz + (s.foci[i + 1] / size - minZ) * cell;
      ctx.beginPath();
      ctx.arc(x, z, mark, 0, 2 * Math.PI);
      ctx.fill();
      ctx.stroke();
    }
    Object.assign(canvas.dataset, {
      tick: tickOf[s.tick], frame: s.tick, loadedDrawn: loadedDrawn, originX: minX, originZ: minZ, cell: cell, ox: ox, oz: oz,
      holesDrawn: holesDrawn, predictedDrawn: s.predicted.length / 2, entitiesDrawn: s.entities.size,
    });
    if (hasLod) {
      Object.assign(canvas.dataset, { blocksDrawn: blocksDrawn, blocksUnbuiltDrawn: unbuiltDrawn, fit: fit });
      const items = [];
      for (let l = 1; l <= Math.max(levels.length, s.lodSteps.length); l++) {
        const [built, unbuilt] = blockCounts[l - 1] || [0, 0];
        const st = blockStep(s, l);
        const li = document.createElement("li");
        li.textContent = "level " + l + " (step " + (st === null ? "–" : st) + "): " + (built + unbuilt) +
          " blocks (built " + built + " · not built " + unbuilt + ")";
        items.push(li);
      }
      $("lod-counts").replaceChildren(...items);
    }
    if (hasAgents) {
      Object.assign(canvas.dataset, {
        agentsDrawn: s.agents.size, pathCellsDrawn: pathCellsDrawn, waitChunksDrawn: waitChunks.size,
      });
      $("agent-counts").textContent =
        "agents " + s.agents.size + " (walking " + agentCounts.walking + " · waiting " + agentCounts.waiting +
        " · stuck " + agentCounts.stuck + " · arrived " + agentCounts.arrived + " · idle " + agentCounts.idle + ")";
    }
    geometry = { minX, minZ, cell, ox, oz, mark };
    let loadRefused = 0;
    for (const r of s.refusals) if (r[2] === "load") loadRefused++;
    $("counts").textContent =
      "loaded " + s.loaded.size + " · pending " + s.pending.size + " · load refused " + loadRefused +
      " · unload refused " + (s.refusals.length - loadRefused) + " · foci " + s.foci.length / 2 +
      " · tickets " + s.tickets.length + " · dormant " + s.dormant.length +
      (s.predicted.length ? " · predicted " + s.predicted.length / 2 : "") +
      (s.holes ? " · holes " + s.holes.length / 2 : "") +
      (hasLod ? " · blocks " + s.blocks.size : "");
    $("entity-counts").textContent =
      "live " + s.entities.size + " (players " + kinds.p + " · vehicles " + kinds.v +
      " · district " + kinds.d + " · other " + kinds.e + ")" +
      (s.district ? " · district kit: live " + s.district[0] + ", stored " + s.district[1] : "");
    showDetail();
  }

  // The entity under the pointer, in the detail panel (text only: ids and data come from the
  // run, never parsed as HTML).
  let pointer = null;
  function showDetail() {
    const items = [];
    const row = (k, v) => {
      const dt = document.createElement("dt");
      dt.textContent = k;
      const dd = document.createElement("dd");
      dd.textContent = v;
      items.push(dt, dd);
    };
    if (pointer && geometry) {
      const g = geometry;
      let best = null;
      let bestIndex = -1;
      let bestD = (g.mark + 3) * (g.mark + 3);
      for (const [i, e] of cur.entities) {
        const x = g.ox + (e[2] / size - g.minX) * g.cell, z = g.oz + (e[3] / size - g.minZ) * g.cell;
        const d = (x - pointer[0]) * (x - pointer[0]) + (z - pointer[1]) * (z - pointer[1]);
        if (d <= bestD) {
          best = e;
          bestIndex = i;
          bestD = d;
        }
      }
      if (best) {
        row("id", best[0]);
        row("kind", KIND[best[1]]);
        row("position", "x " + best[2] + ", z " + best[3] + " (chunk " + Math.floor(best[2] / size) +
          ", " + Math.floor(best[3] / size) + ")");
        row("tags", best[4].length ? best[4].join(", ") : "(none)");
        if (best[5] !== null) row("data", JSON.stringify(best[5]));
        const agent = cur.agents.get(bestIndex);
        if (agent) {
          row("goal", "cell " + agent[0] + ", " + agent[1]);
          const st = agentState(agent);
          row("state", st === "walking" ? "walking, " + agent[2].length / 2 + " cells to go"
            : st === "waiting" ? "waiting for chunk " + agent[3][0] + ", " + agent[3][1]
            : st === "stuck" ? "stuck (" + agent[4] + ")"
            : st === "idle" ? "idle (waits its turn)" : "arrived");
        }
      } else if (hasLod) {
        // SPEC §17: the block drawn under the pointer (the finest level's), unless a chunk
        // is drawn over it.
        const cx = Math.floor(g.minX + (pointer[0] - g.ox) / g.cell);
        const cz = Math.floor(g.minZ + (pointer[1] - g.oz) / g.cell);
        if (!cur.loaded.has(key(cx, cz)) && !cur.pending.has(key(cx, cz))) {
          for (let l = 1; l <= cur.lodSteps.length; l++) {
            const st = blockStep(cur, l);
            if (st === null) continue;
            const bx = Math.floor(cx / st), bz = Math.floor(cz / st);
            const b = cur.blocks.get(bkey(l, bx, bz));
            if (!b) continue;
            row("LOD level", l + " (step " + st + ")");
            row("block", "x " + bx + ", z " + bz);
            row("chunks", "x " + bx * st + " – " + (bx * st + st - 1) + ", z " + bz * st + " – " + (bz * st + st - 1));
            row("built", b[3] ? "yes" : "no");
            row("height", b[4] === null ? "(none)" : String(b[4]));
            break;
          }
        }
      }
    }
    $("detail").replaceChildren(...items);
    $("detail-none").hidden = items.length > 0;
  }
  canvas.addEventListener("mousemove", (e) => {
    const r = canvas.getBoundingClientRect();
    pointer = [((e.clientX - r.left) * W) / r.width, ((e.clientY - r.top) * H) / r.height];
    showDetail();
  });
  canvas.addEventListener("mouseleave", () => {
    pointer = null;
    showDetail();
  });

  const MAX_EVENTS_SHOWN = 400;

  function showEvents() {
    const list = $("events");
    const events = frames[cur.tick].e || [];
    const items = [];
    for (const ev of events.slice(0, MAX_EVENTS_SHOWN)) {
      const li = document.createElement("li");
      const name = data.names[ev[0]];
      li.textContent = ev.length === 3
        ? name + ' {"x":' + ev[1] + ',"z":' + ev[2] + "}"
        : ev.length === 4
          ? name + ' {"level":' + ev[3] + ',"x":' + ev[1] + ',"z":' + ev[2] + "}"
          : name + " " + JSON.stringify(ev[1]);
      items.push(li);
    }
    if (events.length > MAX_EVENTS_SHOWN) {
      const li = document.createElement("li");
      li.className = "more";
      li.textContent = "… and " + (events.length - MAX_EVENTS_SHOWN) + " more";
      items.push(li);
    }
    list.replaceChildren(...items);
    $("event-count").textContent = "(" + events.length + ")";
    const vars = [];
    for (const [k, v] of Object.entries(cur.variables)) {
      const dt = document.createElement("dt");
      dt.textContent = k;
      const dd = document.createElement("dd");
      dd.textContent = typeof v === "number" ? String(v) : JSON.stringify(v);
      vars.push(dt, dd);
    }
    $("variables").replaceChildren(...vars);
  }

  const slider = $("slider");
  function show(t) {
    goTo(t);
    draw();
    showEvents();
    $("tick").textContent = String(tickOf[cur.tick]);
    if (jumps) $("frame").textContent = "(frame " + cur.tick + " of " + last + ")";
    $("scene").textContent = cur.scene === null ? "(no scene)" : "scene " + cur.scene;
    slider.value = String(cur.tick);
  }

  // Playback. With prefers-reduced-motion: reduce the page never moves by itself.
  const reduce = window.matchMedia("(prefers-reduced-motion: reduce)");
  let playing = false;
  let raf = 0;
  let then = 0;
  let owed = 0;

  function buttons() {
    $("start").disabled = playing || reduce.matches;
    $("pause").disabled = !playing;
    $("motion").hidden = !reduce.matches;
  }

  function loop(now) {
    if (!playing) return;
    owed += ((now - then) * Number($("speed").value)) / 1000;
    then = now;
    const n = Math.floor(owed);
    if (n > 0) {
      owed -= n;
      show(cur.tick + n);
    }
    if (cur.tick >= last) {
      pause();
      return;
    }
    raf = requestAnimationFrame(loop);
  }

  function start() {
    if (playing || reduce.matches) return;
    if (cur.tick >= last) show(0);
    playing = true;
    then = performance.now();
    owed = 0;
    raf = requestAnimationFrame(loop);
    buttons();
  }

  function pause() {
    playing = false;
    cancelAnimationFrame(raf);
    buttons();
  }

  function step(d) {
    pause();
    show(cur.tick + d);
  }

  $("start").addEventListener("click", start);
  $("pause").addEventListener("click", pause);
  $("reset").addEventListener("click", () => step(-cur.tick));
  $("step").addEventListener("click", () => step(1));
  slider.addEventListener("input", () => {
    pause();
    show(Number(slider.value));
  });
  reduce.addEventListener("change", () => {
    if (reduce.matches) pause();
    buttons();
  });
  document.addEventListener("keydown", (e) => {
    if (e.target === slider || e.target.tagName === "SELECT" || e.altKey || e.ctrlKey || e.metaKey) {
      return;
    }
    const keys = {
      " ": () => (playing ? pause() : start()),
      ArrowRight: () => step(1),
      ".": () => step(1),
      ArrowLeft: () => step(-1),
      ",": () => step(-1),
      Home: () => step(-cur.tick),
      r: () => step(-cur.tick),
      End: () => step(last - cur.tick),
    };
    const action = keys[e.key];
    if (action) {
      e.preventDefault();
      action();
    }
  });

  slider.max = String(last);
  $("last").textContent = String(tickOf[last]);
  // SPEC §16's marks are in the legend when the run has them.
  $("legend-predicted").hidden = !frames.some((f) => f.p && f.p.length > 0);
  $("legend-holes").hidden = !frames.some((f) => f.o);
  // world.nav's marks when the run has agents.
  for (const id of ["legend-agent", "legend-path", "legend-waiting", "legend-stuck", "agents-panel"]) {
    $(id).hidden = !hasAgents;
  }
  // SPEC §17: the levels in the legend, the panel, and the fit choice.
  if (hasLod) {
    let n = 0;
    let stepsOf = [];
    for (const f of frames) {
      if (f.ls) {
        n = Math.max(n, f.ls.length);
        if (!stepsOf.length) stepsOf = f.ls;
      }
    }
    for (let l = 1; l <= 4; l++) {
      const li = $("legend-lod-" + l);
      li.hidden = l > n;
      li.lastChild.textContent = "LOD level " + l + (stepsOf[l - 1] ? " (a block of " + stepsOf[l - 1] + " × " +
        stepsOf[l - 1] + " chunks)" : "") + ", lighter is higher";
    }
    $("legend-lod-unbuilt").hidden = false;
    $("lod-panel").hidden = false;
    $("fit-label").hidden = false;
    const options = [];
    for (let l = n; l >= 1; l--) {
      const o = document.createElement("option");
      o.value = String(l);
      o.textContent = l === n ? "every level" : "level " + l;
      options.push(o);
    }
    const o = document.createElement("option");
    o.value = "0";
    o.textContent = "chunks";
    options.push(o);
    fitSelect.replaceChildren(...options);
    fitSelect.value = String(n);
    fitSelect.addEventListener("change", () => draw());
  }
  if (hMax >= hMin) {
    $("legend-heights").hidden = false;
    $("height-range").textContent = "(" + hMin + " – " + hMax + ")";
  }
  buttons();
  show(data.start);
  performance.mark("ws-first-grid");
  document.body.dataset.ready = "1";
})();
