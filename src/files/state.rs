//! The state document (docs/reference/files-and-cli.md#the-state-document): what the game looks
//! like after the last tick, keys and orders exactly as specified.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::grid::ChunkPos;
use crate::kits::streaming::{Refusal, TicketInfo};

/// The focus as the state shows it: `{x, z}`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FocusXZ {
    /// East-west, metres.
    #[serde(serialize_with = "crate::json::serialize_number")]
    pub x: f64,
    /// North-south, metres.
    #[serde(serialize_with = "crate::json::serialize_number")]
    pub z: f64,
}

/// The final state of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StateDoc {
    /// The last tick that ran.
    pub tick: u64,
    /// The active scene, `null` outside a scene.
    pub scene: Option<String>,
    /// The first focus in force, `null` when there is none.
    pub focus: Option<FocusXZ>,

    /// Loaded chunks, row order.
    pub loaded: Vec<ChunkPos>,
    /// Pending chunks, nearest-first.
    pub pending: Vec<ChunkPos>,
    /// Held refusals, by `z`, `x`, hook.
    pub refusals: Vec<Refusal>,
    /// Engine variables.
    pub variables: IndexMap<String, Value>,
    /// Ids of entities tagged `dormant`, sorted.
    pub dormant: Vec<String>,
    /// The foci in force (docs/reference/streaming.md#the-foci-in-force): anchors (or the one
    /// focus) in order, then tickets in id order. After the keys
    /// (docs/reference/files-and-cli.md#the-state-document), so that a round-1 reader sees its keys
    /// in their order.
    pub foci: Vec<FocusXZ>,
    /// Held tickets, in id order.
    pub tickets: Vec<TicketInfo>,
    /// The predicted foci in force (docs/reference/config.md#outputs-that-appear-only-when-used),
    /// anchor order; only when the scene uses scheduling
    /// (docs/reference/config.md#outputs-that-appear-only-when-used).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted: Option<Vec<FocusXZ>>,
    /// The loaded LOD blocks per level (docs/reference/lod.md#lod-service-state-and-saves), level 1
    /// first, each in row order; only when the scene uses `lod`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lod: Option<Vec<Vec<ChunkPos>>>,
    /// The `world.district` counts
    /// (docs/reference/district.md#district-state-variables-and-events); absent when the kit is not
    /// enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub district: Option<DistrictCounts>,
}

/// `"district": {"live": N, "stored": M}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DistrictCounts {
    /// Live streamed entities.
    pub live: u64,
    /// Stored entities.
    pub stored: u64,
}
