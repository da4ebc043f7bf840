//! `world.nav`'s settings (docs/reference/nav.md#nav-settings): `maxStep`, `blocked`, `diagonal`,
//! `maxNodes`, each range declared once (its check, message and schema bounds come from the one
//! `checked_number!`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{checked_number, config_settings};

/// Most nodes one query (and one tick's agents in all, and one tick's `path` inputs in all)
/// may expand: about 80 ms of search at the worst measured cost per node (docs/nav.md#limits).
pub const MAX_NODES: u32 = 262_144;
/// The default per-query node budget.
pub const DEFAULT_MAX_NODES: u32 = 65_536;
pub use super::search::DEFAULT_MAX_STEP;

checked_number!(
    /// Height units a walker may climb (or descend) between 4-neighbouring cells: an integer
    /// 0..=65535.
    MaxStep(u16),
    integer 0..=65535,
    "height units a walker may climb between 4-neighbouring cells"
);

checked_number!(
    /// A terrain material: an integer 0..=255.
    Material(u8),
    integer 0..=255,
    "a terrain material"
);

checked_number!(
    /// Nodes one query may expand: an integer 1..=[`MAX_NODES`].
    MaxNodes(u32),
    integer 1..=MAX_NODES,
    "nodes one query may expand (and one tick's agents in all, and one tick's path inputs in all)"
);

config_settings! {
    /// `{ "maxStep": 256, "blocked": [1], "diagonal": false, "maxNodes": 65536 }`, every key
    /// optional.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
    pub struct NavConfig {
        /// Height units a walker may climb between 4-neighbouring cells (default 256).
        max_step "maxStep": MaxStep = MaxStep(DEFAULT_MAX_STEP),
        /// Materials no walker may enter (default none).
        blocked "blocked": Vec<Material> = Vec::new(),
        /// Whether walkers also step diagonally, at cost √2 (default false).
        diagonal "diagonal": bool = false,
        /// Nodes one query may expand, and one tick's agents in all, and one tick's `path` inputs
        /// in all (default 65536).
        max_nodes "maxNodes": MaxNodes = MaxNodes(DEFAULT_MAX_NODES),
    }
}

impl NavConfig {
    /// The walking rules these settings make.
    pub fn rules(&self) -> super::search::Rules {
        let mut blocked = [false; 256];
        for m in &self.blocked {
            blocked[usize::from(m.get())] = true;
        }
        super::search::Rules {
            max_step: self.max_step.get(),
            blocked,
            diagonal: self.diagonal,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::from_value;
    use serde_json::json;

    #[test]
    fn every_setting_is_checked_with_its_path() {
        for (v, path, expected) in [
            (
                json!({"maxStep": 65536}),
                "kits[3].config.maxStep",
                "0..=65535",
            ),
            (
                json!({"maxStep": -1}),
                "kits[3].config.maxStep",
                "0..=65535",
            ),
            (
                json!({"maxNodes": 0}),
                "kits[3].config.maxNodes",
                "1..=262144",
            ),
            (
                json!({"maxNodes": 262145}),
                "kits[3].config.maxNodes",
                "1..=262144",
            ),
            (
                json!({"blocked": [1, 256]}),
                "kits[3].config.blocked[1]",
                "0..=255",
            ),
            (json!({"blocked": 1}), "kits[3].config.blocked", "an array"),
            (json!({"diagonal": 1}), "kits[3].config.diagonal", "boolean"),
        ] {
            let err = from_value::<NavConfig>(&v, "kits[3].config").unwrap_err();
            assert_eq!(err.path, path, "{err}");
            assert!(err.message.contains(expected), "{err}");
        }
        let err = from_value::<NavConfig>(&json!({"maxSteps": 1}), "c").unwrap_err();
        assert!(err.message.contains("unknown field `maxSteps`"), "{err}");
    }

    #[test]
    fn the_defaults_are_the_specs() {
        let c = from_value::<NavConfig>(&json!({}), "c").unwrap();
        assert_eq!(c, NavConfig::default());
        assert_eq!(c.max_step.get(), 256);
        assert_eq!(c.max_nodes.get(), 65_536);
        assert!(!c.diagonal && c.blocked.is_empty());
        let c = from_value::<NavConfig>(
            &json!({"maxStep": 0, "blocked": [0, 255], "diagonal": true, "maxNodes": 262144}),
            "c",
        )
        .unwrap();
        let rules = c.rules();
        assert!(rules.blocked[0] && rules.blocked[255] && !rules.blocked[1]);
        assert!(rules.diagonal && rules.max_step == 0);
    }
}
