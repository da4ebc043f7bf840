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

/// The final state of a run. Written by hand ([`Serialize`] below) so that a vertical game's
/// chunk lists carry every section's `y`, row 0 too
/// (docs/reference/files-and-cli.md#the-state-document).
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
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
    /// Whether the game has vertical sections on (docs/reference/streaming.md#shapes-and-sections):
    /// then `loaded` and `pending` write every section with its `y`, row 0 too. Not a key of the
    /// document (a document read back is flat until set).
    #[serde(skip)]
    #[schemars(skip)]
    pub sections: bool,
}

impl Serialize for StateDoc {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let optional = [
            self.predicted.is_some(),
            self.lod.is_some(),
            self.district.is_some(),
        ];
        let len = 10 + optional.iter().filter(|o| **o).count();
        let mut st = serializer.serialize_struct("StateDoc", len)?;
        st.serialize_field("tick", &self.tick)?;
        st.serialize_field("scene", &self.scene)?;
        st.serialize_field("focus", &self.focus)?;
        st.serialize_field("loaded", &Sections(&self.loaded, self.sections))?;
        st.serialize_field("pending", &Sections(&self.pending, self.sections))?;
        st.serialize_field("refusals", &self.refusals)?;
        st.serialize_field("variables", &self.variables)?;
        st.serialize_field("dormant", &self.dormant)?;
        st.serialize_field("foci", &self.foci)?;
        st.serialize_field("tickets", &self.tickets)?;
        if let Some(p) = &self.predicted {
            st.serialize_field("predicted", p)?;
        }
        if let Some(l) = &self.lod {
            st.serialize_field("lod", l)?;
        }
        if let Some(d) = &self.district {
            st.serialize_field("district", d)?;
        }
        st.end()
    }
}

/// A chunk list: `{x, z}` each (a flat game), or `{x, y, z}` each with `y` always written.
struct Sections<'a>(&'a [ChunkPos], bool);

impl Serialize for Sections<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeSeq, SerializeStruct};
        if !self.1 {
            return self.0.serialize(serializer);
        }
        struct Xyz(ChunkPos);
        impl Serialize for Xyz {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut st = s.serialize_struct("ChunkPos", 3)?;
                st.serialize_field("x", &self.0.x)?;
                st.serialize_field("y", &self.0.y)?;
                st.serialize_field("z", &self.0.z)?;
                st.end()
            }
        }
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        for c in self.0 {
            seq.serialize_element(&Xyz(*c))?;
        }
        seq.end()
    }
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
