//! The README and the book (`docs/`) are checked like code:
//! - every `json` or `lua` block is preceded by `<!-- file: PATH -->` and is that shipped file
//!   byte for byte, and every such file passes `check`;
//! - every relative link (and image) points at a file of the repository, and a `#fragment` into a
//!   Markdown file at one of its headings;
//! - `docs/SUMMARY.md` lists every chapter, and the documentation names no path outside the
//!   repository.
//!
//! The Rust blocks are doctests (`src/lib.rs` includes the README and `docs/rust.md`); the C block
//! of `docs/capi.md` is compiled and run by `tests/capi_c.rs`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use assert_cmd::Command;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The README and every Markdown file under `docs/`, in path order.
fn documents() -> Vec<PathBuf> {
    let mut out = vec![repo().join("README.md"), repo().join("ARCHITECTURE.md")];
    let mut stack = vec![repo().join("docs")];
    let mut book = Vec::new();
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                book.push(path);
            }
        }
    }
    book.sort();
    out.extend(book);
    out
}

fn rel(path: &Path) -> String {
    path.strip_prefix(repo())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// `(marker, language, body)` of every fenced block, the marker being the line before the fence
/// when it is an HTML comment.
fn blocks(text: &str) -> Vec<(Option<String>, String, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if let Some(lang) = lines[i].strip_prefix("```") {
            let marker = i
                .checked_sub(1)
                .map(|j| lines[j].trim())
                .and_then(|l| l.strip_prefix("<!-- file: "))
                .and_then(|l| l.strip_suffix(" -->"))
                .map(str::to_owned);
            let end = (i + 1..lines.len())
                .find(|&j| lines[j] == "```")
                .expect("every fence is closed");
            let body: String = lines[i + 1..end].iter().map(|l| format!("{l}\n")).collect();
            out.push((marker, lang.to_owned(), body));
            i = end + 1;
        } else {
            i += 1;
        }
    }
    out
}

/// The text outside fenced blocks and inline code spans, where links live.
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            // Inline code spans are not links.
            let mut inside = false;
            for part in line.split('`') {
                if !inside {
                    out.push_str(part);
                }
                inside = !inside;
            }
            out.push('\n');
        }
    }
    out
}

/// Every `](target)` of the prose.
fn links(text: &str) -> Vec<String> {
    let prose = prose(text);
    let mut out = Vec::new();
    let mut rest = prose.as_str();
    while let Some(i) = rest.find("](") {
        rest = &rest[i + 2..];
        if let Some(end) = rest.find(')') {
            out.push(rest[..end].to_owned());
            rest = &rest[end..];
        }
    }
    out
}

/// The fragment a heading gets (GitHub's and mdBook's rule: lowercase, spaces to `-`, keep
/// letters, digits, `-` and `_`).
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn headings(text: &str) -> BTreeSet<String> {
    let mut fenced = false;
    let mut out = BTreeSet::new();
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            out.insert(slug(line.trim_start_matches('#')));
        }
    }
    out
}

#[test]
fn every_json_and_lua_snippet_of_the_readme_and_the_book_is_a_shipped_file_byte_for_byte() {
    let mut files = Vec::new();
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        for (marker, lang, body) in blocks(&text) {
            if lang != "json" && lang != "lua" {
                continue;
            }
            let path = marker.unwrap_or_else(|| {
                panic!(
                    "{}: a {lang} snippet without `<!-- file: PATH -->` before it:\n{body}",
                    rel(&doc)
                )
            });
            let shipped = std::fs::read_to_string(repo().join(&path))
                .unwrap_or_else(|e| panic!("{}: {path}: {e}", rel(&doc)));
            assert_eq!(body, shipped, "{}: {path} differs from the file", rel(&doc));
            files.push(path);
        }
    }
    files.sort();
    files.dedup();
    assert!(files.len() >= 6, "{files:?}");
    let out = Command::cargo_bin("world-streaming")
        .unwrap()
        .current_dir(repo())
        .arg("check")
        .args(&files)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The JavaScript example of the book is shipped and run: a `js` block marked `<!-- file: PATH -->`
/// is that file byte for byte (`web/example.mjs`, which `web/test/package.test.js` runs from the
/// installed npm package).
#[test]
fn every_javascript_snippet_marked_with_a_file_is_that_shipped_file_byte_for_byte() {
    let mut checked = Vec::new();
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        for (marker, lang, body) in blocks(&text) {
            let (Some(path), "js") = (marker, lang.as_str()) else {
                continue;
            };
            let shipped = std::fs::read_to_string(repo().join(&path))
                .unwrap_or_else(|e| panic!("{}: {path}: {e}", rel(&doc)));
            assert_eq!(body, shipped, "{}: {path} differs from the file", rel(&doc));
            checked.push(path);
        }
    }
    assert!(
        checked.iter().any(|p| p == "web/example.mjs"),
        "the book shows web/example.mjs nowhere: {checked:?}"
    );
}

#[test]
fn every_relative_link_of_the_readme_and_the_book_points_at_a_file_and_heading_of_the_repository() {
    let root = repo().canonicalize().unwrap();
    let mut checked = 0;
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        for link in links(&text) {
            if link.starts_with("https://") || link.starts_with("http://") {
                continue; // a public page (a crate's docs), not a path
            }
            let (file, fragment) = match link.split_once('#') {
                Some((f, frag)) => (f, Some(frag)),
                None => (link.as_str(), None),
            };
            let target = if file.is_empty() {
                doc.clone()
            } else {
                doc.parent().unwrap().join(file)
            };
            let target = target
                .canonicalize()
                .unwrap_or_else(|e| panic!("{}: link {link}: {e}", rel(&doc)));
            assert!(
                target.starts_with(&root),
                "{}: link {link} leaves the repository",
                rel(&doc)
            );
            if let Some(fragment) = fragment {
                let heads = headings(&std::fs::read_to_string(&target).unwrap());
                assert!(
                    heads.contains(fragment),
                    "{}: link {link}: no heading #{fragment} in {} (it has {heads:?})",
                    rel(&doc),
                    rel(&target)
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 20, "only {checked} links found");
}

#[test]
fn the_summary_lists_every_chapter_of_the_book_and_nothing_points_outside_the_repository() {
    let summary = std::fs::read_to_string(repo().join("docs/SUMMARY.md")).unwrap();
    let listed: BTreeSet<String> = links(&summary).into_iter().collect();
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        for outside in ["../shared", "shared/SPEC", "seeds/"] {
            assert!(
                !text.contains(outside),
                "{}: names `{outside}`, a path outside the repository",
                rel(&doc)
            );
        }
        let Ok(chapter) = doc.strip_prefix(repo().join("docs")) else {
            continue;
        };
        let chapter = chapter.display().to_string();
        if chapter != "SUMMARY.md" {
            assert!(
                listed.contains(&chapter),
                "docs/SUMMARY.md does not list {chapter}"
            );
        }
    }
}

#[test]
fn the_readme_stays_a_short_page() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines <= 250,
        "the README has {lines} lines: the book under docs/ holds the rest"
    );
    assert!(
        readme.starts_with("# world-streaming\n\n```sh\ncargo run --release"),
        "the README opens with the two commands"
    );
}

/// The files whose text may cite the book: the code, tests, benchmarks, examples, the C header
/// and the bindings, the JavaScript module (`web/`), scripts, the manifest, the README, ARCHITECTURE.md and the book itself
/// (`target/` and `vendor/` aside), in path order.
fn citing_files() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack: Vec<PathBuf> = [
        "src", "tests", "benches", "examples", "include", "bindings", "fuzz", "scripts", "docs",
        "web",
    ]
    .iter()
    .map(|d| repo().join(d))
    .filter(|d| d.is_dir())
    .collect();
    for f in [
        "README.md",
        "ARCHITECTURE.md",
        "Cargo.toml",
        "build.rs",
        "cbindgen.toml",
    ] {
        if repo().join(f).is_file() {
            out.push(repo().join(f));
        }
    }
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                if name != "target"
                    && name != "vendor"
                    && name != "node_modules"
                    && !name.starts_with('.')
                {
                    stack.push(path);
                }
            } else if [
                ".rs", ".md", ".h", ".c", ".cs", ".js", ".mjs", ".ts", ".json", ".sh", ".toml",
                ".lua", ".py",
            ]
            .iter()
            .any(|ext| name.ends_with(ext))
            {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// Every `docs/….md` or `docs/….md#anchor` that `text` names, with its line: the citations of the
/// book in comments, strings and prose (`docs/reference/tick.md#the-release-step`), and links to
/// the book from outside it. A path that starts with `../` is relative to the citing file.
fn book_citations(text: &str) -> Vec<(usize, String, Option<String>)> {
    let path_char = |c: char| c.is_ascii_alphanumeric() || "_./-".contains(c);
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let mut from = 0;
        while let Some(i) = line[from..].find("docs/") {
            let at = from + i;
            from = at + 5;
            let start = line[..at]
                .char_indices()
                .rev()
                .take_while(|&(_, c)| path_char(c))
                .last()
                .map_or(at, |(j, _)| j);
            let token: String = line[start..]
                .chars()
                .take_while(|&c| path_char(c))
                .collect();
            // Only a path to a Markdown file: `docs/` alone, `docs/*.md` or a directory is prose.
            let Some(md_end) = token.find(".md").map(|e| e + 3) else {
                continue;
            };
            let file = token[..md_end].to_owned();
            if !file.starts_with("docs/") && !file.starts_with("../") && !file.starts_with("./") {
                continue;
            }
            let rest = &line[start + md_end..];
            let anchor = rest.strip_prefix('#').map(|r| {
                r.chars()
                    .take_while(|&c| c.is_alphanumeric() || c == '-' || c == '_')
                    .collect::<String>()
            });
            out.push((n + 1, file, anchor));
        }
    }
    out
}

#[test]
fn every_citation_of_the_book_in_code_tests_and_docs_names_a_chapter_and_heading_it_has() {
    let root = repo().canonicalize().unwrap();
    let mut checked = 0;
    let mut bad = Vec::new();
    for path in citing_files() {
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue; // not UTF-8: no citation in it
        };
        for (line, file, anchor) in book_citations(&text) {
            let target = if file.starts_with("docs/") {
                repo().join(&file)
            } else {
                path.parent().unwrap().join(&file)
            };
            let Ok(target) = target.canonicalize() else {
                bad.push(format!("{}:{line}: {file}: no such file", rel(&path)));
                continue;
            };
            if !target.starts_with(&root) {
                bad.push(format!(
                    "{}:{line}: {file} leaves the repository",
                    rel(&path)
                ));
                continue;
            }
            if let Some(anchor) = anchor.filter(|a| !a.is_empty()) {
                let heads = headings(&std::fs::read_to_string(&target).unwrap());
                if !heads.contains(&anchor) {
                    bad.push(format!(
                        "{}:{line}: {file}#{anchor}: {} has no such heading",
                        rel(&path),
                        rel(&target)
                    ));
                    continue;
                }
            }
            checked += 1;
        }
    }
    assert!(
        bad.is_empty(),
        "citations of the book that do not resolve:\n{}",
        bad.join("\n")
    );
    assert!(checked >= 20, "only {checked} citations found");
}

#[test]
fn no_citation_names_a_numbered_section_of_a_document_the_repository_does_not_hold() {
    // The contract is the book: code, tests and docs cite `docs/reference/<chapter>.md#<anchor>`
    // (checked above), never a section number of the design document the kit was first built
    // from, which a clone of the repository does not have.
    let mut found = Vec::new();
    for path in citing_files() {
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            let numbered = line
                .match_indices('\u{a7}')
                .any(|(i, s)| line[i + s.len()..].starts_with(|c: char| c.is_ascii_digit()));
            if numbered || line.contains("SPEC \u{a7}") {
                found.push(format!("{}:{}: {}", rel(&path), n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "{} citations of numbered sections; cite the book's chapter and heading instead \
         (docs/reference/index.md#citing-a-rule):\n{}",
        found.len(),
        found.join("\n")
    );
}
