//! `world.streaming` settings: the kit config (docs/reference/config.md#streaming-settings), the
//! per-scene layer, mod overrides, and the precedence between them (mod > scene layer > kit
//! config).

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
    /// The resident cap: `null` (no cap) or an integer 1..=[`MAX_LOADED`]
    /// (docs/reference/streaming.md#the-resident-cap).
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

checked_number!(
    /// The most chunks the held tickets may want together (docs/many-foci.md#the-ticket-cap):
    /// an integer 1..=[`MAX_TICKET_CHUNKS`].
    MaxTicketChunks(u32),
    integer 1..=MAX_TICKET_CHUNKS,
    "most chunks the held tickets may want together, each its whole square (2r+1)²; a request past it is refused"
);

checked_number!(
    /// How many ticks ahead each moving anchor is predicted
    /// (docs/reference/streaming.md#look-ahead): an integer 0..=[`MAX_LOOK_AHEAD`]; 0 predicts
    /// nothing.
    LookAheadTicks(u32),
    integer 0..=MAX_LOOK_AHEAD,
    "ticks ahead a moving anchor's focus is predicted (0: none)"
);

checked_number!(
    /// The ring around each player's focus chunk whose chunks count as holes when not ready
    /// (docs/reference/streaming.md#holes): an integer 0..=[`MAX_HOLE_RING`].
    HoleRing(u32),
    integer 0..=MAX_HOLE_RING,
    "ring around each player's focus chunk counted for world.chunks.holes"
);

checked_number!(
    /// A ticket's priority (docs/reference/streaming.md#priorities): an integer 0..=255; higher
    /// loads first.
    Priority(u32),
    integer 0..=255,
    "higher-priority chunks load before lower ones (default 0)"
);

checked_number!(
    /// LOD block loads per tick (docs/reference/lod.md#block-order-and-budget): an integer
    /// 0..=[`MAX_LOD_BUDGET`], separate from the chunk budget.
    LodBudget(u32),
    integer 0..=MAX_LOD_BUDGET,
    "LOD block loads per tick, separate from the chunk budget"
);

checked_number!(
    /// How many rings of neighbours a chunk needs loaded and built to be complete
    /// (docs/reference/streaming.md#complete-chunks): an integer 0..=[`MAX_NEIGHBOURS`]; with
    /// `k > 0` chunks are wanted within `radius + k` of a focus.
    Neighbours(u32),
    integer 0..=MAX_NEIGHBOURS,
    "rings of neighbours a chunk needs loaded and built to be complete; chunks are wanted within radius + neighbours (0: none, nothing is emitted)"
);

/// Largest accepted `neighbours`.
pub const MAX_NEIGHBOURS: u32 = 2;

/// The smallest LOD step (the side of a block in chunks).
pub const MIN_LOD_STEP: u32 = 2;
/// The largest LOD step.
pub const MAX_LOD_STEP: u32 = 64;

/// Whether `step` is a LOD step: a power of two [`MIN_LOD_STEP`]..=[`MAX_LOD_STEP`] (the
/// settings' rule, which saved blocks are checked by too).
pub fn is_lod_step(step: u32) -> bool {
    (MIN_LOD_STEP..=MAX_LOD_STEP).contains(&step) && step.is_power_of_two()
}

checked_number!(
    /// The side of a LOD block in chunks: a power of two 2..=64 ([`is_lod_step`]).
    LodStep(u32),
    "a power of two 2..=64",
    |v| crate::json::as_integer(v)
        .filter(|n| u32::try_from(*n).is_ok_and(is_lod_step))
        .map(|n| n as u32),
    { "type": "integer", "enum": [2, 4, 8, 16, 32, 64], "description": "side of a block in chunks" }
);

checked_number!(
    /// How far (in chunks, ring distance) a LOD level reaches: an integer 1..=[`MAX_LOD_RADIUS`].
    LodRadius(u32),
    integer 1..=MAX_LOD_RADIUS,
    "ring distance in chunks a level reaches; above the radius and the finer level's"
);

/// Largest accepted `lodBudget`.
pub const MAX_LOD_BUDGET: u32 = 4096;
/// Largest accepted LOD level radius (in chunks): 32 km at the default chunk size. No step of a
/// tick grows with a level's area (docs/lod.md, "What a tick costs"); what grows is what is
/// loaded, which `lodBudget` bounds per tick.
pub const MAX_LOD_RADIUS: u32 = 1024;
/// Most LOD levels.
pub const MAX_LOD_LEVELS: usize = 4;

/// One LOD level as a file writes it: `{ "step": s, "radius": r }`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LodLevelDef {
    /// Side of a block in chunks.
    pub step: LodStep,
    /// Ring distance (chunks) the level reaches.
    pub radius: LodRadius,
}

/// A LOD level: blocks of `step × step` chunks wanted within `radius` chunks (ring distance).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LodLevel {
    /// Side of a block in chunks (a power of two 2..=64).
    pub step: u32,
    /// Ring distance in chunks.
    pub radius: u32,
}

/// The `lod` list (docs/reference/lod.md#lod-levels): at most [`MAX_LOD_LEVELS`] levels, steps
/// powers of two strictly ascending, radii strictly ascending (above the effective radius: checked
/// where the radius is known, see [`Lod::check_against`]). A fixed array, so the settings stay
/// `Copy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Lod {
    len: u8,
    levels: [LodLevel; MAX_LOD_LEVELS],
}

impl Lod {
    /// No level (the default).
    pub const EMPTY: Lod = Lod {
        len: 0,
        levels: [LodLevel { step: 0, radius: 0 }; MAX_LOD_LEVELS],
    };

    /// Checks a `lod` list given as JSON, or says what was expected (`[1].step: expected …`).
    pub fn parse(v: &serde_json::Value) -> Result<Lod, String> {
        crate::json::from_value(v, "").map_err(|p| p.to_string())
    }

    /// The levels, finest first (level 1 is index 0).
    pub fn levels(&self) -> &[LodLevel] {
        &self.levels[..usize::from(self.len)]
    }

    /// Whether no level is set.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Checks a list of levels: at most four, steps and radii strictly ascending.
    pub fn new(defs: &[LodLevelDef]) -> Result<Lod, String> {
        if defs.len() > MAX_LOD_LEVELS {
            return Err(format!(
                "expected at most {MAX_LOD_LEVELS} levels, got {}",
                defs.len()
            ));
        }
        let mut lod = Lod::default();
        for (i, d) in defs.iter().enumerate() {
            let level = LodLevel {
                step: d.step.get(),
                radius: d.radius.get(),
            };
            if let Some(prev) = i.checked_sub(1).map(|p| lod.levels[p]) {
                if level.step <= prev.step {
                    return Err(format!(
                        "expected steps ascending: [{i}].step {} is not above [{}].step {}",
                        level.step,
                        i - 1,
                        prev.step
                    ));
                }
                if level.radius <= prev.radius {
                    return Err(format!(
                        "expected radii strictly ascending: [{i}].radius {} is not above [{}].radius {}",
                        level.radius,
                        i - 1,
                        prev.radius
                    ));
                }
            }
            lod.levels[i] = level;
            lod.len += 1;
        }
        Ok(lod)
    }

    /// Checks that every level reaches farther than `radius` (the effective radius): the
    /// message names the first level that does not.
    pub fn check_against(&self, radius: u32) -> Result<(), (String, String)> {
        match self.levels().iter().position(|l| l.radius <= radius) {
            None => Ok(()),
            Some(i) => Err((
                format!("[{i}].radius"),
                format!(
                    "expected a radius greater than the radius {radius}, got {}",
                    self.levels[i].radius
                ),
            )),
        }
    }

    /// The levels that reach farther than `radius`: what is in force when a mod raised the
    /// radius past a level (the level is left out, documented).
    pub fn above(&self, radius: u32) -> Lod {
        let mut lod = Lod::default();
        for l in self.levels().iter().filter(|l| l.radius > radius) {
            lod.levels[usize::from(lod.len)] = *l;
            lod.len += 1;
        }
        lod
    }

    fn defs(&self) -> Vec<serde_json::Value> {
        self.levels()
            .iter()
            .map(|l| serde_json::json!({ "step": l.step, "radius": l.radius }))
            .collect()
    }
}

impl Serialize for Lod {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.defs().serialize(s)
    }
}

impl<'de> Deserialize<'de> for Lod {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let defs = Vec::<LodLevelDef>::deserialize(d)?;
        Lod::new(&defs).map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for Lod {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Lod".into()
    }
    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let item = g.subschema_for::<LodLevelDef>();
        schemars::json_schema!({
            "type": "array",
            "items": item,
            "maxItems": MAX_LOD_LEVELS,
            "description": "levels of detail beyond the radius (docs/reference/lod.md#lod-levels): steps powers of two ascending, radii strictly ascending and above the radius"
        })
    }
}

/// The shape of the wanted area around a focus chunk (docs/reference/config.md#shape).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub enum Shape {
    /// Ring distance: `max(|dx|, |dz|) <= r` wanted, released beyond `r + 1` (the default).
    #[default]
    #[serde(rename = "square")]
    Square,
    /// The disc `dx² + dz² <= r²` wanted, released when `dx² + dz² > (r + 1)²`.
    #[serde(rename = "disc")]
    Disc,
}

impl Shape {
    /// Parses `"square"` or `"disc"`.
    pub fn parse(v: &serde_json::Value) -> Result<Self, String> {
        match v.as_str() {
            Some("square") => Ok(Shape::Square),
            Some("disc") => Ok(Shape::Disc),
            _ => Err(format!(
                "expected \"square\" or \"disc\", got {}",
                crate::json::describe(v)
            )),
        }
    }

    /// Whether the column at offset `(dx, dz)` (chunk minus focus chunk) is within `r`: the
    /// square `max(|dx|, |dz|) <= r`, or the disc `dx² + dz² <= r²` (exact in 128 bits: no
    /// overflow).
    pub fn within(self, dx: i64, dz: i64, r: u32) -> bool {
        self.inside(dx, dz, u64::from(r))
    }

    /// Whether a loaded column at offset `(dx, dz)` is kept by a focus of radius `r`: within
    /// `r + 1` (the release rule).
    pub fn kept(self, dx: i64, dz: i64, r: u32) -> bool {
        self.inside(dx, dz, u64::from(r) + 1)
    }

    fn inside(self, dx: i64, dz: i64, r: u64) -> bool {
        match self {
            Shape::Square => dx.unsigned_abs().max(dz.unsigned_abs()) <= r,
            Shape::Disc => {
                // |dx|, |dz| <= 2^63: each square <= 2^126, the sum fits in u128.
                let (dx, dz, r) = (
                    u128::from(dx.unsigned_abs()),
                    u128::from(dz.unsigned_abs()),
                    u128::from(r),
                );
                dx * dx + dz * dz <= r * r
            }
        }
    }
}

impl<'de> Deserialize<'de> for Shape {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        Shape::parse(&v).map_err(serde::de::Error::custom)
    }
}

/// Largest accepted `vertical.radius`.
pub const MAX_VERTICAL_RADIUS: u32 = 32;

checked_number!(
    /// Rows of sections wanted above and below the focus's row: an integer
    /// 0..=[`MAX_VERTICAL_RADIUS`] (docs/reference/config.md#vertical).
    VerticalRadius(u32),
    integer 0..=MAX_VERTICAL_RADIUS,
    "rows of sections wanted above and below the focus's section row"
);

checked_number!(
    /// The height of a section in metres: finite, > 0 (docs/reference/config.md#vertical).
    SectionHeight(f64),
    "a finite number > 0",
    |v| v.as_f64().filter(|f| f.is_finite() && *f > 0.0),
    { "type": "number", "exclusiveMinimum": 0, "description": "height of a section in metres (default: chunkSize)" }
);

/// The `vertical` key as a file writes it: `{ "radius": rv, "height": h }`, `height` optional
/// (docs/reference/config.md#vertical). A mod may set `radius` only.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VerticalDef {
    /// Rows wanted above and below the focus's section row.
    pub radius: VerticalRadius,
    /// Height of a section in metres (default: `chunkSize`).
    #[serde(
        default,
        deserialize_with = "not_null",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(transform = |s: &mut schemars::Schema| crate::json::optional_setting(s, None))]
    pub height: Option<SectionHeight>,
}

impl VerticalDef {
    /// Checks a `vertical` object given as JSON, or says what was expected (`radius: expected …`).
    pub fn parse(v: &serde_json::Value) -> Result<VerticalDef, String> {
        crate::json::from_value(v, "").map_err(|p| p.to_string())
    }

    /// The radius alone, as a mod sets it (`height` left to the scene).
    pub fn radius_only(radius: VerticalRadius) -> VerticalDef {
        VerticalDef {
            radius,
            height: None,
        }
    }
}

/// Vertical sections in force (docs/reference/config.md#vertical): chunks are sections
/// `(x, y, z)`, `radius` rows wanted above and below the focus's row, each `height` metres tall.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Vertical {
    /// Rows wanted above and below the focus's section row: 0..=32.
    pub radius: u32,
    /// Height of a section in metres: finite, > 0 (the scene's, else `chunkSize`).
    pub height: f64,
}

/// Largest accepted `lookAheadTicks`.
pub const MAX_LOOK_AHEAD: u32 = 600;
/// Largest accepted `holeRing`.
pub const MAX_HOLE_RING: u32 = 8;

/// Largest accepted `maxLoaded`.
pub const MAX_LOADED: u32 = 1_000_000;
/// Largest accepted `maxRefusalsPerMod`.
pub const MAX_REFUSALS_PER_MOD: u32 = 65_536;
/// Largest accepted `maxTicketChunks`.
pub const MAX_TICKET_CHUNKS: u32 = 1_000_000;
/// `maxTicketChunks` when the config leaves it out.
pub const DEFAULT_MAX_TICKET_CHUNKS: u32 = 65_536;

/// Whose positions the grid streams around (docs/reference/streaming.md#the-foci-in-force).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub enum FocusMode {
    /// One focus: the player's vehicle, else the player, else the last `player.moved`
    /// (docs/reference/tick.md#focus-resolution).
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

/// How the load budget is shared (docs/reference/streaming.md#priorities).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub enum Schedule {
    /// Pending chunks by priority, then the nearest-first key
    /// (docs/reference/streaming.md#the-nearest-first-key).
    #[default]
    #[serde(rename = "nearest")]
    Nearest,
    /// Round-robin over the foci of the top priority, each taking its own nearest chunk.
    #[serde(rename = "fair")]
    Fair,
}

impl Schedule {
    /// Parses `"nearest"` or `"fair"`.
    pub fn parse(v: &serde_json::Value) -> Result<Self, String> {
        match v.as_str() {
            Some("nearest") => Ok(Schedule::Nearest),
            Some("fair") => Ok(Schedule::Fair),
            _ => Err(format!(
                "expected \"nearest\" or \"fair\", got {}",
                crate::json::describe(v)
            )),
        }
    }
}

impl<'de> Deserialize<'de> for Schedule {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        Schedule::parse(&v).map_err(serde::de::Error::custom)
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

/// How a Lua setter of the `streaming` table reads its one argument (`lua.rs` reads it with the
/// bridge of [`crate::script`], then checks it with the setting's own parser, so a bad value
/// reads as it would in a scene file).
#[cfg(feature = "lua")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LuaArg {
    /// A number (or a string), checked by the parser: `setRadius(3)`.
    Checked,
    /// A word: `setFocus("players")`.
    Word,
    /// `nil` is the setting's `null`, else a number: `setMaxLoaded(nil)`.
    NilOrChecked,
    /// Read by a function of its own in `lua.rs` (`setLod` takes a list of tables).
    ByHand,
}

/// One Lua setter of the `streaming` table, as its setting declares it.
#[cfg(feature = "lua")]
pub(crate) struct LuaSetter {
    /// The Lua name (`setRadius`).
    pub name: &'static str,
    /// The key it sets (`radius`): the tests hold the setters to [`Overrides::KEYS`].
    #[cfg_attr(not(test), allow(dead_code))]
    pub key: &'static str,
    /// How its argument is read.
    pub arg: LuaArg,
    /// The argument (as JSON) checked by the setting's parser: overrides setting that key
    /// alone.
    pub parse: fn(&serde_json::Value) -> Result<Overrides, String>,
}

/// Declares the streaming settings, each once: its field, JSON key, type (whose own
/// `checked_number!` or parser holds its range, message and schema), default and doc. A setting
/// a layer or mod may set (`=> { … }`) also declares its override's doc, its Lua setter and
/// its value in [`Settings`]. From that one declaration come the [`StreamingConfig`] field
/// (and its default, in [`Default`], when reading and in the schema), the [`Overrides`] field,
/// [`Overrides::over`], the [`Settings`] field and its resolution (mod over layer over config
/// over default), [`LUA_SETTERS`] and the key lists `tests/manifests.rs` checks each
/// `kit.json` against.
///
/// `always` keys are held by every config (their default when left out); `optional` keys
/// (docs/reference/config.md#outputs-that-appear-only-when-used, docs/reference/lod.md#lod-levels,
/// the ticket cap) are `None` when left out, so that a scene that does not set them keeps its
/// earlier outputs (docs/reference/config.md#outputs-that-appear-only-when-used). Every `always`
/// key comes before every `optional` one, in the order of the files. A config reads a left-out key
/// from its [`Default`] (`#[serde(default)]` on the struct), and the schema's `default` of a key is
/// that value, or the declared one for an `optional` key ([`crate::json::optional_setting`]).
macro_rules! settings {
    // Inner rules. Where an item of a layered setting names nothing of its `=> { … }` block but
    // the field, the block's `$lua` is passed along (a repetition needs a variable of its depth)
    // and dropped here.
    (@or $over:expr, $under:expr, $lua:literal) => {
        $over.or($under)
    };
    (@key $key:literal, $lua:literal) => {
        $key
    };
    // The default a key's schema shows: none for `vertical` (left out, the world is flat).
    (@schema_default vertical, $default:expr) => {
        None
    };
    (@schema_default $field:ident, $default:expr) => {
        serde_json::to_value($default).ok()
    };
    (
        $(#[doc = $config_doc:literal])* config;
        $(#[doc = $overrides_doc:literal])* overrides;
        $(#[doc = $settings_doc:literal])* settings;
        always {$(
            $(#[doc = $doc:literal])*
            $field:ident $key:literal : $ty:ty = $default:expr
            $(=> {
                $(#[doc = $odoc:literal])+
                lua $lua:literal $arg:ident;
                $(#[doc = $sdoc:literal])+
                $sfield:ident : $sty:ty = $conv:expr
            })?;
        )*}
        optional {$(
            $(#[doc = $o_doc:literal])*
            $o_field:ident $o_key:literal : $o_ty:ty = $o_default:expr
            $(=> {
                $(#[doc = $o_odoc:literal])+
                lua $o_lua:literal $o_arg:ident;
                $(#[doc = $o_sdoc:literal])+
                $o_sfield:ident : $o_sty:ty = $o_conv:expr
            })?;
        )*}
    ) => {
        $(#[doc = $config_doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
        #[serde(default, deny_unknown_fields, rename_all = "camelCase")]
        pub struct StreamingConfig {
            $(
                $(#[doc = $doc])*
                #[serde(rename = $key)]
                pub $field: $ty,
            )*
            $(
                $(#[doc = $o_doc])*
                #[serde(
                    rename = $o_key,
                    deserialize_with = "not_null",
                    skip_serializing_if = "Option::is_none"
                )]
                #[schemars(transform = |s: &mut schemars::Schema| {
                    crate::json::optional_setting(s, settings!(@schema_default $o_field, $o_default))
                })]
                pub $o_field: Option<$o_ty>,
            )*
        }

        impl Default for StreamingConfig {
            fn default() -> Self {
                StreamingConfig {
                    $($field: $default,)*
                    $($o_field: None,)*
                }
            }
        }

        impl StreamingConfig {
            /// The config's keys, in the order of the file.
            pub const KEYS: &'static [&'static str] = &[$($key,)* $($o_key,)*];

            /// The settings in force, before the LOD levels are cut to the radius: each the
            /// overrides' `o` where set, else this config's, else its default.
            fn in_force(&self, o: Overrides) -> Settings {
                Settings {
                    $($(
                        $sfield: ($conv)(o.$field.unwrap_or(self.$field)),
                    )?)*
                    $($(
                        $o_sfield: ($o_conv)(o.$o_field.or(self.$o_field).unwrap_or($o_default)),
                    )?)*
                }
            }
        }

        $(#[doc = $overrides_doc])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
        #[serde(deny_unknown_fields, rename_all = "camelCase")]
        pub struct Overrides {
            $($(
                $(#[doc = $odoc])+
                #[serde(
                    rename = $key,
                    default,
                    deserialize_with = "not_null",
                    skip_serializing_if = "Option::is_none"
                )]
                #[schemars(transform = |s: &mut schemars::Schema| crate::json::optional_setting(s, None))]
                pub $field: Option<$ty>,
            )?)*
            $($(
                $(#[doc = $o_odoc])+
                #[serde(
                    rename = $o_key,
                    default,
                    deserialize_with = "not_null",
                    skip_serializing_if = "Option::is_none"
                )]
                #[schemars(transform = |s: &mut schemars::Schema| crate::json::optional_setting(s, None))]
                pub $o_field: Option<$o_ty>,
            )?)*
        }

        impl Overrides {
            /// The keys a scene layer or a mod may set, in the order of the file.
            pub const KEYS: &'static [&'static str] = &[
                $($(settings!(@key $key, $lua),)?)*
                $($(settings!(@key $o_key, $o_lua),)?)*
            ];

            /// `self` where set, else `under`.
            pub fn over(self, under: Overrides) -> Overrides {
                Overrides {
                    $($($field: settings!(@or self.$field, under.$field, $lua),)?)*
                    $($($o_field: settings!(@or self.$o_field, under.$o_field, $o_lua),)?)*
                }
            }
        }

        $(#[doc = $settings_doc])*
        #[derive(Debug, Clone, Copy, PartialEq)]
        pub struct Settings {
            $($(
                $(#[doc = $sdoc])+
                pub $sfield: $sty,
            )?)*
            $($(
                $(#[doc = $o_sdoc])+
                pub $o_sfield: $o_sty,
            )?)*
        }

        /// The Lua setters of the `streaming` table, one per setting a mod may set, in the
        /// order of the settings (`lua.rs` lists each in its table).
        #[cfg(feature = "lua")]
        pub(crate) const LUA_SETTERS: &[LuaSetter] = &[
            $($(LuaSetter {
                name: $lua,
                key: $key,
                arg: LuaArg::$arg,
                parse: |v| {
                    <$ty>::parse(v).map(|x| Overrides {
                        $field: Some(x),
                        ..Overrides::default()
                    })
                },
            },)?)*
            $($(LuaSetter {
                name: $o_lua,
                key: $o_key,
                arg: LuaArg::$o_arg,
                parse: |v| {
                    <$o_ty>::parse(v).map(|x| Overrides {
                        $o_field: Some(x),
                        ..Overrides::default()
                    })
                },
            },)?)*
        ];
    };
}

settings! {
    /// The kit config: `{ "chunkSize": 32, "radius": 2, "budgetMs": 4 }`, every key optional.
    config;
    /// What a scene layer or a mod may set: everything but `chunkSize`. An absent key overrides
    /// nothing; `maxLoaded: null` means "no cap" and does override.
    overrides;
    /// The settings in force for one tick.
    settings;

    always {
        /// Side of a chunk in metres (default 32).
        chunk_size "chunkSize": ChunkSize = ChunkSize(32.0);

        /// Rings of chunks wanted around the focus chunk (default 2).
        radius "radius": Radius = Radius(2) => {
            /// Overrides the radius.
            lua "setRadius" Checked;
            /// Rings wanted.
            radius: u32 = Radius::get
        };

        /// Loads per tick = `max(1, floor(budgetMs))` (default 4).
        budget_ms "budgetMs": BudgetMs = BudgetMs(4.0) => {
            /// Overrides the load budget.
            lua "setBudgetMs" Checked;
            /// Loads per tick.
            loads_per_tick: usize = BudgetMs::loads_per_tick
        };

        /// `"player"` (one focus, default) or `"players"` (one per anchor).
        focus "focus": FocusMode = FocusMode::Player => {
            /// Overrides the focus mode.
            lua "setFocus" Word;
            /// One focus or one per anchor.
            focus: FocusMode = std::convert::identity
        };

        /// The resident cap (default `null`: none).
        max_loaded "maxLoaded": MaxLoaded = MaxLoaded(None) => {
            /// Overrides the resident cap (`null`: no cap).
            lua "setMaxLoaded" NilOrChecked;
            /// The resident cap.
            max_loaded: Option<usize> = MaxLoaded::cap
        };

        /// Unload refusals one mod may hold (default 256).
        max_refusals_per_mod "maxRefusalsPerMod": MaxRefusals = MaxRefusals(256) => {
            /// Overrides the per-mod refusal cap.
            lua "setMaxRefusalsPerMod" Checked;
            /// Unload refusals one mod may hold.
            max_refusals_per_mod: usize = MaxRefusals::count
        };
    }

    optional {
        /// `"nearest"` (default) or `"fair"` (docs/reference/streaming.md#the-fair-schedule).
        /// Absent is not `"nearest"`: only a scene that sets a scheduling key
        /// (docs/reference/config.md#outputs-that-appear-only-when-used) shows the outputs
        /// (docs/reference/config.md#outputs-that-appear-only-when-used).
        schedule "schedule": Schedule = Schedule::Nearest => {
            /// Overrides the schedule.
            lua "setSchedule" Word;
            /// How the budget is shared.
            schedule: Schedule = std::convert::identity
        };

        /// Ticks ahead moving anchors are predicted (default 0: none).
        look_ahead_ticks "lookAheadTicks": LookAheadTicks = LookAheadTicks(0) => {
            /// Overrides the look-ahead.
            lua "setLookAheadTicks" Checked;
            /// Ticks ahead moving anchors are predicted.
            look_ahead_ticks: u32 = LookAheadTicks::get
        };

        /// Ring counted for holes (default 1).
        hole_ring "holeRing": HoleRing = HoleRing(1) => {
            /// Overrides the hole ring.
            lua "setHoleRing" Checked;
            /// Ring counted for holes.
            hole_ring: u32 = HoleRing::get
        };

        /// Levels of detail beyond the radius (docs/reference/lod.md#lod-levels; default none).
        lod "lod": Lod = Lod::EMPTY => {
            /// Replaces the LOD levels whole (`[]`: none).
            lua "setLod" ByHand;
            /// The LOD levels in force: those reaching farther than `radius`
            /// (docs/reference/lod.md#lod-levels).
            lod: Lod = std::convert::identity
        };

        /// LOD block loads per tick (default 4).
        lod_budget "lodBudget": LodBudget = LodBudget(4) => {
            /// Overrides the LOD budget.
            lua "setLodBudget" Checked;
            /// LOD block loads per tick.
            lod_budget: usize = LodBudget::loads
        };

        /// Rings of neighbours a chunk needs to be complete (default 0;
        /// docs/reference/streaming.md#complete-chunks).
        neighbours "neighbours": Neighbours = Neighbours(0) => {
            /// Overrides `neighbours`.
            lua "setNeighbours" Checked;
            /// Rings of neighbours a chunk needs to be complete (k).
            neighbours: u32 = Neighbours::get
        };

        /// `"square"` (default) or `"disc"` (docs/reference/config.md#shape).
        shape "shape": Shape = Shape::Square => {
            /// Overrides the shape.
            lua "setShape" Word;
            /// The shape of the wanted area around every focus.
            shape: Shape = std::convert::identity
        };

        /// Vertical sections `{ "radius": rv, "height": h }` (docs/reference/config.md#vertical;
        /// default none: a flat world). A layer's replaces the config's whole; a mod's sets the
        /// radius alone, and only while the scene has `vertical`.
        vertical "vertical": VerticalDef = VerticalDef::radius_only(VerticalRadius(0)) => {
            /// Overrides `vertical` (a layer: whole; a mod: its `radius` alone).
            lua "setVerticalRadius" ByHand;
            /// Vertical sections in force (`None`: flat). Resolved by
            /// [`StreamingConfig::settings`], which knows the chunk size and which level set it.
            vertical: Option<Vertical> = |_: VerticalDef| None
        };

        /// The most chunks the held tickets may want together (default 65 536). The kit config's
        /// alone: neither a scene layer nor a mod sets it.
        max_ticket_chunks "maxTicketChunks": MaxTicketChunks =
            MaxTicketChunks(DEFAULT_MAX_TICKET_CHUNKS);
    }
}

impl MaxLoaded {
    /// The cap as a count of chunks (`None`: no cap).
    pub fn cap(self) -> Option<usize> {
        self.0.map(|n| n as usize)
    }
}

impl MaxRefusals {
    /// The refusals one mod may hold, as a count.
    pub fn count(self) -> usize {
        self.0 as usize
    }
}

impl LodBudget {
    /// The LOD block loads per tick, as a count.
    pub fn loads(self) -> usize {
        self.0 as usize
    }
}

impl Overrides {
    /// Whether a key of docs/reference/config.md#outputs-that-appear-only-when-used (scheduling) is
    /// set.
    pub fn uses_scheduling(&self) -> bool {
        self.schedule.is_some() || self.look_ahead_ticks.is_some() || self.hole_ring.is_some()
    }

    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        *self == Overrides::default()
    }

    /// Whether `neighbours` is set above 0 (docs/reference/streaming.md#complete-chunks): only
    /// then do the complete-chunk outputs and save version 4 appear.
    pub fn uses_neighbours(&self) -> bool {
        self.neighbours.is_some_and(|k| k.get() > 0)
    }

    /// Whether `vertical` is set (a layer's turns sections on; a mod's sets only the radius).
    pub fn uses_vertical(&self) -> bool {
        self.vertical.is_some()
    }
}

/// Reads a settings key that may be left out but is never `null` (see [`crate::json::not_null`]).
pub(crate) use crate::json::not_null;

impl StreamingConfig {
    /// The settings in force: mod overrides over the scene layer over this config.
    pub fn settings(&self, layer: Overrides, mods: Overrides) -> Settings {
        let mut s = self.in_force(mods.over(layer));
        s.lod = s.lod.above(s.radius);
        s.vertical = self.vertical_in_force(layer, mods);
        s
    }

    /// `vertical` in force (docs/reference/config.md#vertical): the layer's, else the config's
    /// (`None`: flat), its `height` defaulting to `chunkSize`, its `radius` the mods' where they
    /// set one. A mod's radius in a flat scene does nothing: a mod cannot make a world vertical.
    pub fn vertical_in_force(&self, layer: Overrides, mods: Overrides) -> Option<Vertical> {
        let scene = layer.vertical.or(self.vertical)?;
        let radius = mods.vertical.map_or(scene.radius, |m| m.radius);
        Some(Vertical {
            radius: radius.get(),
            height: scene
                .height
                .map_or(self.chunk_size.get(), SectionHeight::get),
        })
    }

    /// Whether the config sets `vertical` (docs/reference/config.md#vertical).
    pub fn uses_vertical(&self) -> bool {
        self.vertical.is_some()
    }

    /// Whether the config, a layer or the mods may set LOD levels
    /// (docs/reference/lod.md#lod-levels): only then does the state show `lod` and the LOD
    /// variables.
    pub fn uses_lod(&self) -> bool {
        self.lod.is_some_and(|l| !l.is_empty())
    }

    /// Checks that the config's LOD levels reach farther than its radius, and a layer's (in
    /// force over this config) farther than the radius in force with it: `Err((key path below
    /// the config or layer, message))`.
    pub fn check_lod(&self, layer: Option<&Overrides>) -> Result<(), (String, String)> {
        let radius = layer.and_then(|l| l.radius).unwrap_or(self.radius).0;
        let lod = match layer {
            Some(l) => l.lod,
            None => self.lod,
        };
        match lod {
            Some(lod) => lod
                .check_against(radius)
                .map_err(|(path, message)| (format!("lod{path}"), message)),
            None => Ok(()),
        }
    }

    /// Whether the config sets a key of docs/reference/config.md#outputs-that-appear-only-when-used
    /// (scheduling).
    pub fn uses_scheduling(&self) -> bool {
        self.schedule.is_some() || self.look_ahead_ticks.is_some() || self.hole_ring.is_some()
    }

    /// Whether the config sets `neighbours` above 0
    /// (docs/reference/streaming.md#complete-chunks).
    pub fn uses_neighbours(&self) -> bool {
        self.neighbours.is_some_and(|k| k.get() > 0)
    }

    /// `maxTicketChunks`: the most chunks the held tickets may want together.
    pub fn max_ticket_chunks(&self) -> u64 {
        u64::from(
            self.max_ticket_chunks
                .map_or(DEFAULT_MAX_TICKET_CHUNKS, MaxTicketChunks::get),
        )
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
mod many_foci_keys {
    use super::*;
    use crate::json::from_value;
    use serde_json::json;

    #[test]
    fn the_many_foci_keys_default_to_one_focus_no_cap_and_256_refusals() {
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
    fn the_many_foci_keys_are_checked_with_their_paths() {
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

#[cfg(test)]
mod scheduling_keys {
    use super::*;
    use crate::json::from_value;
    use serde_json::json;

    #[test]
    fn the_schedule_keys_default_and_are_checked_with_their_paths() {
        let s = StreamingConfig::default().settings(Overrides::default(), Overrides::default());
        assert_eq!(
            (s.schedule, s.look_ahead_ticks, s.hole_ring),
            (Schedule::Nearest, 0, 1)
        );
        for (v, key, expected) in [
            (
                json!({"holeRing": 9}),
                "holeRing",
                "expected an integer 0..=8, got 9",
            ),
            (
                json!({"lookAheadTicks": 601}),
                "lookAheadTicks",
                "expected an integer 0..=600, got 601",
            ),
            (
                json!({"schedule": "fastest"}),
                "schedule",
                "expected \"nearest\" or \"fair\", got \"fastest\"",
            ),
        ] {
            let err = from_value::<StreamingConfig>(&v, "kits[1].config").unwrap_err();
            assert_eq!(err.to_string(), format!("kits[1].config.{key}: {expected}"));
            let err = from_value::<Overrides>(&v, "layer").unwrap_err();
            assert_eq!(err.path, format!("layer.{key}"), "{err}");
        }
    }

    #[test]
    fn null_is_no_value_of_a_key_that_may_be_left_out() {
        // docs/reference/config.md#error-messages: out-of-range values are errors; only `maxLoaded`
        // gives `null` a meaning.
        for (key, expected) in [
            ("schedule", "expected \"nearest\" or \"fair\", got null"),
            ("lookAheadTicks", "expected an integer 0..=600, got null"),
            ("holeRing", "expected an integer 0..=8, got null"),
            ("lod", "got null"),
            ("lodBudget", "expected an integer 0..=4096, got null"),
        ] {
            let v = json!({ key: null });
            let err = from_value::<StreamingConfig>(&v, "kits[1].config").unwrap_err();
            assert_eq!(err.path, format!("kits[1].config.{key}"), "{err}");
            assert!(err.to_string().contains(expected), "{err}");
            let err = from_value::<Overrides>(&v, "layer").unwrap_err();
            assert_eq!(err.path, format!("layer.{key}"), "{err}");
        }
        for key in ["radius", "budgetMs", "focus", "maxRefusalsPerMod"] {
            let err = from_value::<Overrides>(&json!({ key: null }), "layer").unwrap_err();
            assert!(err.to_string().contains("got null"), "{err}");
        }
        let cap: Overrides = from_value(&json!({"maxLoaded": null}), "layer").unwrap();
        assert_eq!(cap.max_loaded, Some(MaxLoaded(None)), "null: no cap");
    }

    #[test]
    fn the_schedule_keys_follow_the_precedence() {
        let c: StreamingConfig =
            from_value(&json!({"schedule": "fair", "holeRing": 2}), "c").unwrap();
        let layer: Overrides =
            from_value(&json!({"holeRing": 3, "lookAheadTicks": 4}), "l").unwrap();
        let mods: Overrides = from_value(&json!({"lookAheadTicks": 5}), "m").unwrap();
        let s = c.settings(layer, mods);
        assert_eq!(
            (s.schedule, s.look_ahead_ticks, s.hole_ring),
            (Schedule::Fair, 5, 3)
        );
        assert!(c.uses_scheduling() && layer.uses_scheduling());
        assert!(!StreamingConfig::default().uses_scheduling());
    }
}

#[cfg(test)]
mod ticket_cap {
    use super::*;
    use crate::json::from_value;
    use serde_json::json;

    #[test]
    fn max_ticket_chunks_defaults_to_65536_is_checked_and_is_the_config_s_alone() {
        assert_eq!(StreamingConfig::default().max_ticket_chunks(), 65_536);
        let c: StreamingConfig = from_value(&json!({"maxTicketChunks": 1}), "c").unwrap();
        assert_eq!(c.max_ticket_chunks(), 1);
        let c: StreamingConfig = from_value(&json!({"maxTicketChunks": 1_000_000}), "c").unwrap();
        assert_eq!(c.max_ticket_chunks(), 1_000_000);
        for bad in [
            json!(0),
            json!(1_000_001),
            json!(2.5),
            json!(null),
            json!("9"),
        ] {
            let err =
                from_value::<StreamingConfig>(&json!({ "maxTicketChunks": bad }), "kits[1].config")
                    .unwrap_err();
            assert_eq!(err.path, "kits[1].config.maxTicketChunks", "{err}");
            assert!(
                err.message
                    .starts_with("expected an integer 1..=1000000, got"),
                "{err}"
            );
        }
        let err = from_value::<Overrides>(&json!({"maxTicketChunks": 10}), "layer").unwrap_err();
        assert!(
            err.message.contains("unknown field `maxTicketChunks`"),
            "a layer or a mod cannot raise it: {err}"
        );
        assert_eq!(
            serde_json::to_value(StreamingConfig::default()).unwrap()["maxTicketChunks"],
            serde_json::Value::Null,
            "left out, it is not written"
        );
    }
}

#[cfg(test)]
mod lod_keys {
    use super::*;
    use crate::json::from_value;
    use serde_json::json;

    fn config(v: serde_json::Value) -> Result<StreamingConfig, String> {
        from_value::<StreamingConfig>(&v, "kits[1].config").map_err(|p| p.to_string())
    }

    #[test]
    fn lod_levels_are_checked_as_section_17_says() {
        let ok = config(
            json!({"radius": 8, "lod": [{"step": 2, "radius": 24}, {"step": 8, "radius": 96}]}),
        )
        .unwrap();
        let lod = ok.lod.unwrap();
        assert_eq!(
            lod.levels(),
            &[
                LodLevel {
                    step: 2,
                    radius: 24
                },
                LodLevel {
                    step: 8,
                    radius: 96
                }
            ]
        );
        assert_eq!(ok.check_lod(None), Ok(()));
        for (lod, expected) in [
            (
                json!([{"step": 3, "radius": 9}]),
                "kits[1].config.lod[0].step: expected a power of two 2..=64, got 3",
            ),
            (
                json!([{"step": 1, "radius": 9}]),
                "kits[1].config.lod[0].step: expected a power of two 2..=64, got 1",
            ),
            (
                json!([{"step": 128, "radius": 9}]),
                "kits[1].config.lod[0].step: expected a power of two 2..=64, got 128",
            ),
            (
                json!([{"step": 2, "radius": 0}]),
                "kits[1].config.lod[0].radius: expected an integer 1..=1024, got 0",
            ),
            (
                json!([{"step": 64, "radius": 1025}]),
                "kits[1].config.lod[0].radius: expected an integer 1..=1024, got 1025",
            ),
            (
                json!([{"step": 4, "radius": 9}, {"step": 2, "radius": 20}]),
                "expected steps ascending: [1].step 2 is not above [0].step 4",
            ),
            (
                json!([{"step": 2, "radius": 9}, {"step": 2, "radius": 20}]),
                "expected steps ascending: [1].step 2 is not above [0].step 2",
            ),
            (
                json!([{"step": 2, "radius": 9}, {"step": 4, "radius": 9}]),
                "expected radii strictly ascending: [1].radius 9 is not above [0].radius 9",
            ),
            (
                json!([{"step": 2, "radius": 3}, {"step": 4, "radius": 4}, {"step": 8, "radius": 5}, {"step": 16, "radius": 6}, {"step": 32, "radius": 7}]),
                "expected at most 4 levels, got 5",
            ),
            (json!([{"step": 2}]), "lod[0].radius: missing field"),
            (
                json!([{"step": 2, "radius": 9, "size": 1}]),
                "unknown field `size`",
            ),
            (json!({"step": 2}), "expected"),
        ] {
            let err = config(json!({ "lod": lod })).unwrap_err();
            assert!(err.contains(expected), "{err} / {expected}");
            assert!(err.starts_with("kits[1].config.lod"), "{err}");
        }
        // Above the effective radius: the config's (default 2), or a layer's over it.
        let c = config(json!({"lod": [{"step": 2, "radius": 2}]})).unwrap();
        assert_eq!(
            c.check_lod(None),
            Err((
                "lod[0].radius".into(),
                "expected a radius greater than the radius 2, got 2".into()
            ))
        );
        let c = config(json!({"radius": 1, "lod": [{"step": 2, "radius": 3}]})).unwrap();
        assert_eq!(c.check_lod(None), Ok(()));
        let layer: Overrides = from_value(&json!({"radius": 3}), "l").unwrap();
        assert!(c.check_lod(Some(&layer)).is_ok(), "the layer sets no lod");
        let err = from_value::<Overrides>(
            &json!({"lod": [{"step": 2, "radius": 6}, {"step": 4, "radius": 5}]}),
            "layers[\"world.streaming\"]",
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("radii strictly ascending"),
            "{err}"
        );
        let layer: Overrides = from_value(
            &json!({"radius": 5, "lod": [{"step": 2, "radius": 5}]}),
            "l",
        )
        .unwrap();
        assert_eq!(
            c.check_lod(Some(&layer)).unwrap_err().1,
            "expected a radius greater than the radius 5, got 5"
        );
    }

    #[test]
    fn lod_replaces_whole_and_the_budget_defaults_to_4() {
        let c = config(
            json!({"radius": 1, "lod": [{"step": 2, "radius": 4}, {"step": 4, "radius": 8}]}),
        )
        .unwrap();
        let s = c.settings(Overrides::default(), Overrides::default());
        assert_eq!((s.lod.levels().len(), s.lod_budget), (2, 4));
        let layer: Overrides = from_value(
            &json!({"lod": [{"step": 8, "radius": 9}], "lodBudget": 0}),
            "l",
        )
        .unwrap();
        let s = c.settings(layer, Overrides::default());
        assert_eq!(s.lod.levels(), &[LodLevel { step: 8, radius: 9 }]);
        assert_eq!(s.lod_budget, 0);
        let none: Overrides = from_value(&json!({"lod": []}), "m").unwrap();
        assert!(
            c.settings(layer, none).lod.is_empty(),
            "an empty list replaces"
        );
        // A mod's radius past a level leaves that level out.
        let far: Overrides = from_value(&json!({"radius": 5}), "m").unwrap();
        assert_eq!(
            c.settings(Overrides::default(), far).lod.levels(),
            &[LodLevel { step: 4, radius: 8 }]
        );
        for (v, expected) in [
            (
                json!({"lodBudget": 4097}),
                "kits[1].config.lodBudget: expected an integer 0..=4096, got 4097",
            ),
            (
                json!({"lodBudget": -1}),
                "kits[1].config.lodBudget: expected an integer 0..=4096, got -1",
            ),
        ] {
            assert_eq!(config(v).unwrap_err(), expected);
        }
        assert!(!StreamingConfig::default().uses_lod());
        assert!(config(json!({"lod": []}))
            .unwrap()
            .settings(Overrides::default(), Overrides::default())
            .lod
            .is_empty());
    }
}

#[cfg(test)]
mod shape_and_vertical {
    use super::*;
    use crate::json::from_value;
    use serde_json::json;

    #[test]
    fn the_square_keeps_ring_distance_and_the_disc_the_exact_circle() {
        assert!(Shape::Square.within(2, -2, 2) && !Shape::Square.within(3, 0, 2));
        assert!(Shape::Square.kept(3, -3, 2) && !Shape::Square.kept(4, 0, 2));
        // r = 2: (2, 1) has 5 > 4, out of the disc but kept (5 <= 9).
        assert!(Shape::Disc.within(2, 0, 2) && Shape::Disc.within(1, -1, 2));
        assert!(!Shape::Disc.within(2, 1, 2) && Shape::Disc.kept(2, 1, 2));
        assert!(Shape::Disc.kept(0, -3, 2) && !Shape::Disc.kept(3, 1, 2));
        assert!(Shape::Disc.within(0, 0, 0) && !Shape::Disc.within(1, 0, 0));
        // No overflow at the extremes.
        assert!(!Shape::Disc.within(i64::MIN, i64::MIN, u32::MAX));
        assert!(!Shape::Square.kept(i64::MIN, 0, u32::MAX));
        // r = 8: 197 columns in the disc.
        let n = (-8..=8i64)
            .flat_map(|dz| (-8..=8i64).map(move |dx| (dx, dz)))
            .filter(|(dx, dz)| Shape::Disc.within(*dx, *dz, 8))
            .count();
        assert_eq!(n, 197);
    }

    #[test]
    fn shape_and_vertical_are_read_checked_and_resolved() {
        let s = StreamingConfig::default().settings(Overrides::default(), Overrides::default());
        assert_eq!((s.shape, s.vertical), (Shape::Square, None));
        let c: StreamingConfig = from_value(
            &json!({"chunkSize": 16, "shape": "disc", "vertical": {"radius": 4}}),
            "c",
        )
        .unwrap();
        let s = c.settings(Overrides::default(), Overrides::default());
        assert_eq!(s.shape, Shape::Disc);
        assert_eq!(
            s.vertical,
            Some(Vertical {
                radius: 4,
                height: 16.0
            })
        );
        for (v, expected) in [
            (
                json!({"shape": "round"}),
                "kits[1].config.shape: expected \"square\" or \"disc\", got \"round\"",
            ),
            (
                json!({"vertical": {"radius": 33}}),
                "kits[1].config.vertical.radius: expected an integer 0..=32, got 33",
            ),
            (
                json!({"vertical": {"radius": 1, "height": 0}}),
                "kits[1].config.vertical.height: expected a finite number > 0, got 0",
            ),
        ] {
            let err = from_value::<StreamingConfig>(&v, "kits[1].config").unwrap_err();
            assert_eq!(err.to_string(), expected);
        }
    }
}
