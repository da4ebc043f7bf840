//! Lua mods in a sandbox.
//!
//! A Lua mod is a `.lua` file listed in a scene's `mods`. Its id is the file stem
//! (`mods/keep_home.lua` → `keep_home`). Each mod runs in its own Lua 5.4 state; its top level
//! runs once when the game is built, in mod order, and registers hook handlers with `on`.
//! Lua mods are untrusted code: they see only what is listed below.
//!
//! # Example
//!
//! ```lua
//! -- mods/keep_home.lua: never release the home chunk.
//! on("world.chunk.unload", function(c)
//!   if c.x == 0 and c.z == 0 then
//!     return cancel("home")
//!   end
//! end)
//! ```
//!
//! ```lua
//! -- Refuse loads in a rectangle of chunks, and look a little further while doing it.
//! streaming.setRadius(3)
//! on("world.chunk.load", function(c)
//!   if c.x >= 4 and c.x <= 6 and c.z >= -2 and c.z <= 2 then
//!     log("refusing", c.x, c.z)
//!     return cancel("forbidden zone")
//!   end
//! end)
//! ```
//!
//! # The API
//!
//! - `on(hook, fn)` registers `fn` for a declared hook (`world.chunk.load`, `world.chunk.unload`);
//!   allowed only while the mod's top level runs. Handlers of all mods run in mod order; the first
//!   cancel wins and later handlers are not asked. A name that is not a hook (e.g. the event
//!   `world.chunk.loaded`) makes the mod a bad file (the game does not start; `check` reports
//!   it), naming the line and listing the hooks, even if the mod catches the error.
//! - A handler is called with a fresh table of the hook's fields, e.g. `{x = 0, z = 0}` (integers);
//!   changing it changes nothing. It returns nothing (or `nil`) to let the change happen, or
//!   `cancel(reason)` to cancel it. `reason` is a string or nothing (`""`). Returning anything else
//!   (`true`, a number, a string, a table …) is reported as an error and does not cancel.
//! - `streaming` (only when the scene enables `world.streaming`):
//!   `streaming.isLoaded(x, z)` → boolean; `streaming.chunkSize()` → number of metres;
//!   `streaming.loaded()` (row order) and `streaming.pending()` (nearest-first) → arrays of
//!   `{x = …, z = …}`; `streaming.chunkOf({x = …, z = …})` → `{x = …, z = …}`;
//!   `streaming.around({x = …, z = …})` → the wanted square around a position, nearest-first;
//!   `streaming.refusals()` → array of `{x, z, hook, mod, reason}`; `streaming.release(x, z)` →
//!   whether a refusal was held there; `streaming.focus()` → `nil` or `{x = …, z = …}`;
//!   `streaming.radius()` → integer; `streaming.setRadius(n)` (an integer 0..=64) and
//!   `streaming.setBudgetMs(n)` (a finite number >= 0) take effect from the next tick (mod >
//!   scene layer > kit config); `streaming.onChunk(fn)` calls `fn({x = …, z = …}, loaded,
//!   restored)` on every load and release (`restored` true when a load of a save tells what it
//!   changed) and returns a handle whose `handle:unsubscribe()` stops it (an error in the
//!   callback is reported as a `mod.error` event with hook `onChunk`); `streaming.complete()` and
//!   `streaming.onComplete(fn)` (`fn(chunk, complete)`, no handle) read and follow complete chunks
//!   (docs/reference/streaming.md#complete-chunks). Whole numbers are Lua integers.
//!   docs/reference/streaming.md#tickets, docs/reference/streaming.md#priorities:
//!   `streaming.request(id, {x = …, z = …}, radius, ticks, priority)` requests (or replaces) a
//!   preload ticket counting from the next tick (`true`, or `nil, message` when the ticket cap
//!   refuses it), `streaming.drop(id)` → whether it was held, `streaming.tickets()` → array of
//!   `{id, x, z, radius, ticksLeft}` in id order, `streaming.foci()` → array of `{x, z}`,
//!   `streaming.ready(entity)`, `streaming.ticketReady(id)` → booleans, `streaming.progress()` →
//!   ready / wanted (a float), `streaming.setFocus("player" | "players")`,
//!   `streaming.setMaxLoaded(n or nil)` and `streaming.setMaxRefusalsPerMod(n)` like `setRadius`.
//! - `terrain` (only when the scene enables `world.terrain`,
//!   docs/reference/terrain.md#the-terrain-service): `terrain.heightAt({x = …, z = …})` → the
//!   height (0..=65535) of the cell there, or `nil` if its chunk is not built;
//!   `terrain.isBuilt(x, z)` → boolean; `terrain.chunk(x, z)` → `nil` or `{x, z, cells, hash}`
//!   (hash: 16 hex digits); `terrain.cellsPerChunk()`; `terrain.onBuilt(fn)` calls
//!   `fn({x = …, z = …}, hash)` on every commit (an error in it is a `mod.error` with hook
//!   `onBuilt`).
//! - `log(...)` and `print(...)` write one line to the game's mod log: the arguments converted
//!   like `tostring`, joined by tabs, with the mod id as the source.
//! - `mod.id` is the mod's id.
//! - `storage` is a table saved with the game and restored on load, with the state of
//!   `math.random`: numbers, strings, booleans and tables of them (see the README and
//!   `storage.rs` for the limits). The mod's other variables are not saved.
//! - The Lua library, from an allow-list: `assert`, `error`, `getmetatable`, `ipairs`, `pairs`,
//!   `pcall`, `rawequal`, `rawget`, `rawlen`, `rawset`, `select`, `setmetatable`, `tonumber`,
//!   `tostring`, `type`, `xpcall`, and the tables `string` (no `dump`), `table`, `math`, `utf8`:
//!   Lua's own functions, metered by the VM.
//!   Not available (`nil` in a mod): `io`, `os`, `package`, `require`, `debug`, `dofile`,
//!   `loadfile`, `load`, `loadstring`, `collectgarbage`, `next`, `coroutine`, `string.dump`,
//!   `warn`, `_G`, `_VERSION` (`tests/lua_sandbox.rs` lists what a mod sees).
//!
//! # Determinism
//!
//! Same scene, same inputs, same results on every run and machine. The mod runs on Lua 5.4.7
//! patched for the sandbox (`vendor/lua-5.4.7/PATCHES.md`): a constant string-hash seed, no
//! addresses in `tostring` (`%p` is refused), `table.sort` without a clock, weak tables and table
//! finalizers ignored by the collector, one NaN. Here:
//! - `pairs` visits keys in a fixed order: numbers ascending, then strings bytewise, then `false`,
//!   `true`. Keys of other types raise `pairs: cannot order keys of type table deterministically`.
//! - `math.random` is seeded from the scene's `seed` (plus the mod's position in `mods`);
//!   `math.randomseed()` needs an explicit seed; its state is saved with the game.
//! - `^` and the `math` functions (`sin`, `cos`, `tan`, `asin`, `acos`, `atan`, `exp`, `log`,
//!   `sqrt`, `pow`, `sinh`, `cosh`, `tanh`, `log10`) come from the pure-Rust `libm` crate.
//!
//! # Limits
//!
//! - Memory: [`LuaLimits::memory_bytes`] per mod state (16 MiB by default). Running out is an
//!   error of the call (`memory limit exceeded (16777216 bytes)`); the state stays usable.
//! - Work: [`LuaLimits::instructions_per_call`] units per call (1 000 000 by default) — the top
//!   level, and each handler or callback call — counted by the VM: one per instruction, one per
//!   32 bytes allocated, one per value moved by returns, tail calls and `...`, 64 per error caught,
//!   one per 16 bytes of
//!   long strings compared, one per element the table library moves, one per pattern-matcher
//!   step. Never wall-clock time. Running out is the error `instruction budget exceeded (1000000
//!   instructions)`; once spent, every further instruction raises, so no `pcall`, `xpcall`
//!   handler or `__close` handler runs on.
//! - Work a tick: [`LuaLimits::instructions_per_tick`] units (4 000 000 by default) over all the
//!   mod's calls of one step of the engine (a tick, an input, a load; see `docs/lua-vm.md`, "The
//!   tick budget"). A call gets the least of its own budget and what is left of the step's; one
//!   cut short that runs out, or one made with nothing left, fails with `tick budget exceeded
//!   (…)`, and the mod is not called again in that step (its hooks count as not cancelled).
//! - What the host keeps: a `mod.error` message or log line is cut to 1 024 bytes; a call writes
//!   at most [`LuaLimits::log_lines_per_call`] log lines (64 by default).
//! - At most 1000 handlers (`on`) and 64 live `onChunk` subscriptions per mod; a cancel reason is
//!   at most 1024 bytes as stored (invalid UTF-8 replaced first); refusals are held and saved.
//! - Source text only: binary chunks are refused. A syntax error names the file and line.
//!
//! A handler that errors, runs out of budget or memory, or returns something odd is reported as a
//! `mod.error` event `{mod, hook, message}` and counts as not cancelling; one that runs out of
//! budget also stops its mod's later handlers for that ask (a runaway costs one budget an ask).
//! An error in the top level is reported with hook `mod.load`, and the handlers registered
//! before it stay.

mod api;
mod sandbox;
mod storage;
mod vm;

pub use storage::{check as check_storage, MAX_BYTES as MAX_STORAGE_BYTES};

use std::cell::{Cell, OnceCell, RefCell};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;

use mlua::{ChunkMode, Function, Lua};

use crate::fileio::FileError;
use crate::host::save::ModSave;
use crate::host::{
    Cancel, HookAnswer, HookArgs, HookHandler, Log, ModErrors, ModFailure, ModId, Services, Steps,
};
use crate::json::Problem;
use crate::script::{EntrySlot, LuaTable};

use self::sandbox::{clean_error, Entry, Meter};

/// Limits of one Lua mod.
#[derive(Debug, Clone, Copy)]
pub struct LuaLimits {
    /// Bytes of memory the mod's Lua state may use.
    pub memory_bytes: usize,
    /// Work one call (a handler, or the mod's top level) may do, in VM instructions (see
    /// "Limits" above for what else is charged).
    pub instructions_per_call: u64,
    /// Work all the mod's calls of one tick (or of one other step of the engine: an input, a
    /// load) may do together, in the same units; see "Limits" above.
    pub instructions_per_tick: u64,
    /// Log lines one call may write; the next says the rest were dropped.
    pub log_lines_per_call: usize,
}

impl Default for LuaLimits {
    fn default() -> Self {
        LuaLimits {
            memory_bytes: 16 * 1024 * 1024,
            instructions_per_call: 1_000_000,
            instructions_per_tick: 4_000_000,
            log_lines_per_call: 64,
        }
    }
}

/// What a Lua mod is loaded with.
pub struct LuaSetup<'a> {
    /// The file's name, for messages.
    pub file: &'a str,
    /// The mod's id.
    pub id: ModId,
    /// Seed of `math.random`.
    pub seed: u64,
    /// The game's services, from which the tables are built.
    pub services: &'a Services,
    /// The kits' Lua tables ([`crate::host::Engine::lua_tables`]): the mod gets each whose
    /// service `services` has, under its name (`streaming`, `terrain`, …).
    pub tables: &'a [LuaTable],
    /// The declared hook names.
    pub hooks: &'a [String],
    /// Where `log`/`print` write.
    pub log: Log,
    /// Where failures outside hooks (in `onChunk` callbacks) are reported as `mod.error`.
    pub errors: ModErrors,
    /// The engine's steps: the mod's tick budget starts afresh with each ([`Engine::steps`]).
    ///
    /// [`Engine::steps`]: crate::host::Engine::steps
    pub steps: Steps,
    /// Memory and instruction limits.
    pub limits: LuaLimits,
}

/// A loaded Lua mod: its handlers in registration order, and the error its top level raised, if any.
pub struct LoadedLua {
    /// `(hook, handler)` in registration order.
    pub handlers: Vec<(String, Box<dyn HookHandler>)>,
    /// A runtime error raised while running the mod's top level.
    pub error: Option<String>,
    /// What a save holds of the mod.
    pub state: LuaModState,
}

/// What a save holds of a running Lua mod: its `storage` table and the state of its
/// `math.random` generator.
pub struct LuaModState {
    // Lua values first: they are dropped before the entry that owns the state.
    env: mlua::Table,
    random: Function,
    entry: Rc<Entry>,
}

/// A mod's saved state, checked and built in its Lua state, ready to commit.
pub struct PreparedModState {
    storage: mlua::Table,
    random: [u64; 4],
}

impl LuaModState {
    /// The mod's id.
    pub fn id(&self) -> &ModId {
        &self.entry.id
    }

    /// The mod's state as a save holds it; an error (naming where in `storage`) when `storage`
    /// holds something that is not plain data or is too large.
    pub fn save(&self) -> Result<ModSave, String> {
        let value: mlua::Value = self.env.raw_get("storage").map_err(|e| e.to_string())?;
        let storage = storage::encode(&value)?;
        let words = vm::random_state(self.entry.lua(), &self.random, None)
            .map_err(|e| e.to_string())?
            .ok_or("math.random is not the library's generator")?;
        Ok(ModSave {
            id: self.id().as_str().to_owned(),
            storage,
            random: words.map(|w| format!("{w:016x}")),
        })
    }

    /// Checks a saved state (as [`ModSave::check`] does) and builds its `storage` in the mod's
    /// Lua state, changing nothing the mod sees. `path` locates `saved` in the save file.
    pub fn prepare(&self, saved: &ModSave, path: &str) -> Result<PreparedModState, Problem> {
        let random = saved.check(path, check_storage)?;
        let storage = storage::decode(self.entry.lua(), &saved.storage).map_err(|e| {
            Problem::new(
                format!("{path}.storage"),
                format!(
                    "cannot be restored in the mod's Lua state: {}",
                    sandbox::clean_error(&e, &self.entry.meter)
                ),
            )
        })?;
        Ok(PreparedModState { storage, random })
    }

    /// Applies a prepared state: the mod's `storage` and `math.random` are the saved ones.
    pub fn commit(&self, prepared: PreparedModState) {
        // Raw stores into tables the host holds: they only fail when Lua cannot allocate, which a
        // set of an existing key does not.
        let _ = self.env.raw_set("storage", prepared.storage);
        let _ = vm::random_state(self.entry.lua(), &self.random, Some(prepared.random));
    }
}

/// The first byte of a precompiled Lua chunk.
const BINARY_SIGNATURE: u8 = 0x1b;

fn strip_bom(source: &str) -> &str {
    source.strip_prefix('\u{feff}').unwrap_or(source)
}

/// `(line, rest)` of a Lua message `chunkname:LINE: rest`.
fn split_line(message: &str) -> Option<(usize, String)> {
    let mut from = 0;
    while let Some(offset) = message[from..].find(':') {
        let start = from + offset + 1;
        let digits = message[start..]
            .bytes()
            .take_while(u8::is_ascii_digit)
            .count();
        if digits > 0 && message[start + digits..].starts_with(": ") {
            let line = message[start..start + digits].parse().ok()?;
            return Some((line, message[start + digits + 2..].to_owned()));
        }
        from = start;
    }
    None
}

/// Compiles `source` (text only) in `lua`; a syntax error names the file and line.
fn compile(
    lua: &Lua,
    source: &str,
    file: &str,
    env: Option<mlua::Table>,
    meter: &Meter,
) -> Result<Function, FileError> {
    let source = strip_bom(source);
    if source.as_bytes().first() == Some(&BINARY_SIGNATURE) {
        return Err(FileError::Line {
            file: file.to_owned(),
            line: 1,
            message:
                "binary (precompiled) Lua chunks are not accepted; a mod must be Lua source text"
                    .to_owned(),
        });
    }
    let mut chunk = lua
        .load(source)
        .set_name(format!("@{file}"))
        .set_mode(ChunkMode::Text);
    if let Some(env) = env {
        chunk = chunk.set_environment(env);
    }
    chunk.into_function().map_err(|e| {
        let message = clean_error(&e, meter);
        match (&e, split_line(&message)) {
            (mlua::Error::SyntaxError { .. }, Some((line, message))) => FileError::Line {
                file: file.to_owned(),
                line,
                message,
            },
            (mlua::Error::SyntaxError { .. }, None) => FileError::Line {
                file: file.to_owned(),
                line: 1,
                message,
            },
            _ => FileError::Io {
                file: file.to_owned(),
                message,
            },
        }
    })
}

/// Compiles `source` as text without running it; a syntax error names the file and line.
pub fn check_syntax(source: &str, file: &str) -> Result<(), FileError> {
    let limits = LuaLimits::default();
    let meter = Meter::new(limits);
    let io = |e: mlua::Error| FileError::Io {
        file: file.to_owned(),
        message: clean_error(&e, &meter),
    };
    let lua = Lua::new_with(mlua::StdLib::NONE, mlua::LuaOptions::default()).map_err(io)?;
    lua.set_memory_limit(limits.memory_bytes).map_err(io)?;
    compile(&lua, source, file, None, &meter).map(drop)
}

/// One handler registered by `on`.
struct LuaHandler {
    // The function first: it is dropped before the state the entry owns.
    func: Function,
    entry: Rc<Entry>,
}

impl HookHandler for LuaHandler {
    fn ask(&self, args: &HookArgs<'_>) -> HookAnswer {
        let by = self.entry.id.clone();
        match catch_unwind(AssertUnwindSafe(|| self.entry.ask(&self.func, args))) {
            Ok(Ok(None)) => Ok(None),
            Ok(Ok(Some(reason))) => Ok(Some(Cancel {
                by,
                reason: portable(reason),
            })),
            Ok(Err(message)) => Err(ModFailure {
                by,
                message: portable(message),
            }),
            Err(_) => Err(ModFailure {
                by,
                message: "internal error in the Lua sandbox".to_owned(),
            }),
        }
    }

    fn label(&self) -> String {
        format!("Lua mod {}", self.entry.id)
    }

    fn owner(&self) -> Option<usize> {
        Some(Rc::as_ptr(&self.entry) as usize)
    }

    fn ran_away(&self) -> bool {
        self.entry.ran_away()
    }

    fn silenced(&self) -> bool {
        self.entry.silenced()
    }
}

/// The C library prints a NaN as `-nan` on some CPUs and `nan` on others (through `..` and
/// `string.format`); what reaches events and saves always says `nan`.
pub(super) fn portable(text: String) -> String {
    if text.contains("-nan") {
        text.replace("-nan", "nan")
    } else {
        text
    }
}

/// Loads and runs a Lua mod's top level in a fresh sandbox.
pub fn load(source: &str, setup: LuaSetup<'_>) -> Result<LoadedLua, FileError> {
    match catch_unwind(AssertUnwindSafe(|| load_inner(source, setup.file, &setup))) {
        Ok(result) => result,
        Err(_) => Err(FileError::Io {
            file: setup.file.to_owned(),
            message: "internal error in the Lua sandbox".into(),
        }),
    }
}

fn load_inner(source: &str, file: &str, setup: &LuaSetup<'_>) -> Result<LoadedLua, FileError> {
    let meter = Rc::new(Meter::with_steps(setup.limits, setup.steps.clone()));
    let io = |e: mlua::Error| FileError::Io {
        file: file.to_owned(),
        message: clean_error(&e, &meter),
    };
    let lua = sandbox::new_state().map_err(io)?;
    let registered = Rc::new(RefCell::new(Vec::new()));
    let bad_hook = Rc::new(RefCell::new(None));
    let top_level = Rc::new(Cell::new(false));
    let slot: EntrySlot = Rc::new(OnceCell::new());
    let prepared = (|| {
        let r = lua.create_table()?;
        r.raw_set("seed", setup.seed as i64)?;
        r.raw_set("mod_id", setup.id.as_str())?;
        sandbox::core_functions(&lua, &r, &meter, &setup.log, &setup.id)?;
        let ctx = api::ApiContext {
            hooks: setup.hooks.to_vec(),
            services: setup.services,
            tables: setup.tables,
            registered: registered.clone(),
            top_level: top_level.clone(),
            id: setup.id.clone(),
            entry: slot.clone(),
            meter: meter.clone(),
            bad_hook: bad_hook.clone(),
        };
        api::install(&lua, &r, ctx)?;
        sandbox::run_prelude(&lua, r)
    })()
    .map_err(io)?;
    let random: Function = lua
        .globals()
        .raw_get::<mlua::Table>("math")
        .and_then(|m| m.raw_get("random"))
        .map_err(io)?;
    let env = prepared.env.clone();
    lua.set_memory_limit(setup.limits.memory_bytes)
        .map_err(io)?;
    let main = compile(&lua, source, file, Some(prepared.env), &meter)?;
    // Attached only now: from here on the entry owns the state and detaches before closing it.
    meter.attach(&lua).map_err(io)?;
    let entry = Rc::new(Entry::new(
        lua,
        prepared.runner,
        meter.clone(),
        setup.id.clone(),
        setup.errors.clone(),
    ));
    let running: std::rc::Weak<dyn crate::script::RunningMod> = Rc::downgrade(&entry) as _;
    let _ = slot.set(running);
    top_level.set(true);
    let result = catch_unwind(AssertUnwindSafe(|| entry.call((&main,))))
        .unwrap_or_else(|_| Err("internal error in the Lua sandbox".to_owned()));
    top_level.set(false);
    if let Some((line, message)) = bad_hook.take() {
        return Err(FileError::Line {
            file: file.to_owned(),
            line,
            message,
        });
    }
    let handlers = registered
        .take()
        .into_iter()
        .map(|(hook, func)| {
            let handler: Box<dyn HookHandler> = Box::new(LuaHandler {
                func,
                entry: entry.clone(),
            });
            (hook, handler)
        })
        .collect();
    Ok(LoadedLua {
        handlers,
        error: result.err(),
        state: LuaModState { env, random, entry },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lua_error(source: &str) -> FileError {
        check_syntax(source, "m.lua").unwrap_err()
    }

    #[test]
    fn syntax_errors_name_the_line() {
        match lua_error("local a = 1\nlocal b = = 2\n") {
            FileError::Line {
                file,
                line,
                message,
            } => {
                assert_eq!((file.as_str(), line), ("m.lua", 2));
                assert!(message.contains("unexpected symbol"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn binary_chunks_are_refused() {
        assert!(matches!(
            lua_error("\x1bLua\x54\x00"),
            FileError::Line { line: 1, .. }
        ));
    }

    /// Runs `script` in a sandbox (no streaming, no hooks); the log lines.
    fn sandboxed(script: &str, limits: LuaLimits) -> (Vec<String>, Option<String>) {
        let log = Log::default();
        let setup = LuaSetup {
            file: "t.lua",
            id: ModId::new("t"),
            seed: 1,
            services: &Services::default(),
            tables: &[],
            hooks: &[],
            log: log.clone(),
            errors: ModErrors::default(),
            steps: Steps::default(),
            limits,
        };
        let loaded = load(script, setup).unwrap();
        let lines = log.borrow().iter().map(|l| l.message.clone()).collect();
        (lines, loaded.error)
    }

    /// The budget `script`'s top level needs: the least `instructions_per_call` it runs under.
    fn units(script: &str) -> u64 {
        let runs = |n| {
            let limits = LuaLimits {
                instructions_per_call: n,
                instructions_per_tick: n,
                ..LuaLimits::default()
            };
            sandboxed(script, limits).1.is_none()
        };
        let (mut lo, mut hi) = (0u64, 1 << 24);
        assert!(runs(hi), "{script} runs");
        while lo + 1 < hi {
            let mid = (lo + hi) / 2;
            if runs(mid) {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        hi
    }

    #[test]
    fn each_kind_of_work_is_charged_at_its_rate() {
        // 64 units per error caught, on top of the instructions.
        let errors = units("for i = 1, 100 do pcall(error) end");
        let calls = units("for i = 1, 100 do pcall(type, 1) end");
        assert!(
            (100 * 58..=100 * 64 + 300).contains(&(errors - calls)),
            "{errors} - {calls}"
        );
        // One unit per 32 bytes allocated (the result; rep's buffer box comes from the
        // allocator directly, not through the VM).
        let big = units("local s = string.rep('x', 64 * 1024)");
        let small = units("local s = string.rep('x', 1)");
        assert!(
            (2048..=2048 + 300).contains(&(big - small)),
            "{big} - {small}"
        );
        // 999 more values: unpacked, moved into the call, taken by `...`, moved out by the
        // return (a unit each, four times), and the table holding them (16 bytes each).
        let many = units("local t = {} for i = 1, 1000 do t[i] = i end local function f(...) return ... end local a = {f(table.unpack(t))}");
        let few = units("local t = {} for i = 1, 1000 do t[i] = i end local function f(...) return ... end local a = {f(table.unpack(t, 1, 1))}");
        assert!(
            (4 * 999 + 500..=6500).contains(&(many - few)),
            "{many} - {few}"
        );
        // An allocation that fails runs a full collection first: charged as if everything alive
        // were allocated again (the first of a call, here the one that ends `fill`, is free).
        let fill = "local keep, s = {}, string.rep('x', 1024 * 1024) \
                    pcall(function() for i = 1, 1e9 do keep[i] = {} end end)";
        let full = units(fill);
        let failing = units(&format!(
            "{fill} for i = 1, 4 do pcall(function() return s .. s end) end"
        ));
        assert!(
            failing - full >= 4 * (12 << 20) / 32,
            "{failing} - {full}: four collections of more than 12 MiB"
        );
    }

    const PATTERN_CASES: &str = r##"
local subjects = {"", "a", "aaa", "hello world", "  trim  ", "key = value; k2=v2", "f(a(b)c)d", "THE (quick) fox",
  "abcabc", "x\0y", "12.5e3 -7 0x1F", "[]]^$%.", "\195\160\195\169 caf\195\169", "one two  three\n"}
local patterns = {"", "a", ".", "a*", "a-", "a+", "a?", "^a", "a$", "^$", "$", "^", "%a+", "%d+", "%s*", "%w+%s*=%s*%w+",
  "(%w+)=(%w+)", "()", "()a()", "(a)(b)", "%b()", "%b((", "%f[%a]%a+", "%f[%A]", "%f[%z]", "[%a_][%w_]*", "[^%s]+", "[a-c]+",
  "[]]", "[^]]", "[]", "%%", "%.", "(a*(.)%w(%s*))", "(.)%1", "^(%s*)(.-)(%s*)$", "[%]]", "x%zy", "%x+", "%p", "%c+",
  "%u%l*", "%S+", "[%d.]+", "e?3", ".-b", "a.-c", "(h)(e)(l)(l)(o)", "%", "[a", "(", ")", "%b", "%b(", "%f", "%fa",
  "(()", "%1", "[%", "((a)", "(a%1)", "[a-]", "[-a]", "[%a-z]", "^(a+)", "(o)(.-)%2", ".*", ".-", "(.*)%s", "^.-$",
  "[\128-\255]+", "%W+", "%D", "%L+", "%U", "%P+", "%X", "%C", "%G+", "()%1", "()a%1", "(a)()%2",
  "()ab%1(b)*"}
local inits = {false, 1, 3, -2, 0, 100, -100}
local function ser(...)
  local n = select("#", ...)
  local out = {}
  for i = 1, n do
    local v = select(i, ...)
    out[i] = type(v) == "string" and string.format("%q", v) or tostring(v)
  end
  return n .. ":" .. table.concat(out, ",")
end
for _, s in ipairs(subjects) do
  for _, p in ipairs(patterns) do
    for _, i in ipairs(inits) do
      local init = i or nil
      emit(ser(pcall(string.find, s, p, init)))
      emit(ser(pcall(string.find, s, p, init, true)))
      emit(ser(pcall(string.match, s, p, init)))
      local ok, it = pcall(string.gmatch, s, p, init)
      local parts = {}
      if ok then
        for _ = 1, 30 do
          local r = table.pack(pcall(it))
          parts[#parts + 1] = ser(table.unpack(r, 1, r.n))
          if not r[1] or r[2] == nil then break end
        end
      end
      emit(table.concat(parts, "|"))
    end
    emit(ser(pcall(string.gsub, s, p, "<%0>")))
    emit(ser(pcall(string.gsub, s, p, "[%1]", 2)))
    emit(ser(pcall(string.gsub, s, p, "%%%2")))
    emit(ser(pcall(string.gsub, s, p, function(...) return select("#", ...) .. "" end)))
    emit(ser(pcall(string.gsub, s, p, function(c) if c == "a" then return false end return 1.5 end)))
    emit(ser(pcall(string.gsub, s, p, {a = "A", [""] = "E", ["1"] = 7})))
  end
end
"##;

    #[test]
    fn a_back_reference_is_charged_the_bytes_it_compares() {
        // A position capture's back-reference compares nothing (it never matches): it costs
        // what a failing literal costs, not 2^64 - 2 bytes.
        let scan = |p: &str| {
            units(&format!(
                "local s = string.rep('a', 100000) local r = string.match(s, '{p}')"
            ))
        };
        let (position, literal) = (scan("()%1"), scan("()x"));
        assert!(literal.abs_diff(position) <= 64, "{position} vs {literal}");
        // A real capture's back-reference: one unit per 16 bytes compared, here 50 000 (both
        // fail at the `$`, so neither makes a capture string).
        let half = units(
            "local s = string.rep('a', 100000) .. 'b' local r = s:match('^(' .. \
                          string.rep('a', 50000) .. ')%1$')",
        );
        let none = units(
            "local s = string.rep('a', 100000) .. 'b' local r = s:match('^(' .. \
                          string.rep('a', 50000) .. ')$')",
        );
        assert!(
            (50_000 / 16..=50_000 / 16 + 64).contains(&(half - none)),
            "{half} - {none}"
        );
    }

    #[test]
    fn the_sandboxed_pattern_functions_answer_like_plain_lua() {
        let native: Rc<RefCell<Vec<String>>> = Rc::default();
        let lua = Lua::new();
        let sink = native.clone();
        let emit = lua
            .create_function(move |_, s: mlua::String| {
                sink.borrow_mut().push(s.to_string_lossy());
                Ok(())
            })
            .unwrap();
        lua.globals().set("emit", emit).unwrap();
        lua.load(PATTERN_CASES).exec().unwrap();
        let limits = LuaLimits {
            memory_bytes: 64 << 20,
            instructions_per_call: 1 << 40,
            instructions_per_tick: 1 << 40,
            log_lines_per_call: usize::MAX,
        };
        let (mine, error) = sandboxed(&format!("local emit = log\n{PATTERN_CASES}"), limits);
        assert_eq!(error, None);
        let native = native.borrow();
        assert!(native.len() > 10_000, "{}", native.len());
        assert_eq!(mine.len(), native.len());
        for (i, (a, b)) in mine.iter().zip(native.iter()).enumerate() {
            assert_eq!(a, b, "line {i}");
        }
    }

    #[test]
    fn line_numbers_are_found_after_the_chunk_name() {
        assert_eq!(split_line("m.lua:12: oops"), Some((12, "oops".to_owned())));
        assert_eq!(
            split_line("C:\\mods\\m.lua:3: x: y"),
            Some((3, "x: y".to_owned()))
        );
        assert_eq!(split_line("no line"), None);
    }
}
