//! `world.ground`: the ground the world stands on, with optional half-open bounds in metres.
//! It provides the `world.ground` service, which `world.streaming` asks for the bounds.

use std::rc::Rc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::grid::Bounds;
use crate::host::{Install, Kit, KitManifest, KitSpec, Problem};
use crate::json::from_value;

/// The kit and service id.
pub const GROUND: &str = "world.ground";

/// The kit's manifest, read from `kit.json` beside this file.
pub fn manifest() -> KitManifest {
    serde_json::from_str(include_str!("kit.json")).expect("kit.json is a valid manifest")
}

/// The kit's entry of the catalog: its manifest, factory and config schema.
pub fn entry() -> crate::host::CatalogEntry {
    crate::host::CatalogEntry::new(manifest(), Box::new(GroundKit::from_spec))
        .config_schema("ground-config.schema.json", || {
            schemars::schema_for!(GroundConfig)
        })
}

/// `world.ground` config.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GroundConfig {
    /// The extent of the ground; absent means unbounded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bounds: Option<Bounds>,
}

impl GroundConfig {
    /// Parses and checks a config object; problems are located under `path`.
    pub fn parse(value: Option<&serde_json::Value>, path: &str) -> Result<Self, Problem> {
        let Some(value) = value else {
            return Ok(Self::default());
        };
        let config: GroundConfig = from_value(value, path)?;
        if let Some(b) = &config.bounds {
            b.check()
                .map_err(|(key, msg)| Problem::new(format!("{path}.bounds.{key}"), msg))?;
        }
        Ok(config)
    }
}

/// What other kits may ask of the ground.
pub trait GroundService {
    /// The bounds, if the ground has any.
    fn bounds(&self) -> Option<Bounds>;
}

struct Ground(Option<Bounds>);

impl GroundService for Ground {
    fn bounds(&self) -> Option<Bounds> {
        self.0
    }
}

/// The `world.ground` kit.
pub struct GroundKit {
    config: GroundConfig,
}

impl GroundKit {
    /// A ground with `config`.
    pub fn new(config: GroundConfig) -> Self {
        GroundKit { config }
    }

    /// The catalog factory.
    pub fn from_spec(spec: &KitSpec<'_>) -> Result<Box<dyn Kit>, Vec<Problem>> {
        let mut problems: Vec<Problem> = spec
            .scenes
            .iter()
            .enumerate()
            .filter(|(_, s)| s.layers.contains_key(GROUND))
            .map(|(i, _)| {
                Problem::new(
                    KitSpec::layer_path(i, GROUND),
                    "world.ground takes no layer settings",
                )
            })
            .collect();
        let config = GroundConfig::parse(spec.config, &spec.config_path).unwrap_or_else(|p| {
            problems.push(p);
            GroundConfig::default()
        });
        if !problems.is_empty() {
            return Err(problems);
        }
        Ok(Box::new(GroundKit::new(config)))
    }
}

impl Kit for GroundKit {
    fn id(&self) -> &str {
        GROUND
    }

    fn install(&mut self, host: &mut Install<'_>) {
        host.services
            .provide::<dyn GroundService>(GROUND, Rc::new(Ground(self.config.bounds)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_kit_answers_to_the_id_of_its_manifest() {
        // The engine keys save sections and their checks by `Kit::id`.
        let kit = GroundKit::new(GroundConfig::default());
        assert_eq!(kit.id(), manifest().id);
        assert_eq!(kit.id(), "world.ground");
    }

    #[test]
    fn empty_bounds_are_refused_with_their_path() {
        let v = json!({ "bounds": { "minX": 0, "minZ": 0, "maxX": 0, "maxZ": 10 } });
        let err = GroundConfig::parse(Some(&v), "kits[1].config").unwrap_err();
        assert_eq!(err.path, "kits[1].config.bounds.maxX");
        assert!(err.message.contains("expected maxX > minX"), "{err}");
    }

    #[test]
    fn unknown_keys_are_refused() {
        let v = json!({ "bounds": { "minX": 0, "minZ": 0, "maxX": 1, "maxZ": 1, "maxY": 3 } });
        let err = GroundConfig::parse(Some(&v), "kits[1].config").unwrap_err();
        assert_eq!(err.path, "kits[1].config.bounds.maxY");
        assert!(err.message.contains("unknown field `maxY`"), "{err}");
    }
}
