//! The `world.lod.holes` (docs/reference/lod.md#lod-holes), kept up to date by the kit from what
//! changed (docs/lod.md, "The tick with and without LOD"), against a count made here from the
//! services every tick: random scenes with one or two players, world.terrain building chunks and
//! blocks with its commit latency, random moves, teleports and scene changes (leave, enter again).

mod common;

use std::collections::BTreeSet;

use common::Rng;
use serde_json::{json, Value};
use world_streaming::grid::{ChunkPos, Grid};
use world_streaming::kits::streaming::{StreamingService, STREAMING};
use world_streaming::kits::terrain::{TerrainService, TERRAIN};

/// The holes as docs/reference/lod.md#lod-holes defines them, from the services: chunks within
/// `r_last` of a player's focus seen by no chunk loaded and built and no block loaded and built.
fn holes_here(g: &world_streaming::game::Game, levels: &[(u32, i64)], r_last: i64) -> u64 {
    let s = g
        .engine()
        .service::<dyn StreamingService>(STREAMING)
        .unwrap();
    let t = g.engine().service::<dyn TerrainService>(TERRAIN).unwrap();
    let grid = Grid::new(32.0);
    let mut seen: BTreeSet<ChunkPos> = s.loaded().into_iter().filter(|c| t.is_built(*c)).collect();
    for (level, step) in levels {
        for b in s.lod_loaded(*level) {
            if t.lod_block(*level, b.x, b.z).is_some() {
                for z in b.z * step..(b.z + 1) * step {
                    for x in b.x * step..(b.x + 1) * step {
                        seen.insert(ChunkPos::new(x, z));
                    }
                }
            }
        }
    }
    let mut holes = BTreeSet::new();
    for p in s.foci() {
        let f = grid.chunk_of(p);
        for z in f.z - r_last..=f.z + r_last {
            for x in f.x - r_last..=f.x + r_last {
                let c = ChunkPos::new(x, z);
                if !seen.contains(&c) {
                    holes.insert(c);
                }
            }
        }
    }
    holes.len() as u64
}

/// Runs one random drive; returns the ticks with holes and the distinct hole counts seen.
fn case(seed: u64) -> (u64, BTreeSet<u64>) {
    let (mut with_holes, mut counts) = (0, BTreeSet::new());
    let mut r = Rng(seed ^ 0x10d2);
    let two = r.chance(50);
    let radius = r.below(3);
    let (levels, lod): (Vec<(u32, i64)>, Value) = if r.chance(50) {
        (vec![(1, 2)], json!([{ "step": 2, "radius": radius + 4 }]))
    } else {
        (
            vec![(1, 2), (2, 4)],
            json!([{ "step": 2, "radius": radius + 3 }, { "step": 4, "radius": radius + 9 }]),
        )
    };
    let r_last = lod.as_array().unwrap().last().unwrap()["radius"]
        .as_i64()
        .unwrap();
    let mut kits = common::kits(json!({
        "focus": "players", "radius": radius, "budgetMs": 1 + r.below(6),
        "lod": lod, "lodBudget": 1 + r.below(12),
    }));
    kits.as_array_mut()
        .unwrap()
        .push(json!({ "id": "world.terrain", "config": {
        "seed": 7, "cellsPerChunk": 4, "workers": 0, "commitLatency": 1 + r.below(2) } }));
    let mut entities =
        vec![json!({ "id": "hero", "tags": ["player"], "position": { "x": 16, "z": 16 } })];
    if two {
        entities.push(
            json!({ "id": "friend", "tags": ["player"], "position": { "x": -200, "z": 90 } }),
        );
    }
    let scene = json!({
        "kits": kits,
        "scenes": [{ "id": "main" }, { "id": "cave", "entry": { "x": 900, "z": -900 } }],
        "entities": entities,
    });
    let mut g = common::game(&scene);
    let mut pos = [(16i64, 16i64), (-200, 90)];
    let mut in_cave = false;
    for tick in 1..=90u64 {
        let who = if two && r.chance(40) { 1 } else { 0 };
        let roll = r.below(100);
        let line = if roll < 4 {
            in_cave = !in_cave;
            Some(
                json!({ "tick": tick, "do": "enter", "scene": if in_cave { "cave" } else { "main" } }),
            )
        } else if roll < 10 {
            pos[who] = (r.coord(600), r.coord(600));
            Some(pos[who])
                .map(|(x, z)| json!({ "tick": tick, "do": "move", "entity": if who == 0 { "hero" } else { "friend" }, "to": { "x": x, "z": z } }))
        } else if roll < 70 {
            pos[who].0 += r.coord(40);
            pos[who].1 += r.coord(40);
            Some(pos[who])
                .map(|(x, z)| json!({ "tick": tick, "do": "move", "entity": if who == 0 { "hero" } else { "friend" }, "to": { "x": x, "z": z } }))
        } else {
            None
        };
        let lines: Vec<Value> = line.into_iter().collect();
        common::run(&mut g, &lines, tick);
        let kept = g
            .engine()
            .variables()
            .get("world.lod.holes")
            .and_then(Value::as_u64)
            .unwrap();
        let counted = holes_here(&g, &levels, r_last);
        assert_eq!(kept, counted, "seed {seed}, tick {tick}");
        with_holes += u64::from(kept > 0);
        counts.insert(kept);
    }
    (with_holes, counts)
}

#[test]
fn world_lod_holes_equals_a_count_from_the_services_on_random_drives() {
    let (mut with_holes, mut counts) = (0, BTreeSet::new());
    for seed in 0..24 {
        let (h, c) = case(seed);
        with_holes += h;
        counts.extend(c);
    }
    // The drives do make holes of many sizes (what is compared is not always 0).
    assert!(
        with_holes > 100 && counts.len() > 30,
        "{with_holes} {counts:?}"
    );
}
