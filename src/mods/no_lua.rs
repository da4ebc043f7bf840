//! Lua mods on a build without the `lua` feature (the wasm build, docs/web.md): the sandbox's VM
//! is C and native-only, so no Lua mod can be loaded. A scene listing one is refused at start
//! ([`super::LUA_NEEDS_NATIVE`], docs/reference/web.md#lua-mods-need-the-native-build); so is a
//! `.lua` file given to [`super::parse_mod`]. No Lua mod state can exist: [`LuaModState`] and
//! [`PreparedModState`] have no values, and a game's list of them is always empty. What needs no
//! VM stays: a save's Lua `storage` is checked as on the native build ([`check_storage`]).

#[path = "lua/storage.rs"]
mod storage;

pub use storage::{check as check_storage, MAX_BYTES as MAX_STORAGE_BYTES};

use crate::host::save::ModSave;
use crate::host::ModId;
use crate::json::Problem;

/// What a save holds of a running Lua mod: none runs on this build, so this type has no values.
pub enum LuaModState {}

/// A mod's saved state ready to commit: none on this build (no values).
pub enum PreparedModState {}

impl LuaModState {
    /// The mod's id.
    pub fn id(&self) -> &ModId {
        match *self {}
    }

    /// The mod's state as a save holds it.
    pub fn save(&self) -> Result<ModSave, String> {
        match *self {}
    }

    /// Checks a saved state and builds it in the mod's Lua state.
    pub fn prepare(&self, _saved: &ModSave, _path: &str) -> Result<PreparedModState, Problem> {
        match *self {}
    }

    /// Applies a prepared state.
    pub fn commit(&self, prepared: PreparedModState) {
        match prepared {}
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::files::inputs::parse_line;
    use crate::files::FileError;
    use crate::game::{Game, GameError};
    use crate::mods::LUA_NEEDS_NATIVE;

    /// A scene (`mods` as given) with the JSON mod that keeps chunk (0, 0) loaded, in a fresh
    /// directory; returns the directory and the scene's path.
    fn scene(mods: &[&str]) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("keep_home.json"),
            r#"{"id": "keep_home", "hook": "world.chunk.unload", "match": {"x": 0, "z": 0},
                "cancel": true, "reason": "home"}"#,
        )
        .unwrap();
        std::fs::write(
            dir.path().join("patrol.lua"),
            "on(\"world.chunk.load\", function() end)",
        )
        .unwrap();
        let scene = serde_json::json!({
            "kits": [
                { "id": "game.engine" },
                { "id": "world.ground" },
                { "id": "world.streaming", "config": { "radius": 1 } }
            ],
            "mods": mods,
            "entities": [ { "id": "hero", "tags": ["player"], "position": { "x": 8, "z": 8 } } ]
        });
        let path = dir.path().join("scene.json");
        std::fs::write(&path, scene.to_string()).unwrap();
        (dir, path)
    }

    #[test]
    fn a_scene_listing_a_lua_mod_is_refused_at_start_naming_the_mod() {
        let (_dir, path) = scene(&["keep_home.json", "patrol.lua"]);
        let Err(GameError::Files(errors)) = Game::from_scene_file(&path) else {
            panic!("a Lua mod on a build without Lua is refused");
        };
        let file = crate::fileio::display_name(&path);
        assert_eq!(
            errors.iter().map(ToString::to_string).collect::<Vec<_>>(),
            [format!("{file}: mods[1]: {LUA_NEEDS_NATIVE}")]
        );
        assert!(file.ends_with("scene.json"), "{file}");
        assert_eq!(
            LUA_NEEDS_NATIVE,
            "Lua mods need the native build (this build has JSON mods only)"
        );
    }

    #[test]
    fn a_lua_mod_added_as_text_is_refused_naming_its_file() {
        let Err(errors) = super::super::parse_mod("return 1".into(), Path::new("mods/patrol.lua"))
        else {
            panic!("refused");
        };
        assert!(
            matches!(&errors[..], [FileError::Io { file, message }]
                if file == "mods/patrol.lua" && message == LUA_NEEDS_NATIVE),
            "{errors:?}"
        );
    }

    #[test]
    fn json_mods_and_their_held_refusals_work_unchanged() {
        let (_dir, path) = scene(&["keep_home.json"]);
        let mut game = Game::from_scene_file(&path).unwrap();
        game.tick();
        let line = r#"{"tick": 2, "do": "move", "entity": "hero", "to": {"x": 400, "z": 400}}"#;
        game.apply(&parse_line(line).unwrap()).unwrap();
        for _ in 0..20 {
            game.tick();
        }
        let held: Vec<_> = game
            .state()
            .refusals
            .into_iter()
            .map(|r| (r.x, r.z, r.hook, r.by, r.reason))
            .collect();
        assert_eq!(
            held,
            [(
                0,
                0,
                "world.chunk.unload".to_owned(),
                "keep_home".to_owned(),
                "home".to_owned()
            )]
        );
    }
}
