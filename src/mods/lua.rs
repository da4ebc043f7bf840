//! Lua mods in a sandbox (placeholder until the sandbox lands).

use std::rc::Rc;

use crate::files::FileError;
use crate::host::{HookHandler, Log, ModId};
use crate::kits::streaming::StreamingService;

/// Limits of one Lua mod.
#[derive(Debug, Clone, Copy)]
pub struct LuaLimits {
    /// Bytes of memory the mod's Lua state may use.
    pub memory_bytes: usize,
    /// VM instructions one call (a handler, or the mod's top level) may run.
    pub instructions_per_call: u64,
}

impl Default for LuaLimits {
    fn default() -> Self {
        LuaLimits { memory_bytes: 16 * 1024 * 1024, instructions_per_call: 1_000_000 }
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
    /// The streaming service, if the scene enables it.
    pub streaming: Option<Rc<dyn StreamingService>>,
    /// The declared hook names.
    pub hooks: &'a [String],
    /// Where `log`/`print` write.
    pub log: Log,
    /// Memory and instruction limits.
    pub limits: LuaLimits,
}

/// A loaded Lua mod: its handlers in registration order, and the error its top level raised, if any.
pub struct LoadedLua {
    /// `(hook, handler)` in registration order.
    pub handlers: Vec<(String, Box<dyn HookHandler>)>,
    /// A runtime error raised while running the mod's top level.
    pub error: Option<String>,
}

/// Compiles `source` as text without running it; a syntax error names the file and line.
pub fn check_syntax(_source: &str, file: &str) -> Result<(), FileError> {
    Err(FileError::Io { file: file.into(), message: "Lua mods are not supported yet".into() })
}

/// Loads and runs a Lua mod's top level in a fresh sandbox.
pub fn load(_source: &str, setup: LuaSetup<'_>) -> Result<LoadedLua, FileError> {
    Err(FileError::Io { file: setup.file.into(), message: "Lua mods are not supported yet".into() })
}
