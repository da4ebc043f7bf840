//! JSON mods: `{ "id", "hook", "match": {x?, z?}, "cancel", "reason", "set": {radius?, budgetMs?} }`.
//! Consecutive JSON mods answering the same hook are grouped into one [`JsonRules`] handler that
//! indexes their `match` patterns, so an ask costs a few lookups however many mods there are.

use std::collections::HashMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::host::{Cancel, HookAnswer, HookArgs, HookHandler, ModId};
use crate::json::Problem;
use crate::kits::streaming::Overrides;

/// Longest `reason` a mod may give, in bytes (refusals are held and saved with the game).
pub const MAX_REASON_LEN: usize = 1024;

/// A JSON mod file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JsonMod {
    /// The JSON Schema this file follows (ignored).
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// The mod's id (recorded in refusals).
    pub id: String,
    /// The hook it answers, e.g. `world.chunk.unload`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook: Option<String>,
    /// Which asks it answers; absent fields match any value.
    #[serde(rename = "match", default, skip_serializing_if = "Option::is_none")]
    pub matches: Option<Match>,
    /// Whether it cancels the matching asks (default false).
    #[serde(default)]
    pub cancel: bool,
    /// The reason recorded with a refusal (default "").
    #[serde(default)]
    pub reason: String,
    /// Settings it overrides from tick 1: `radius`, `budgetMs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set: Option<Overrides>,
}

/// The payload fields a JSON mod matches on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Match {
    /// Chunk column.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub x: Option<i64>,
    /// Chunk row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub z: Option<i64>,
}

impl JsonMod {
    /// Rules serde cannot express, each with its JSON path.
    pub fn problems(&self) -> Vec<Problem> {
        let mut out = Vec::new();
        if let Err(m) = crate::files::check_name(&self.id) {
            out.push(Problem::new("id", m));
        }
        if self.reason.len() > MAX_REASON_LEN {
            out.push(Problem::new(
                "reason",
                format!(
                    "expected at most {MAX_REASON_LEN} bytes, got {}",
                    self.reason.len()
                ),
            ));
        }
        if self.hook.is_none() && self.set.is_none() {
            out.push(Problem::new("", "expected `hook` or `set` (or both)"));
        }
        if self.hook.is_none() {
            for (key, given) in [
                ("match", self.matches.is_some()),
                ("cancel", self.cancel),
                ("reason", !self.reason.is_empty()),
            ] {
                if given {
                    out.push(Problem::new(key, "only meaningful with a `hook`"));
                }
            }
        }
        out
    }
}

#[derive(Debug, Clone)]
struct Rule {
    by: ModId,
    reason: String,
}

/// Consecutive cancelling JSON mods of one hook, indexed by their `match` pattern.
#[derive(Debug, Default, Clone)]
pub struct JsonRules {
    rules: Vec<Rule>,
    /// First rule (in mod order) for each pattern kind.
    any: Option<usize>,
    by_x: HashMap<i64, usize>,
    by_z: HashMap<i64, usize>,
    by_xz: HashMap<(i64, i64), usize>,
}

impl JsonRules {
    /// Adds the next mod in mod order.
    pub fn push(&mut self, by: ModId, matches: Match, reason: String) {
        let i = self.rules.len();
        self.rules.push(Rule { by, reason });
        match (matches.x, matches.z) {
            (None, None) => {
                self.any.get_or_insert(i);
            }
            (Some(x), None) => {
                self.by_x.entry(x).or_insert(i);
            }
            (None, Some(z)) => {
                self.by_z.entry(z).or_insert(i);
            }
            (Some(x), Some(z)) => {
                self.by_xz.entry((x, z)).or_insert(i);
            }
        }
    }

    /// How many mods are grouped here.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// Whether no mod is grouped here.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The first rule (in mod order) matching `x`/`z`.
    fn first_match(&self, x: Option<i64>, z: Option<i64>) -> Option<usize> {
        let mut best = self.any;
        let mut consider = |i: Option<&usize>| {
            if let Some(&i) = i {
                best = Some(best.map_or(i, |b| b.min(i)));
            }
        };
        if let Some(x) = x {
            if !self.by_x.is_empty() {
                consider(self.by_x.get(&x));
            }
        }
        if let Some(z) = z {
            if !self.by_z.is_empty() {
                consider(self.by_z.get(&z));
            }
        }
        if let (Some(x), Some(z)) = (x, z) {
            if !self.by_xz.is_empty() {
                consider(self.by_xz.get(&(x, z)));
            }
        }
        best
    }
}

impl HookHandler for JsonRules {
    fn ask(&self, args: &HookArgs<'_>) -> HookAnswer {
        Ok(self.first_match(args.int("x"), args.int("z")).map(|i| {
            let r = &self.rules[i];
            Cancel {
                by: r.by.clone(),
                reason: r.reason.clone(),
            }
        }))
    }

    fn label(&self) -> String {
        let ids: Vec<&str> = self.rules.iter().map(|r| r.by.as_str()).collect();
        format!("JSON mods {}", ids.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::HookValue;

    fn ask(rules: &JsonRules, x: i64, z: i64) -> Option<String> {
        let fields = [("x", HookValue::Int(x)), ("z", HookValue::Int(z))];
        rules
            .ask(&HookArgs {
                hook: "h",
                fields: &fields,
            })
            .unwrap()
            .map(|c| c.by.as_str().to_owned())
    }

    #[test]
    fn the_first_matching_mod_in_mod_order_wins() {
        let mut r = JsonRules::default();
        r.push(
            ModId::new("exact"),
            Match {
                x: Some(0),
                z: Some(0),
            },
            "a".into(),
        );
        r.push(
            ModId::new("column"),
            Match {
                x: Some(0),
                z: None,
            },
            "b".into(),
        );
        r.push(ModId::new("anything"), Match::default(), "c".into());
        r.push(
            ModId::new("late"),
            Match {
                x: Some(5),
                z: Some(5),
            },
            "d".into(),
        );
        assert_eq!(ask(&r, 0, 0).as_deref(), Some("exact"));
        assert_eq!(ask(&r, 0, 3).as_deref(), Some("column"));
        assert_eq!(ask(&r, 5, 5).as_deref(), Some("anything"));
    }

    #[test]
    fn a_mod_without_hook_or_set_is_refused() {
        let m: JsonMod = serde_json::from_str(r#"{"id": "x"}"#).unwrap();
        assert_eq!(
            m.problems()[0].message,
            "expected `hook` or `set` (or both)"
        );
        let m: JsonMod =
            serde_json::from_str(r#"{"id": "x", "set": {"radius": 1}, "cancel": true}"#).unwrap();
        assert_eq!(m.problems()[0].path, "cancel");
    }
}
