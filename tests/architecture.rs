//! The floors of `ARCHITECTURE.md` are the rule the code keeps: every room (a top-level module of
//! `src/`, or a kit under `src/kits/`) names in its non-test code (`crate::…` or
//! `world_streaming::…` paths) only rooms of its own floor or below, rooms on one floor depend on
//! each other without a cycle, and no kit names `mods` or `files`. The table of floors is read
//! from `ARCHITECTURE.md` itself, so the drawing and the check cannot disagree.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The room a file of `src/` belongs to (`None` for the crate roots).
fn room_of(file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src()).unwrap();
    let parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_owned())
        .collect();
    match parts.as_slice() {
        [root] if root == "lib" => None,
        [kits, kit, ..] if kits == "kits" && kit != "mod" => Some(format!("kits/{kit}")),
        [first, ..] => Some(first.clone()),
        [] => None,
    }
}

/// The text of a file without its `#[cfg(test)]` module and its comments.
fn code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => text,
    };
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The rooms a file's code names: `crate::a::b` or `world_streaming::a::b` is room `kits/b` when
/// `a` is `kits` and `b` a kit, else room `a` (a macro exported at the root, `checked_number!`,
/// is the room that defines it).
fn named_rooms(
    code: &str,
    rooms: &BTreeSet<String>,
    macros: &BTreeMap<String, String>,
) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for prefix in ["crate::", "world_streaming::"] {
        let mut rest = code;
        while let Some(i) = rest.find(prefix) {
            let before = rest[..i].chars().last();
            rest = &rest[i + prefix.len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue; // `$crate::`, `my_crate::`
            }
            let ident = |s: &str| -> String {
                s.chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect()
            };
            let first = ident(rest);
            let second = rest
                .strip_prefix(first.as_str())
                .and_then(|r| r.strip_prefix("::"))
                .map(ident)
                .unwrap_or_default();
            let kit = format!("kits/{second}");
            if first == "kits" && rooms.contains(&kit) {
                out.insert(kit);
            } else if rooms.contains(&first) {
                out.insert(first);
            } else if let Some(room) = macros.get(&first) {
                out.insert(room.clone());
            }
        }
    }
    out
}

/// The floors of ARCHITECTURE.md: `| N. name | `room`, `room` | … |` rows, room → floor number.
fn floors() -> BTreeMap<String, u32> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("ARCHITECTURE.md");
    let text = std::fs::read_to_string(path).unwrap();
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() < 4 {
            continue;
        }
        let Some((n, _)) = cells[1].split_once(". ") else {
            continue;
        };
        let Ok(n) = n.parse::<u32>() else { continue };
        for room in cells[2].split(',') {
            let room = room.trim().trim_matches('`').trim_end_matches('/');
            let room = room.trim_end_matches(".rs");
            out.insert(room.to_owned(), n);
        }
    }
    out
}

struct Graph {
    rooms: BTreeSet<String>,
    edges: BTreeMap<String, BTreeMap<String, BTreeSet<String>>>,
}

fn graph() -> Graph {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    files.sort();
    let rooms: BTreeSet<String> = files.iter().filter_map(|f| room_of(f)).collect();
    let mut macros = BTreeMap::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for (i, _) in text.match_indices("macro_rules! ") {
            let name: String = text[i + 13..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if let Some(room) = room_of(f) {
                macros.insert(name, room);
            }
        }
    }
    let mut edges: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for f in &files {
        let Some(room) = room_of(f) else { continue };
        let text = code(&std::fs::read_to_string(f).unwrap());
        for to in named_rooms(&text, &rooms, &macros) {
            if to != room {
                let rel = f.strip_prefix(src()).unwrap().display().to_string();
                edges
                    .entry(room.clone())
                    .or_default()
                    .entry(to)
                    .or_default()
                    .insert(rel);
            }
        }
    }
    Graph { rooms, edges }
}

#[test]
fn every_room_has_a_floor_and_names_only_its_own_floor_or_below() {
    let g = graph();
    let floors = floors();
    let unplaced: Vec<&String> = g
        .rooms
        .iter()
        .filter(|r| !floors.contains_key(*r))
        .collect();
    assert!(
        unplaced.is_empty(),
        "rooms without a floor in ARCHITECTURE.md: {unplaced:?}"
    );
    let mut upward = Vec::new();
    for (from, tos) in &g.edges {
        for (to, files) in tos {
            if floors[to] > floors[from] {
                upward.push(format!(
                    "{from} (floor {}) names {to} (floor {}) in {files:?}",
                    floors[from], floors[to]
                ));
            }
        }
    }
    assert!(
        upward.is_empty(),
        "upward dependencies:\n{}",
        upward.join("\n")
    );
}

#[test]
fn the_rooms_form_no_cycle() {
    let g = graph();
    // Kahn's algorithm: what cannot be removed lies on (or behind) a cycle.
    let mut left: BTreeMap<&str, BTreeSet<&str>> = g
        .rooms
        .iter()
        .map(|r| {
            let tos = g
                .edges
                .get(r)
                .map(|t| t.keys().map(String::as_str).collect())
                .unwrap_or_default();
            (r.as_str(), tos)
        })
        .collect();
    loop {
        let leaves: Vec<&str> = left
            .iter()
            .filter(|(_, tos)| tos.is_empty())
            .map(|(r, _)| *r)
            .collect();
        if leaves.is_empty() {
            break;
        }
        for leaf in leaves {
            left.remove(leaf);
            for tos in left.values_mut() {
                tos.remove(leaf);
            }
        }
    }
    assert!(left.is_empty(), "rooms on a cycle: {left:?}");
}

#[test]
fn no_kit_names_mods_or_files() {
    let g = graph();
    for (from, tos) in &g.edges {
        if from.starts_with("kits/") {
            for forbidden in ["mods", "files", "fileio"] {
                assert!(
                    !tos.contains_key(forbidden),
                    "{from} names {forbidden} in {:?}",
                    tos[forbidden]
                );
            }
        }
    }
}

#[test]
fn the_check_sees_an_upward_name() {
    // The parser finds what the rules are about: the streaming kit names the host and grid,
    // the CLI (through `world_streaming::`) the game.
    let g = graph();
    let streaming = &g.edges["kits/streaming"];
    assert!(streaming.contains_key("host") && streaming.contains_key("grid"));
    assert!(g.edges["cli"].contains_key("game"));
    assert!(g.edges["kits/terrain"].contains_key("kits/streaming"));
}

#[test]
fn no_source_file_names_a_path_outside_the_repository() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for outside in ["../shared", "shared/SPEC", "seeds/"] {
            assert!(
                !text.contains(outside),
                "{}: names `{outside}`, a path outside the repository",
                f.display()
            );
        }
    }
}

/// A kit's pure parts (a planner, a generator, a file format: no threads, no I/O, no host), by
/// kit and by module under the kit (a file `x.rs` or a folder `x/`).
const PURE: &[(&str, &[&str])] = &[
    ("district", &["region", "index"]),
    ("nav", &["search"]),
    ("streaming", &["lod", "residency"]),
    ("terrain", &["generate", "region"]),
];

/// What a pure part may name outside the pure set: the kit's settings types the planner is
/// given (`Lod`, `LodLevel`, `MAX_LOD_LEVELS` of `streaming/config.rs`; `config` names no pure
/// part, so this is no circle).
const PURE_MAY_NAME: &[(&str, &str, &str)] = &[("streaming", "lod", "config")];

/// The module path under its kit of a file of `src/kits/<kit>/` (`lod/area.rs` is `[lod, area]`,
/// `lod/mod.rs` is `[lod]`, `mod.rs` is `[]`).
fn kit_path(file: &Path) -> Option<(String, Vec<String>)> {
    let rel = file.strip_prefix(src().join("kits")).ok()?;
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_owned())
        .collect();
    if parts.len() < 2 {
        return None;
    }
    let kit = parts.remove(0);
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    Some((kit, parts))
}

/// The kit's modules (files and folders) a file names, by their first segment under the kit
/// (`super::x`, `super::super::x`, `crate::kits::<kit>::x`); `mod` for an item of the kit's
/// `mod.rs` itself.
fn kit_modules_named(
    kit: &str,
    path: &[String],
    code: &str,
    modules: &BTreeSet<String>,
) -> BTreeSet<String> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let resolve = |target: Vec<String>, out: &mut BTreeSet<String>| match target.first() {
        Some(first) if modules.contains(first) => {
            out.insert(first.clone());
        }
        Some(_) => {
            out.insert("mod".to_owned());
        }
        None => {}
    };
    let mut out = BTreeSet::new();
    let mut rest = code;
    while let Some(i) = rest.find("super::") {
        let before = rest[..i].chars().last();
        let after_colons = rest[..i].ends_with("::");
        rest = &rest[i..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') || after_colons {
            rest = &rest["super::".len()..];
            continue;
        }
        let mut ups = 0;
        while let Some(r) = rest.strip_prefix("super::") {
            ups += 1;
            rest = r;
        }
        let name = ident(rest);
        if ups > path.len() || name.is_empty() {
            continue;
        }
        let mut target: Vec<String> = path[..path.len() - ups].to_vec();
        target.push(name);
        resolve(target, &mut out);
    }
    let own = format!("crate::kits::{kit}::");
    for (i, _) in code.match_indices(&own) {
        resolve(vec![ident(&code[i + own.len()..])], &mut out);
    }
    out
}

#[test]
fn a_kit_s_pure_parts_name_no_sibling_outside_the_pure_set() {
    let mut problems = Vec::new();
    for (kit, pure) in PURE {
        let dir = src().join("kits").join(kit);
        let mut files = Vec::new();
        rust_files(&dir, &mut files);
        files.sort();
        let modules: BTreeSet<String> = files
            .iter()
            .filter_map(|f| kit_path(f))
            .filter_map(|(_, p)| p.first().cloned())
            .collect();
        for part in *pure {
            assert!(
                modules.contains(*part),
                "kits/{kit}: the pure part `{part}` of tests/architecture.rs is gone"
            );
        }
        for f in &files {
            let Some((_, path)) = kit_path(f) else {
                continue;
            };
            let Some(first) = path.first() else { continue };
            if !pure.contains(&first.as_str()) {
                continue;
            }
            let text = code(&std::fs::read_to_string(f).unwrap());
            for named in kit_modules_named(kit, &path, &text, &modules) {
                let allowed = pure.contains(&named.as_str())
                    || PURE_MAY_NAME.contains(&(*kit, first.as_str(), named.as_str()));
                if !allowed {
                    problems.push(format!(
                        "{}: the pure part `{first}` of kits/{kit} names `{named}`",
                        f.strip_prefix(src()).unwrap().display()
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_pure_check_sees_a_sibling() {
    // The resolver finds what the rule is about: `super::state` from a kit's file, two levels
    // up from a folder's file, and the kit's own path.
    let modules: BTreeSet<String> = ["state", "lod", "config"].map(String::from).into();
    let top = vec!["region".to_owned()];
    let deep = vec!["lod".to_owned(), "area".to_owned()];
    let named = |path: &[String], code: &str| kit_modules_named("k", path, code, &modules);
    assert_eq!(
        named(&top, "use super::state::Stored;"),
        ["state".to_owned()].into()
    );
    assert_eq!(named(&deep, "use super::Area;"), ["lod".to_owned()].into());
    assert_eq!(
        named(&deep, "use super::super::config::Lod;"),
        ["config".to_owned()].into()
    );
    assert_eq!(
        named(&top, "crate::kits::k::GENERATOR"),
        ["mod".to_owned()].into()
    );
    assert!(named(&top, "use crate::grid::ChunkPos;").is_empty());
}

#[test]
fn no_source_file_holds_more_than_a_thousand_lines_of_code() {
    // Lines of code: not blank, not only a comment, before the file's test module (tests beside
    // the code do not count). A file past it holds several topics: split it by topic (as
    // `streaming/lod/`, `streaming/residency/` and `worlddir/store/` are), or say in
    // ARCHITECTURE.md why it is one concept and raise the limit for it here.
    const LIMIT: usize = 1000;
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut over = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let end = [
            "#[cfg(test)]\nmod tests",
            "#[cfg(test)]\npub(crate) mod tests",
        ]
        .iter()
        .filter_map(|m| text.find(m))
        .min()
        .unwrap_or(text.len());
        let lines = text[..end]
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with("//"))
            .count();
        if lines > LIMIT {
            over.push(format!(
                "{}: {lines} lines of code",
                f.strip_prefix(src()).unwrap().display()
            ));
        }
    }
    assert!(
        over.is_empty(),
        "over {LIMIT} lines of code:\n{}",
        over.join("\n")
    );
}
