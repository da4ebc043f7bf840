// world.streaming's layer of the replay viewer (see view.rs beside this file): the chunks
// (loaded, pending, held refusals), shaded by their height when the run has heights (`h`, `bh`:
// the terrain layer's); holes, tickets, dormant entities, predicted foci and foci; the LOD blocks,
// their panel, legend and the view's fit; with `neighbours` in force, complete chunks apart from
// those loaded but not complete. docs/viewer.md#vertical-worlds: with `vertical` in force (`vt`)
// the chunks are sections: the grid is a slice at one section row (the first focus's unless the
// row control says another), and a side view shows the (x, y) plane through the column under the
// pointer.
{
  // The events' indexes in `data.names` (a live run adds names as they first happen).
  let LOADED = -1;
  let UNLOADED = -1;
  let LOD_LOADED = -1;
  let LOD_UNLOADED = -1;
  let COMPLETE = -1;
  let INCOMPLETE = -1;
  // docs/reference/config.md#outputs-that-appear-only-when-used: a run that uses `lod` says so in
  // its first frame (`ls`, the levels' steps).
  let hasLod = false;
  // The most levels a frame gives, and the first frame's steps that give any.
  let lodLevels = 0;
  let lodSteps = [];
  // Whether the run has predicted foci, holes.
  let hasPredicted = false;
  let hasHoles = false;
  // docs/viewer.md#complete-chunks: a run with `neighbours` > 0 says so (`nb`, the neighbours in
  // force, written when it changes); its rings, the largest `nb`, for the legend.
  let hasComplete = false;
  let completeRings = 0;
  // docs/viewer.md#vertical-worlds: whether the run has had `vertical` in force.
  let hasVertical = false;
  // A chunk's key: a flat chunk's (and a section's at row 0) is `x,z`, another section's `x,z,y`.
  const skey = (x, z, y) => (y ? x + "," + z + "," + y : x + "," + z);
  // Chunk lists: flat pairs [x, z, …], with `vertical` in force triples [x, y, z, …]; entries
  // are [x, z, y].
  function addList(map, list, v) {
    if (!v) {
      for (let i = 0; i < list.length; i += 2) map.set(skey(list[i], list[i + 1], 0), [list[i], list[i + 1], 0]);
      return;
    }
    for (let i = 0; i < list.length; i += 3) map.set(skey(list[i], list[i + 2], list[i + 1]), [list[i], list[i + 2], list[i + 1]]);
  }
  function removeList(map, list, v) {
    const n = v ? 3 : 2;
    for (let i = 0; i < list.length; i += n) map.delete(v ? skey(list[i], list[i + 2], list[i + 1]) : skey(list[i], list[i + 1], 0));
  }
  // With `vertical`: a section loads into its column (the count of each column's loaded
  // sections), and a column's height is forgotten when its last section leaves (as the column's
  // `world.column.unloaded` says, and also for a correction's release).
  function loadSection(s, k, e) {
    if (!s.loaded.has(k)) {
      const ck = key(e[0], e[1]);
      s.columns.set(ck, (s.columns.get(ck) || 0) + 1);
    }
    s.loaded.set(k, e);
  }
  function unloadSection(s, k) {
    const e = s.loaded.get(k);
    if (e === undefined) return;
    s.loaded.delete(k);
    const ck = key(e[0], e[1]);
    const n = (s.columns.get(ck) || 1) - 1;
    if (n > 0) {
      s.columns.set(ck, n);
    } else {
      s.columns.delete(ck);
      s.heights.delete(ck);
    }
  }
  // The section an event's `{x, y, z}` payload names, or null.
  const sectionOf = (d) =>
    d !== null && typeof d === "object" && Number.isInteger(d.x) && Number.isInteger(d.y) && Number.isInteger(d.z)
      ? d : null;
  const bkey = (level, x, z) => level + ":" + x + "," + z;

  // Heights: a loaded chunk has one once its terrain is built, until it is released. The
  // shading's scale is the whole run's (so far, on a live page).
  let hMin = Infinity;
  let hMax = -Infinity;
  // What the frames say, read as they come (`grow`).
  function read(list) {
    LOADED = data.names.indexOf("world.chunk.loaded");
    UNLOADED = data.names.indexOf("world.chunk.unloaded");
    LOD_LOADED = data.names.indexOf("world.lod.loaded");
    LOD_UNLOADED = data.names.indexOf("world.lod.unloaded");
    COMPLETE = data.names.indexOf("world.chunk.complete");
    INCOMPLETE = data.names.indexOf("world.chunk.incomplete");
    for (const f of list) {
      if (f.vt) hasVertical = true;
      if (f.ls !== undefined) hasLod = true;
      if (f.ls) {
        lodLevels = Math.max(lodLevels, f.ls.length);
        if (!lodSteps.length) lodSteps = f.ls;
      }
      if (f.p && f.p.length > 0) hasPredicted = true;
      if (f.o) hasHoles = true;
      if (f.nb) {
        hasComplete = true;
        completeRings = Math.max(completeRings, f.nb);
      }
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
  }

  const C = {
    loaded: color("--loaded"), pending: color("--pending"), loadRefused: color("--load-refused"),
    unloadRefused: color("--unload-refused"), focus: color("--focus"), ticket: color("--ticket"),
    dormant: color("--dormant"), predicted: color("--predicted"), hole: color("--hole"),
    incomplete: color("--incomplete"),
  };

  function heightColor(h) {
    const t = hMax > hMin ? (h - hMin) / (hMax - hMin) : 0.5;
    return "hsl(128, 45%, " + (20 + 45 * t).toFixed(1) + "%)";
  }

  // docs/viewer.md#complete-chunks: a loaded chunk that is not complete is grey: `--incomplete`
  // until it has a height, then lighter the higher (28–68 %, the run's scale); a complete one
  // keeps the loaded green, shaded by height.
  function incompleteColor(h) {
    const t = hMax > hMin ? (h - hMin) / (hMax - hMin) : 0.5;
    return "hsl(210, 10%, " + (28 + 40 * t).toFixed(1) + "%)";
  }

  // docs/reference/engines.md#the-viewer: each level its hue (from the CSS), darker and greyer than
  // the chunks; a built block's lightness follows its height (14–48 %, the run's scale), 30 %
  // without one; a block not built yet is hatched and outlined in a light tint of its hue, over
  // whatever lies under it.
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
  // What the last drawing drew, for the canvas's data attributes and the panel.
  let fit = 0;
  let loadedDrawn = 0;
  let completeDrawn = 0;
  let incompleteDrawn = 0;
  let holesDrawn = 0;
  let blocksDrawn = 0;
  let unbuiltDrawn = 0;
  let levels = [];
  let blockCounts = [];

  layer({
    empty(s) {
      Object.assign(s, {
        loaded: new Map(), pending: new Map(), heights: new Map(), refusals: [], foci: [], tickets: [],
        dormant: [], predicted: [], holes: null, lodSteps: [], blocks: new Map(), neighbours: 0,
        complete: new Set(), vertical: null, columns: new Map(),
      });
    },

    copy(s, c) {
      Object.assign(c, {
        loaded: new Map(s.loaded), pending: new Map(s.pending), heights: new Map(s.heights),
        refusals: s.refusals, foci: s.foci, tickets: s.tickets, dormant: s.dormant,
        predicted: s.predicted, holes: s.holes, lodSteps: s.lodSteps, blocks: new Map(s.blocks),
        neighbours: s.neighbours, complete: new Set(s.complete), vertical: s.vertical,
        columns: new Map(s.columns),
      });
    },

    // The chunk events first, then the corrections and the rest.
    apply(s, f) {
      // docs/viewer.md#complete-chunks: the neighbours in force; at 0 nothing is complete.
      if (f.nb !== undefined) {
        s.neighbours = f.nb;
        if (f.nb === 0) s.complete.clear();
      }
      // docs/viewer.md#vertical-worlds: `vertical` in force ({radius, height}, null: off). The
      // lists below are then triples, the foci and predicted foci [x, y, z] in metres.
      if (f.vt !== undefined) s.vertical = f.vt;
      const v = s.vertical !== null;
      if (f.e) {
        for (const ev of f.e) {
          // A section's event, [name, {x, y, z}].
          const c = ev.length === 2 ? sectionOf(ev[1]) : null;
          if (c !== null) {
            const k = skey(c.x, c.z, c.y);
            if (ev[0] === LOADED) {
              loadSection(s, k, [c.x, c.z, c.y]);
              s.pending.delete(k);
            } else if (ev[0] === UNLOADED) {
              unloadSection(s, k);
              s.complete.delete(k);
            } else if (ev[0] === COMPLETE && s.neighbours > 0) {
              s.complete.add(k);
            } else if (ev[0] === INCOMPLETE) {
              s.complete.delete(k);
            }
            continue;
          }
          // A LOD block's event, [name, x, z, level]: a load is not built and has no height.
          if (ev.length === 4) {
            if (ev[0] === LOD_LOADED) s.blocks.set(bkey(ev[3], ev[1], ev[2]), [ev[3], ev[1], ev[2], false, null]);
            else if (ev[0] === LOD_UNLOADED) s.blocks.delete(bkey(ev[3], ev[1], ev[2]));
            continue;
          }
          if (ev.length !== 3) continue;
          const k = key(ev[1], ev[2]);
          if (ev[0] === LOADED) {
            s.loaded.set(k, [ev[1], ev[2], 0]);
            s.pending.delete(k);
          } else if (ev[0] === UNLOADED) {
            s.loaded.delete(k);
            s.heights.delete(k);
            s.complete.delete(k);
          } else if (ev[0] === COMPLETE && s.neighbours > 0) {
            s.complete.add(k);
          } else if (ev[0] === INCOMPLETE) {
            s.complete.delete(k);
          }
        }
      }
      if (f.la && v) for (let i = 0; i < f.la.length; i += 3) loadSection(s, skey(f.la[i], f.la[i + 2], f.la[i + 1]), [f.la[i], f.la[i + 2], f.la[i + 1]]);
      else if (f.la) addList(s.loaded, f.la, v);
      if (f.lr && v) {
        for (let i = 0; i < f.lr.length; i += 3) unloadSection(s, skey(f.lr[i], f.lr[i + 2], f.lr[i + 1]));
      } else if (f.lr) {
        removeList(s.loaded, f.lr, v);
        removeFlat(s.heights, f.lr);
      }
      // Complete chunks the events do not account for (a `load` of a save).
      const n = v ? 3 : 2;
      const at = (l, i) => (v ? skey(l[i], l[i + 2], l[i + 1]) : key(l[i], l[i + 1]));
      if (f.ca) for (let i = 0; i < f.ca.length; i += n) s.complete.add(at(f.ca, i));
      if (f.cr) for (let i = 0; i < f.cr.length; i += n) s.complete.delete(at(f.cr, i));
      // Heights are per column (a flat chunk is its column).
      if (f.h) for (let i = 0; i < f.h.length; i += 3) s.heights.set(key(f.h[i], f.h[i + 1]), f.h[i + 2]);
      if (f.pa) addList(s.pending, f.pa, v);
      if (f.pr) removeList(s.pending, f.pr, v);
      if (f.r) s.refusals = f.r;
      if (f.f) s.foci = f.f;
      if (f.k) s.tickets = f.k;
      if (f.d) s.dormant = f.d;
      if (f.p) s.predicted = f.p;
      if (f.o) s.holes = f.o;
      // The blocks (docs/reference/terrain.md#lod-blocks-built-by-terrain): [level, x, z, built,
      // height], replaced whole when they change.
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
    },

    extent(s, extend) {
      for (const [x, z] of s.loaded.values()) extend(x, z);
      for (const [x, z] of s.pending.values()) extend(x, z);
      for (const r of s.refusals) extend(r[0], r[1]);
      for (const [x, z] of points(s, s.foci)) extend(Math.floor(x / size), Math.floor(z / size));
      for (const t of s.tickets) {
        const cx = Math.floor(t[1] / size), cz = Math.floor(t[2] / size), r = t[3];
        extend(cx - r, cz - r);
        extend(cx + r, cz + r);
      }
      for (const d of s.dormant) extend(Math.floor(d[1] / size), Math.floor(d[2] / size));
      for (const [x, z] of points(s, s.predicted)) extend(Math.floor(x / size), Math.floor(z / size));
      if (s.holes) for (const [x, z] of cells(s, s.holes)) extend(x, z);
      fit = hasLod ? Number(fitSelect.value) : 0;
      for (const b of s.blocks.values()) {
        const st = blockStep(s, b[0]);
        if (st === null || b[0] > fit) continue;
        extend(b[1] * st, b[2] * st);
        extend(b[1] * st + st - 1, b[2] * st + st - 1);
      }
    },

    under(s, g) {
      const { cell, gap, px, pz, fill } = g;
      // docs/viewer.md#vertical-worlds: the slice's row (null: a flat world, every chunk drawn).
      const row = shownRow(s);
      const inRow = (y) => row === null || y === row;
      shown = { s, g, row };
      // LOD blocks under everything, the coarsest level first so finer ones lie on top.
      levels = [];
      for (const b of s.blocks.values()) {
        while (levels.length < b[0]) levels.push([]);
        levels[b[0] - 1].push(b);
      }
      blockCounts = levels.map(() => [0, 0]);
      blocksDrawn = 0;
      unbuiltDrawn = 0;
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
      pendingDrawn = 0;
      for (const [x, z, y] of s.pending.values()) {
        if (!inRow(y)) continue;
        fill(x, z, C.pending);
        pendingDrawn++;
      }
      const held = new Set();
      for (const r of s.refusals) {
        const y = r[5] || 0;
        if (!inRow(y)) continue;
        if (r[2] === "load") fill(r[0], r[1], C.loadRefused);
        else held.add(skey(r[0], r[1], y));
      }
      loadedDrawn = 0;
      completeDrawn = 0;
      incompleteDrawn = 0;
      const meshing = s.neighbours > 0;
      for (const [k, [x, z, y]] of s.loaded) {
        if (!inRow(y)) continue;
        const hk = key(x, z);
        let c = C.loaded;
        const incomplete = meshing && !s.complete.has(k);
        if (meshing) {
          if (incomplete) incompleteDrawn++;
          else completeDrawn++;
        }
        if (held.has(k)) c = C.unloadRefused;
        else if (incomplete) c = s.heights.has(hk) ? incompleteColor(s.heights.get(hk)) : C.incomplete;
        else if (s.heights.has(hk)) c = heightColor(s.heights.get(hk));
        fill(x, z, c);
        loadedDrawn++;
      }
      // Holes (docs/reference/streaming.md#holes): a frame inside the cell, whatever the cell
      // shows.
      holesDrawn = 0;
      if (s.holes) {
        const b = Math.max(2, Math.floor(cell / 8));
        ctx.fillStyle = C.hole;
        for (const [hx, hz, hy] of cells(s, s.holes)) {
          if (!inRow(hy)) continue;
          const x0 = px(hx) + gap, z0 = pz(hz) + gap, side = cell - gap;
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
        // A ticket's square is in the slice when its rows (the config's vertical radius around
        // its own row, `y` in metres last) hold the row shown.
        if (row !== null && Math.abs(Math.floor((t[5] || 0) / s.vertical.height) - row) > s.vertical.radius) continue;
        const cx = Math.floor(t[1] / size), cz = Math.floor(t[2] / size), r = t[3];
        ctx.strokeRect(px(cx - r) + 1, pz(cz - r) + 1, (2 * r + 1) * cell - 2, (2 * r + 1) * cell - 2);
        ctx.fillText(String(t[0]), px(cx - r) + 4, pz(cz - r) + 14);
      }
      ctx.setLineDash([]);
    },

    over(s, g) {
      const { mark, mx, mz } = g;
      ctx.fillStyle = C.dormant;
      for (const d of s.dormant) {
        const x = mx(d[1]), z = mz(d[2]);
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
      // Predicted foci (docs/reference/streaming.md#look-ahead) under the real ones: another
      // colour, the same disc.
      ctx.fillStyle = C.predicted;
      for (const [px, pz] of points(s, s.predicted)) {
        const x = mx(px);
        const z = mz(pz);
        ctx.beginPath();
        ctx.arc(x, z, mark, 0, 2 * Math.PI);
        ctx.fill();
        ctx.stroke();
      }
      ctx.fillStyle = C.focus;
      for (const [fx, fz] of points(s, s.foci)) {
        const x = mx(fx), z = mz(fz);
        ctx.beginPath();
        ctx.arc(x, z, mark, 0, 2 * Math.PI);
        ctx.fill();
        ctx.stroke();
      }
    },

    dataset(s) {
      const out = { loadedDrawn: loadedDrawn, holesDrawn: holesDrawn, predictedDrawn: points(s, s.predicted).length };
      // docs/viewer.md#vertical-worlds: the row shown, the focus's, whether it follows the focus,
      // the sections loaded in every row and those pending in the slice.
      if (hasVertical) {
        const row = shownRow(s), fr = focusRow(s);
        Object.assign(out, {
          row: row === null ? "" : row, focusRow: fr === null ? "" : fr, rowFollows: rowChoice === null ? "1" : "0",
          sectionsLoaded: s.loaded.size, pendingDrawn: pendingDrawn,
        });
      }
      if (hasLod) Object.assign(out, { blocksDrawn: blocksDrawn, blocksUnbuiltDrawn: unbuiltDrawn, fit: fit });
      if (hasComplete) Object.assign(out, { completeDrawn: completeDrawn, incompleteDrawn: incompleteDrawn });
      return out;
    },

    panel(s) {
      // docs/viewer.md#vertical-worlds: the row control says the row shown; the side view.
      if (hasVertical) {
        $("row-label").hidden = false;
        const row = shownRow(s);
        rowInput.disabled = row === null;
        rowInput.value = row === null ? "" : String(row);
        rowFollow.checked = rowChoice === null;
        if (shown) side(s, shown.g);
      }
      if (!hasLod) return;
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
    },

    caption(s) {
      let loadRefused = 0;
      for (const r of s.refusals) if (r[2] === "load") loadRefused++;
      // docs/viewer.md#vertical-worlds: with `vertical`, sections in every row, then the slice's.
      const row = shownRow(s);
      const slice = row === null ? "" : " sections (row " + row + ": " + loadedDrawn + ")";
      const slicePending = row === null ? "" : " (row " + row + ": " + pendingDrawn + ")";
      return "loaded " + s.loaded.size + slice + (s.neighbours > 0 ? " (complete " + s.complete.size + ")" : "") +
        " · pending " + s.pending.size + slicePending + " · load refused " + loadRefused +
        " · unload refused " + (s.refusals.length - loadRefused) + " · foci " + points(s, s.foci).length +
        " · tickets " + s.tickets.length + " · dormant " + s.dormant.length +
        (s.predicted.length ? " · predicted " + points(s, s.predicted).length : "") +
        (s.holes ? " · holes " + cells(s, s.holes).length : "") +
        (hasLod ? " · blocks " + s.blocks.size : "");
    },

    // docs/reference/engines.md#the-viewer: the block drawn under the pointer (the finest level's),
    // unless a chunk is drawn over it.
    pointDetail(s, g, at, row) {
      const cx = Math.floor(g.minX + (at[0] - g.ox) / g.cell);
      const cz = Math.floor(g.minZ + (at[1] - g.oz) / g.cell);
      // docs/viewer.md#vertical-worlds: the section of the slice under the pointer, and its
      // column's sections.
      const r = shownRow(s);
      const k = skey(cx, cz, r === null ? 0 : r);
      if (r !== null) {
        const [loaded, pending] = columnRows(s, cx, cz);
        row("section", "x " + cx + ", y " + r + ", z " + cz);
        row("state", s.loaded.has(k) ? "loaded" : s.pending.has(k) ? "pending" : "not loaded");
        if (s.neighbours > 0 && s.loaded.has(k)) row("complete", s.complete.has(k) ? "yes" : "no (loaded, not complete)");
        const rows = (list) => (list.length === 0 ? "" : list.length === 1 ? " (row " + list[0] + ")" : " (rows " + list.join(", ") + ")");
        row("column", loaded.length + (loaded.length === 1 ? " section" : " sections") + " loaded" + rows(loaded) +
          ", " + pending.length + " pending" + rows(pending));
        return true;
      }
      // docs/viewer.md#complete-chunks: a loaded chunk, complete or not, while neighbours > 0.
      if (s.neighbours > 0 && s.loaded.has(k)) {
        row("chunk", "x " + cx + ", z " + cz);
        row("complete", s.complete.has(k) ? "yes" : "no (loaded, not complete)");
        return true;
      }
      if (!hasLod) return false;
      if (s.loaded.has(k) || s.pending.has(k)) return false;
      for (let l = 1; l <= s.lodSteps.length; l++) {
        const st = blockStep(s, l);
        if (st === null) continue;
        const bx = Math.floor(cx / st), bz = Math.floor(cz / st);
        const b = s.blocks.get(bkey(l, bx, bz));
        if (!b) continue;
        row("LOD level", l + " (step " + st + ")");
        row("block", "x " + bx + ", z " + bz);
        row("chunks", "x " + bx * st + " – " + (bx * st + st - 1) + ", z " + bz * st + " – " + (bz * st + st - 1));
        row("built", b[3] ? "yes" : "no");
        row("height", b[4] === null ? "(none)" : String(b[4]));
        return true;
      }
      return false;
    },

    grow(list) {
      read(list);
      if (setUp) legend();
    },

    setup(page) {
      setUp = true;
      fitSelect.addEventListener("change", () => page.draw());
      // docs/viewer.md#vertical-worlds: the row control (a number: another row; "follow the
      // focus": the first focus's row), PageUp / PageDown a row up / down, and the side view
      // following the pointer.
      rowInput.addEventListener("change", () => {
        if (rowInput.value === "" || !Number.isFinite(Number(rowInput.value))) return;
        rowChoice = Math.trunc(Number(rowInput.value));
        page.draw();
      });
      rowFollow.addEventListener("change", () => {
        rowChoice = rowFollow.checked ? null : shown && shownRow(shown.s) !== null ? shownRow(shown.s) : 0;
        page.draw();
      });
      document.addEventListener("keydown", (e) => {
        if (!hasVertical || (e.key !== "PageUp" && e.key !== "PageDown") || e.altKey || e.ctrlKey || e.metaKey) return;
        if (!shown || shownRow(shown.s) === null) return;
        e.preventDefault();
        rowChoice = shownRow(shown.s) + (e.key === "PageUp" ? 1 : -1);
        page.draw();
      });
      $("grid").addEventListener("mousemove", (e) => {
        if (!hasVertical || !shown) return;
        const canvas = $("grid");
        const r = canvas.getBoundingClientRect();
        const g = shown.g;
        const x = (((e.clientX - r.left) * canvas.width) / r.width - g.ox) / g.cell + g.minX;
        const z = (((e.clientY - r.top) * canvas.height) / r.height - g.oz) / g.cell + g.minZ;
        const column = [Math.floor(x), Math.floor(z)];
        if (sideColumn === null || column[0] !== sideColumn[0] || column[1] !== sideColumn[1]) {
          sideColumn = column;
          side(shown.s, shown.g);
        }
      });
      legend();
    },
  });

  // ---- docs/viewer.md#vertical-worlds: sections ----

  const rowInput = $("row");
  const rowFollow = $("row-follow");
  const sideCanvas = $("side");
  const sideCtx = sideCanvas.getContext("2d");
  // The row the reader chose (null: the first focus's), the column the side view shows (null:
  // the first focus's, until the pointer is on the grid), what the last drawing drew.
  let rowChoice = null;
  let sideColumn = null;
  let shown = null;
  let pendingDrawn = 0;

  // A list of positions in metres as [x, z, y]: [x, z, …] in a flat world, [x, y, z, …] with
  // `vertical` in force.
  function points(s, list) {
    const out = [];
    if (s.vertical === null) for (let i = 0; i < list.length; i += 2) out.push([list[i], list[i + 1], 0]);
    else for (let i = 0; i < list.length; i += 3) out.push([list[i], list[i + 2], list[i + 1]]);
    return out;
  }

  // A list of chunks as [x, z, y] (flat pairs, or triples [x, y, z] with `vertical`).
  const cells = points;

  // The first focus's section row (its `y` over the section height, rounded down, as the kit's
  // chunkOf), null in a flat world; row 0 while there is no focus.
  function focusRow(s) {
    if (s.vertical === null) return null;
    const f = points(s, s.foci);
    return f.length ? Math.floor(f[0][2] / s.vertical.height) : 0;
  }

  // The row the slice shows: the reader's, else the first focus's; null in a flat world.
  function shownRow(s) {
    if (s.vertical === null) return null;
    return rowChoice !== null ? rowChoice : focusRow(s);
  }

  // The rows of a column's loaded and pending sections, lowest first.
  function columnRows(s, x, z) {
    const loaded = [], pending = [];
    for (const [sx, sz, sy] of s.loaded.values()) if (sx === x && sz === z) loaded.push(sy);
    for (const [sx, sz, sy] of s.pending.values()) if (sx === x && sz === z) pending.push(sy);
    loaded.sort((a, b) => a - b);
    pending.sort((a, b) => a - b);
    return [loaded, pending];
  }

  // The side view: the (x, y) plane through the column under the pointer (z fixed), x across as
  // on the grid, y growing upwards, over the rows that hold sections (and the rows shown); the
  // column framed, the slice's row marked at both edges, the foci in the plane drawn as on the
  // grid.
  function side(s, g) {
    const panel = $("side-panel");
    panel.hidden = s.vertical === null;
    if (s.vertical === null) return;
    const W = sideCanvas.width, H = sideCanvas.height;
    const row = shownRow(s);
    const f = points(s, s.foci);
    const [cx, cz] = sideColumn !== null ? sideColumn
      : f.length ? [Math.floor(f[0][0] / size), Math.floor(f[0][1] / size)] : [0, 0];
    let minY = row, maxY = row;
    for (const m of [s.loaded, s.pending]) {
      for (const [, , y] of m.values()) {
        if (y < minY) minY = y;
        if (y > maxY) maxY = y;
      }
    }
    minY -= 1;
    maxY += 1;
    // x as the grid shows it (its columns), the column under the pointer kept in view.
    const gx0 = Math.min(g.minX, cx), gx1 = Math.max(g.minX + Math.floor((canvas.width - 2 * g.ox) / g.cell) - 1, cx);
    const w = gx1 - gx0 + 1, h = maxY - minY + 1;
    let cell = Math.min((W - 40) / w, H / h);
    if (cell >= 2) cell = Math.floor(cell);
    const ox = 20 + Math.floor((W - 40 - w * cell) / 2), oy = Math.floor((H - h * cell) / 2);
    const px = (x) => ox + (x - gx0) * cell;
    const py = (y) => oy + (maxY - y) * cell;
    const gap = cell >= 6 ? 1 : 0;
    const fill = (x, y, c) => {
      sideCtx.fillStyle = c;
      sideCtx.fillRect(px(x) + gap, py(y) + gap, cell - gap, cell - gap);
    };
    sideCtx.fillStyle = color("--empty");
    sideCtx.fillRect(0, 0, W, H);
    let loaded = 0, pending = 0;
    for (const [x, z, y] of s.pending.values()) {
      if (z !== cz) continue;
      fill(x, y, C.pending);
      if (x === cx) pending++;
    }
    for (const r of s.refusals) if (r[1] === cz && r[2] === "load") fill(r[0], r[5] || 0, C.loadRefused);
    for (const [k, [x, z, y]] of s.loaded) {
      if (z !== cz) continue;
      const hk = key(x, z);
      fill(x, y, s.neighbours > 0 && !s.complete.has(k) ? C.incomplete : s.heights.has(hk) ? heightColor(s.heights.get(hk)) : C.loaded);
      if (x === cx) loaded++;
    }
    // The column, framed; the row shown, marked at both edges.
    sideCtx.strokeStyle = C.focus;
    sideCtx.lineWidth = 2;
    sideCtx.strokeRect(px(cx) + 1, py(maxY) + 1, cell - 2 + gap, h * cell - 2);
    sideCtx.fillStyle = C.ticket;
    const ry = py(row) + cell / 2;
    sideCtx.beginPath();
    sideCtx.moveTo(ox - 12, ry - 6);
    sideCtx.lineTo(ox - 2, ry);
    sideCtx.lineTo(ox - 12, ry + 6);
    sideCtx.fill();
    sideCtx.beginPath();
    sideCtx.moveTo(ox + w * cell + 12, ry - 6);
    sideCtx.lineTo(ox + w * cell + 2, ry);
    sideCtx.lineTo(ox + w * cell + 12, ry + 6);
    sideCtx.fill();
    // The foci whose column is in the plane.
    sideCtx.fillStyle = C.focus;
    sideCtx.strokeStyle = "#000";
    for (const [fx, fz, fy] of f) {
      if (Math.floor(fz / size) !== cz) continue;
      sideCtx.beginPath();
      sideCtx.arc(ox + (fx / size - gx0) * cell, oy + (maxY + 1 - fy / s.vertical.height) * cell, Math.max(3, Math.min(cell * 0.3, 8)), 0, 2 * Math.PI);
      sideCtx.fill();
      sideCtx.stroke();
    }
    $("side-where").textContent = "column x " + cx + ", z " + cz + ": " + loaded + " loaded, " + pending + " pending";
    Object.assign(sideCanvas.dataset, {
      x: cx, z: cz, loaded: loaded, pending: pending, minY: minY, maxY: maxY, originX: gx0, cell: cell, ox: ox, oy: oy,
      row: row,
    });
  }

  // The legend, the LOD panel and the fit choice, for the frames so far.
  let setUp = false;
  let levelsShown = 0;
  function legend() {
    // The marks (docs/reference/config.md#outputs-that-appear-only-when-used) are in the legend
    // when the run has them.
    $("legend-predicted").hidden = !hasPredicted;
    $("legend-holes").hidden = !hasHoles;
    // docs/viewer.md#complete-chunks: complete and not complete in place of "loaded".
    if (hasComplete) {
      $("legend-loaded").hidden = true;
      $("legend-complete").hidden = false;
      $("legend-incomplete").hidden = false;
      $("legend-k").textContent = completeRings === 1 ? "1 ring" : completeRings + " rings";
    }
    // docs/reference/engines.md#the-viewer: the levels in the legend, the panel, and the fit
    // choice.
    if (hasLod) {
      const n = lodLevels;
      for (let l = 1; l <= 4; l++) {
        const li = $("legend-lod-" + l);
        li.hidden = l > n;
        li.lastChild.textContent = "LOD level " + l + (lodSteps[l - 1] ? " (a block of " + lodSteps[l - 1] + " × " +
          lodSteps[l - 1] + " chunks)" : "") + ", lighter is higher";
      }
      $("legend-lod-unbuilt").hidden = false;
      $("lod-panel").hidden = false;
      $("fit-label").hidden = false;
      // Chosen afresh only when the levels change (a live run keeps the reader's choice).
      if (n !== levelsShown) {
        levelsShown = n;
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
      }
    }
    if (hMax >= hMin) {
      $("legend-heights").hidden = false;
      $("height-range").textContent = "(" + hMin + " – " + hMax + ")";
    }
  }
}
