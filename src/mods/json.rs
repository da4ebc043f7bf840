//! JSON mods: `{ "id", "hook", "match", "cancel", "reason", "set": {radius?, budgetMs?} }`, or
//! several rules in one file: `{ "id", "rules": [ {hook, match, cancel, reason}, … ] }`.
//!
//! `match` is one pattern `{x?, z?, y?}` or a list of patterns (any of them matches); each of
//! `x`, `z` and `y` (a section's row in a vertical world, docs/reference/hooks.md#matching-sections)
//! is absent (any), an integer, or an inclusive range `[min, max]`:
//! `"match": {"x": [0, 3], "z": [-1, 1]}` is a rectangle of 12 chunks,
//! `"match": [{"x": 0, "z": 0}, {"x": 5, "z": 5}]` two chunks. A rule with a `hook` must say
//! `cancel` (`true` or `false`).
//!
//! Consecutive JSON rules answering the same hook are grouped into one [`JsonRules`] handler that
//! indexes their exact patterns, so an ask costs a few lookups however many mods there are
//! (patterns with ranges are scanned).

use std::collections::HashMap;
use std::fmt;

use schemars::JsonSchema;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};

use crate::host::{Cancel, HookAnswer, HookArgs, HookHandler, ModId};
use crate::json::Problem;
use crate::kits::streaming::Overrides;

pub use crate::limits::MAX_REASON_LEN;
/// Most rules one JSON mod file may hold.
pub const MAX_RULES: usize = 10_000;

/// A JSON mod file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JsonMod {
    /// The JSON Schema this file follows (ignored).
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// The mod's id (recorded in refusals).
    pub id: String,
    /// The hook its one rule answers, e.g. `world.chunk.unload` (or use `rules`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook: Option<String>,
    /// Which asks the rule answers: a pattern or a list of patterns; absent = any.
    #[serde(rename = "match", default, skip_serializing_if = "Option::is_none")]
    pub matches: Option<Matches>,
    /// Whether the rule cancels the matching asks (default false,
    /// docs/reference/hooks.md#json-mods).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel: Option<bool>,
    /// The reason recorded with a refusal (default "").
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Several rules, asked in order (the first that matches answers).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<JsonRule>,
    /// Settings it overrides from tick 1: `radius`, `budgetMs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set: Option<Overrides>,
}

/// One rule of a JSON mod's `rules`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JsonRule {
    /// The hook it answers.
    pub hook: String,
    /// Which asks it answers: a pattern or a list of patterns; absent = any.
    #[serde(rename = "match", default, skip_serializing_if = "Option::is_none")]
    pub matches: Option<Matches>,
    /// Whether it cancels the matching asks (default false, docs/reference/hooks.md#json-mods).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel: Option<bool>,
    /// The reason recorded with a refusal (default "").
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
}

/// One coordinate of a pattern: an integer, or an inclusive range `[min, max]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Coord {
    /// Exactly this value.
    Exact(i64),
    /// `min..=max`.
    Range([i64; 2]),
}

impl Coord {
    fn contains(self, v: i64) -> bool {
        match self {
            Coord::Exact(e) => e == v,
            Coord::Range([lo, hi]) => lo <= v && v <= hi,
        }
    }
}

impl From<i64> for Coord {
    fn from(v: i64) -> Self {
        Coord::Exact(v)
    }
}

impl<'de> Deserialize<'de> for Coord {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Coord;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an integer, or a range [min, max] of integers with min <= max")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Coord, E> {
                Ok(Coord::Exact(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Coord, E> {
                i64::try_from(v)
                    .map(Coord::Exact)
                    .map_err(|_| E::invalid_value(de::Unexpected::Unsigned(v), &self))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Coord, E> {
                if v.fract() == 0.0 && v.abs() < 9.0e15 {
                    Ok(Coord::Exact(v as i64))
                } else {
                    Err(E::invalid_value(de::Unexpected::Float(v), &self))
                }
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Coord, A::Error> {
                let lo: i64 = seq
                    .next_element()?
                    .ok_or_else(|| de::Error::invalid_length(0, &self))?;
                let hi: i64 = seq
                    .next_element()?
                    .ok_or_else(|| de::Error::invalid_length(1, &self))?;
                if seq.next_element::<de::IgnoredAny>()?.is_some() {
                    return Err(de::Error::invalid_length(3, &self));
                }
                if lo > hi {
                    return Err(de::Error::custom(format!(
                        "expected a range [min, max] with min <= max, got [{lo}, {hi}]"
                    )));
                }
                Ok(Coord::Range([lo, hi]))
            }
        }
        d.deserialize_any(V)
    }
}

/// The payload fields a pattern matches on; absent fields match any value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Match {
    /// Chunk column: a value or `[min, max]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub x: Option<Coord>,
    /// Chunk row: a value or `[min, max]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub z: Option<Coord>,
    /// Section row of a vertical world (docs/reference/hooks.md#matching-sections): a value or
    /// `[min, max]`. A pattern naming it matches only asks that carry a `y`, so never in a flat
    /// world.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub y: Option<Coord>,
}

impl Match {
    /// The pattern of exactly `(x, z)`.
    pub fn chunk(x: i64, z: i64) -> Self {
        Match {
            x: Some(Coord::Exact(x)),
            z: Some(Coord::Exact(z)),
            y: None,
        }
    }

    /// The pattern of exactly the section `(x, y, z)`.
    pub fn section(x: i64, y: i64, z: i64) -> Self {
        Match {
            y: Some(Coord::Exact(y)),
            ..Match::chunk(x, z)
        }
    }

    fn matches(&self, x: Option<i64>, z: Option<i64>, y: Option<i64>) -> bool {
        let ok = |c: Option<Coord>, v: Option<i64>| match (c, v) {
            (None, _) => true,
            (Some(c), Some(v)) => c.contains(v),
            (Some(_), None) => false,
        };
        ok(self.x, x) && ok(self.z, z) && ok(self.y, y)
    }
}

/// `match`: one pattern, or a list of patterns of which any may match.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Matches {
    /// One pattern.
    One(Match),
    /// Any of these patterns (an empty list matches nothing).
    Any(Vec<Match>),
}

impl Matches {
    /// The patterns.
    pub fn patterns(&self) -> &[Match] {
        match self {
            Matches::One(m) => std::slice::from_ref(m),
            Matches::Any(list) => list,
        }
    }
}

impl<'de> Deserialize<'de> for Matches {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Matches;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a pattern {x?, z?, y?} or a list of patterns")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Matches, A::Error> {
                Match::deserialize(de::value::MapAccessDeserializer::new(map)).map(Matches::One)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Matches, A::Error> {
                Vec::<Match>::deserialize(de::value::SeqAccessDeserializer::new(seq))
                    .map(Matches::Any)
            }
        }
        d.deserialize_any(V)
    }
}

/// A rule, from a mod's top level or its `rules`: what [`JsonRules`] indexes.
#[derive(Debug, Clone, PartialEq)]
pub struct RuleSpec {
    /// The hook.
    pub hook: String,
    /// The patterns (any matches); `None` matches every ask.
    pub matches: Option<Matches>,
    /// Whether it cancels.
    pub cancel: bool,
    /// The reason of a cancel.
    pub reason: String,
}

impl JsonMod {
    /// Rules serde cannot express, each with its JSON path.
    pub fn problems(&self) -> Vec<Problem> {
        let mut out = Vec::new();
        if let Err(m) = crate::limits::check_name(&self.id) {
            out.push(Problem::new("id", m));
        }
        let reason = |path: String, reason: &str, out: &mut Vec<Problem>| {
            if reason.len() > MAX_REASON_LEN {
                out.push(Problem::new(
                    path,
                    format!(
                        "expected at most {MAX_REASON_LEN} bytes, got {}",
                        reason.len()
                    ),
                ));
            }
        };
        reason("reason".into(), &self.reason, &mut out);
        for (i, r) in self.rules.iter().enumerate() {
            reason(format!("rules[{i}].reason"), &r.reason, &mut out);
        }
        if self.rules.len() > MAX_RULES {
            out.push(Problem::new(
                "rules",
                format!(
                    "expected at most {MAX_RULES} rules, got {}",
                    self.rules.len()
                ),
            ));
        }
        if self
            .set
            .and_then(|set| set.vertical)
            .is_some_and(|v| v.height.is_some())
        {
            // docs/reference/config.md#vertical: the height is the scene's.
            out.push(Problem::new(
                "set.vertical.height",
                "a mod may set only vertical.radius (the height is the scene's)",
            ));
        }
        if self.hook.is_none() && self.set.is_none() && self.rules.is_empty() {
            out.push(Problem::new("", "expected `hook`, `rules` or `set`"));
        }
        if self.hook.is_some() && !self.rules.is_empty() {
            out.push(Problem::new(
                "rules",
                "expected either one rule (`hook`, `match`, `cancel`, `reason`) or `rules`, not both",
            ));
        }
        if self.hook.is_none() {
            for (key, given) in [
                ("match", self.matches.is_some()),
                ("cancel", self.cancel.is_some()),
                ("reason", !self.reason.is_empty()),
            ] {
                if given {
                    out.push(Problem::new(key, "only meaningful with a `hook`"));
                }
            }
        }
        out
    }

    /// What is valid but almost surely a mistake: a rule with a `hook` and no `cancel` answers
    /// nothing (`cancel` defaults to false, docs/reference/hooks.md#json-mods). `check` and `run`
    /// print these as warnings.
    pub fn warnings(&self) -> Vec<Problem> {
        let message = "a rule with a `hook` and no `cancel` answers nothing (`cancel` defaults \
                       to false, docs/reference/hooks.md#json-mods): write \"cancel\": true to \
                       refuse, or \"cancel\": false \
                       to say it only watches";
        let mut out = Vec::new();
        if self.hook.is_some() && self.cancel.is_none() {
            out.push(Problem::new("cancel", message));
        }
        for (i, r) in self.rules.iter().enumerate() {
            if r.cancel.is_none() {
                out.push(Problem::new(format!("rules[{i}].cancel"), message));
            }
        }
        out
    }

    /// The mod's rules in order: its top-level rule, or its `rules`. Each with the JSON path of
    /// its `hook`.
    pub fn rule_specs(&self) -> Vec<(String, RuleSpec)> {
        match &self.hook {
            Some(hook) => vec![(
                "hook".to_owned(),
                RuleSpec {
                    hook: hook.clone(),
                    matches: self.matches.clone(),
                    cancel: self.cancel.unwrap_or(false),
                    reason: self.reason.clone(),
                },
            )],
            None => self
                .rules
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    (
                        format!("rules[{i}].hook"),
                        RuleSpec {
                            hook: r.hook.clone(),
                            matches: r.matches.clone(),
                            cancel: r.cancel.unwrap_or(false),
                            reason: r.reason.clone(),
                        },
                    )
                })
                .collect(),
        }
    }
}

#[derive(Debug, Clone)]
struct Rule {
    by: ModId,
    reason: String,
}

/// Consecutive cancelling JSON rules of one hook, indexed by their exact patterns; patterns with
/// ranges are scanned.
#[derive(Debug, Default, Clone)]
pub struct JsonRules {
    rules: Vec<Rule>,
    /// First rule (in mod order) for each pattern kind.
    any: Option<usize>,
    by_x: HashMap<i64, usize>,
    by_z: HashMap<i64, usize>,
    by_xz: HashMap<(i64, i64), usize>,
    /// Exact sections `(x, y, z)`.
    by_xyz: HashMap<(i64, i64, i64), usize>,
    /// Patterns with a range, or naming `y` but not an exact section, in rule order.
    ranged: Vec<(usize, Match)>,
}

impl JsonRules {
    /// Adds the next rule in mod order: it cancels asks matching any of `patterns`.
    pub fn push(&mut self, by: ModId, patterns: &[Match], reason: String) {
        let i = self.rules.len();
        self.rules.push(Rule { by, reason });
        for m in patterns {
            let exact = |c: Option<Coord>| match c {
                None => Some(None),
                Some(Coord::Exact(v)) => Some(Some(v)),
                Some(Coord::Range(_)) => None,
            };
            match (exact(m.x), exact(m.z), exact(m.y)) {
                (Some(Some(x)), Some(Some(z)), Some(Some(y))) => {
                    self.by_xyz.entry((x, y, z)).or_insert(i);
                }
                (_, _, Some(Some(_)) | None) => self.ranged.push((i, *m)),
                (Some(None), Some(None), _) => {
                    self.any.get_or_insert(i);
                }
                (Some(Some(x)), Some(None), _) => {
                    self.by_x.entry(x).or_insert(i);
                }
                (Some(None), Some(Some(z)), _) => {
                    self.by_z.entry(z).or_insert(i);
                }
                (Some(Some(x)), Some(Some(z)), _) => {
                    self.by_xz.entry((x, z)).or_insert(i);
                }
                _ => self.ranged.push((i, *m)),
            }
        }
    }

    /// How many rules are grouped here.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// Whether no rule is grouped here.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The first rule (in mod order) matching `x`/`z`/`y`.
    fn first_match(&self, x: Option<i64>, z: Option<i64>, y: Option<i64>) -> Option<usize> {
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
        if let (Some(x), Some(z), Some(y)) = (x, z, y) {
            if !self.by_xyz.is_empty() {
                consider(self.by_xyz.get(&(x, y, z)));
            }
        }
        let so_far = best;
        let ranged = self
            .ranged
            .iter()
            .take_while(|(i, _)| so_far.is_none_or(|b| *i < b))
            .find(|(_, m)| m.matches(x, z, y));
        match ranged {
            Some((i, _)) => Some(*i),
            None => so_far,
        }
    }
}

impl HookHandler for JsonRules {
    fn ask(&self, args: &HookArgs<'_>) -> HookAnswer {
        Ok(self
            .first_match(args.int("x"), args.int("z"), args.int("y"))
            .map(|i| {
                let r = &self.rules[i];
                Cancel {
                    by: r.by.clone(),
                    reason: r.reason.clone(),
                }
            }))
    }

    fn label(&self) -> String {
        let mut ids: Vec<&str> = self.rules.iter().map(|r| r.by.as_str()).collect();
        ids.dedup();
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

    fn column(x: i64) -> Match {
        Match {
            x: Some(Coord::Exact(x)),
            z: None,
            y: None,
        }
    }

    #[test]
    fn the_first_matching_mod_in_mod_order_wins() {
        let mut r = JsonRules::default();
        r.push(ModId::new("exact"), &[Match::chunk(0, 0)], "a".into());
        r.push(ModId::new("column"), &[column(0)], "b".into());
        r.push(ModId::new("anything"), &[Match::default()], "c".into());
        r.push(ModId::new("late"), &[Match::chunk(5, 5)], "d".into());
        assert_eq!(ask(&r, 0, 0).as_deref(), Some("exact"));
        assert_eq!(ask(&r, 0, 3).as_deref(), Some("column"));
        assert_eq!(ask(&r, 5, 5).as_deref(), Some("anything"));
    }

    #[test]
    fn rectangles_and_lists_match_in_rule_order() {
        let m: JsonMod = serde_json::from_str(
            r#"{"id": "zones", "rules": [
                {"hook": "h", "match": [{"x": 9, "z": 9}, {"x": 8}], "cancel": true, "reason": "list"},
                {"hook": "h", "match": {"x": [0, 3], "z": [-1, 1]}, "cancel": true, "reason": "rect"},
                {"hook": "h", "match": {"z": 1}, "cancel": true, "reason": "row"}
            ]}"#,
        )
        .unwrap();
        assert_eq!(m.problems(), []);
        let mut r = JsonRules::default();
        for (_, spec) in m.rule_specs() {
            let any = [Match::default()];
            let patterns = spec.matches.as_ref().map_or(&any[..], |m| m.patterns());
            r.push(ModId::new(&spec.reason), patterns, spec.reason.clone());
        }
        assert_eq!(ask(&r, 9, 9).as_deref(), Some("list"));
        assert_eq!(ask(&r, 8, -50).as_deref(), Some("list"));
        assert_eq!(ask(&r, 0, -1).as_deref(), Some("rect"));
        assert_eq!(ask(&r, 3, 1).as_deref(), Some("rect"), "inclusive");
        assert_eq!(ask(&r, 4, 1).as_deref(), Some("row"));
        assert_eq!(ask(&r, 4, 0), None);
        assert_eq!(ask(&r, -1, 0), None);
    }

    #[test]
    fn a_mod_without_hook_or_set_is_refused() {
        let m: JsonMod = serde_json::from_str(r#"{"id": "x"}"#).unwrap();
        assert_eq!(m.problems()[0].message, "expected `hook`, `rules` or `set`");
        let m: JsonMod =
            serde_json::from_str(r#"{"id": "x", "set": {"radius": 1}, "cancel": true}"#).unwrap();
        assert_eq!(m.problems()[0].path, "cancel");
    }

    #[test]
    fn a_rule_without_cancel_cancels_nothing_as_spec_10_says() {
        let m: JsonMod = serde_json::from_str(r#"{"id": "x", "hook": "h"}"#).unwrap();
        assert_eq!(m.problems(), []);
        assert!(m.rule_specs().iter().all(|(_, r)| !r.cancel));
        let m = crate::json::from_value::<JsonMod>(
            &serde_json::json!({"id": "x", "rules": [{"hook": "h"}]}),
            "",
        )
        .unwrap();
        assert!(m.rule_specs().iter().all(|(_, r)| !r.cancel));
    }

    #[test]
    fn a_reversed_range_names_its_path() {
        let e = crate::json::from_value::<JsonMod>(
            &serde_json::json!({"id": "x", "hook": "h", "cancel": true, "match": [{"x": 1}, {"z": [3, 1]}]}),
            "",
        )
        .unwrap_err();
        assert_eq!(e.path, "match[1].z", "{e}");
        assert!(e.message.contains("min <= max"), "{e}");
    }
}

#[cfg(test)]
mod sections {
    use super::*;
    use crate::host::HookValue;

    fn ask(rules: &JsonRules, x: i64, z: i64, y: Option<i64>) -> Option<String> {
        let mut fields = vec![("x", HookValue::Int(x))];
        fields.extend(y.map(|y| ("y", HookValue::Int(y))));
        fields.push(("z", HookValue::Int(z)));
        rules
            .ask(&HookArgs {
                hook: "h",
                fields: &fields,
            })
            .unwrap()
            .map(|c| c.by.as_str().to_owned())
    }

    fn pattern(v: serde_json::Value) -> Vec<Match> {
        let m: Matches = serde_json::from_value(v).unwrap();
        m.patterns().to_vec()
    }

    #[test]
    fn a_pattern_naming_y_matches_only_sections_of_its_rows() {
        let mut r = JsonRules::default();
        r.push(ModId::new("exact"), &[Match::section(1, -2, 3)], "".into());
        r.push(
            ModId::new("deep"),
            &pattern(serde_json::json!({"y": [-100, -3]})),
            "".into(),
        );
        r.push(
            ModId::new("row"),
            &pattern(serde_json::json!({"x": 1, "z": 3, "y": [5, 6]})),
            "".into(),
        );
        r.push(ModId::new("column"), &[Match::chunk(1, 3)], "".into());
        assert_eq!(ask(&r, 1, 3, Some(-2)).as_deref(), Some("exact"));
        assert_eq!(ask(&r, 9, 9, Some(-3)).as_deref(), Some("deep"));
        assert_eq!(ask(&r, 9, 9, Some(-2)), None);
        assert_eq!(ask(&r, 1, 3, Some(6)).as_deref(), Some("row"));
        // A pattern without y matches every section of its column.
        assert_eq!(ask(&r, 1, 3, Some(0)).as_deref(), Some("column"));
        assert_eq!(ask(&r, 1, 3, Some(-50)).as_deref(), Some("deep"));
        // A flat ask carries no y: only the pattern without y matches it.
        assert_eq!(ask(&r, 1, 3, None).as_deref(), Some("column"));
        assert_eq!(ask(&r, 9, 9, None), None);
    }

    #[test]
    fn a_mod_may_set_the_shape_and_the_vertical_radius_but_not_the_height() {
        let m: JsonMod = serde_json::from_value(serde_json::json!({
            "id": "m", "set": {"shape": "disc", "vertical": {"radius": 3}}
        }))
        .unwrap();
        assert!(m.problems().is_empty());
        let set = m.set.unwrap();
        assert_eq!(set.shape, Some(crate::kits::streaming::Shape::Disc));
        assert_eq!(set.vertical.map(|v| v.radius.get()), Some(3));
        let m: JsonMod = serde_json::from_value(serde_json::json!({
            "id": "m", "set": {"vertical": {"radius": 3, "height": 8}}
        }))
        .unwrap();
        let p = m.problems();
        assert_eq!(p.len(), 1);
        assert_eq!(
            p[0].to_string(),
            "set.vertical.height: a mod may set only vertical.radius (the height is the scene's)"
        );
    }
}
