//! Lua 5.4 patterns (`string.find`, `match`, `gmatch`, `gsub`), matched in Rust so that every step
//! of the matcher is charged to the mod's instruction budget. The native C matcher backtracks
//! without ever running a VM instruction, so `("a"):rep(5000):find(".-.-.-b")` would run for hours
//! under a budget that only counts VM instructions.
//!
//! This is a line-by-line port of the matcher in Lua 5.4.7's `lstrlib.c` (same classes in the "C"
//! locale, same captures, same error messages, same `MAXCCALLS` depth limit), tested against the
//! native functions.

/// Most captures a pattern may have (`LUA_MAXCAPTURES`).
const MAX_CAPTURES: usize = 32;
/// Deepest matcher recursion (`MAXCCALLS` in `lstrlib.c`).
const MAX_DEPTH: usize = 200;
/// Steps are reported to the budget in batches of this many.
const BATCH: u64 = 1024;

const CAP_UNFINISHED: isize = -1;
const CAP_POSITION: isize = -2;

/// Why matching stopped early.
#[derive(Debug)]
pub(crate) enum Stop {
    /// A malformed pattern or capture, with Lua's message.
    Error(String),
    /// The instruction budget ran out (the meter already knows).
    Budget,
}

fn err<T>(message: &str) -> Result<T, Stop> {
    Err(Stop::Error(message.to_owned()))
}

/// One capture: a byte range of the subject, or a position (`()`, 1-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cap {
    /// `subject[start..end]`.
    Str(usize, usize),
    /// A position capture.
    Pos(usize),
}

/// Where matcher steps are charged: `charge(n)` fails once the budget is spent.
pub(crate) type Charge<'a> = &'a dyn Fn(u64) -> Result<(), Stop>;

pub(crate) struct Matcher<'a> {
    src: &'a [u8],
    pat: &'a [u8],
    level: usize,
    depth: usize,
    capture: [(usize, isize); MAX_CAPTURES],
    pending: u64,
    charge: Charge<'a>,
}

impl<'a> Matcher<'a> {
    /// A matcher of `pat` (without any leading `^` anchor) against `src`.
    pub(crate) fn new(src: &'a [u8], pat: &'a [u8], charge: Charge<'a>) -> Self {
        Matcher {
            src,
            pat,
            level: 0,
            depth: MAX_DEPTH,
            capture: [(0, 0); MAX_CAPTURES],
            pending: 0,
            charge,
        }
    }

    fn step(&mut self, n: u64) -> Result<(), Stop> {
        self.pending += n;
        if self.pending >= BATCH {
            let n = std::mem::take(&mut self.pending);
            (self.charge)(n)?;
        }
        Ok(())
    }

    /// Charges the steps not yet reported.
    pub(crate) fn flush(&mut self) -> Result<(), Stop> {
        let n = std::mem::take(&mut self.pending);
        if n > 0 {
            (self.charge)(n)?;
        }
        Ok(())
    }

    /// Tries to match at `s`; the end of the match, if any. Captures are reset first.
    pub(crate) fn match_at(&mut self, s: usize) -> Result<Option<usize>, Stop> {
        self.level = 0;
        self.do_match(s, 0)
    }

    fn p(&self, i: usize) -> u8 {
        self.pat.get(i).copied().unwrap_or(0)
    }

    fn s(&self, i: usize) -> u8 {
        self.src.get(i).copied().unwrap_or(0)
    }

    fn check_capture(&self, l: u8) -> Result<usize, Stop> {
        let l = i32::from(l) - i32::from(b'1');
        if l < 0 || l as usize >= self.level || self.capture[l as usize].1 == CAP_UNFINISHED {
            return Err(Stop::Error(format!("invalid capture index %{}", l + 1)));
        }
        Ok(l as usize)
    }

    fn capture_to_close(&self) -> Result<usize, Stop> {
        (0..self.level)
            .rev()
            .find(|&l| self.capture[l].1 == CAP_UNFINISHED)
            .map_or_else(|| err("invalid pattern capture"), Ok)
    }

    fn class_end(&self, mut p: usize) -> Result<usize, Stop> {
        let c = self.p(p);
        p += 1;
        match c {
            b'%' => {
                if p >= self.pat.len() {
                    return err("malformed pattern (ends with '%')");
                }
                Ok(p + 1)
            }
            b'[' => {
                if self.p(p) == b'^' {
                    p += 1;
                }
                loop {
                    if p >= self.pat.len() {
                        return err("malformed pattern (missing ']')");
                    }
                    let cc = self.pat[p];
                    p += 1;
                    if cc == b'%' && p < self.pat.len() {
                        p += 1;
                    }
                    if self.p(p) == b']' {
                        break;
                    }
                }
                Ok(p + 1)
            }
            _ => Ok(p),
        }
    }

    fn bracket_class(&self, c: u8, mut p: usize, ec: usize) -> bool {
        let mut sig = true;
        if self.p(p + 1) == b'^' {
            sig = false;
            p += 1;
        }
        loop {
            p += 1;
            if p >= ec {
                break;
            }
            if self.p(p) == b'%' {
                p += 1;
                if match_class(c, self.p(p)) {
                    return sig;
                }
            } else if self.p(p + 1) == b'-' && p + 2 < ec {
                p += 2;
                if self.p(p - 2) <= c && c <= self.p(p) {
                    return sig;
                }
            } else if self.p(p) == c {
                return sig;
            }
        }
        !sig
    }

    fn single_match(&self, s: usize, p: usize, ep: usize) -> bool {
        if s >= self.src.len() {
            return false;
        }
        let c = self.src[s];
        match self.p(p) {
            b'.' => true,
            b'%' => match_class(c, self.p(p + 1)),
            b'[' => self.bracket_class(c, p, ep - 1),
            pc => pc == c,
        }
    }

    fn match_balance(&mut self, s: usize, p: usize) -> Result<Option<usize>, Stop> {
        if p + 1 >= self.pat.len() {
            return err("malformed pattern (missing arguments to '%b')");
        }
        if s >= self.src.len() || self.src[s] != self.pat[p] {
            return Ok(None);
        }
        let (b, e) = (self.pat[p], self.pat[p + 1]);
        let mut cont = 1u64;
        let mut s = s + 1;
        while s < self.src.len() {
            self.step(1)?;
            let c = self.src[s];
            if c == e {
                cont -= 1;
                if cont == 0 {
                    return Ok(Some(s + 1));
                }
            } else if c == b {
                cont += 1;
            }
            s += 1;
        }
        Ok(None)
    }

    fn max_expand(&mut self, s: usize, p: usize, ep: usize) -> Result<Option<usize>, Stop> {
        let mut i = 0usize;
        while self.single_match(s + i, p, ep) {
            self.step(1)?;
            i += 1;
        }
        loop {
            if let Some(r) = self.do_match(s + i, ep + 1)? {
                return Ok(Some(r));
            }
            if i == 0 {
                return Ok(None);
            }
            i -= 1;
        }
    }

    fn min_expand(&mut self, mut s: usize, p: usize, ep: usize) -> Result<Option<usize>, Stop> {
        loop {
            if let Some(r) = self.do_match(s, ep + 1)? {
                return Ok(Some(r));
            }
            if self.single_match(s, p, ep) {
                s += 1;
            } else {
                return Ok(None);
            }
        }
    }

    fn start_capture(&mut self, s: usize, p: usize, what: isize) -> Result<Option<usize>, Stop> {
        if self.level >= MAX_CAPTURES {
            return err("too many captures");
        }
        self.capture[self.level] = (s, what);
        self.level += 1;
        let r = self.do_match(s, p)?;
        if r.is_none() {
            self.level -= 1;
        }
        Ok(r)
    }

    fn end_capture(&mut self, s: usize, p: usize) -> Result<Option<usize>, Stop> {
        let l = self.capture_to_close()?;
        self.capture[l].1 = (s - self.capture[l].0) as isize;
        let r = self.do_match(s, p)?;
        if r.is_none() {
            self.capture[l].1 = CAP_UNFINISHED;
        }
        Ok(r)
    }

    fn match_capture(&mut self, s: usize, l: u8) -> Result<Option<usize>, Stop> {
        let l = self.check_capture(l)?;
        let (init, len) = self.capture[l];
        if len < 0 {
            return Ok(None); // a position capture never matches text
        }
        let len = len as usize;
        self.step(1 + (len as u64 >> 6))?;
        if self.src.len() - s >= len && self.src[init..init + len] == self.src[s..s + len] {
            Ok(Some(s + len))
        } else {
            Ok(None)
        }
    }

    fn do_match(&mut self, s: usize, p: usize) -> Result<Option<usize>, Stop> {
        if self.depth == 0 {
            return err("pattern too complex");
        }
        self.depth -= 1;
        let r = self.match_body(s, p);
        self.depth += 1;
        r
    }

    fn match_body(&mut self, mut s: usize, mut p: usize) -> Result<Option<usize>, Stop> {
        loop {
            self.step(1)?;
            if p == self.pat.len() {
                return Ok(Some(s));
            }
            match self.pat[p] {
                b'(' => {
                    return if self.p(p + 1) == b')' {
                        self.start_capture(s, p + 2, CAP_POSITION)
                    } else {
                        self.start_capture(s, p + 1, CAP_UNFINISHED)
                    };
                }
                b')' => return self.end_capture(s, p + 1),
                b'$' if p + 1 == self.pat.len() => {
                    return Ok((s == self.src.len()).then_some(s));
                }
                b'%' => match self.p(p + 1) {
                    b'b' => match self.match_balance(s, p + 2)? {
                        Some(e) => {
                            s = e;
                            p += 4;
                            continue;
                        }
                        None => return Ok(None),
                    },
                    b'f' => {
                        p += 2;
                        if self.p(p) != b'[' {
                            return err("missing '[' after '%f' in pattern");
                        }
                        let ep = self.class_end(p)?;
                        let previous = if s == 0 { 0 } else { self.src[s - 1] };
                        if !self.bracket_class(previous, p, ep - 1)
                            && self.bracket_class(self.s(s), p, ep - 1)
                        {
                            p = ep;
                            continue;
                        }
                        return Ok(None);
                    }
                    d @ b'0'..=b'9' => match self.match_capture(s, d)? {
                        Some(e) => {
                            s = e;
                            p += 2;
                            continue;
                        }
                        None => return Ok(None),
                    },
                    _ => {}
                },
                _ => {}
            }
            // A single-character class with an optional suffix.
            let ep = self.class_end(p)?;
            let suffix = self.p(ep);
            if !self.single_match(s, p, ep) {
                if suffix == b'*' || suffix == b'?' || suffix == b'-' {
                    p = ep + 1;
                    continue;
                }
                return Ok(None);
            }
            match suffix {
                b'?' => {
                    if let Some(r) = self.do_match(s + 1, ep + 1)? {
                        return Ok(Some(r));
                    }
                    p = ep + 1;
                }
                b'+' => return self.max_expand(s + 1, p, ep),
                b'*' => return self.max_expand(s, p, ep),
                b'-' => return self.min_expand(s, p, ep),
                _ => {
                    s += 1;
                    p = ep;
                }
            }
        }
    }

    /// One capture of the last match `s..e` (`i == 0` without captures is the whole match).
    pub(crate) fn capture(&self, i: usize, s: usize, e: usize) -> Result<Cap, Stop> {
        if i >= self.level {
            if i != 0 {
                return Err(Stop::Error(format!("invalid capture index %{}", i + 1)));
            }
            return Ok(Cap::Str(s, e));
        }
        let (init, len) = self.capture[i];
        match len {
            CAP_UNFINISHED => err("unfinished capture"),
            CAP_POSITION => Ok(Cap::Pos(init + 1)),
            len => Ok(Cap::Str(init, init + len as usize)),
        }
    }

    /// The captures of the last match `s..e`, as `push_captures` pushes them: the whole match when
    /// the pattern has none and `whole` is set.
    pub(crate) fn captures(&self, s: usize, e: usize, whole: bool) -> Result<Vec<Cap>, Stop> {
        let n = if self.level == 0 && whole {
            1
        } else {
            self.level
        };
        (0..n).map(|i| self.capture(i, s, e)).collect()
    }
}

fn match_class(c: u8, cl: u8) -> bool {
    let res = match cl.to_ascii_lowercase() {
        b'a' => c.is_ascii_alphabetic(),
        b'c' => c.is_ascii_control(),
        b'd' => c.is_ascii_digit(),
        b'g' => c.is_ascii_graphic(),
        b'l' => c.is_ascii_lowercase(),
        b'p' => c.is_ascii_punctuation(),
        b's' => c == b' ' || (9..=13).contains(&c),
        b'u' => c.is_ascii_uppercase(),
        b'w' => c.is_ascii_alphanumeric(),
        b'x' => c.is_ascii_hexdigit(),
        b'z' => c == 0,
        _ => return cl == c,
    };
    if cl.is_ascii_lowercase() {
        res
    } else {
        !res
    }
}

/// Whether `p` has none of Lua's pattern specials (`^$*+?.([%-`), so `find` searches plainly.
pub(crate) fn no_specials(p: &[u8]) -> bool {
    !p.iter().any(|c| b"^$*+?.([%-".contains(c))
}

/// `posrelatI`: a 1-based start position, negative from the end, clipped to `[1, inf)`.
pub(crate) fn posrelat(pos: i64, len: usize) -> u64 {
    if pos > 0 {
        pos as u64
    } else if pos == 0 || pos < -(len as i64) {
        1
    } else {
        (len as i64 + pos + 1) as u64
    }
}

/// A plain search of `needle` in `hay` from `init`, charging the bytes it looks at.
pub(crate) fn find_plain(
    hay: &[u8],
    needle: &[u8],
    init: usize,
    charge: Charge<'_>,
) -> Result<Option<usize>, Stop> {
    if needle.is_empty() {
        return Ok(Some(init));
    }
    if needle.len() > hay.len() - init {
        return Ok(None);
    }
    let last = hay.len() - needle.len();
    let per_try = 1 + (needle.len() as u64 >> 6);
    let mut i = init;
    let mut pending = 0u64;
    while i <= last {
        match hay[i..=last].iter().position(|&b| b == needle[0]) {
            None => {
                charge(pending + ((last + 1 - i) as u64 >> 6) + 1)?;
                return Ok(None);
            }
            Some(k) => {
                i += k;
                pending += (k as u64 >> 6) + per_try;
                if pending >= BATCH {
                    charge(std::mem::take(&mut pending))?;
                }
                if hay[i..i + needle.len()] == *needle {
                    charge(pending)?;
                    return Ok(Some(i));
                }
                i += 1;
            }
        }
    }
    charge(pending)?;
    Ok(None)
}

/// The next match of gsub/gmatch: tries `src`, `src + 1`, … up to the end of the subject (only
/// `src` when `anchored`), skipping an empty match ending at `last`. `(start, end)` of the match.
pub(crate) fn next_match(
    m: &mut Matcher<'_>,
    mut src: usize,
    last: Option<usize>,
    anchored: bool,
) -> Result<Option<(usize, usize)>, Stop> {
    while src <= m.src.len() {
        if let Some(e) = m.match_at(src)? {
            if Some(e) != last {
                return Ok(Some((src, e)));
            }
        }
        if anchored {
            break;
        }
        src += 1;
    }
    Ok(None)
}

/// `gsub` with a replacement string, all in Rust: the new string and the number of matches.
/// The result may grow to at most `max_len` bytes.
pub(crate) fn gsub_str(
    src: &[u8],
    pat: &[u8],
    repl: &[u8],
    max_n: i64,
    max_len: usize,
    charge: Charge<'_>,
) -> Result<(Vec<u8>, i64), Stop> {
    let (anchored, pat) = match pat.first() {
        Some(b'^') => (true, &pat[1..]),
        _ => (false, pat),
    };
    let mut m = Matcher::new(src, pat, charge);
    let mut out: Vec<u8> = Vec::new();
    let mut pos = 0usize;
    let mut last = None;
    let mut n = 0i64;
    let grow = |out: &mut Vec<u8>, bytes: &[u8], charge: Charge<'_>| -> Result<(), Stop> {
        if out.len() + bytes.len() > max_len {
            return Err(Stop::Error("not enough memory".into()));
        }
        charge(1 + (bytes.len() as u64 >> 6))?;
        out.extend_from_slice(bytes);
        Ok(())
    };
    while n < max_n {
        let Some((s, e)) = next_match(&mut m, pos, last, anchored)? else {
            break;
        };
        n += 1;
        grow(&mut out, &src[pos..s], charge)?;
        let mut i = 0;
        while i < repl.len() {
            let c = repl[i];
            if c != b'%' {
                let run = repl[i..]
                    .iter()
                    .position(|&b| b == b'%')
                    .unwrap_or(repl.len() - i);
                grow(&mut out, &repl[i..i + run], charge)?;
                i += run;
                continue;
            }
            i += 1;
            let d = repl.get(i).copied().unwrap_or(0);
            match d {
                b'%' => grow(&mut out, b"%", charge)?,
                b'0' => grow(&mut out, &src[s..e], charge)?,
                b'1'..=b'9' => match m.capture(usize::from(d - b'1'), s, e)? {
                    Cap::Str(a, b) => grow(&mut out, &src[a..b], charge)?,
                    Cap::Pos(p) => grow(&mut out, p.to_string().as_bytes(), charge)?,
                },
                _ => return err("invalid use of '%' in replacement string"),
            }
            i += 1;
        }
        pos = e;
        last = Some(e);
        if anchored {
            break;
        }
    }
    grow(&mut out, &src[pos..], charge)?;
    m.flush()?;
    Ok((out, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn free(_: u64) -> Result<(), Stop> {
        Ok(())
    }

    fn find(s: &str, p: &str) -> Option<(usize, usize, Vec<Cap>)> {
        let (anchored, pat) = match p.strip_prefix('^') {
            Some(rest) => (true, rest),
            None => (false, p),
        };
        let mut m = Matcher::new(s.as_bytes(), pat.as_bytes(), &free);
        let (st, e) = next_match(&mut m, 0, None, anchored).unwrap()?;
        let caps = m.captures(st, e, false).unwrap();
        Some((st, e, caps))
    }

    #[test]
    fn classes_quantifiers_and_captures_match_like_lua() {
        assert_eq!(find("hello world", "o w").map(|f| (f.0, f.1)), Some((4, 7)));
        assert_eq!(
            find("key = value", "(%w+)%s*=%s*(%w+)").unwrap().2,
            vec![Cap::Str(0, 3), Cap::Str(6, 11)]
        );
        assert_eq!(
            find("  trim  ", "^%s*(.-)%s*$").unwrap().2,
            vec![Cap::Str(2, 6)]
        );
        assert_eq!(
            find("THE (quick) fox", "%((%a+)%)").unwrap().2,
            vec![Cap::Str(5, 10)]
        );
        assert_eq!(find("f(a(b)c)d", "%b()").map(|f| (f.0, f.1)), Some((1, 8)));
        assert_eq!(
            find("THE (quick) fox", "%f[%a]%a+%f[%A]").map(|f| (f.0, f.1)),
            Some((0, 3))
        );
        assert_eq!(
            find("abcabc", "()b()").unwrap().2,
            vec![Cap::Pos(2), Cap::Pos(3)]
        );
        assert_eq!(find("xyzzy", "(z)%1").map(|f| (f.0, f.1)), Some((2, 4)));
        assert_eq!(find("a]b", "[]]").map(|f| f.0), Some(1));
        assert!(find("abc", "^b").is_none());
    }

    #[test]
    fn malformed_patterns_give_lua_messages() {
        let msg = |p: &str| {
            let mut m = Matcher::new(b"abc", p.as_bytes(), &free);
            match next_match(&mut m, 0, None, false) {
                Err(Stop::Error(s)) => s,
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(msg("%"), "malformed pattern (ends with '%')");
        assert_eq!(msg("[a"), "malformed pattern (missing ']')");
        assert_eq!(msg("a)"), "invalid pattern capture");
        assert_eq!(msg("%1"), "invalid capture index %1");
        assert_eq!(msg("%f"), "missing '[' after '%f' in pattern");
        let mut m = Matcher::new(b"abc", b"(a", &free);
        let (s, e) = next_match(&mut m, 0, None, false).unwrap().unwrap();
        assert!(matches!(m.captures(s, e, true), Err(Stop::Error(e)) if e == "unfinished capture"));
    }

    #[test]
    fn catastrophic_backtracking_is_charged() {
        let total = std::cell::Cell::new(0u64);
        let charge = |n: u64| {
            total.set(total.get() + n);
            if total.get() > 100_000 {
                Err(Stop::Budget)
            } else {
                Ok(())
            }
        };
        let s = "a".repeat(5000);
        let mut m = Matcher::new(s.as_bytes(), b".-.-.-b", &charge);
        assert!(matches!(
            next_match(&mut m, 0, None, false),
            Err(Stop::Budget)
        ));
    }

    #[test]
    fn gsub_with_a_string_replacement() {
        let (out, n) =
            gsub_str(b"hello world", b"(%w+)", b"<%1>", i64::MAX, 1 << 20, &free).unwrap();
        assert_eq!(
            (String::from_utf8(out).unwrap(), n),
            ("<hello> <world>".to_owned(), 2)
        );
        let (out, n) = gsub_str(b"abc", b"", b"-", i64::MAX, 1 << 20, &free).unwrap();
        assert_eq!(
            (String::from_utf8(out).unwrap(), n),
            ("-a-b-c-".to_owned(), 4)
        );
        let (out, n) = gsub_str(b"abc", b"^a", b"%%", i64::MAX, 1 << 20, &free).unwrap();
        assert_eq!((String::from_utf8(out).unwrap(), n), ("%bc".to_owned(), 1));
    }
}
