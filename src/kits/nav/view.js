// world.nav's layer of the replay viewer (see view.rs beside this file): each agent's path, the
// chunk a waiting agent waits for, the agents coloured by their state, their counts and details.
{
  // Whether the run has agents (so far, on a live page: `grow` reads the frames as they come).
  let hasAgents = false;
  let setUp = false;
  const legend = () => {
    // The marks are in the legend when the run has agents.
    for (const id of ["legend-agent", "legend-path", "legend-waiting", "legend-stuck", "agents-panel"]) {
      $(id).hidden = !hasAgents;
    }
  };
  const C = {
    agent: color("--agent"), path: color("--path"), waiting: color("--waiting"), stuck: color("--stuck"),
  };
  // An agent's state, in this order of precedence: arrived, stuck, waiting (for a chunk not
  // built), walking (it holds a path), else idle (it waits its turn for the tick's nodes).
  const agentState = (a) =>
    a[5] ? "arrived" : a[4] !== null ? "stuck" : a[3] !== null ? "waiting" : a[2].length ? "walking" : "idle";
  const cellSize = data.cellsPerChunk ? size / data.cellsPerChunk : 1;
  // What the last drawing drew, for the canvas's data attributes and the panel.
  let agentCounts = {};
  let pathCellsDrawn = 0;
  let waitChunks = new Set();

  layer({
    empty(s) {
      s.agents = new Map();
    },

    copy(s, c) {
      c.agents = new Map(s.agents);
    },

    // Agents by id index: [gx, gz, path, wait, stuck, arrived], replaced whole; `as` drops the
    // first cells of a path (the cells stepped into).
    apply(s, f) {
      if (f.a) for (const a of f.a) s.agents.set(a[0], [a[1], a[2], a[3], a[4], a[5], a[6]]);
      if (f.as) {
        for (let i = 0; i < f.as.length; i += 2) {
          const a = s.agents.get(f.as[i]);
          s.agents.set(f.as[i], [a[0], a[1], a[2].slice(2 * f.as[i + 1]), a[3], a[4], a[5]]);
        }
      }
      if (f.ar) for (const i of f.ar) s.agents.delete(i);
    },

    extent(s, extend) {
      for (const a of s.agents.values()) {
        if (a[3] !== null) extend(a[3][0], a[3][1]);
        for (let i = 0; i < a[2].length; i += 2) {
          extend(Math.floor(((a[2][i] + 0.5) * cellSize) / size), Math.floor(((a[2][i + 1] + 0.5) * cellSize) / size));
        }
      }
    },

    // Each agent's path, a line from where it stands through the centres of the cells still to
    // step into; a waiting agent's chunk framed (dashed) and tied to it.
    beside(s, g) {
      const { cell, px, pz, mx, mz } = g;
      agentCounts = { walking: 0, waiting: 0, stuck: 0, arrived: 0, idle: 0 };
      pathCellsDrawn = 0;
      waitChunks = new Set();
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
        ctx.moveTo(mx(e[2]), mz(e[3]));
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
        ctx.moveTo(mx(e[2]), mz(e[3]));
        for (let k = 0; k < a[2].length; k += 2) {
          ctx.lineTo(mx((a[2][k] + 0.5) * cellSize), mz((a[2][k + 1] + 0.5) * cellSize));
          pathCellsDrawn++;
        }
        ctx.stroke();
      }
    },

    // An agent: a disc with a ring, coloured by its state.
    entity(s, i, e) {
      const agent = s.agents.get(i);
      if (!agent || e[1] !== "e") return null;
      const st = agentState(agent);
      return st === "waiting" ? C.waiting : st === "stuck" ? C.stuck : C.agent;
    },

    dataset(s) {
      if (!hasAgents) return {};
      return { agentsDrawn: s.agents.size, pathCellsDrawn: pathCellsDrawn, waitChunksDrawn: waitChunks.size };
    },

    panel(s) {
      if (!hasAgents) return;
      $("agent-counts").textContent =
        "agents " + s.agents.size + " (walking " + agentCounts.walking + " · waiting " + agentCounts.waiting +
        " · stuck " + agentCounts.stuck + " · arrived " + agentCounts.arrived + " · idle " + agentCounts.idle + ")";
    },

    entityDetail(s, i, row) {
      const agent = s.agents.get(i);
      if (!agent) return;
      row("goal", "cell " + agent[0] + ", " + agent[1]);
      const st = agentState(agent);
      row("state", st === "walking" ? "walking, " + agent[2].length / 2 + " cells to go"
        : st === "waiting" ? "waiting for chunk " + agent[3][0] + ", " + agent[3][1]
        : st === "stuck" ? "stuck (" + agent[4] + ")"
        : st === "idle" ? "idle (waits its turn)" : "arrived");
    },

    grow(list) {
      if (!hasAgents && list.some((f) => f.a && f.a.length > 0)) {
        hasAgents = true;
        if (setUp) legend();
      }
    },

    setup() {
      setUp = true;
      legend();
    },
  });
}
