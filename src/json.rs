//! Reading JSON with errors that say where: every problem carries the JSON path of the offending
//! value (`kits[2].config.radius`) and what was expected.

use serde::de::DeserializeOwned;
use serde_json::Value;

/// A problem located by JSON path inside a file, e.g. `kits[2].config.radius`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{}", if path.is_empty() { String::new() } else { format!("{}: ", crate::escape::escape(path)) }, crate::escape::escape(message))]
pub struct Problem {
    /// JSON path of the offending value (empty for the whole document).
    pub path: String,
    /// What was expected and what was found.
    pub message: String,
}

impl Problem {
    /// A problem at `path`.
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        Problem {
            path: path.into(),
            message: message.into(),
        }
    }

    /// The same problem, under `prefix` (`kits[2].config` + `radius`).
    pub fn under(mut self, prefix: &str) -> Self {
        self.path = join_path(prefix, &self.path);
        self
    }
}

/// `prefix.path`, or `prefix[3]` when `path` starts with an index.
pub fn join_path(prefix: &str, path: &str) -> String {
    match (prefix.is_empty(), path.is_empty()) {
        (true, _) => path.to_owned(),
        (_, true) => prefix.to_owned(),
        _ if path.starts_with('[') => format!("{prefix}{path}"),
        _ => format!("{prefix}.{path}"),
    }
}

/// Deserializes `value` as `T`; an error names the JSON path under `prefix` and says what was
/// expected in plain words (`to.z: missing field`, `to: expected an object, got [1,2]`), never
/// in serde's internal wording (`invalid length 2, expected struct Position with 3 elements`).
pub fn from_value<T: DeserializeOwned>(value: &Value, prefix: &str) -> Result<T, Problem> {
    // The value is read once without tracking the path (a save's sections hold thousands of
    // entries); only a value that fails is read again, tracking where.
    if let Ok(t) = T::deserialize(value) {
        return Ok(t);
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        let found = at_path(value, e.path());
        let path = e.path().to_string();
        let path = if path == "." { String::new() } else { path };
        let (path, message) = plain(path, &e.into_inner().to_string(), found);
        Problem::new(join_path(prefix, &path), message)
    })
}

/// A problem from a serde error at `path` (as serde_path_to_error prints it), with the value
/// found there when known, in the words of the file formats.
pub fn problem_at(path: &str, message: &str, found: Option<&Value>) -> Problem {
    let path = if path == "." {
        String::new()
    } else {
        path.to_owned()
    };
    let (path, message) = plain(path, message, found);
    Problem::new(path, message)
}

/// The value at `path` inside `root` (a path as serde_path_to_error prints it).
pub fn value_at<'a>(root: &'a Value, path: &serde_path_to_error::Path) -> Option<&'a Value> {
    at_path(root, path)
}

/// The value at `path` inside `root`, as far as the path can be followed.
fn at_path<'a>(root: &'a Value, path: &serde_path_to_error::Path) -> Option<&'a Value> {
    use serde_path_to_error::Segment;
    let mut v = root;
    for segment in path.iter() {
        v = match segment {
            Segment::Seq { index } => v.get(index)?,
            Segment::Map { key } => v.get(key.as_str())?,
            Segment::Enum { variant } => v.get(variant.as_str()).unwrap_or(v),
            Segment::Unknown => v,
        };
    }
    Some(v)
}

/// serde's words for a type, in the words of the file formats.
fn plain_type(expected: &str) -> String {
    let e = expected.trim();
    if e.starts_with("struct ") || e.starts_with("internally tagged enum") || e == "a map" {
        return "an object".to_owned();
    }
    if let Some(n) = e.strip_prefix("an array of length ") {
        return format!("an array of {n} elements");
    }
    match e {
        "i64" | "i32" | "i8" | "i16" => "an integer".to_owned(),
        "u8" => "an integer 0..=255".to_owned(),
        "u16" => "an integer 0..=65535".to_owned(),
        "u32" => "an integer 0..=4294967295".to_owned(),
        "u64" | "usize" => "an integer >= 0".to_owned(),
        "f64" | "f32" => "a number".to_owned(),
        "a sequence" => "an array".to_owned(),
        "a borrowed string" => "a string".to_owned(),
        "unit" => "null".to_owned(),
        other => other.to_owned(),
    }
}

/// `(path, message)` of a serde error message, in plain words.
fn plain(path: String, message: &str, found: Option<&Value>) -> (String, String) {
    let tick = |s: &str| -> Option<(String, String)> {
        let rest = s.strip_prefix('`')?;
        let end = rest.find('`')?;
        Some((rest[..end].to_owned(), rest[end + 1..].to_owned()))
    };
    if let Some((field, _)) = message.strip_prefix("missing field ").and_then(tick) {
        return (join_path(&path, &field), "missing field".to_owned());
    }
    if let Some((variant, rest)) = message.strip_prefix("unknown variant ").and_then(tick) {
        let list = rest
            .trim_start_matches(", expected ")
            .trim_start_matches("one of ")
            .replace('`', "");
        return (
            path,
            format!("unknown value {variant:?}; expected one of: {list}"),
        );
    }
    if let Some((field, rest)) = message.strip_prefix("unknown field ").and_then(tick) {
        let known = rest
            .trim_start_matches(", expected ")
            .trim_start_matches("one of ")
            .replace(" or ", ", ")
            .replace('`', "");
        let message = if rest.contains("there are no fields") {
            format!("unknown field `{field}`; nothing may be given here")
        } else {
            format!("unknown field `{field}`; expected one of: {known}")
        };
        return (path, message);
    }
    let got = || found.map_or_else(|| "something else".to_owned(), describe);
    if message.starts_with("invalid type: ") || message.starts_with("invalid length ") {
        if let Some(i) = message.find(", expected ") {
            let expected = plain_type(&message[i + ", expected ".len()..]);
            return (path, format!("expected {expected}, got {}", got()));
        }
    }
    if message.starts_with("invalid value: ") {
        if let Some(i) = message.find(", expected ") {
            let expected = plain_type(&message[i + ", expected ".len()..]);
            return (path, format!("expected {expected}, got {}", got()));
        }
    }
    (path, message.to_owned())
}

/// A value built in Rust that is out of its range (`Radius::new(65)`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    /// The value is not one the type accepts.
    #[error("{name}: expected {expected}, got {got}")]
    OutOfRange {
        /// The type, e.g. `Radius`.
        name: &'static str,
        /// What it accepts, e.g. `an integer 0..=64`.
        expected: String,
        /// The value given.
        got: String,
    },
}

/// A short rendering of a JSON value for "got …" in messages (long values are cut).
pub fn describe(value: &Value) -> String {
    let s = value.to_string();
    if s.chars().count() > 40 {
        format!("{}…", s.chars().take(40).collect::<String>())
    } else {
        s
    }
}

/// Implements `Deserialize` and `JsonSchema` for a numeric newtype with a checked range, so a bad
/// value reads `expected an integer 0..=64, got -1`.
///
/// An integer range is declared once, `integer LO..=HI` (or `null or integer LO..=HI` for an
/// optional one): its check, its message and its schema's `minimum`/`maximum` all come from it.
/// Other checks give the message, the check and the schema by hand.
#[macro_export]
#[doc(hidden)]
macro_rules! checked_number {
    ($(#[$m:meta])* $name:ident($inner:ty), integer $lo:tt ..= $hi:tt, $desc:literal) => {
        $crate::checked_number!(
            $(#[$m])* $name($inner),
            format!("an integer {}..={}", $lo, $hi),
            |v| $crate::json::as_integer(v)
                .filter(|n| (($lo as i64)..=($hi as i64)).contains(n))
                .map(|n| n as $inner),
            { "type": "integer", "minimum": $lo, "maximum": $hi, "description": $desc }
        );
    };
    ($(#[$m:meta])* $name:ident(Option<$inner:ty>), null or integer $lo:tt ..= $hi:tt, $desc:literal) => {
        $crate::checked_number!(
            $(#[$m])* $name(Option<$inner>),
            format!("null or an integer {}..={}", $lo, $hi),
            |v| if v.is_null() {
                Some(None)
            } else {
                $crate::json::as_integer(v)
                    .filter(|n| (($lo as i64)..=($hi as i64)).contains(n))
                    .map(|n| Some(n as $inner))
            },
            { "type": ["integer", "null"], "minimum": $lo, "maximum": $hi, "description": $desc }
        );
    };
    ($(#[$m:meta])* $name:ident($inner:ty), $expected:expr, $check:expr, $schema:tt) => {
        $(#[$m])*
        ///
        /// Built only checked: [`Self::new`] (or from a file), so a value out of range cannot
        /// exist; [`Self::get`] reads it.
        #[derive(Debug, Clone, Copy, PartialEq, PartialOrd, serde::Serialize)]
        #[serde(transparent)]
        pub struct $name($inner);

        impl $name {
            /// Checks `v`, or says what was expected.
            pub fn parse(v: &serde_json::Value) -> Result<Self, String> {
                let check: fn(&serde_json::Value) -> Option<$inner> = $check;
                check(v).map($name).ok_or_else(|| {
                    format!("expected {}, got {}", $expected, $crate::json::describe(v))
                })
            }

            /// `v`, checked: an error saying what was expected when it is out of range.
            pub fn new(v: $inner) -> Result<Self, $crate::json::ValueError> {
                let json = serde_json::to_value(v).unwrap_or(serde_json::Value::Null);
                let check: fn(&serde_json::Value) -> Option<$inner> = $check;
                match check(&json) {
                    Some(_) => Ok($name(v)),
                    None => Err($crate::json::ValueError::OutOfRange {
                        name: stringify!($name),
                        expected: ($expected).to_string(),
                        got: format!("{v:?}"),
                    }),
                }
            }

            /// The value.
            pub fn get(self) -> $inner {
                self.0
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let v = <serde_json::Value as serde::Deserialize>::deserialize(d)?;
                $name::parse(&v).map_err(serde::de::Error::custom)
            }
        }

        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }
            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!($schema)
            }
        }
    };
}

/// A settings key that may be left out but is never `null` (docs/reference/config.md#the-kit-entry:
/// `null` is no value of it): present, it is `Some` of the value's own reading, so `null` gets the
/// value's own error ("expected …, got null"). A value whose type reads `null` itself
/// (`maxLoaded: null`, no cap) is `Some` of that. For `#[serde(deserialize_with = "…")]` on an
/// `Option` field.
pub fn not_null<'de, D: serde::Deserializer<'de>, T: serde::Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// The schema of a settings field `Option<T>` that is left out when unset (a transform for
/// `#[schemars(transform = …)]`): `T`'s own schema (its `$ref`), not "T or null", since `null`
/// is no value of the key ([`not_null`]); with `default`, the value in force when the key is
/// left out.
pub fn optional_setting(schema: &mut schemars::Schema, default: Option<Value>) {
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    let mut out = serde_json::Map::new();
    for (key, value) in std::mem::take(object) {
        match value {
            Value::Array(items) if key == "anyOf" => {
                for item in items {
                    match item {
                        Value::Object(m) if m.get("type") != Some(&Value::from("null")) => {
                            out.extend(m);
                        }
                        _ => {}
                    }
                }
            }
            value => {
                out.insert(key, value);
            }
        }
    }
    if let Some(default) = default {
        out.insert("default".to_owned(), default);
    }
    *object = out;
}

/// Declares a kit's config, each setting once: its field, its JSON key, its type (whose own
/// `checked_number!` holds its range, message and schema bounds), its default and its doc (with
/// any further field attribute). It yields the struct (every key optional, an unknown key an
/// error), its [`Default`] (the declared defaults, which reading and the schema's `default`
/// use) and `KEYS`, the keys in the order of the file, which `tests/manifests.rs` holds each
/// `kit.json` to.
///
/// ```ignore
/// config_settings! {
///     /// The kit's `config` object.
///     #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
///     pub struct NavConfig {
///         /// Height units a walker may climb (default 256).
///         max_step "maxStep": MaxStep = MaxStep(DEFAULT_MAX_STEP),
///     }
/// }
/// ```
#[macro_export]
#[doc(hidden)]
macro_rules! config_settings {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $(
                $(#[$field_meta:meta])*
                $field:ident $key:literal : $ty:ty = $default:expr
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[serde(default, deny_unknown_fields, rename_all = "camelCase")]
        pub struct $name {
            $(
                $(#[$field_meta])*
                #[serde(rename = $key)]
                pub $field: $ty,
            )*
        }

        impl Default for $name {
            fn default() -> Self {
                $name {
                    $($field: $default,)*
                }
            }
        }

        impl $name {
            /// The config's keys, in the order of the file.
            pub const KEYS: &'static [&'static str] = &[$($key),*];
        }
    };
}

/// `v` as a JSON number, written without a fraction when it is integral (`8`, not `8.0`), as
/// the files of docs/reference/grid.md#numbers-in-output-files show coordinates.
pub fn number(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < 9.0e15 {
        Value::from(v as i64)
    } else {
        Value::from(v)
    }
}

/// Serializes an `f64` with [`number`].
pub fn serialize_number<S: serde::Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    serde::Serialize::serialize(&number(*v), s)
}

/// [`serialize_number`] for an optional field written only when present
/// (`skip_serializing_if = "Option::is_none"`).
pub fn serialize_some_number<S: serde::Serializer>(
    v: &Option<f64>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match v {
        Some(v) => serialize_number(v, s),
        None => s.serialize_none(),
    }
}

/// An integral JSON number (`2` or `2.0`) as `i64`.
pub fn as_integer(v: &Value) -> Option<i64> {
    if let Some(i) = v.as_i64() {
        return Some(i);
    }
    let f = v.as_f64()?;
    (f.fract() == 0.0 && f.abs() < 9.0e15).then_some(f as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_join_fields_and_indexes() {
        assert_eq!(
            join_path("kits[2]", "config.radius"),
            "kits[2].config.radius"
        );
        assert_eq!(join_path("kits", "[2]"), "kits[2]");
        assert_eq!(join_path("", "a"), "a");
        assert_eq!(join_path("a", ""), "a");
    }

    #[test]
    fn serde_errors_read_as_the_file_formats_speak() {
        let p =
            from_value::<crate::grid::Position>(&serde_json::json!({"x": 1}), "to").unwrap_err();
        assert_eq!(p.to_string(), "to.z: missing field");
        let p = from_value::<crate::grid::Position>(&serde_json::json!([1, 2]), "to").unwrap_err();
        assert_eq!(p.to_string(), "to: expected an object, got [1,2]");
        let p = from_value::<crate::grid::Position>(&serde_json::json!({"x": "1", "z": 0}), "to")
            .unwrap_err();
        assert_eq!(p.to_string(), "to.x: expected a number, got \"1\"");
        let p = from_value::<Vec<u64>>(&serde_json::json!([1, -2]), "").unwrap_err();
        assert_eq!(p.to_string(), "[1]: expected an integer >= 0, got -2");
        // Narrow integers say their range (an edit's height and material).
        let p = from_value::<Vec<u16>>(&serde_json::json!([70000]), "").unwrap_err();
        assert_eq!(
            p.to_string(),
            "[0]: expected an integer 0..=65535, got 70000"
        );
        let p = from_value::<Vec<u8>>(&serde_json::json!([300]), "").unwrap_err();
        assert_eq!(p.to_string(), "[0]: expected an integer 0..=255, got 300");
    }

    #[test]
    fn a_problem_prints_its_path_first() {
        assert_eq!(
            Problem::new("a.b", "expected x").to_string(),
            "a.b: expected x"
        );
        assert_eq!(Problem::new("", "expected x").to_string(), "expected x");
    }
}
