//! The page: `page.html` with `view.css`, `view.js` (the drawing core) and the layers' drawings
//! inlined, the data embedded.

use std::fmt::Write as _;

use super::model::ViewData;

const PAGE: &str = include_str!("page.html");

const CSS: &str = include_str!("view.css");

const JS: &str = include_str!("view.js");

/// Where `view.js` takes the layers' drawings.
const LAYERS: &str = "/*{{LAYERS}}*/";

/// What tells a live page (`play`) from a recorded one: the parts of `page.html` that differ.
pub(super) struct Variant<'a> {
    /// Added to the Content-Security-Policy's `script-src`.
    pub csp: &'a str,
    /// The title's last word.
    pub kind: &'a str,
    /// Attributes of `<body>`.
    pub body: &'a str,
    /// The Step button's tooltip.
    pub step: &'a str,
    /// Controls after the Step button.
    pub controls: &'a str,
    /// The keys line.
    pub keys: &'a str,
    /// Elements after the drawing core's script.
    pub play: &'a str,
}

/// A recorded page's parts.
const RECORDED: Variant<'static> = Variant {
    csp: "",
    kind: "replay",
    body: "",
    step: "Step one tick (→)",
    controls: "",
    keys: "Keys: Space start/pause · → or . step · ← or , back · Home or R reset · End last tick. \
           x grows to the right, z downwards.",
    play: "",
};

/// `text` as JSON inside a `<script type="application/json">`: `<`, `>` and `&` escaped so that
/// no text from the run (a mod's reason, an entity id) can close the element.
pub(super) fn script_json(json: &str) -> String {
    let mut safe = String::with_capacity(json.len());
    for ch in json.chars() {
        match ch {
            '<' => safe.push_str("\\u003c"),
            '>' => safe.push_str("\\u003e"),
            '&' => safe.push_str("\\u0026"),
            c => safe.push(c),
        }
    }
    safe
}

/// `text` as HTML text or an attribute's value.
pub(super) fn html_text(text: &str) -> String {
    let mut out = String::new();
    for ch in text.chars() {
        match ch {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            c => {
                let _ = out.write_char(c);
            }
        }
    }
    out
}

/// The page: `page.html` with the CSS, the JS and the data inlined. The data is JSON inside a
/// `<script type="application/json">`, with `<`, `>` and `&` escaped so that no text from the run
/// (a mod's reason, an entity id) can close the element.
pub fn render(data: &ViewData) -> String {
    let json = serde_json::to_string(data).expect("plain data");
    page(&data.title, &script_json(&json), &data.scripts, &RECORDED)
}

/// `page.html` filled: the title, the data (already made safe), the layers' drawings and the
/// variant's parts.
pub(super) fn page(title: &str, data: &str, scripts: &[&str], v: &Variant<'_>) -> String {
    let title = html_text(title);
    fill(
        PAGE,
        &[
            ("{{CSP}}", v.csp),
            ("{{TITLE}}", &title),
            ("{{KIND}}", v.kind),
            ("/*{{CSS}}*/", CSS),
            ("{{BODY}}", v.body),
            ("{{TITLE}}", &title),
            ("{{STEP}}", v.step),
            ("{{CONTROLS}}", v.controls),
            ("{{KEYS}}", v.keys),
            ("{{DATA}}", data),
            ("/*{{JS}}*/", &script(scripts)),
            ("{{PLAY}}", v.play),
        ],
    )
}

/// Replaces the markers of `template` in the order given (their order in it), each once: text already put in is never
/// searched again (a title holding a marker stays as it is).
fn fill(template: &str, parts: &[(&str, &str)]) -> String {
    let mut out =
        String::with_capacity(template.len() + parts.iter().map(|p| p.1.len()).sum::<usize>());
    let mut rest = template;
    for (marker, value) in parts {
        let (before, after) = rest
            .split_once(marker)
            .unwrap_or_else(|| panic!("page.html has no {marker} after the previous marker"));
        out.push_str(before);
        out.push_str(value);
        rest = after;
    }
    out.push_str(rest);
    out
}

/// The page's script: the drawing core (`view.js`) with the layers' drawings where it takes
/// them, in order.
fn script(layers: &[&str]) -> String {
    let layers: String = layers.iter().map(|l| format!("{l}\n")).collect();
    fill(JS, &[(LAYERS, &layers)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_are_filled_in_order_and_text_is_never_searched() {
        let page = fill("a{{A}}b{{B}}c", &[("{{A}}", "{{B}}"), ("{{B}}", "x")]);
        assert_eq!(page, "a{{B}}bxc");
    }

    #[test]
    fn the_page_script_takes_every_layers_drawing_once_in_order() {
        assert_eq!(
            JS.matches(LAYERS).count(),
            1,
            "view.js names the marker once"
        );
        let page = script(&["/* first */", "/* second */"]);
        assert!(!page.contains(LAYERS));
        let (a, b) = (page.find("/* first */"), page.find("/* second */"));
        assert!(a.is_some() && a < b, "both, in order");
        // The layers run where the core's helpers exist and before its state is built.
        assert!(page.find("const layer = ").unwrap() < a.unwrap());
        assert!(b.unwrap() < page.find("function emptyState()").unwrap());
    }
}
