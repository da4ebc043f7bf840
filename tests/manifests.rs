//! Every kit's manifest (`kit.json` beside its code) against the kit itself: the id the catalog
//! knows, and its config section WHOLE against the settings the config declares (each once, in
//! `config_settings!` or the streaming kit's `settings!`): the keys in the order of the
//! declarations, each default, each type, each integer range, each number's bound, each list
//! of words, and every range a list's items have. What the declarations yield is read from the
//! config schema the code generates (which `tests/schemas.rs` holds to the committed files), so
//! nothing a manifest says about a setting can drift from what the checks apply.

use serde_json::Value;
use world_streaming::host::KitManifest;
use world_streaming::kits::{builtin_catalog, district, ground, nav, streaming, terrain};

/// The config schema of `file`, as the code makes it.
fn schema(file: &str) -> Value {
    let (_, text) = world_streaming::files::schemas::all()
        .into_iter()
        .find(|(name, _)| *name == file)
        .unwrap_or_else(|| panic!("no schema {file}"));
    serde_json::from_str(&text).unwrap()
}

/// `property` through its `$ref`; whether `null` is a value of the type itself
/// (`maxLoaded: null`, no cap) rather than the absent key of an `Option` field.
fn resolve<'a>(schema: &'a Value, property: &'a Value) -> (&'a Value, bool) {
    let mut def = property;
    let mut nullable_type = false;
    for _ in 0..8 {
        if let Some(r) = def.get("$ref").and_then(Value::as_str) {
            def = &schema["$defs"][r.trim_start_matches("#/$defs/")];
            nullable_type = types(def).contains(&"null");
        } else if let Some(any) = def.get("anyOf").and_then(Value::as_array) {
            // An `Option` field (`bounds`): the type that is not `null`.
            match any.iter().find(|s| s["type"] != "null") {
                Some(s) if any.len() == 2 => def = s,
                _ => break,
            }
        } else {
            break;
        }
    }
    (def, nullable_type)
}

fn types(def: &Value) -> Vec<&str> {
    match &def["type"] {
        Value::String(t) => vec![t.as_str()],
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// The words of a type that is one of several strings (`"player"`, `"players"`).
fn words(def: &Value) -> Option<Vec<String>> {
    let list = def.get("oneOf")?.as_array()?;
    list.iter()
        .map(|v| v.get("const")?.as_str().map(|w| format!("\"{w}\"")))
        .collect()
}

/// The alternatives of a type that is an integer range or one of some words (`workers`:
/// `0..=64 or "inline"`): its rule, whole; `None` for any other type.
fn range_or_words(def: &Value) -> Option<String> {
    let list = def.get("oneOf")?.as_array()?;
    let ranges: Vec<String> = list.iter().filter_map(integer_range).collect();
    let words: Vec<String> = list
        .iter()
        .filter_map(|v| v.get("const")?.as_str().map(|w| format!("\"{w}\"")))
        .collect();
    let whole = ranges.len() + words.len() == list.len();
    (whole && !ranges.is_empty() && !words.is_empty()).then(|| either(&[ranges, words].concat()))
}

/// `"a" or "b"`, `"a", "b" or "c"`.
fn either(words: &[String]) -> String {
    match words.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// The integer range of a definition: `minimum..=maximum` (a `u64` without a maximum), or
/// the least and greatest of an integer `enum`.
fn integer_range(def: &Value) -> Option<String> {
    if !types(def).contains(&"integer") {
        return None;
    }
    if let Some(values) = def.get("enum").and_then(Value::as_array) {
        let n: Vec<u64> = values.iter().filter_map(Value::as_u64).collect();
        return Some(format!("{}..={}", n.iter().min()?, n.iter().max()?));
    }
    let min = def.get("minimum")?.as_u64()?;
    let max = def.get("maximum").map_or(Some(u64::MAX), Value::as_u64)?;
    Some(format!("{min}..={max}"))
}

/// Every integer range and every `at most n` of a schema and what it holds (list items, object
/// properties, alternatives), through `$ref`s.
fn ranges_within(schema: &Value, node: &Value, out: &mut Vec<String>, depth: usize) {
    if depth > 8 {
        return;
    }
    let (def, _) = resolve(schema, node);
    out.extend(integer_range(def));
    if let Some(n) = def.get("maxItems").and_then(Value::as_u64) {
        out.push(format!("at most {n}"));
    }
    let mut children: Vec<&Value> = Vec::new();
    children.extend(def.get("items"));
    for key in ["anyOf", "oneOf"] {
        children.extend(def.get(key).and_then(Value::as_array).into_iter().flatten());
    }
    children.extend(
        def.get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flat_map(|p| p.values()),
    );
    for child in children {
        ranges_within(schema, child, out, depth + 1);
    }
}

/// Every `a..=b` written in `text`.
fn written_ranges(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, _) in text.match_indices("..=") {
        let digits = |s: &str| {
            s.chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
        };
        let before: String = digits(&text[..i].chars().rev().collect::<String>())
            .chars()
            .rev()
            .collect();
        let after = digits(&text[i + 3..]);
        if !before.is_empty() && !after.is_empty() {
            out.push(format!("{before}..={after}"));
        }
    }
    out
}

/// Every way the config section of `manifest` differs from the config it documents: `keys`
/// (the declarations' order) and the schema of `schema_file`. Empty when they agree whole.
fn differences(manifest: &KitManifest, schema_file: &str, keys: Option<&[&str]>) -> Vec<String> {
    let schema = schema(schema_file);
    let properties = schema["properties"].as_object().unwrap();
    let mut out = Vec::new();
    let mut say = |s: String| out.push(format!("{}: {s}", manifest.id));
    let declared: Vec<&str> = properties.keys().map(String::as_str).collect();
    if let Some(keys) = keys {
        assert_eq!(keys, declared, "the schema's keys are the declarations'");
    }
    let documented: Vec<&str> = manifest.config.keys().map(String::as_str).collect();
    if documented != declared {
        say(format!(
            "config keys {documented:?}, the config declares {declared:?}"
        ));
    }
    for (key, doc) in &manifest.config {
        let Some(property) = properties.get(key) else {
            continue;
        };
        // The default.
        let default = property.get("default").cloned().unwrap_or(Value::Null);
        let same = match (doc["default"].as_f64(), default.as_f64()) {
            (Some(a), Some(b)) => a == b, // 32 and 32.0
            _ => doc["default"] == default,
        };
        if !same {
            say(format!(
                "{key}: default {}, the config's is {default}",
                doc["default"]
            ));
        }
        if doc["doc"].as_str().is_none_or(str::is_empty) {
            say(format!("{key}: no doc"));
        }
        // The type.
        let (def, nullable_type) = resolve(&schema, property);
        let words = words(def);
        let mixed = range_or_words(def);
        let base = if mixed.is_some() {
            "integer or string"
        } else if words.is_some() {
            "string"
        } else {
            types(def).into_iter().find(|t| *t != "null").unwrap_or("?")
        };
        let written = doc["type"].as_str().unwrap_or("");
        let type_ok = match base {
            "array" => written == "array" || written.starts_with("list of "),
            _ if nullable_type => written == format!("{base} or null"),
            _ => written == base,
        };
        if !type_ok {
            say(format!(
                "{key}: type \"{written}\", the config's is {base}{}",
                if nullable_type { " or null" } else { "" }
            ));
        }
        // The rule: what the type checks, whole where the type is a range, a bound or words.
        let rule = doc["rule"].as_str().unwrap_or("");
        let exact = match base {
            _ if mixed.is_some() => mixed,
            "integer" => integer_range(def),
            "number" => {
                if let Some(x) = def.get("exclusiveMinimum") {
                    Some(format!("finite, > {x}"))
                } else {
                    def.get("minimum").map(|x| format!("finite, >= {x}"))
                }
            }
            "string" => words.as_deref().map(either),
            "boolean" => Some("true or false".to_owned()),
            _ => None,
        };
        if let Some(exact) = exact {
            if rule != exact {
                say(format!("{key}: rule \"{rule}\", the config checks {exact}"));
            }
        }
        let mut ranges = Vec::new();
        ranges_within(&schema, property, &mut ranges, 0);
        for range in &ranges {
            if !rule.contains(range.as_str()) {
                say(format!("{key}: rule \"{rule}\" does not say {range}"));
            }
        }
        for range in written_ranges(rule) {
            if !ranges.contains(&range) {
                say(format!(
                    "{key}: rule \"{rule}\" says {range}, the config checks {ranges:?}"
                ));
            }
        }
    }
    out
}

/// Each kit of the catalog: its manifest, its config schema and its declared keys.
fn kits() -> Vec<(KitManifest, &'static str, Option<&'static [&'static str]>)> {
    vec![
        (ground::manifest(), "ground-config.schema.json", None),
        (
            streaming::manifest(),
            "streaming-config.schema.json",
            Some(streaming::StreamingConfig::KEYS),
        ),
        (
            terrain::manifest(),
            "terrain-config.schema.json",
            Some(terrain::config::TerrainConfig::KEYS),
        ),
        (
            district::manifest(),
            "district-config.schema.json",
            Some(district::DistrictConfig::KEYS),
        ),
        (
            nav::manifest(),
            "nav-config.schema.json",
            Some(nav::NavConfig::KEYS),
        ),
    ]
}

#[test]
fn every_kit_manifest_documents_its_config_whole() {
    let catalog = builtin_catalog();
    let kits = kits();
    let ids: Vec<&str> = catalog.ids().filter(|id| *id != "game.engine").collect();
    let listed: Vec<&str> = kits.iter().map(|(m, _, _)| m.id.as_str()).collect();
    assert_eq!(
        ids, listed,
        "a kit of the catalog without its manifest check here"
    );
    let mut found = Vec::new();
    for (manifest, schema_file, keys) in &kits {
        assert_eq!(
            catalog.manifest(&manifest.id),
            Some(manifest),
            "the catalog's manifest of {} is not its kit.json",
            manifest.id
        );
        found.extend(differences(manifest, schema_file, *keys));
    }
    assert!(found.is_empty(), "{found:#?}");
}

/// A manifest that drifts in any part is caught: the LOD radii of issue 42 ("1..=4096" where
/// the code checks 1..=1024), and a change of each other kind.
#[test]
fn a_drifted_manifest_is_caught_whole() {
    type Drift = fn(&mut KitManifest);
    let streaming_drifts: [(&str, Drift); 12] = [
        ("lod: rule", |m| {
            m.config["lod"]["rule"] = Value::from("at most 4 levels; steps powers of two 2..=64 ascending; radii 1..=4096 strictly ascending and above the radius");
        }),
        ("lod: rule", |m| {
            m.config["lod"]["rule"] = Value::from("at most 5 levels; steps powers of two 2..=64 ascending; radii 1..=1024 strictly ascending and above the radius");
        }),
        ("radius: rule", |m| {
            m.config["radius"]["rule"] = Value::from("0..=65");
        }),
        ("holeRing: default", |m| {
            m.config["holeRing"]["default"] = Value::from(2);
        }),
        ("focus: rule", |m| {
            m.config["focus"]["rule"] = Value::from("\"player\" or \"everyone\"");
        }),
        ("chunkSize: rule", |m| {
            m.config["chunkSize"]["rule"] = Value::from("finite, >= 0");
        }),
        ("maxLoaded: type", |m| {
            m.config["maxLoaded"]["type"] = Value::from("integer");
        }),
        ("budgetMs: type", |m| {
            m.config["budgetMs"]["type"] = Value::from("integer");
        }),
        ("config keys", |m| {
            m.config.shift_remove("lodBudget");
        }),
        ("config keys", |m| {
            m.config.swap_indices(1, 2);
        }),
        ("config keys", |m| {
            m.config.insert(
                "radious".into(),
                serde_json::json!({"type": "integer", "default": 2, "rule": "0..=64", "doc": "a typo"}),
            );
        }),
        ("maxTicketChunks: no doc", |m| {
            m.config["maxTicketChunks"]["doc"] = Value::from("");
        }),
    ];
    let streaming = streaming::manifest();
    let keys = Some(streaming::StreamingConfig::KEYS);
    assert_eq!(
        differences(&streaming, "streaming-config.schema.json", keys),
        Vec::<String>::new()
    );
    for (expected, drift) in streaming_drifts {
        let mut m = streaming.clone();
        drift(&mut m);
        let found = differences(&m, "streaming-config.schema.json", keys);
        assert!(
            found
                .iter()
                .any(|d| d.starts_with(&format!("world.streaming: {expected}"))),
            "{expected}: {found:#?}"
        );
    }
    let mut nav = nav::manifest();
    nav.config["blocked"]["rule"] = Value::from("each a material 0..=256");
    let found = differences(&nav, "nav-config.schema.json", Some(nav::NavConfig::KEYS));
    assert!(
        found.iter().any(|d| d.contains("blocked: rule")),
        "{found:#?}"
    );
    let mut nav = nav::manifest();
    nav.config["diagonal"]["default"] = Value::from(true);
    let found = differences(&nav, "nav-config.schema.json", Some(nav::NavConfig::KEYS));
    assert!(
        found.iter().any(|d| d.contains("diagonal: default")),
        "{found:#?}"
    );
    let mut terrain = terrain::manifest();
    terrain.config["seed"]["rule"] = Value::from("0..=4294967295");
    let found = differences(
        &terrain,
        "terrain-config.schema.json",
        Some(terrain::config::TerrainConfig::KEYS),
    );
    assert!(found.iter().any(|d| d.contains("seed: rule")), "{found:#?}");
}

/// `workers` is an integer range or a word (docs/reference/terrain.md#inline): the manifest says
/// both, whole, and a rule or type that leaves one out is caught.
#[test]
fn the_workers_rule_names_the_range_and_inline() {
    let keys = Some(terrain::config::TerrainConfig::KEYS);
    let terrain = terrain::manifest();
    assert_eq!(terrain.config["workers"]["rule"], "0..=64 or \"inline\"");
    assert_eq!(terrain.config["workers"]["type"], "integer or string");
    let drifts: [(&str, &str, &str); 4] = [
        ("rule", "0..=64", "workers: rule"),
        ("rule", "\"inline\"", "workers: rule"),
        ("rule", "0..=63 or \"inline\"", "workers: rule"),
        ("type", "integer", "workers: type"),
    ];
    for (field, value, expected) in drifts {
        let mut m = terrain.clone();
        m.config["workers"][field] = Value::from(value);
        let found = differences(&m, "terrain-config.schema.json", keys);
        assert!(
            found
                .iter()
                .any(|d| d.starts_with(&format!("world.terrain: {expected}"))),
            "{field} {value}: {found:#?}"
        );
    }
}

/// The `lod` key is a list: its rule names the level count, the steps' range and the radii's
/// range the code applies, word for word.
#[test]
fn the_lod_rule_of_the_manifest_is_the_codes() {
    use world_streaming::kits::streaming::config::{
        MAX_LOD_LEVELS, MAX_LOD_RADIUS, MAX_LOD_STEP, MIN_LOD_STEP,
    };
    let manifest = streaming::manifest();
    let rule = manifest.config["lod"]["rule"].as_str().unwrap();
    for part in [
        format!("at most {MAX_LOD_LEVELS} levels"),
        format!("steps powers of two {MIN_LOD_STEP}..={MAX_LOD_STEP}"),
        format!("radii 1..={MAX_LOD_RADIUS} "),
    ] {
        assert!(
            rule.contains(&part),
            "streaming's kit.json says of lod \"{rule}\", without \"{part}\""
        );
    }
}

/// The keys a layer or a mod may set are the config's but `chunkSize` and `maxTicketChunks`,
/// and the manifest says of those two that only the config sets them.
#[test]
fn the_keys_a_layer_may_set_are_declared_with_the_configs() {
    let config = streaming::StreamingConfig::KEYS;
    let layered = streaming::Overrides::KEYS;
    let alone: Vec<&str> = config
        .iter()
        .copied()
        .filter(|k| !layered.contains(k))
        .collect();
    assert_eq!(alone, ["chunkSize", "maxTicketChunks"]);
    assert!(layered.iter().all(|k| config.contains(k)));
    let manifest = streaming::manifest();
    let doc = manifest.config["maxTicketChunks"]["doc"].as_str().unwrap();
    assert!(doc.contains("layers and mods cannot set it"), "{doc}");
}
