//! The README's snippets are the shipped files: every `json` or `lua` block of the README is
//! preceded by `<!-- file: PATH -->` and is that file byte for byte, and every such file checks.

use std::path::Path;

use assert_cmd::Command;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
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

#[test]
fn every_json_and_lua_snippet_of_the_readme_is_a_shipped_file_byte_for_byte() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let mut files = Vec::new();
    for (marker, lang, body) in blocks(&readme) {
        if lang != "json" && lang != "lua" {
            continue;
        }
        let path = marker.unwrap_or_else(|| {
            panic!("a {lang} snippet without `<!-- file: PATH -->` before it:\n{body}")
        });
        let shipped =
            std::fs::read_to_string(repo().join(&path)).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(body, shipped, "the README's {path} differs from the file");
        files.push(path);
    }
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
