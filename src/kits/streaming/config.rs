//! `world.streaming` settings: the kit config (SPEC §2), the per-scene layer, mod overrides, and the
//! precedence between them (mod > scene layer > kit config).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::checked_number;
use crate::json::as_integer;

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
    /// How many rings of chunks around the focus chunk are wanted: an integer 0..=64.
    Radius(u32),
    "an integer 0..=64",
    |v| as_integer(v).filter(|r| (0..=i64::from(MAX_RADIUS)).contains(r)).map(|r| r as u32),
    { "type": "integer", "minimum": 0, "maximum": 64, "description": "rings of chunks around the focus chunk" }
);

checked_number!(
    /// The load budget: `max(1, floor(budgetMs))` loads per tick, one chunk priced 1 ms. Finite, >= 0.
    BudgetMs(f64),
    "a finite number >= 0",
    |v| v.as_f64().filter(|f| f.is_finite() && *f >= 0.0),
    { "type": "number", "minimum": 0, "description": "loads per tick = max(1, floor(budgetMs)); never wall-clock" }
);

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
        }
    }
}

/// What a scene layer or a mod may set: `radius` and `budgetMs` only.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Overrides {
    /// Overrides the radius.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub radius: Option<Radius>,
    /// Overrides the load budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_ms: Option<BudgetMs>,
}

impl Overrides {
    /// `self` where set, else `under`.
    pub fn over(self, under: Overrides) -> Overrides {
        Overrides {
            radius: self.radius.or(under.radius),
            budget_ms: self.budget_ms.or(under.budget_ms),
        }
    }
}

/// The settings in force for one tick.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// Rings wanted.
    pub radius: u32,
    /// Loads per tick.
    pub loads_per_tick: usize,
}

impl StreamingConfig {
    /// The settings in force: mod overrides over the scene layer over this config.
    pub fn settings(&self, layer: Overrides, mods: Overrides) -> Settings {
        let o = mods.over(layer);
        Settings {
            radius: o.radius.unwrap_or(self.radius).0,
            loads_per_tick: o.budget_ms.unwrap_or(self.budget_ms).loads_per_tick(),
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
        };
        let mods = Overrides {
            radius: Some(Radius(5)),
            budget_ms: None,
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
