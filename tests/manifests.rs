//! Every kit's manifest (`kit.json` beside its code) against the kit itself: the id the catalog
//! knows, one documented entry per config key in the order of the config type, each default the
//! type's default, and each integer range the one the type declares (read from the committed
//! config schema, which `tests/schemas.rs` holds to the code). A range written in a manifest can
//! then never drift from the one the checks apply.

use serde_json::Value;
use world_streaming::host::KitManifest;
use world_streaming::kits::{builtin_catalog, district, ground, nav, streaming, terrain};

fn schema(name: &str) -> Value {
    let path = format!("{}/schemas/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// The `minimum..=maximum` an integer property declares, through its `$ref` if it has one.
fn range(schema: &Value, property: &Value) -> Option<String> {
    let def = match property.get("$ref").and_then(Value::as_str) {
        Some(r) => &schema["$defs"][r.trim_start_matches("#/$defs/")],
        None => property,
    };
    let integer = match &def["type"] {
        Value::String(t) => t == "integer",
        Value::Array(ts) => ts.iter().any(|t| t == "integer"),
        _ => false,
    };
    let (min, max) = (def.get("minimum")?.as_u64()?, def.get("maximum")?.as_u64()?);
    integer.then(|| format!("{min}..={max}"))
}

fn check(manifest: &KitManifest, schema_file: &str) -> usize {
    let schema = schema(schema_file);
    let properties = schema["properties"].as_object().unwrap();
    let keys: Vec<&String> = properties.keys().collect();
    let documented: Vec<&String> = manifest.config.keys().collect();
    assert_eq!(documented, keys, "{}: config keys", manifest.id);
    let mut ranges = 0;
    for (key, doc) in &manifest.config {
        let property = &properties[key];
        let default = property.get("default").cloned().unwrap_or(Value::Null);
        let same = match (doc["default"].as_f64(), default.as_f64()) {
            (Some(a), Some(b)) => a == b, // 32 and 32.0
            _ => doc["default"] == default,
        };
        assert!(
            same,
            "{}: {key}: the manifest's default {} is not the config's {default}",
            manifest.id, doc["default"]
        );
        assert!(
            doc["doc"].as_str().is_some_and(|d| !d.is_empty()),
            "{}: {key} is not documented",
            manifest.id
        );
        if let Some(range) = range(&schema, property) {
            assert_eq!(
                doc["rule"].as_str(),
                Some(range.as_str()),
                "{}: {key}: the manifest's rule differs from the range the config checks",
                manifest.id
            );
            ranges += 1;
        }
    }
    ranges
}

#[test]
fn every_kit_manifest_agrees_with_its_config_type() {
    let catalog = builtin_catalog();
    let kits = [
        (ground::manifest(), "ground-config.schema.json"),
        (streaming::manifest(), "streaming-config.schema.json"),
        (terrain::manifest(), "terrain-config.schema.json"),
        (district::manifest(), "district-config.schema.json"),
        (nav::manifest(), "nav-config.schema.json"),
    ];
    let ids: Vec<&str> = catalog.ids().filter(|id| *id != "game.engine").collect();
    let listed: Vec<&str> = kits.iter().map(|(m, _)| m.id.as_str()).collect();
    assert_eq!(
        ids, listed,
        "a kit of the catalog without its manifest check here"
    );
    let mut ranges = 0;
    for (manifest, schema_file) in &kits {
        assert_eq!(
            catalog.manifest(&manifest.id),
            Some(manifest),
            "the catalog's manifest of {} is not its kit.json",
            manifest.id
        );
        ranges += check(manifest, schema_file);
    }
    // radius, maxLoaded, maxRefusalsPerMod, lookAheadTicks, holeRing, lodBudget,
    // maxTicketChunks, cellsPerChunk, workers, commitLatency, flushEveryTicks, maxStep, maxNodes,
    // the district's flushEveryTicks
    assert_eq!(ranges, 14);
}

#[test]
fn a_manifest_whose_range_differs_from_the_code_is_caught() {
    let mut manifest = streaming::manifest();
    manifest.config["radius"]["rule"] = Value::from("0..=65");
    let caught = std::panic::catch_unwind(|| check(&manifest, "streaming-config.schema.json"));
    assert!(caught.is_err());
}
