//! Untrusted text made safe to print: control characters become `\u{…}` escapes, so that a
//! recording, a scene, a mod or a path cannot move the cursor, clear the screen, set the
//! terminal's title, ring its bell or fake a line of output when the CLI echoes it.
//!
//! Escaped are the C0 controls U+0000–U+001F (ESC, CR, BEL, and LF and TAB too: a line break
//! inside an id would fake a line of output), DEL U+007F, the C1 controls U+0080–U+009F (U+009B
//! is a one-byte CSI for some terminals), and the bidirectional controls (U+061C, U+200E, U+200F,
//! U+202A–U+202E, U+2066–U+2069), which reorder what a reader sees. Everything else, non-ASCII
//! letters included, is kept as it is.
//!
//! ```
//! use world_streaming::escape::escape;
//! assert_eq!(escape("a\u{1b}]0;pwned\u{7}b"), "a\\u{1b}]0;pwned\\u{7}b");
//! assert_eq!(escape("café"), "café");
//! ```

use std::borrow::Cow;
use std::fmt::Write;

/// Whether `c` is escaped by [`escape`].
pub fn needs_escape(c: char) -> bool {
    c.is_control() // C0, DEL and C1
        || matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` with every character of [`needs_escape`] written as `\u{hex}` (lowercase, no
/// padding: ESC is `\u{1b}`); borrowed when there is nothing to escape.
pub fn escape(text: &str) -> Cow<'_, str> {
    escape_but(text, |_| false)
}

/// [`escape`], keeping line feeds: for a message the program built from several lines, each
/// of which may quote untrusted text (a line break in the untrusted text itself must have been
/// escaped where it was quoted).
pub fn escape_lines(text: &str) -> Cow<'_, str> {
    escape_but(text, |c| c == '\n')
}

fn escape_but(text: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    let bad = |c: char| needs_escape(c) && !keep(c);
    if !text.chars().any(bad) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if bad(c) {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_controls_are_escaped() {
        assert_eq!(
            escape("\u{1b}]0;pwned\u{7}\r\u{1b}[2J"),
            "\\u{1b}]0;pwned\\u{7}\\u{d}\\u{1b}[2J"
        );
        assert_eq!(escape("a\nOK"), "a\\u{a}OK");
        assert_eq!(escape("\t\0\u{7f}"), "\\u{9}\\u{0}\\u{7f}");
    }

    #[test]
    fn c1_and_bidirectional_controls_are_escaped() {
        assert_eq!(escape("\u{80}\u{9b}2J\u{9f}"), "\\u{80}\\u{9b}2J\\u{9f}");
        assert_eq!(escape("x\u{202e}y\u{2066}"), "x\\u{202e}y\\u{2066}");
    }

    #[test]
    fn printable_text_is_kept_and_borrowed() {
        for text in [
            "",
            "hero",
            "café ☕ 世界",
            "\\u{1b} as text",
            "\u{a0}\u{a0}",
        ] {
            assert!(
                matches!(escape(text), Cow::Borrowed(t) if t == text),
                "{text}"
            );
        }
    }

    #[test]
    fn escape_lines_keeps_line_feeds_only() {
        assert_eq!(escape_lines("one\ntwo\r\u{1b}"), "one\ntwo\\u{d}\\u{1b}");
    }
}
