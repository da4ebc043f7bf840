//! Reading JSON with errors that say where: every problem carries the JSON path of the offending
//! value (`kits[2].config.radius`) and what was expected.

use serde::de::DeserializeOwned;
use serde_json::Value;

/// A problem located by JSON path inside a file, e.g. `kits[2].config.radius`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", if path.is_empty() { String::new() } else { format!("{path}: ") })]
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

/// Deserializes `value` as `T`; an error names the JSON path under `prefix`.
pub fn from_value<T: DeserializeOwned>(value: &Value, prefix: &str) -> Result<T, Problem> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let path = if path == "." { String::new() } else { path };
        Problem::new(join_path(prefix, &path), e.into_inner().to_string())
    })
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
#[macro_export]
#[doc(hidden)]
macro_rules! checked_number {
    ($(#[$m:meta])* $name:ident($inner:ty), $expected:literal, $check:expr, $schema:tt) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, PartialOrd, serde::Serialize)]
        #[serde(transparent)]
        pub struct $name(pub $inner);

        impl $name {
            /// Checks `v`, or says what was expected.
            pub fn parse(v: &serde_json::Value) -> Result<Self, String> {
                let check: fn(&serde_json::Value) -> Option<$inner> = $check;
                check(v).map($name).ok_or_else(|| {
                    format!("expected {}, got {}", $expected, $crate::json::describe(v))
                })
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

/// `v` as a JSON number, written without a fraction when it is integral (`8`, not `8.0`), as
/// the files of SPEC §9 show coordinates.
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
    fn a_problem_prints_its_path_first() {
        assert_eq!(
            Problem::new("a.b", "expected x").to_string(),
            "a.b: expected x"
        );
        assert_eq!(Problem::new("", "expected x").to_string(), "expected x");
    }
}
