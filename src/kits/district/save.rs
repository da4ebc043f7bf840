//! `world.district`'s save section (save version 3): the stamps of the district files, the live
//! district entities' lines, the kept differences by scene and chunk, the despawned district ids
//! and the stored count. Loading checks everything before anything changes; a district file that
//! changed under kept differences is an error naming it.

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::region::Stored;
use super::state::{entity_hash, State};
use crate::grid::ChunkPos;
use crate::host::{Entity, EntityId, Problem, World};

/// A district file's stamp: the scene it is a district of, its length and FNV-1a 64 hash
/// (16 hex digits).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SavedStamp {
    /// The file as configured.
    pub file: String,
    /// The scene it is a district of (absent in saves of earlier builds: not checked then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scene: Option<String>,
    /// Its length in bytes.
    pub length: u64,
    /// FNV-1a 64 of its bytes.
    pub hash: String,
}

/// A live district entity: its line (0-based index over the kit's lines) and that line's hash.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SavedLive {
    /// The entity.
    pub id: EntityId,
    /// Its line index.
    pub line: u32,
    /// The hash of the entity as the line describes it (16 hex digits).
    pub base: String,
}

/// One stored entity of a kept difference: a line index (unchanged), or the entity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum SavedStored {
    /// Exactly as line `n` describes it.
    Line(u32),
    /// Changed, moved in, or spawned there.
    Entity {
        /// The entity.
        entity: Entity,
        /// Its line, when it is a district entity.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        line: Option<u32>,
        /// That line's hash.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        base: Option<String>,
    },
}

/// The kept difference of one chunk: exactly what it stores, in stored order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SavedRecord {
    /// The scene.
    pub scene: String,
    /// Chunk column.
    pub x: i64,
    /// Section row, with `vertical` on (docs/reference/district.md#homes-in-a-vertical-world);
    /// absent (0) otherwise.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub y: i64,
    /// Chunk row.
    pub z: i64,
    /// What it stores.
    pub entities: Vec<SavedStored>,
}

/// The section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SaveSection {
    /// The district files' stamps, in config order.
    pub stamps: Vec<SavedStamp>,
    /// The scene stored into outside a scene (the last entered).
    pub last_scene: Option<String>,
    /// Live district entities, by id.
    pub live: Vec<SavedLive>,
    /// Kept differences, by scene, then chunk row order.
    pub records: Vec<SavedRecord>,
    /// Despawned district ids (never spawned again), sorted.
    pub gone: Vec<EntityId>,
    /// Stored entities.
    pub stored: u64,
    /// With `worldDir`: the directory holding the kept differences (written back before the
    /// save; `records` is then empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub world_dir: Option<String>,
    /// With `worldDir`: FNV-1a 64 of its district records as the save found them (16 hex
    /// digits): a directory that changed since is an error on load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
}

fn is_zero(y: &i64) -> bool {
    *y == 0
}

fn hex(h: u64) -> String {
    format!("{h:016x}")
}

fn unhex(s: &str, path: &str) -> Result<u64, Problem> {
    (s.len() == 16)
        .then(|| u64::from_str_radix(s, 16).ok())
        .flatten()
        .ok_or_else(|| Problem::new(path, format!("expected 16 hex digits, got {s:?}")))
}

/// What a checked section restores.
pub(crate) struct Prepared {
    last: Option<u16>,
    live: Vec<(EntityId, u32, u64)>,
    records: BTreeMap<(u16, ChunkPos), Vec<Stored>>,
    gone: BTreeSet<EntityId>,
    stored: u64,
    /// With `worldDir`: the directory as read for the load.
    pub dir: Option<crate::worlddir::store::Opened<super::region::District>>,
}

impl State {
    /// The section of the current state.
    pub fn save_section(&self) -> SaveSection {
        let mut live: Vec<SavedLive> = self
            .live
            .iter()
            .filter_map(|(id, l)| {
                Some(SavedLive {
                    id: id.clone(),
                    line: l.line?,
                    base: hex(l.base),
                })
            })
            .collect();
        live.sort_by(|a, b| a.id.cmp(&b.id));
        let digest = self.image_digest();
        SaveSection {
            stamps: self
                .index
                .stamps
                .iter()
                .map(|s| SavedStamp {
                    file: s.file.clone(),
                    scene: self.scenes.get(s.scene as usize).cloned(),
                    length: s.length,
                    hash: hex(s.hash),
                })
                .collect(),
            last_scene: self.last.map(|s| self.scenes[s as usize].clone()),
            live,
            world_dir: digest.as_ref().map(|(d, _)| d.clone()),
            image: digest.map(|(_, h)| hex(h)),
            records: self
                .records
                .iter()
                .filter(|_| self.persist.is_none())
                .map(|((scene, c), list)| SavedRecord {
                    scene: self.scenes[*scene as usize].clone(),
                    x: c.x,
                    y: c.y,
                    z: c.z,
                    entities: list
                        .iter()
                        .map(|s| match s {
                            Stored::Line(i) => SavedStored::Line(*i),
                            Stored::Entity { line, base, entity } => SavedStored::Entity {
                                entity: (**entity).clone(),
                                line: *line,
                                base: line.map(|_| hex(*base)),
                            },
                        })
                        .collect(),
                })
                .collect(),
            gone: self.gone.iter().cloned().collect(),
            stored: self.stored,
        }
    }

    /// Checks a section against this world's district files and the save's own `world`.
    pub fn check_section(&self, s: SaveSection, world: &World) -> Result<Prepared, Problem> {
        let kept = !s.records.is_empty() || !s.gone.is_empty() || !s.live.is_empty();
        if kept {
            if s.stamps.len() != self.index.stamps.len() {
                return Err(Problem::new(
                    "stamps",
                    format!(
                        "the save was made with {} district files; this scene has {}",
                        s.stamps.len(),
                        self.index.stamps.len()
                    ),
                ));
            }
            for (i, (saved, now)) in s.stamps.iter().zip(&self.index.stamps).enumerate() {
                let hash = unhex(&saved.hash, &format!("stamps[{i}].hash"))?;
                if saved.file != now.file || saved.length != now.length || hash != now.hash {
                    return Err(Problem::new(
                        format!("stamps[{i}]"),
                        format!(
                            "district file {} changed since the differences this save keeps were made \
                             (saved {} bytes, hash {}; now {} bytes, hash {})",
                            crate::escape::escape(&now.file),
                            saved.length,
                            saved.hash,
                            now.length,
                            hex(now.hash)
                        ),
                    ));
                }
                let ours = self.scenes.get(now.scene as usize);
                if let Some(theirs) = saved.scene.as_ref().filter(|s| Some(*s) != ours) {
                    return Err(Problem::new(
                        format!("stamps[{i}].scene"),
                        format!(
                            "district file {} was scene {:?}'s when this save was made, and is \
                             scene {:?}'s in this scene file: the differences this save keeps \
                             belong to other district assignments",
                            crate::escape::escape(&now.file),
                            crate::escape::escape(theirs),
                            crate::escape::escape(ours.map_or("", String::as_str)),
                        ),
                    ));
                }
            }
        }
        let scene = |name: &str, path: &str| -> Result<u16, Problem> {
            self.scenes
                .iter()
                .position(|s| s == name)
                .map(|i| i as u16)
                .ok_or_else(|| Problem::new(path, format!("no scene {name:?} in this scene file")))
        };
        let line = |n: u32, path: &str| -> Result<u32, Problem> {
            if (n as usize) < self.index.len() {
                Ok(n)
            } else {
                Err(Problem::new(
                    path,
                    format!("expected a line index below {}, got {n}", self.index.len()),
                ))
            }
        };
        let last = match &s.last_scene {
            Some(n) => Some(scene(n, "lastScene")?),
            None => None,
        };
        let mut live = Vec::new();
        for (i, l) in s.live.into_iter().enumerate() {
            let n = line(l.line, &format!("live[{i}].line"))?;
            let base = unhex(&l.base, &format!("live[{i}].base"))?;
            live.push((l.id, n, base));
        }
        let mut records = BTreeMap::new();
        let mut order = BTreeMap::new();
        for (i, r) in s.records.into_iter().enumerate() {
            let path = format!("records[{i}]");
            let sc = scene(&r.scene, &format!("{path}.scene"))?;
            if r.y != 0 && self.height.is_none() {
                return Err(Problem::new(
                    format!("{path}.y"),
                    format!(
                        "expected no `y`: this game's streaming has no `vertical` (homes are \
                         chunks (x, z)), got y {}",
                        r.y
                    ),
                ));
            }
            let home = ChunkPos::section(r.x, r.y, r.z);
            let mut list = Vec::new();
            for (j, e) in r.entities.into_iter().enumerate() {
                let p = format!("{path}.entities[{j}]");
                list.push(match e {
                    SavedStored::Line(n) => Stored::Line(line(n, &p)?),
                    SavedStored::Entity {
                        entity,
                        line: l,
                        base,
                    } => {
                        entity
                            .position
                            .check()
                            .map_err(|q| q.under(&format!("{p}.entity.position")))?;
                        if let Some(d) = &entity.data {
                            crate::host::check_data(d)
                                .map_err(|m| Problem::new(format!("{p}.entity.data"), m))?;
                        }
                        let base = match (&l, base) {
                            (Some(_), Some(b)) => unhex(&b, &format!("{p}.base"))?,
                            (Some(_), None) => {
                                return Err(Problem::new(&p, "a line without its base"))
                            }
                            (None, _) => 0,
                        };
                        Stored::Entity {
                            line: l.map(|n| line(n, &p)).transpose()?,
                            base,
                            entity: Box::new(entity),
                        }
                    }
                });
            }
            if records.insert((sc, home), list).is_some() {
                return Err(Problem::new(path, "a second record for this chunk"));
            }
            order.insert((sc, home), i);
        }
        let saved = Saved {
            live: &live,
            records: &records,
            order: &order,
            gone: &s.gone,
            stored: s.stored,
        };
        self.check_whole(world, saved, s.world_dir.is_some())?;
        let gone: BTreeSet<EntityId> = s.gone.into_iter().collect();
        Ok(Prepared {
            last,
            live,
            records,
            gone,
            stored: s.stored,
            dir: None,
        })
    }

    /// docs/reference/district.md#district-files, every id once: the section agrees with itself,
    /// with the district files and with the save's world (each field alone was checked already). A
    /// live district entity is in the world as its line; every district entity of the world is
    /// listed live; a stored entity is nowhere else; a despawned id is a district id held nowhere;
    /// and (differences kept in the save) `stored` counts no more than the records and the
    /// untouched lines hold and no less than the records.
    fn check_whole(&self, world: &World, s: Saved<'_>, in_dir: bool) -> Result<(), Problem> {
        let Saved {
            live,
            records,
            order,
            gone,
            stored,
        } = s;
        let mut held = Held::default();
        for (i, (id, line, base)) in live.iter().enumerate() {
            let path = format!("live[{i}]");
            let e = self
                .read(*line)
                .map_err(|m| Problem::new(format!("{path}.line"), m))?;
            if e.id != *id {
                return Err(Problem::new(
                    format!("{path}.id"),
                    format!(
                        "district line index {line} is entity `{}`, not `{}`",
                        crate::escape::escape(e.id.as_str()),
                        crate::escape::escape(id.as_str())
                    ),
                ));
            }
            if entity_hash(&e) != *base {
                return Err(Problem::new(
                    format!("{path}.base"),
                    "expected the hash of the entity as its line describes it",
                ));
            }
            if world.get(id).is_none() {
                return Err(Problem::new(
                    format!("{path}.id"),
                    format!(
                        "no entity `{}` in the save's world",
                        crate::escape::escape(id.as_str())
                    ),
                ));
            }
            held.hold(path, Some(*line), Some(id))?;
        }
        for e in world.iter() {
            if held.ids.contains_key(&e.id) {
                continue;
            }
            if let Some(line) = self.line_of(e.id.as_str()) {
                return Err(Problem::new(
                    "live",
                    format!(
                        "entity `{}` of the save's world is district line index {line}'s, and \
                         is not listed live",
                        crate::escape::escape(e.id.as_str())
                    ),
                ));
            }
            held.ids.insert(e.id.clone(), "the save's entities".into());
        }
        for ((scene, c), list) in records {
            for (j, st) in list.iter().enumerate() {
                let path = format!("records[{}].entities[{j}]", order[&(*scene, *c)]);
                if let Some(m) = self.entry_problem(*c, st) {
                    return Err(Problem::new(path, format!("the entry {m}")));
                }
                match st {
                    Stored::Line(i) => held.hold(path, Some(*i), None)?,
                    Stored::Entity { line, entity, .. } => {
                        held.hold(path, *line, Some(&entity.id))?
                    }
                }
            }
        }
        for (i, id) in gone.iter().enumerate() {
            let path = format!("gone[{i}]");
            let Some(line) = self.line_of(id.as_str()) else {
                return Err(Problem::new(
                    path,
                    format!(
                        "`{}` is no district entity",
                        crate::escape::escape(id.as_str())
                    ),
                ));
            };
            held.hold(path, Some(line), Some(id))?;
        }
        if in_dir {
            return Ok(()); // the records are the directory's, checked as it is read
        }
        let untouched: u64 = self
            .index
            .groups()
            .filter(|(k, _)| !records.contains_key(k))
            .map(|(_, g)| g.filter(|i| !held.lines.contains_key(i)).count() as u64)
            .sum();
        // At most what the records and the untouched lines hold, at least what the records
        // hold: a district line that could not be read when its chunk loaded (its file changed
        // under the game) was counted out, though its line is untouched.
        let kept = records.values().map(|l| l.len() as u64).sum::<u64>();
        let most = untouched + kept;
        if !(kept..=most).contains(&stored) {
            return Err(Problem::new(
                "stored",
                format!(
                    "expected {kept}..={most} (at least the entities the records hold, at most \
                     those and the untouched district lines), got {stored}"
                ),
            ));
        }
        Ok(())
    }

    /// Restores a checked section; the live index is rebuilt from `world`.
    pub(crate) fn restore(&mut self, p: Prepared, active: Option<u16>, world: &crate::host::World) {
        let dir = p.dir;
        self.active = active;
        self.last = p.last;
        self.records = p.records;
        self.reindex_stored();
        self.gone = p.gone;
        self.stored = p.stored;
        self.live.clear();
        self.by_chunk.clear();
        self.check.clear();
        self.pending.clear();
        self.data.clear();
        for (id, line, base) in p.live {
            if world.get(&id).is_some() {
                self.live.insert(
                    id,
                    super::state::Live {
                        line: Some(line),
                        base,
                        chunk: ChunkPos::new(0, 0),
                        seq: 0,
                    },
                );
            }
        }
        let ids: Vec<EntityId> = world.iter().map(|e| e.id.clone()).collect();
        // Every live streamed entity is looked at by the next tick's end: those in a loaded
        // chunk are skipped, the others are exactly the ones the saved run still had to look at.
        self.changed(&ids, world);
        // With `worldDir`: the kept differences are the directory's stored entries (its live
        // ones are the save's world), and the directory holds the image of the saved tick.
        if let Some(opened) = dir {
            let problems = self.take_image(&opened.chunks, true);
            self.errors.extend(problems);
            if let Some(per) = self.persist.as_mut() {
                per.image = opened.chunks.clone();
                per.outcome = None;
                per.failing = false;
                per.store
                    .replace(Some(std::path::PathBuf::from(&per.dir)), opened);
            }
        }
        self.dirty.clear();
        self.released = false;
    }
}

/// A section's parts, each checked alone.
struct Saved<'a> {
    live: &'a [(EntityId, u32, u64)],
    records: &'a BTreeMap<(u16, ChunkPos), Vec<Stored>>,
    /// Each record's index in the section.
    order: &'a BTreeMap<(u16, ChunkPos), usize>,
    gone: &'a [EntityId],
    stored: u64,
}

/// Where each district line and each id was first found held in a save (a JSON path).
#[derive(Default)]
struct Held {
    lines: BTreeMap<u32, String>,
    ids: BTreeMap<EntityId, String>,
}

impl Held {
    /// Line `line` and entity `id` are held at `path`: an error if either is held already.
    fn hold(
        &mut self,
        path: String,
        line: Option<u32>,
        id: Option<&EntityId>,
    ) -> Result<(), Problem> {
        let twice = |what: String, first: &String| {
            Problem::new(&path, format!("{what} is held here and at {first}"))
        };
        if let Some((i, first)) = line.and_then(|i| Some((i, self.lines.get(&i)?))) {
            return Err(twice(format!("district line index {i}"), first));
        }
        if let Some((id, first)) = id.and_then(|id| Some((id, self.ids.get(id)?))) {
            let id = crate::escape::escape(id.as_str()).into_owned();
            return Err(twice(format!("entity `{id}`"), first));
        }
        if let Some(i) = line {
            self.lines.insert(i, path.clone());
        }
        if let Some(id) = id {
            self.ids.insert(id.clone(), path);
        }
        Ok(())
    }
}

impl Prepared {
    /// What a save without a district section restores: nothing kept, every line stored.
    pub(crate) fn baseline(lines: u64, active: Option<u16>) -> Prepared {
        Prepared {
            last: active,
            live: Vec::new(),
            records: BTreeMap::new(),
            gone: BTreeSet::new(),
            stored: lines,
            dir: None,
        }
    }
}
