// world.streaming's layer of the replay viewer (see view.rs beside this file): the chunks
// (loaded, pending, held refusals), shaded by their height when the run has heights (`h`, `bh`:
// the terrain layer's); holes, tickets, dormant entities, predicted foci and foci; the LOD blocks,
// their panel, legend and the view's fit; with `neighbours` in force, complete chunks apart from
// those loaded but not complete.
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
        complete: new Set(),
      });
    },

    copy(s, c) {
      Object.assign(c, {
        loaded: new Map(s.loaded), pending: new Map(s.pending), heights: new Map(s.heights),
        refusals: s.refusals, foci: s.foci, tickets: s.tickets, dormant: s.dormant,
        predicted: s.predicted, holes: s.holes, lodSteps: s.lodSteps, blocks: new Map(s.blocks),
        neighbours: s.neighbours, complete: new Set(s.complete),
      });
    },

    // The chunk events first, then the corrections and the rest.
    apply(s, f) {
      // docs/viewer.md#complete-chunks: the neighbours in force; at 0 nothing is complete.
      if (f.nb !== undefined) {
        s.neighbours = f.nb;
        if (f.nb === 0) s.complete.clear();
      }
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
            s.complete.delete(k);
          } else if (ev[0] === COMPLETE && s.neighbours > 0) {
            s.complete.add(k);
          } else if (ev[0] === INCOMPLETE) {
            s.complete.delete(k);
          }
        }
      }
      if (f.la) addFlat(s.loaded, f.la);
      if (f.lr) {
        removeFlat(s.loaded, f.lr);
        removeFlat(s.heights, f.lr);
      }
      // Complete chunks the events do not account for (a `load` of a save).
      if (f.ca) for (let i = 0; i < f.ca.length; i += 2) s.complete.add(key(f.ca[i], f.ca[i + 1]));
      if (f.cr) for (let i = 0; i < f.cr.length; i += 2) s.complete.delete(key(f.cr[i], f.cr[i + 1]));
      if (f.h) for (let i = 0; i < f.h.length; i += 3) s.heights.set(key(f.h[i], f.h[i + 1]), f.h[i + 2]);
      if (f.pa) addFlat(s.pending, f.pa);
      if (f.pr) removeFlat(s.pending, f.pr);
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
      for (const [x, z] of s.pending.values()) fill(x, z, C.pending);
      const held = new Set();
      for (const r of s.refusals) {
        if (r[2] === "load") fill(r[0], r[1], C.loadRefused);
        else held.add(key(r[0], r[1]));
      }
      loadedDrawn = 0;
      completeDrawn = 0;
      incompleteDrawn = 0;
      const meshing = s.neighbours > 0;
      for (const [k, [x, z]] of s.loaded) {
        let c = C.loaded;
        const incomplete = meshing && !s.complete.has(k);
        if (meshing) {
          if (incomplete) incompleteDrawn++;
          else completeDrawn++;
        }
        if (held.has(k)) c = C.unloadRefused;
        else if (incomplete) c = s.heights.has(k) ? incompleteColor(s.heights.get(k)) : C.incomplete;
        else if (s.heights.has(k)) c = heightColor(s.heights.get(k));
        fill(x, z, c);
        loadedDrawn++;
      }
      // Holes (docs/reference/streaming.md#holes): a frame inside the cell, whatever the cell
      // shows.
      holesDrawn = 0;
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
      for (let i = 0; i < s.predicted.length; i += 2) {
        const x = mx(s.predicted[i]);
        const z = mz(s.predicted[i + 1]);
        ctx.beginPath();
        ctx.arc(x, z, mark, 0, 2 * Math.PI);
        ctx.fill();
        ctx.stroke();
      }
      ctx.fillStyle = C.focus;
      for (let i = 0; i < s.foci.length; i += 2) {
        const x = mx(s.foci[i]), z = mz(s.foci[i + 1]);
        ctx.beginPath();
        ctx.arc(x, z, mark, 0, 2 * Math.PI);
        ctx.fill();
        ctx.stroke();
      }
    },

    dataset(s) {
      const out = { loadedDrawn: loadedDrawn, holesDrawn: holesDrawn, predictedDrawn: s.predicted.length / 2 };
      if (hasLod) Object.assign(out, { blocksDrawn: blocksDrawn, blocksUnbuiltDrawn: unbuiltDrawn, fit: fit });
      if (hasComplete) Object.assign(out, { completeDrawn: completeDrawn, incompleteDrawn: incompleteDrawn });
      return out;
    },

    panel(s) {
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
      return "loaded " + s.loaded.size + (s.neighbours > 0 ? " (complete " + s.complete.size + ")" : "") +
        " · pending " + s.pending.size + " · load refused " + loadRefused +
        " · unload refused " + (s.refusals.length - loadRefused) + " · foci " + s.foci.length / 2 +
        " · tickets " + s.tickets.length + " · dormant " + s.dormant.length +
        (s.predicted.length ? " · predicted " + s.predicted.length / 2 : "") +
        (s.holes ? " · holes " + s.holes.length / 2 : "") +
        (hasLod ? " · blocks " + s.blocks.size : "");
    },

    // docs/reference/engines.md#the-viewer: the block drawn under the pointer (the finest level's),
    // unless a chunk is drawn over it.
    pointDetail(s, g, at, row) {
      const cx = Math.floor(g.minX + (at[0] - g.ox) / g.cell);
      const cz = Math.floor(g.minZ + (at[1] - g.oz) / g.cell);
      // docs/viewer.md#complete-chunks: a loaded chunk, complete or not, while neighbours > 0.
      if (s.neighbours > 0 && s.loaded.has(key(cx, cz))) {
        row("chunk", "x " + cx + ", z " + cz);
        row("complete", s.complete.has(key(cx, cz)) ? "yes" : "no (loaded, not complete)");
        return true;
      }
      if (!hasLod) return false;
      if (s.loaded.has(key(cx, cz)) || s.pending.has(key(cx, cz))) return false;
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
      legend();
    },
  });

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
