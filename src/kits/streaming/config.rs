//! `world.streaming` settings: the kit config (SPEC §2), the per-scene layer, mod overrides, and the
//! precedence between them (mod > scene layer > kit config).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::checked_number;

/// Largest accepted radius.
pub const MAX_RADIUS: u32 = 64;

checked_number!(
    /// The side of a chunk in metres: finite, > 0.
    ChunkSize(f64),
    "a finite number > 0",
    |v| v.as_f64().filter(|f| f.is_finite() && *f > 0.0),
    { "type": "number", "exclusiveMinimum": 0, "description": "side of a chunk in metres" }
);

checked_number!(
    /// How many rings of chunks around the focus chunk are wanted: an integer 0..=[`MAX_RADIUS`].
    Radius(u32),
    integer 0..=MAX_RADIUS,
    "rings of chunks around the focus chunk"
);

checked_number!(
    /// The load budget: `max(1, floor(budgetMs))` loads per tick, one chunk priced 1 ms. Finite, >= 0.
    BudgetMs(f64),
    "a finite number >= 0",
    |v| v.as_f64().filter(|f| f.is_finite() && *f >= 0.0),
    { "type": "number", "minimum": 0, "description": "loads per tick = max(1, floor(budgetMs)); never wall-clock" }
);

checked_number!(
    /// The resident cap: `null` (no cap) or an integer 1..=[`MAX_LOADED`] (SPEC §11).
    MaxLoaded(Option<u32>),
    null or integer 1..=MAX_LOADED,
    "most chunks loaded at once (held unload refusals included); null: no cap"
);

checked_number!(
    /// How many unload refusals one mod may hold: an integer 0..=[`MAX_REFUSALS_PER_MOD`].
    MaxRefusals(u32),
    integer 0..=MAX_REFUSALS_PER_MOD,
    "most unload refusals one mod may hold"
);

/// Largest accepted `maxLoaded`.
pub const MAX_LOADED: u32 = 1_000_000;
/// Largest accepted `maxRefusalsPerMod`.
pub const MAX_REFUSALS_PER_MOD: u32 = 65_536;

/// Whose positions the grid streams around (SPEC §11).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub enum FocusMode {
    /// One focus: the player's vehicle, else the player, else the last `player.moved` (§3).
    #[default]
    #[serde(rename = "player")]
    Player,
    /// One focus per anchor: every entity tagged `player`, then the controlled character.
    #[serde(rename = "players")]
    Players,
}

impl FocusMode {
    /// Parses `"player"` or `"players"`.
    pub fn parse(v: &serde_json::Value) -> Result<Self, String> {
        match v.as_str() {
            Some("player") => Ok(FocusMode::Player),
            Some("players") => Ok(FocusMode::Players),
            _ => Err(format!(
                "expected \"player\" or \"players\", got {}",
                crate::json::describe(v)
            )),
        }
    }
}

impl<'de> Deserialize<'de> for FocusMode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        FocusMode::parse(&v).map_err(serde::de::Error::custom)
    }
}

impl BudgetMs {
    /// `max(1, floor(budgetMs))`, saturating.
    pub fn loads_per_tick(self) -> usize {
        (self.0.floor() as usize).max(1)
    }
}

/// The kit config: `{ "chunkSize": 32, "radius": 2, "budgetMs": 4 }`, every key optional.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct StreamingConfig {
    /// Side of a chunk in metres (default 32).
    #[serde(default = "default_chunk_size")]
    pub chunk_size: ChunkSize,
    /// Rings of chunks wanted around the focus chunk (default 2).
    #[serde(default = "default_radius")]
    pub radius: Radius,
    /// Loads per tick = `max(1, floor(budgetMs))` (default 4).
    #[serde(default = "default_budget")]
    pub budget_ms: BudgetMs,
    /// `"player"` (one focus, default) or `"players"` (one per anchor).
    #[serde(default)]
    pub focus: FocusMode,
    /// The resident cap (default `null`: none).
    #[serde(default = "no_cap")]
    pub max_loaded: MaxLoaded,
    /// Unload refusals one mod may hold (default 256).
    #[serde(default = "default_max_refusals")]
    pub max_refusals_per_mod: MaxRefusals,
}

fn no_cap() -> MaxLoaded {
    MaxLoaded(None)
}
fn default_max_refusals() -> MaxRefusals {
    MaxRefusals(256)
}

fn default_chunk_size() -> ChunkSize {
    ChunkSize(32.0)
}
fn default_radius() -> Radius {
    Radius(2)
}
fn default_budget() -> BudgetMs {
    BudgetMs(4.0)
}

impl Default for StreamingConfig {
    fn default() -> Self {
        StreamingConfig {
            chunk_size: default_chunk_size(),
            radius: default_radius(),
            budget_ms: default_budget(),
            focus: FocusMode::Player,
            max_loaded: no_cap(),
            max_refusals_per_mod: default_max_refusals(),
        }
    }
}

/// What a scene layer or a mod may set: everything but `chunkSize`. An absent key overrides
/// nothing; `maxLoaded: null` means "no cap" and does override.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Overrides {
    /// Overrides the radius.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub radius: Option<Radius>,
    /// Overrides the load budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_ms: Option<BudgetMs>,
    /// Overrides the focus mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub focus: Option<FocusMode>,
    /// Overrides the resident cap (`null`: no cap).
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "MaxLoaded")]
    pub max_loaded: Option<MaxLoaded>,
    /// Overrides the per-mod refusal cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_refusals_per_mod: Option<MaxRefusals>,
}

/// A key that is present (even as `null`) is `Some`.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<MaxLoaded>, D::Error> {
    MaxLoaded::deserialize(d).map(Some)
}

impl Overrides {
    /// `self` where set, else `under`.
    pub fn over(self, under: Overrides) -> Overrides {
        Overrides {
            radius: self.radius.or(under.radius),
            budget_ms: self.budget_ms.or(under.budget_ms),
            focus: self.focus.or(under.focus),
            max_loaded: self.max_loaded.or(under.max_loaded),
            max_refusals_per_mod: self.max_refusals_per_mod.or(under.max_refusals_per_mod),
        }
    }

    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        *self == Overrides::default()
    }
}

/// The settings in force for one tick.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// Rings wanted.
    pub radius: u32,
    /// Loads per tick.
    pub loads_per_tick: usize,
    /// One focus or one per anchor.
    pub focus: FocusMode,
    /// The resident cap.
    pub max_loaded: Option<usize>,
    /// Unload refusals one mod may hold.
    pub max_refusals_per_mod: usize,
}

impl StreamingConfig {
    /// The settings in force: mod overrides over the scene layer over this config.
    pub fn settings(&self, layer: Overrides, mods: Overrides) -> Settings {
        let o = mods.over(layer);
        Settings {
            radius: o.radius.unwrap_or(self.radius).0,
            loads_per_tick: o.budget_ms.unwrap_or(self.budget_ms).loads_per_tick(),
            focus: o.focus.unwrap_or(self.focus),
            max_loaded: o
                .max_loaded
                .unwrap_or(self.max_loaded)
                .0
                .map(|n| n as usize),
            max_refusals_per_mod: o
                .max_refusals_per_mod
                .unwrap_or(self.max_refusals_per_mod)
                .0 as usize,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::from_value;
    use serde_json::json;

    #[test]
    fn defaults_are_32_metres_radius_2_and_4_loads() {
        let c: StreamingConfig = from_value(&json!({}), "").unwrap();
        assert_eq!(c, StreamingConfig::default());
        assert_eq!(
            c.settings(Overrides::default(), Overrides::default())
                .loads_per_tick,
            4
        );
    }

    #[test]
    fn a_bad_radius_names_its_path_and_range() {
        let err =
            from_value::<StreamingConfig>(&json!({"radius": -1}), "kits[2].config").unwrap_err();
        assert_eq!(
            err.to_string(),
            "kits[2].config.radius: expected an integer 0..=64, got -1"
        );
        let err = from_value::<StreamingConfig>(&json!({"radius": 1.5}), "c").unwrap_err();
        assert_eq!(
            err.to_string(),
            "c.radius: expected an integer 0..=64, got 1.5"
        );
    }

    #[test]
    fn chunk_size_and_budget_are_checked() {
        for (v, key) in [
            (json!({"chunkSize": 0}), "chunkSize"),
            (json!({"chunkSize": "32"}), "chunkSize"),
            (json!({"budgetMs": -0.5}), "budgetMs"),
        ] {
            let err = from_value::<StreamingConfig>(&v, "c").unwrap_err();
            assert_eq!(err.path, format!("c.{key}"), "{err}");
        }
        let err = from_value::<StreamingConfig>(&json!({"radious": 1}), "c").unwrap_err();
        assert!(err.message.contains("unknown field `radious`"), "{err}");
    }

    #[test]
    fn budget_becomes_at_least_one_load() {
        assert_eq!(BudgetMs(0.0).loads_per_tick(), 1);
        assert_eq!(BudgetMs(2.9).loads_per_tick(), 2);
        assert_eq!(BudgetMs(1e300).loads_per_tick(), usize::MAX);
    }

    #[test]
    fn mods_win_over_layers_which_win_over_the_config() {
        let c = StreamingConfig::default();
        let layer = Overrides {
            radius: Some(Radius(3)),
            budget_ms: Some(BudgetMs(8.0)),
            ..Overrides::default()
        };
        let mods = Overrides {
            radius: Some(Radius(5)),
            ..Overrides::default()
        };
        let s = c.settings(layer, mods);
        assert_eq!((s.radius, s.loads_per_tick), (5, 8));
        assert_eq!(
            c.settings(Overrides::default(), Overrides::default())
                .radius,
            2
        );
    }
}

#[cfg(test)]
mod round_two {
    use super::*;
    use crate::json::from_value;
    use serde_json::json;

    #[test]
    fn the_new_keys_default_to_one_focus_no_cap_and_256_refusals() {
        let s = StreamingConfig::default().settings(Overrides::default(), Overrides::default());
        assert_eq!(
            (s.focus, s.max_loaded, s.max_refusals_per_mod),
            (FocusMode::Player, None, 256)
        );
    }

    #[test]
    fn a_null_cap_overrides_and_an_absent_one_does_not() {
        let c: StreamingConfig = from_value(&json!({"maxLoaded": 50}), "c").unwrap();
        let layer: Overrides = from_value(&json!({"maxLoaded": 20}), "l").unwrap();
        let null: Overrides = from_value(&json!({"maxLoaded": null}), "m").unwrap();
        let absent: Overrides = from_value(&json!({"radius": 1}), "m").unwrap();
        assert_eq!(
            c.settings(Overrides::default(), absent).max_loaded,
            Some(50)
        );
        assert_eq!(c.settings(layer, absent).max_loaded, Some(20));
        assert_eq!(c.settings(layer, null).max_loaded, None);
        assert_eq!(
            serde_json::to_value(null).unwrap(),
            json!({"maxLoaded": null})
        );
    }

    #[test]
    fn the_new_keys_are_checked_with_their_paths() {
        for (v, key, expected) in [
            (
                json!({"focus": "everyone"}),
                "focus",
                "expected \"player\" or \"players\", got \"everyone\"",
            ),
            (
                json!({"maxLoaded": 0}),
                "maxLoaded",
                "expected null or an integer 1..=1000000, got 0",
            ),
            (
                json!({"maxLoaded": 1000001}),
                "maxLoaded",
                "expected null or an integer 1..=1000000, got 1000001",
            ),
            (
                json!({"maxRefusalsPerMod": -1}),
                "maxRefusalsPerMod",
                "expected an integer 0..=65536, got -1",
            ),
            (
                json!({"maxRefusalsPerMod": 65537}),
                "maxRefusalsPerMod",
                "expected an integer 0..=65536, got 65537",
            ),
        ] {
            let err = from_value::<StreamingConfig>(&v, "kits[2].config").unwrap_err();
            assert_eq!(err.path, format!("kits[2].config.{key}"), "{err}");
            assert!(err.message.contains(expected), "{err}");
            let err = from_value::<Overrides>(&v, "layer").unwrap_err();
            assert_eq!(err.path, format!("layer.{key}"), "{err}");
        }
    }
}
