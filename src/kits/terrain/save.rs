//! `world.terrain`'s save section: the generator stamp, the chunks in flight and built (never
//! their data: it is regenerated), where the edits are (the world directory, or the section's
//! own `edits`), and the dirty chunks. Loading validates everything before anything changes.

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::config::{MAX_CELLS, MAX_COMMIT_LATENCY};
use super::pool::Built;
use super::region::Diff;
use super::state::{self, BlockKey, State};
use super::store::{self, Reported};
use super::ChunkData;
use super::{hash_text, TERRAIN};
use crate::grid::ChunkPos;
use crate::host::{Problem, SaveFacts};
use crate::json::from_value;
use crate::kits::streaming::config::{is_lod_step, MAX_LOD_STEP, MIN_LOD_STEP};
use serde_json::Value;

/// A saved chunk: `{x, z}` plus its commit tick (in flight) or its hash (built).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SavedChunk {
    /// Chunk column.
    pub x: i64,
    /// Chunk row.
    pub z: i64,
    /// In flight: the tick it commits at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit_at: Option<u64>,
    /// Built: its hash (16 hex digits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    /// Built, with `neighbours` > 0: its version (docs/reference/terrain.md#versions), 1 or
    /// more; absent, a load gives it 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u64>,
}

/// A modified chunk carried by the save itself: its cells that differ from the baseline, as
/// `[index, height, material]` (index `j * cellsPerChunk + i`), ascending; no cells: the chunk
/// is back to its baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SavedEdits {
    /// Chunk column.
    pub x: i64,
    /// Chunk row.
    pub z: i64,
    /// `[index, height, material]` per cell.
    pub cells: Vec<(u32, u16, u8)>,
}

/// A saved LOD block (docs/reference/lod.md#lod-service-state-and-saves): its level, block and
/// step, plus its commit tick (in flight) or its hash (built).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SavedBlock {
    /// Level (1 = the first `lod` entry), 1..=4.
    pub level: u32,
    /// Block column.
    pub x: i64,
    /// Block row.
    pub z: i64,
    /// Its side in chunks.
    pub step: u32,
    /// In flight: the tick it commits at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit_at: Option<u64>,
    /// Built: its hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
}

/// The kit's save section: the generator stamp, the chunks in flight (in commit order) and the
/// built ones (row order), the wait count, where the edits are. Terrain is never saved: it is
/// regenerated, and the modified chunks' diffs applied.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SaveSection {
    /// The generator version that built the chunks.
    pub generator: u32,
    /// The seed.
    pub seed: u64,
    /// Chunks dispatched and not committed, in commit order.
    pub in_flight: Vec<SavedChunk>,
    /// Built chunks, row order.
    pub built: Vec<SavedChunk>,
    /// `world.terrain.waits`.
    pub waits: u64,
    /// The world directory holding the modified chunks (written back before the save).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub world_dir: Option<String>,
    /// Modified chunks not in the world directory (all of them without one), row order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub edits: Vec<SavedEdits>,
    /// Chunks to be told `world.terrain.changed` at the end of the tick, row order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dirty: Vec<ChunkPos>,
    /// LOD blocks dispatched and not committed, in commit order (docs/reference/lod.md#blocks).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lod_in_flight: Vec<SavedBlock>,
    /// Built LOD blocks, by level then row order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lod_built: Vec<SavedBlock>,
}

pub(super) struct Prepared {
    in_flight: Vec<(ChunkPos, u64)>,
    built: Vec<(ChunkPos, Built, u64)>,
    waits: u64,
    /// What the world directory holds, and the save's own edits over it.
    opened: store::Opened,
    overlay: Vec<(ChunkPos, Option<Diff>)>,
    dirty: Vec<ChunkPos>,
    errors: Vec<Reported>,
    lod_in_flight: Vec<(BlockKey, u32, u64)>,
    lod_built: Vec<(BlockKey, u32, ChunkData)>,
}

/// The section of the kit's state.
pub(super) fn section(st: &State) -> SaveSection {
    let mut in_flight: Vec<(u64, u64, ChunkPos)> = st
        .in_flight
        .iter()
        .map(|(c, f)| (f.commit_at, f.version, *c))
        .collect();
    in_flight.sort();
    // The edits the world directory does not hold yet (all of them without one).
    let mut edits: BTreeMap<ChunkPos, Option<&Diff>> = BTreeMap::new();
    let snapshot;
    if st.config.world_dir.is_none() {
        snapshot = st
            .store
            .as_ref()
            .and_then(|s| s.snapshot().ok())
            .unwrap_or_default();
        edits.extend(snapshot.iter().map(|(c, d)| (*c, Some(d))));
    }
    for (c, d) in &st.released {
        edits.insert(*c, d.as_ref());
    }
    for c in &st.unsaved {
        edits.insert(*c, st.diffs.get(c));
    }
    let mut lod_in_flight: Vec<(u64, u64, BlockKey, u32)> = st
        .blocks
        .flights()
        .map(|(k, f)| (f.commit_at, f.version, *k, f.step))
        .collect();
    lod_in_flight.sort();
    let stamp = st.generator().stamp();
    let versions = st.neighbours() > 0;
    let section = SaveSection {
        lod_in_flight: lod_in_flight
            .into_iter()
            .map(|(at, _, (level, b), step)| SavedBlock {
                level,
                x: b.x,
                z: b.z,
                step,
                commit_at: Some(at),
                hash: None,
            })
            .collect(),
        lod_built: {
            let mut built: Vec<_> = st.blocks.all_built().collect();
            built.sort_unstable_by_key(|(key, _)| **key);
            built
        }
        .into_iter()
        .map(|((level, b), (step, d))| SavedBlock {
            level: *level,
            x: b.x,
            z: b.z,
            step: *step,
            commit_at: None,
            hash: Some(hash_text(d.hash())),
        })
        .collect(),
        generator: stamp.generator,
        seed: stamp.seed,
        in_flight: in_flight
            .into_iter()
            .map(|(at, _, c)| SavedChunk {
                x: c.x,
                z: c.z,
                commit_at: Some(at),
                hash: None,
                version: None,
            })
            .collect(),
        built: sorted(&st.built)
            .into_iter()
            .map(|(c, d)| SavedChunk {
                x: c.x,
                z: c.z,
                commit_at: None,
                hash: Some(hash_text(d.hash())),
                // Only with `neighbours` > 0, so that other saves keep their bytes.
                version: versions.then(|| st.versions.get(c).copied().unwrap_or(1)),
            })
            .collect(),
        waits: st.waits,
        world_dir: st.config.world_dir.clone(),
        edits: edits
            .into_iter()
            .filter(|(_, d)| st.config.world_dir.is_some() || d.is_some())
            .map(|(c, d)| SavedEdits {
                x: c.x,
                z: c.z,
                cells: d
                    .map(|d| d.cells.iter().map(|(&i, &(h, m))| (i, h, m)).collect())
                    .unwrap_or_default(),
            })
            .collect(),
        dirty: st.dirty.iter().copied().collect(),
    };
    section
}

/// What a section is checked against when it is loaded into a game; a save checked on its
/// own has none, and is checked against what any game of this kit accepts.
pub(super) struct Game<'a> {
    /// The kit's state: its generator, settings and world directory.
    pub(super) st: &'a State,
    /// The step each LOD level's blocks are planned with once the save is loaded (index =
    /// level − 1; 0: no level), as the streaming kit answers for the save's own section;
    /// `None` when that section does not load (its own check says why).
    pub(super) level_steps: Option<[u32; 4]>,
}

/// Checks a `world.terrain` save section on its own (the catalog's [`crate::host::SaveCheck`]):
/// the kit's one section check without a game — everything a section must be for any game of
/// this kit. A load runs it, then what needs the game (its generator, world directory and
/// settings; the built chunks' and blocks' hashes).
pub fn check_save_section(section: &Value, save: &SaveFacts<'_>) -> Result<(), Problem> {
    check(Some(section), save, None).map(drop)
}

/// The one check of a section, for `check` of a save on its own (`game`: `None`) and for a
/// load (`game`: the game it is loaded into). First everything a section must be for any game
/// (against the widest settings a game may have), in the section's order; then, for a load,
/// what only this game can tell: its generator and world directory, its `cellsPerChunk`,
/// `commitLatency` and level steps, and the built chunks and blocks rebuilt and their hashes
/// compared. So whatever `check` alone refuses, a load refuses first, with the same problem.
/// Changes nothing. Returns the prepared section for a load (`None` on its own).
pub(super) fn check(
    section: Option<&Value>,
    save: &SaveFacts<'_>,
    game: Option<&Game<'_>>,
) -> Result<Option<Prepared>, Problem> {
    let path = format!("kits.{TERRAIN}");
    let section = section.ok_or_else(|| Problem::new(&path, "missing section"))?;
    let s: SaveSection = from_value(section, &path)?;
    // The save's own edits (cell indices within the largest chunks a game may have).
    let cells = MAX_CELLS * MAX_CELLS;
    let mut overlay = Vec::new();
    let mut previous: Option<ChunkPos> = None;
    for (k, e) in s.edits.iter().enumerate() {
        let p = format!("{path}.edits[{k}]");
        let chunk = ChunkPos::new(e.x, e.z);
        if previous.is_some_and(|q| q >= chunk) {
            return Err(Problem::new(p, "expected chunks in row order, each once"));
        }
        previous = Some(chunk);
        let mut diff = Diff::default();
        let mut last = None;
        for (n, &(index, height, material)) in e.cells.iter().enumerate() {
            if index >= cells || last.is_some_and(|l| l >= index) {
                return Err(Problem::new(
                    format!("{p}.cells[{n}]"),
                    format!("expected ascending cell indices below {cells}, got {index}"),
                ));
            }
            last = Some(index);
            diff.cells.insert(index, (height, material));
        }
        overlay.push((chunk, (!diff.is_empty()).then_some(diff)));
    }
    let commits = CommitTicks::new(save.tick, None);
    let mut seen = BTreeSet::new();
    let mut in_flight = Vec::new();
    for (i, c) in s.in_flight.iter().enumerate() {
        let p = format!("{path}.inFlight[{i}]");
        let chunk = ChunkPos::new(c.x, c.z);
        let at = c
            .commit_at
            .ok_or_else(|| Problem::new(&p, "expected `commitAt`"))?;
        if c.hash.is_some() || !seen.insert(chunk) {
            return Err(Problem::new(
                p,
                format!("chunk {chunk} is listed twice or has a hash"),
            ));
        }
        if c.version.is_some() {
            return Err(Problem::new(
                format!("{p}.version"),
                "expected no version: a chunk in flight is not built yet",
            ));
        }
        commits.check(at, &p)?;
        in_flight.push((chunk, at));
    }
    for (i, c) in s.built.iter().enumerate() {
        let chunk = ChunkPos::new(c.x, c.z);
        if c.commit_at.is_some() || !seen.insert(chunk) {
            return Err(Problem::new(
                format!("{path}.built[{i}]"),
                format!("chunk {chunk} is listed twice or has `commitAt`"),
            ));
        }
        if c.version == Some(0) {
            return Err(Problem::new(
                format!("{path}.built[{i}].version"),
                "expected a version of 1 or more (1 at the commit, +1 an edit), got 0",
            ));
        }
    }
    // Terrain is kept per column (docs/reference/terrain.md#columns): a section is no chunk of
    // its own.
    if let Some((k, c)) = s.dirty.iter().enumerate().find(|(_, c)| c.y != 0) {
        return Err(Problem::new(
            format!("{path}.dirty[{k}].y"),
            format!(
                "expected a column (terrain is kept per column, without `y`), got y {}",
                c.y
            ),
        ));
    }
    if let Some((k, c)) = s
        .dirty
        .iter()
        .enumerate()
        .find(|(_, c)| !s.built.iter().any(|b| ChunkPos::new(b.x, b.z) == **c))
    {
        return Err(Problem::new(
            format!("{path}.dirty[{k}]"),
            format!("chunk {c} is not built"),
        ));
    }
    let mut lod_in_flight = Vec::new();
    // A block may be in both lists (built, and rebuilding after an edit), once in each.
    for (list, name) in [
        (&s.lod_in_flight, "lodInFlight"),
        (&s.lod_built, "lodBuilt"),
    ] {
        let mut seen_blocks = BTreeSet::new();
        for (i, b) in list.iter().enumerate() {
            let p = format!("{path}.{name}[{i}]");
            let key = (b.level, ChunkPos::new(b.x, b.z));
            if !(1..=4).contains(&b.level) {
                return Err(Problem::new(
                    format!("{p}.level"),
                    format!("expected a level 1..=4, got {}", b.level),
                ));
            }
            if !is_lod_step(b.step) {
                return Err(Problem::new(
                    format!("{p}.step"),
                    format!(
                        "expected a power of two {MIN_LOD_STEP}..={MAX_LOD_STEP}, got {}",
                        b.step
                    ),
                ));
            }
            if !seen_blocks.insert(key) {
                return Err(Problem::new(p, "the block is listed twice"));
            }
            match (name, b.commit_at, &b.hash) {
                ("lodInFlight", Some(at), None) => {
                    commits.check(at, &p)?;
                    lod_in_flight.push((key, b.step, at));
                }
                ("lodBuilt", None, Some(_)) => {}
                _ => {
                    return Err(Problem::new(
                        p,
                        "expected `commitAt` in lodInFlight, `hash` in lodBuilt",
                    ))
                }
            }
        }
    }
    let Some(game) = game else {
        return Ok(None);
    };
    // What only this game can tell.
    let st = game.st;
    let stamp = st.generator().stamp();
    if s.generator != stamp.generator || s.seed != stamp.seed {
        return Err(Problem::new(
            format!("{path}.generator"),
            format!(
                "written by generator {} with seed {}; this scene has generator {} with seed {}: \
                 its chunks would differ",
                s.generator, s.seed, stamp.generator, stamp.seed
            ),
        ));
    }
    // A save belongs to its world: it loads into a game on the same world directory (or, both
    // without one, carrying its edits). A save never points the game's writes elsewhere.
    if !crate::worlddir::same_dir(s.world_dir.as_deref(), st.config.world_dir.as_deref()) {
        let name =
            |d: &Option<String>| d.as_deref().map_or("none".to_owned(), |d| format!("{d:?}"));
        return Err(Problem::new(
            format!("{path}.worldDir"),
            format!(
                "this save's world directory is {}, this game's is {}: load it into a game \
                 of the same scene",
                name(&s.world_dir),
                name(&st.config.world_dir)
            ),
        ));
    }
    // Cell indices within this game's chunks.
    let side = st.config.cells_per_chunk.get();
    for (k, e) in s.edits.iter().enumerate() {
        if let Some((n, &(index, _, _))) =
            e.cells.iter().enumerate().find(|(_, c)| c.0 >= side * side)
        {
            return Err(Problem::new(
                format!("{path}.edits[{k}].cells[{n}]"),
                format!(
                    "expected ascending cell indices below {} ({side} × {side} cells a chunk), \
                     got {index}",
                    side * side
                ),
            ));
        }
    }
    // Commits within this game's commitLatency.
    let commits = CommitTicks::new(save.tick, Some(st));
    for (i, c) in s.in_flight.iter().enumerate() {
        commits.check(
            c.commit_at.unwrap_or_default(),
            &format!("{path}.inFlight[{i}]"),
        )?;
    }
    for (i, b) in s.lod_in_flight.iter().enumerate() {
        commits.check(
            b.commit_at.unwrap_or_default(),
            &format!("{path}.lodInFlight[{i}]"),
        )?;
    }
    // Every block built and dispatched with the step its level's blocks are planned with once
    // the save is loaded (the game's settings and the save's scene say which), else it would be
    // built from the wrong cells.
    if let Some(steps) = game.level_steps {
        for (list, name) in [
            (&s.lod_in_flight, "lodInFlight"),
            (&s.lod_built, "lodBuilt"),
        ] {
            for (i, b) in list.iter().enumerate() {
                let planned = steps[b.level as usize - 1];
                if planned != 0 && planned != b.step {
                    return Err(Problem::new(
                        format!("{path}.{name}[{i}].step"),
                        format!(
                            "expected {planned} (the step level {}'s blocks are planned with), \
                             got {}",
                            b.level, b.step
                        ),
                    ));
                }
            }
        }
    }
    // What the world directory holds (read by the save thread, changing nothing), and the
    // save's own edits over it.
    let opened = match &st.config.world_dir {
        None => store::Opened::default(),
        Some(dir) => {
            let store = st.store.as_ref().ok_or_else(|| {
                Problem::new(format!("{path}.worldDir"), "the kit has not started")
            })?;
            store
                .peek(dir.into())
                .map_err(|e| Problem::new(format!("{path}.worldDir"), e.to_string()))?
        }
    };
    let mut stored = opened.chunks.clone();
    for (chunk, diff) in &overlay {
        match diff {
            Some(d) => stored.insert(*chunk, d.clone()),
            None => stored.remove(chunk),
        };
    }
    let mut built = Vec::new();
    for (i, c) in s.built.iter().enumerate() {
        let chunk = ChunkPos::new(c.x, c.z);
        let mut data = st.generator().generate(chunk);
        let diff = stored.get(&chunk).cloned();
        if let Some(d) = &diff {
            data.apply(d);
        }
        let hash = hash_text(data.hash());
        if c.hash.as_deref() != Some(hash.as_str()) {
            return Err(Problem::new(
                format!("{path}.built[{i}].hash"),
                format!(
                    "expected {hash} (the chunk as this generator builds it, with its stored \
                     edits), got {:?}: the save and its world directory disagree",
                    c.hash
                ),
            ));
        }
        built.push((chunk, Built::new(chunk, data, diff), c.version.unwrap_or(1)));
    }
    let mut lod_built = Vec::new();
    for (i, b) in s.lod_built.iter().enumerate() {
        let data = st
            .generator()
            .generate_block(ChunkPos::new(b.x, b.z), b.step, |c| stored.get(&c).cloned());
        let expected = hash_text(data.hash());
        if b.hash.as_deref() != Some(expected.as_str()) {
            return Err(Problem::new(
                format!("{path}.lodBuilt[{i}].hash"),
                format!(
                    "expected {expected} (the block as this generator builds it, with the \
                     stored edits), got {:?}",
                    b.hash.as_deref().unwrap_or_default()
                ),
            ));
        }
        lod_built.push(((b.level, ChunkPos::new(b.x, b.z)), b.step, data));
    }
    Ok(Some(Prepared {
        lod_in_flight,
        lod_built,
        in_flight,
        built,
        waits: s.waits,
        errors: opened.damage.clone(),
        opened,
        overlay,
        dirty: s.dirty,
    }))
}

/// The ticks a saved dispatch may commit at: a chunk or block dispatched on tick `t` commits at
/// the start of tick `t + commitLatency`, every commit due by the save's tick is done, and
/// nothing is dispatched between two ticks (loads come from a tick; a load's own dispatches
/// are stamped with the loaded tick). So after the save's tick `T`, `T + 1 ..= T +
/// commitLatency` — this game's, or on its own the largest a game may set.
struct CommitTicks {
    first: u64,
    last: u64,
    latency: u64,
    known: bool,
}

impl CommitTicks {
    fn new(tick: u64, st: Option<&State>) -> Self {
        let latency = st.map_or(MAX_COMMIT_LATENCY, |st| st.config.commit_latency.get());
        CommitTicks {
            first: tick + 1,
            last: tick + latency,
            latency,
            known: st.is_some(),
        }
    }

    fn check(&self, at: u64, path: &str) -> Result<(), Problem> {
        if (self.first..=self.last).contains(&at) {
            return Ok(());
        }
        let latency = if self.known {
            format!("within this game's commitLatency {}", self.latency)
        } else {
            format!("at most the largest commitLatency, {}, ahead", self.latency)
        };
        Err(Problem::new(
            format!("{path}.commitAt"),
            format!(
                "expected a tick {}..={} (after the save's tick {}, {latency}), got {at}",
                self.first,
                self.last,
                self.first - 1
            ),
        ))
    }
}

/// Applies a prepared section.
pub(super) fn commit(st: &mut State, p: Prepared) {
    // Results of the old run's jobs are stale from here on (their versions are gone), and
    // its unsaved edits are the old game's: the save's world replaces both.
    st.in_flight.clear();
    st.arrived = 0;
    st.commits.clear();
    st.jobs.clear();
    st.unsaved.clear();
    st.released.clear();
    st.diffs.clear();
    if let Some(store) = &st.store {
        // Before any dispatch below: workers ask the thread after it has the saved world.
        let dir = st.config.world_dir.clone().map(Into::into);
        store.replace(dir, p.opened);
        store.write(p.overlay);
    }
    st.built.clear();
    st.versions.clear();
    for (c, b, version) in p.built {
        if let Some(d) = b.diff {
            st.diffs.insert(c, d);
        }
        st.built.insert(c, b.data);
        st.versions.insert(c, version);
    }
    st.dirty = p.dirty.into_iter().collect();
    st.errors = p.errors;
    st.waits = p.waits;
    for (chunk, at) in p.in_flight {
        st.dispatch(chunk, at);
    }
    // The LOD blocks: the old run's flights are stale, the save's built ones land as saved.
    let trash: Vec<_> = std::mem::take(&mut st.blocks.slots)
        .into_values()
        .filter_map(|s| Some(s.built?.1))
        .collect();
    st.trash.extend(trash);
    st.blocks.awaited = 0;
    st.blocks.commits.clear();
    st.blocks.jobs.clear();
    st.blocks.dirty.clear();
    for (key, step, data) in p.lod_built {
        if let Some(k) = key.0.checked_sub(1) {
            st.blocks.steps[k as usize] = step;
        }
        st.blocks.slots.insert(
            key,
            state::BlockSlot {
                built: Some((step, std::sync::Arc::new(data))),
                flight: None,
            },
        );
    }
    for (key, step, at) in p.lod_in_flight {
        st.dispatch_block(key, step, at);
    }
    if let Some((streaming, id)) = st.builder.clone() {
        for c in st.built.keys() {
            streaming.set_built(id, *c, true);
        }
        let mut built: Vec<_> = st.blocks.all_built().map(|(k, _)| *k).collect();
        built.sort_unstable();
        for key in built {
            streaming.set_lod_built(id, key.0, key.1, true);
        }
    }
}

/// A hashed map's entries in row order.
fn sorted<V>(map: &rustc_hash::FxHashMap<ChunkPos, V>) -> Vec<(&ChunkPos, &V)> {
    let mut v: Vec<_> = map.iter().collect();
    v.sort_unstable_by_key(|(c, _)| **c);
    v
}
