//! A live page's session (docs/web.md#the-live-page): a game run tick by tick while the page
//! shows it, with the SAME frame capture as a recorded page ([`super::capture`]), so the page
//! draws it with the one drawing core (`view.js`). Beside the game it keeps what a recording
//! needs: the inputs applied, in order, and each tick's [`Step`] (the canonical events and their
//! FNV-1a 64 digest, computed here from the engine's events, as `run --record` does), so the
//! session saves as a recording that `replay` verifies.
//!
//! A session starts from a [`Recording`]: its scene, mods' sources and district files are the
//! game's, its inputs play first (each before the tick it is stamped with), and its steps, when
//! it has any, are checked against the ticks run (the page then says whether it replays
//! exactly). Inputs given while it runs ([`Live::input`]) are queued, stamped with a tick not
//! yet run. An input the game refuses is dropped (a recording holding it would not replay).

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::capture::{scripts, view_data, Capture};
use super::{has_terrain, terrain_height, Frame, ViewData, ViewError};
use crate::files::inputs::{parse_line, Action, InputLine};
use crate::files::FileError;
use crate::game::{Game, GameError};
use crate::grid::{ChunkPos, Position};
use crate::limits::MAX_TICK;
use crate::replay::{Recording, Step};
use crate::scene_files::SceneFiles;

/// A running game with its page capture and its recording.
pub struct Live {
    game: Game,
    capture: Capture,
    /// Whether chunks and blocks get terrain heights (the scene enables `world.terrain`).
    heights: bool,
    /// The recording: scene, mods, districts; its inputs those applied, its steps those run.
    recording: Recording,
    /// The steps of the recording the session started from, to check the ticks run against.
    expected: Vec<Step>,
    /// Inputs not applied yet, in the order they will be (by tick, then as given).
    pending: Vec<InputLine>,
    /// Frames not taken yet.
    frames: Vec<Frame>,
    /// How many of the capture's names and ids were taken.
    names_taken: usize,
    ids_taken: usize,
    /// The tick of the last frame.
    last_tick: u64,
    /// The page model's header (no frames).
    header: ViewData,
}

/// The game of a scene whose files are given as text (docs/reference/engines.md#scene-files-as-text).
fn build_game(scene: &str, files: BTreeMap<String, String>) -> Result<Game, ViewError> {
    let files = SceneFiles::from_texts(files).map_err(|problems| {
        GameError::Files(
            problems
                .into_iter()
                .map(|p| FileError::invalid("recording files", p))
                .collect(),
        )
    })?;
    Ok(Game::from_scene_text_with_files(
        scene,
        "scene",
        &files,
        &crate::kits::builtin_catalog(),
    )?)
}

/// A recording's scene with its mods and district files given as text: the scene (its `mods`
/// and district entries pointing at the files) and the files, relative path → text. The paths
/// are the ones a replay's temporary directory uses (`m<i>/<name>`, `districts/<i>.jsonl`).
pub fn recording_files(
    recording: &Recording,
) -> Result<(Value, BTreeMap<String, String>), ViewError> {
    if !recording.world.is_empty() {
        return Err(ViewError::Live(
            "the recording carries a world directory (worldDir), which a live page cannot run \
             (it has no file system)"
                .into(),
        ));
    }
    let mut scene = recording.scene.clone();
    let mut files = BTreeMap::new();
    let mut paths = Vec::new();
    for (i, m) in recording.mods.iter().enumerate() {
        let name = m
            .path
            .rsplit(['/', '\\'])
            .next()
            .filter(|n| !n.is_empty() && *n != "." && *n != "..")
            .map_or_else(|| format!("mod{i}"), str::to_owned);
        let path = format!("m{i}/{name}");
        files.insert(path.clone(), m.text.clone());
        paths.push(Value::String(path));
    }
    if let Some(obj) = scene.as_object_mut() {
        obj.insert("mods".into(), Value::Array(paths));
    }
    let mut districts = Vec::new();
    for (i, d) in recording.districts.iter().enumerate() {
        let path = format!("districts/{i}.jsonl");
        files.insert(path.clone(), d.text.clone());
        districts.push(path);
    }
    crate::replay::set_district_paths(&mut scene, &districts);
    Ok((scene, files))
}

impl Live {
    /// A session of `recording` on `game` (built from it, not yet run): its inputs are queued,
    /// its steps kept to check against; the frame of tick 0 is captured.
    pub fn new(recording: &Recording, game: Game, title: &str) -> Result<Live, ViewError> {
        let mut capture = Capture::new(game.engine());
        let head = capture.head(game.engine())?;
        let header = view_data(head, title, scripts(game.engine()));
        let heights = has_terrain(recording);
        let mut live = Live {
            capture,
            heights,
            expected: recording.steps.clone(),
            pending: recording.inputs.clone(),
            recording: Recording {
                inputs: Vec::new(),
                steps: Vec::new(),
                ticks: 0,
                ..recording.clone()
            },
            frames: Vec::new(),
            names_taken: 0,
            ids_taken: 0,
            last_tick: game.engine().tick_count(),
            header,
            game,
        };
        live.capture_frame(&[], None)?;
        Ok(live)
    }

    /// The game.
    pub fn game(&self) -> &Game {
        &self.game
    }

    /// A session of `recording`: its game built from its scene with its mods and district files
    /// given as text ([`recording_files`]).
    pub fn from_recording(recording: &Recording, title: &str) -> Result<Live, ViewError> {
        let (scene, files) = recording_files(recording)?;
        let game = build_game(&scene.to_string(), files)?;
        Live::new(recording, game, title)
    }

    /// The page model's header: format, title, chunk size and the layers' fields, with no frame
    /// (they come from [`Live::take`]).
    pub fn header(&self) -> &ViewData {
        &self.header
    }

    fn capture_frame(
        &mut self,
        events: &[crate::host::Event],
        tick: Option<u64>,
    ) -> Result<(), ViewError> {
        let game = &self.game;
        let probe = |c: ChunkPos| terrain_height(game, c);
        let heights = self
            .heights
            .then_some(&probe as &dyn Fn(ChunkPos) -> Option<f64>);
        let mut frame = self.capture.frame(game.engine(), events, heights)?;
        frame.tick = tick;
        self.frames.push(frame);
        Ok(())
    }

    /// Queues an input line (the inputs file's format): it is applied before the tick it is
    /// stamped with, after the inputs already queued for that tick. A line stamped with a tick
    /// that has run is refused.
    pub fn input(&mut self, line: &str) -> Result<(), String> {
        let input = parse_line(line)?;
        let next = self.game.engine().tick_count() + 1;
        if input.tick < next {
            return Err(format!(
                "tick: the line is stamped {} but tick {} has run; stamp it {next} or later",
                input.tick,
                next - 1
            ));
        }
        let at = self.pending.partition_point(|p| p.tick <= input.tick);
        self.pending.insert(at, input);
        Ok(())
    }

    /// Runs up to `n` ticks, each after the inputs due before it, capturing a frame and a step
    /// per tick; returns how many ran. An input the game refuses is dropped and reported (the
    /// ticks before it stay run).
    pub fn tick(&mut self, n: u64) -> Result<u64, ViewError> {
        for _ in 0..n {
            let now = self.game.engine().tick_count();
            if now >= MAX_TICK {
                return Err(ViewError::Live(format!(
                    "the run is at tick {now}, the last tick a run may reach ({MAX_TICK})"
                )));
            }
            while self
                .pending
                .first()
                .is_some_and(|p| p.tick <= self.game.engine().tick_count() + 1)
            {
                let input = self.pending.remove(0);
                if let Err(e) = self.game.apply(&input) {
                    let line = serde_json::to_string(&input).expect("plain data");
                    return Err(ViewError::Live(format!(
                        "the input {line} was refused (it is not part of the recording): {e}"
                    )));
                }
                self.recording.inputs.push(input);
            }
            self.game.tick();
            let events = self.game.engine_mut().take_events();
            let tick = self.game.engine().tick_count();
            self.recording.steps.push(Step::new(tick, &events));
            self.recording.ticks = tick;
            let jump = (tick != self.last_tick + 1).then_some(tick);
            self.last_tick = tick;
            self.capture_frame(&events, jump)?;
        }
        Ok(n)
    }

    /// The frames captured since the last call, with the event names and entity ids they
    /// introduced: `{"names": [...], "ids": [...], "frames": [...]}` (the page appends each list
    /// to its own).
    pub fn take(&mut self) -> Value {
        let names = &self.capture.names[self.names_taken..];
        let ids = &self.capture.ids.ids()[self.ids_taken..];
        let out = json!({
            "names": names,
            "ids": ids,
            "frames": std::mem::take(&mut self.frames),
        });
        self.names_taken = self.capture.names.len();
        self.ids_taken = self.capture.ids.ids().len();
        out
    }

    /// The session as a recording (`run --record`'s format): the scene, mods and district files
    /// it started from, the inputs applied, the ticks run and their steps.
    pub fn recording(&self) -> &Recording {
        &self.recording
    }

    /// The steps of the ticks run.
    pub fn steps(&self) -> &[Step] {
        &self.recording.steps
    }

    /// How the ticks run compare with the recording the session started from: `checked`, how
    /// many of its steps were compared (all equal), and `differs`, the first tick whose digest
    /// differs (`null` while none does).
    pub fn check(&self) -> Value {
        let run = &self.recording.steps;
        let n = run.len().min(self.expected.len());
        let differs = (0..n).find(|&i| {
            (run[i].tick, &run[i].digest) != (self.expected[i].tick, &self.expected[i].digest)
        });
        json!({
            "recorded": self.expected.len(),
            "checked": differs.unwrap_or(n),
            "differs": differs.map(|i| json!({
                "tick": run[i].tick,
                "expected": self.expected[i].digest,
                "actual": run[i].digest,
            })),
        })
    }

    /// The entity the page moves: the controlled one, else the first tagged `player`; its id and
    /// where it will be once the moves queued for it are applied.
    pub fn player(&self) -> Option<(String, Position)> {
        let world = self.game.engine().world();
        let entity = world
            .control()
            .and_then(|id| world.get(id))
            .or_else(|| world.iter().find(|e| e.has_tag(crate::host::PLAYER_TAG)))?;
        let queued = self.pending.iter().rev().find_map(|p| match &p.action {
            Action::Move { entity: id, to } if *id == entity.id => Some(*to),
            _ => None,
        });
        Some((
            entity.id.as_str().to_owned(),
            queued.unwrap_or(entity.position),
        ))
    }

    /// What the page shows beside the grid: the tick, the inputs queued, the player and the check
    /// against the recording.
    pub fn status(&self) -> Value {
        json!({
            "tick": self.game.engine().tick_count(),
            "pending": self.pending.len(),
            "applied": self.recording.inputs.len(),
            "player": self.player().map(|(id, at)| json!({"id": id, "x": at.x, "y": at.y, "z": at.z})),
            "check": self.check(),
        })
    }
}
