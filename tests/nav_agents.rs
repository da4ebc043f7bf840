//! The measured goals (docs/reference/nav.md#nav-goals) that are counts, not times: 100 agents
//! re-planning on one tick stay within the tick's node budget (and, with a budget too small for all
//! of them, every one still gets its plan in turn, never more than `maxNodes` a tick); and the
//! agents' paths — the cells each holds, tick by tick, and where each stands — are the same on
//! every run and with any number of terrain workers.

mod common;

use serde_json::{json, Map, Value};
use world_streaming::game::Game;
use world_streaming::grid::ChunkPos;
use world_streaming::kits::terrain::{TerrainService, TERRAIN};

/// The bench's scene (`benches/nav.rs`): a hero at the centre of 7 × 7 chunks of 32 × 32
/// cells, 100 agents on a 10 × 10 lattice, every cell walkable.
fn hundred(workers: u32, max_nodes: u32) -> Value {
    let mut entities =
        vec![json!({"id": "hero", "tags": ["player"], "position": {"x": 112, "z": 112}})];
    for i in 0..100 {
        let (x, z) = (8 + (i % 10) * 20, 8 + (i / 10) * 20);
        entities.push(json!({"id": format!("agent{i:03}"), "tags": ["agent"],
            "position": {"x": x, "z": z}}));
    }
    json!({
        "kits": [
            { "id": "world.ground" },
            { "id": "world.streaming", "config": { "chunkSize": 32, "radius": 3, "budgetMs": 64 } },
            { "id": "world.terrain", "config": { "seed": 7, "cellsPerChunk": 32, "workers": workers, "commitLatency": 1 } },
            { "id": "world.nav", "config": { "maxStep": 65535, "maxNodes": max_nodes } }
        ],
        "entities": entities
    })
}

/// Ticks until the 7 × 7 chunks round the hero are built.
fn until_built(g: &mut Game) {
    let terrain = g.engine().service::<dyn TerrainService>(TERRAIN).unwrap();
    for _ in 0..50 {
        let built = (-3..=3)
            .flat_map(|x| (-3..=3).map(move |z| ChunkPos::new(x + 3, z + 3)))
            .all(|c| terrain.is_built(c));
        if built {
            return;
        }
        g.tick();
    }
    panic!("the 49 chunks were not built in 50 ticks");
}

/// Gives every agent a goal: `far` the far corner, else near the origin.
fn give_goals(g: &mut Game, far: bool) {
    for i in 0..100 {
        let (x, z) = if far { (200.0, 200.0) } else { (8.0, 8.0) };
        let mut data = Map::new();
        data.insert("goal".into(), json!({"x": x + f64::from(i % 3), "z": z}));
        g.set_data(&format!("agent{i:03}"), Some(data)).unwrap();
    }
}

fn nodes(g: &Game) -> u64 {
    g.engine()
        .variables()
        .get("world.nav.nodes")
        .and_then(Value::as_u64)
        .unwrap()
}

/// The kit's agents (its save section): id, goal, held path, wait, stuck, arrived.
fn agents(g: &Game) -> Vec<Value> {
    g.engine().save_document().kits["world.nav"]["agents"]
        .as_array()
        .unwrap()
        .clone()
}

fn holding_a_path(g: &Game) -> usize {
    agents(g)
        .iter()
        .filter(|a| !a["path"].as_array().unwrap().is_empty())
        .count()
}

#[test]
fn a_hundred_agents_re_plan_on_one_tick_within_the_node_budget() {
    let mut g = common::game(&hundred(1, 65_536));
    until_built(&mut g);
    for far in [true, false] {
        give_goals(&mut g, far);
        g.tick();
        let n = nodes(&g);
        assert!(
            n > 100 && n <= 65_536,
            "one tick, 100 plans: {n} nodes in all"
        );
        // Each holds a path, or stands on its goal's cell (1 m cells) and arrived.
        let idle: Vec<Value> = agents(&g)
            .into_iter()
            .filter(|a| {
                let id = world_streaming::host::EntityId::new(a["id"].as_str().unwrap());
                let at = g.engine().world().get(&id).unwrap().position;
                let on_goal = at.x.floor() == a["goal"]["x"].as_f64().unwrap()
                    && at.z.floor() == a["goal"]["z"].as_f64().unwrap();
                a["path"].as_array().unwrap().is_empty() && !(on_goal && a["arrived"] == true)
            })
            .collect();
        assert!(idle.is_empty(), "every agent planned on the tick: {idle:?}");
        assert!(agents(&g).iter().all(|a| a.get("stuck").is_none()));
    }
}

#[test]
fn with_a_budget_too_small_for_all_every_agent_is_planned_in_turn() {
    // 2 000 nodes a tick: no tick spends more, the ticks' plans together reach every agent,
    // and none is stuck (the one cut off plans first on the next tick with the full budget).
    let max = 2_000;
    let mut g = common::game(&hundred(1, max));
    until_built(&mut g);
    give_goals(&mut g, true);
    let mut ticks = 0;
    let mut spent = 0;
    while holding_a_path(&g) < 100 {
        g.tick();
        ticks += 1;
        let n = nodes(&g);
        assert!(n <= u64::from(max), "tick {ticks}: {n} nodes");
        spent += n;
        assert!(
            ticks < 100,
            "planned {} of 100 in 100 ticks",
            holding_a_path(&g)
        );
    }
    assert!(ticks > 1, "the budget was too small for one tick");
    assert!(
        spent > u64::from(max),
        "several ticks' nodes: {spent} in {ticks} ticks"
    );
    assert!(agents(&g).iter().all(|a| a.get("stuck").is_none()));
}

/// Every tick's held paths and agent positions over 24 ticks with `workers` terrain workers,
/// the goals changed on ticks 0 and 12.
fn paths_tick_by_tick(workers: u32) -> Vec<String> {
    let mut g = common::game(&hundred(workers, 6_000));
    let mut out = Vec::new();
    for t in 0..24 {
        if t % 12 == 0 {
            give_goals(&mut g, t == 0);
        }
        g.tick();
        let at: Vec<String> = g
            .engine()
            .world()
            .iter()
            .map(|e| format!("{} {} {}", e.id.as_str(), e.position.x, e.position.z))
            .collect();
        out.push(format!(
            "{t}: {} | {}",
            Value::Array(agents(&g)),
            at.join(",")
        ));
    }
    out
}

#[test]
fn the_agents_paths_are_the_same_on_every_run_and_with_any_worker_count() {
    let one = paths_tick_by_tick(1);
    assert!(
        one.iter().any(|l| l.contains(r#""path":[{"#)),
        "some agent holds a path"
    );
    for workers in [0, 4] {
        let other = paths_tick_by_tick(workers);
        for (a, b) in one.iter().zip(&other) {
            assert_eq!(a, b, "{workers} workers");
        }
    }
    assert_eq!(paths_tick_by_tick(1), one, "and the same on a second run");
}
