"use strict";
// The replay viewer's drawing core: rebuilds each tick's state from the embedded frames (each the
// difference from the tick before) and draws it. States are kept every K frames as the page moves
// forward, so a jump anywhere (the slider, Reset, a step back) replays at most K - 1 frames.
// Positions (`s.tick`, the slider) count frames; the tick shown is the engine's, which a `load`
// input in the run may set back or forward (the frame then carries it in `t`).
//
// What belongs to no kit is drawn here: the grid's geometry, the live entities by kind, the
// events, the variables, the controls. Each kit's layer (its `view.js`, beside its `view.rs`) is
// put where this file takes the layers (below, in the catalog's order) and registers itself with
// `layer({...})`, giving any of:
//   empty(s)              add its fields to a fresh state;
//   copy(from, to)        copy them into a kept state (a field replaced whole may be shared);
//   apply(s, f, t)        apply frame `f` (its own fields, and the tick's events `f.e`);
//   extent(s, extend)     the cells it draws, for the bounds (`extend(x, z)`, chunk units);
//   under(s, g)           draw under the entities (`g`: the geometry, below);
//   beside(s, g)          draw after `under`, still under the entities;
//   entity(s, i, e)       a fill for entity `i` drawn as a full disc, or null;
//   over(s, g)            draw over the entities;
//   dataset(s)            attributes for the canvas's `data-*` (counts drawn);
//   panel(s)              bring its own panels up to date;
//   caption(s)            text for the caption under the grid;
//   entityCaption(s)      text after the entity counts;
//   entityDetail(s, i, row)      rows for entity `i` under the pointer;
//   pointDetail(s, g, at, row)   rows for the grid under the pointer when no entity is: true if
//                                it wrote any;
//   kinds                 entity kinds it draws: {d: {name, count, color}};
//   grow(list)            read frames added to `frames` (all of them first, then, on a live
//                         page, each batch the run appends), e.g. for a scale or a legend;
//   setup(page)           once, before the first drawing: its legend, its controls
//                         (`page.draw()` redraws).
//
// A recorded page (`view`) draws the frames embedded in it. A live page (`play`) has no embedded
// data: its controller (play.js) calls `wsViewer(data, live)` with the frames captured so far and
// `live`, which runs the game on: `more(n)` runs up to n ticks and answers the frames they added
// (`{names, ids, frames}`), `reset()` answers a fresh run's data, `key(e)` and `click(x, z)` (in
// metres) take the keys and clicks that steer the run, `shown()` follows each drawing. The same
// playback then runs the game: Step and Start ask `more` for the frames past the last.
function wsViewer(data, live) {
  let frames = data.frames;
  let last = data.ticks;
  const size = data.chunkSize;
  const K = 256;
  const $ = (id) => document.getElementById(id);
  const key = (x, z) => x + "," + z;
  const tickOf = [];
  let jumps = false;
  // The engine's tick of each frame from `from` on.
  function count(from) {
    for (let i = from; i < frames.length; i++) {
      tickOf[i] = frames[i].t !== undefined ? frames[i].t : i === 0 ? 0 : tickOf[i - 1] + 1;
      if (frames[i].t !== undefined) jumps = true;
    }
  }
  count(0);
  const canvas = $("grid");
  const ctx = canvas.getContext("2d");
  const style = getComputedStyle(document.documentElement);
  const color = (name) => style.getPropertyValue(name).trim();
  const W = canvas.width;
  const H = canvas.height;

  function addFlat(map, list) {
    for (let i = 0; i < list.length; i += 2) map.set(key(list[i], list[i + 1]), [list[i], list[i + 1]]);
  }

  function removeFlat(map, list) {
    for (let i = 0; i < list.length; i += 2) map.delete(key(list[i], list[i + 1]));
  }

  // The kits' layers, in the catalog's order.
  const layers = [];
  const layer = (l) => layers.push(l);
  /*{{LAYERS}}*/
  const each = (hook, ...args) => {
    for (const l of layers) if (l[hook]) l[hook](...args);
  };
  each("grow", frames);

  function emptyState() {
    const s = { tick: -1, variables: {}, scene: null, entities: new Map() };
    each("empty", s);
    return s;
  }

  function copy(s) {
    const c = { tick: s.tick, variables: Object.assign({}, s.variables), scene: s.scene, entities: new Map(s.entities) };
    each("copy", s, c);
    return c;
  }

  // Frame `t` takes the state of tick t - 1 to tick t: the layers' fields (the chunk events
  // first), then the entities.
  function apply(s, f, t) {
    if (f.v) Object.assign(s.variables, f.v);
    if ("s" in f) s.scene = f.s;
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
    each("apply", s, f, t);
    s.tick = t;
  }

  let cur = emptyState();
  apply(cur, frames[0], 0);
  let snaps = [copy(cur)];

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

  // Drawing. Entities by kind: a player, a vehicle, the kinds the layers give, any other.
  const kindsOf = Object.assign({}, ...layers.map((l) => l.kinds || {}));
  const C = {
    empty: color("--empty"),
    kind: { p: color("--player"), v: color("--vehicle"), e: color("--entity") },
  };
  const KIND = { p: "player", v: "vehicle" };
  for (const [k, d] of Object.entries(kindsOf)) {
    C.kind[k] = color(d.color);
    KIND[k] = d.name;
  }
  KIND.e = "entity";
  // Where the last drawing put things, for the pointer.
  let geometry = null;

  function draw() {
    const s = cur;
    let minX = Infinity, maxX = -Infinity, minZ = Infinity, maxZ = -Infinity;
    const extend = (x, z) => {
      if (x < minX) minX = x;
      if (x > maxX) maxX = x;
      if (z < minZ) minZ = z;
      if (z > maxZ) maxZ = z;
    };
    each("extent", s, extend);
    for (const e of s.entities.values()) extend(Math.floor(e[2] / size), Math.floor(e[3] / size));
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
    const mark = Math.max(3, Math.min(cell * 0.3, 10));
    // A position in metres on the canvas.
    const mx = (x) => ox + (x / size - minX) * cell;
    const mz = (z) => oz + (z / size - minZ) * cell;
    const g = { minX, minZ, cell, ox, oz, gap, px, pz, fill, mark, mx, mz };

    ctx.fillStyle = C.empty;
    ctx.fillRect(0, 0, W, H);
    each("under", s, g);
    each("beside", s, g);
    // Live entities where they stand, by kind: a player a triangle, a vehicle a square, any
    // other a small disc (a layer may draw one as a full disc of its own colour).
    const kinds = { p: 0, v: 0, e: 0 };
    for (const k of Object.keys(kindsOf)) kinds[k] = 0;
    ctx.lineWidth = 1;
    ctx.strokeStyle = "#000";
    for (const [i, e] of s.entities) {
      const x = mx(e[2]), z = mz(e[3]);
      const m = mark * 0.8;
      let own = null;
      for (const l of layers) if (l.entity && (own = l.entity(s, i, e)) !== null) break;
      ctx.fillStyle = C.kind[e[1]];
      ctx.beginPath();
      if (own !== null) {
        ctx.fillStyle = own;
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
    each("over", s, g);
    Object.assign(canvas.dataset, {
      tick: tickOf[s.tick], frame: s.tick, originX: minX, originZ: minZ, cell: cell, ox: ox, oz: oz,
      entitiesDrawn: s.entities.size,
    });
    for (const l of layers) if (l.dataset) Object.assign(canvas.dataset, l.dataset(s));
    each("panel", s);
    geometry = { minX, minZ, cell, ox, oz, mark };
    $("counts").textContent = layers.map((l) => (l.caption ? l.caption(s) : "")).join("");
    const counted = [["players", "p"], ["vehicles", "v"]]
      .concat(Object.entries(kindsOf).map(([k, d]) => [d.count, k]), [["other", "e"]])
      .map(([name, k]) => name + " " + kinds[k]);
    $("entity-counts").textContent = "live " + s.entities.size + " (" + counted.join(" · ") + ")" +
      layers.map((l) => (l.entityCaption ? l.entityCaption(s) : "")).join("");
    showDetail();
  }

  // The entity under the pointer, in the detail panel (text only: ids and data come from the
  // run, never parsed as HTML); else what a layer has there.
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
        each("entityDetail", cur, bestIndex, row);
      } else {
        for (const l of layers) if (l.pointDetail && l.pointDetail(cur, g, pointer, row)) break;
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

  // A live page: the frames a batch of ticks added, after the last.
  function append(more) {
    data.names.push(...more.names);
    data.ids.push(...more.ids);
    const from = frames.length;
    frames.push(...more.frames);
    count(from);
    last = frames.length - 1;
    data.ticks = last;
    each("grow", more.frames);
    slider.max = String(last);
    $("last").textContent = String(tickOf[last]);
  }

  // A live page: a fresh run from its start.
  function restart(fresh) {
    data.names.length = 0;
    data.ids.length = 0;
    frames.length = 0;
    tickOf.length = 0;
    jumps = false;
    append(fresh);
    cur = emptyState();
    apply(cur, frames[0], 0);
    snaps = [copy(cur)];
  }

  function show(t) {
    if (live && t > last) {
      // Fewer frames than asked: the run stopped (its controller says why).
      const want = t - last;
      const more = live.more(want);
      append(more);
      if (more.frames.length < want) pause();
    }
    goTo(t);
    draw();
    showEvents();
    $("tick").textContent = String(tickOf[cur.tick]);
    if (jumps) $("frame").textContent = "(frame " + cur.tick + " of " + last + ")";
    $("scene").textContent = cur.scene === null ? "(no scene)" : "scene " + cur.scene;
    slider.value = String(cur.tick);
    if (live) live.shown();
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
    if (cur.tick >= last && !live) {
      pause();
      return;
    }
    raf = requestAnimationFrame(loop);
  }

  function start() {
    if (playing || reduce.matches) return;
    if (cur.tick >= last && !live) show(0);
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
  // Reset: back to tick 0; a live page starts its run afresh.
  function reset() {
    if (live) {
      pause();
      restart(live.reset());
      show(0);
    } else {
      step(-cur.tick);
    }
  }
  $("reset").addEventListener("click", reset);
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
    if (e.target.tagName === "INPUT" || e.target.tagName === "SELECT" || e.altKey || e.ctrlKey || e.metaKey) {
      return;
    }
    // A live page's arrows and WASD steer its player.
    if (live && live.key(e)) {
      e.preventDefault();
      return;
    }
    const keys = {
      " ": () => (playing ? pause() : start()),
      ArrowRight: () => step(1),
      ".": () => step(1),
      ArrowLeft: () => step(-1),
      ",": () => step(-1),
      Home: reset,
      r: reset,
      End: () => step(last - cur.tick),
    };
    const action = keys[e.key];
    if (action) {
      e.preventDefault();
      action();
    }
  });

  // A live page: a click sends its player to the chunk clicked (its centre, in metres).
  canvas.addEventListener("click", (e) => {
    if (!live || !geometry) return;
    const r = canvas.getBoundingClientRect();
    const g = geometry;
    const x = Math.floor((((e.clientX - r.left) * W) / r.width - g.ox) / g.cell + g.minX);
    const z = Math.floor((((e.clientY - r.top) * H) / r.height - g.oz) / g.cell + g.minZ);
    live.click((x + 0.5) * size, (z + 0.5) * size);
  });

  slider.max = String(last);
  $("last").textContent = String(tickOf[last]);
  each("setup", { draw });
  buttons();
  show(data.start);
  performance.mark("ws-first-grid");
  document.body.dataset.ready = "1";
  return { show, step, pause, start, reset, last: () => last };
}
// A recorded page draws its embedded data; a live page's controller calls wsViewer itself.
if (document.body.dataset.live === undefined) {
  wsViewer(JSON.parse(document.getElementById("data").textContent), null);
}
