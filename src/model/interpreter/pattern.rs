//! Lua 5.1 patterns (`string.find`, `match`, `gmatch`, `gsub`) in Rust, with a step limit.
//!
//! The C matcher of Lua's `lstrlib.c` backtracks without bound
//! (`string.find(string.rep('a', 30), string.rep('a*', 30) .. 'b')` runs for hours), recurses
//! once per pattern item (a pattern of a million `a?` overflows the C stack and aborts the
//! process), and runs where the VM's instruction hook never fires. This is the same algorithm,
//! item by item and in the same order (so every match, capture and error is Lua 5.1's), with
//! three differences that only hostile input meets:
//!
//! - every step (a call of the matcher, a character tried by a repetition, a character of a
//!   balance or back-reference) is charged to a [`Meter`], which stops the match when the
//!   script's budget is spent;
//! - the matcher's recursion stops at [`MAX_DEPTH`] levels with "pattern too complex", as Lua
//!   5.2 and later do (a real pattern has a few dozen items);
//! - a plain search (`string.find(s, p, 1, true)`, or a pattern without special characters) is
//!   linear (`memchr::memmem`), where `lmemfind` is quadratic; the first occurrence is the same.
//!
//! As in C, a pattern ends at its first NUL byte (`luaL_checkstring` hands the matcher a C
//! string) while a plain search uses all of it; reading past the end of the subject or the
//! pattern reads a NUL.

use std::ops::Range;

/// Levels of recursion of the matcher (Lua 5.2's `MAXCCALLS`).
pub const MAX_DEPTH: usize = 200;
/// Captures one pattern may open (`LUA_MAXCAPTURES`).
pub const MAX_CAPTURES: usize = 32;
/// Steps charged to the meter at once.
const STEP_CHUNK: u64 = 1024;

const L_ESC: u8 = b'%';
const SPECIALS: &[u8] = b"^$*+?.([%-";
const CAP_UNFINISHED: isize = -1;
const CAP_POSITION: isize = -2;

/// Why a match stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatternError {
    /// The pattern (or a use of a capture) is invalid: Lua's message.
    Invalid(&'static str),
    /// The meter refused more steps.
    Budget,
    /// The result would be larger than allowed.
    Memory,
}

/// What a match costs: [`Meter::charge`] is told of every [`STEP_CHUNK`] steps.
pub trait Meter {
    /// `false` stops the match ([`PatternError::Budget`]).
    fn charge(&mut self, steps: u64) -> bool;
}

/// A meter that never refuses (for tests).
pub struct Unmetered;

impl Meter for Unmetered {
    fn charge(&mut self, _steps: u64) -> bool {
        true
    }
}

/// One capture's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Capture {
    /// A substring of the subject.
    Text(Range<usize>),
    /// A position capture `()`: 1-based.
    Position(usize),
}

/// A successful match: where it is and its captures as Lua pushes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Byte range of the whole match.
    pub range: Range<usize>,
    /// `push_captures`: the captures, or the whole match when the pattern has none (for `find`,
    /// only the captures).
    pub captures: Vec<Capture>,
}

struct State<'a, 'm> {
    src: &'a [u8],
    pat: &'a [u8],
    level: usize,
    capture: [(usize, isize); MAX_CAPTURES],
    depth: usize,
    steps: u64,
    meter: &'m mut dyn Meter,
}

/// The pattern as C sees it: up to its first NUL.
fn c_string(p: &[u8]) -> &[u8] {
    match memchr::memchr(0, p) {
        Some(n) => &p[..n],
        None => p,
    }
}

impl State<'_, '_> {
    fn p(&self, i: usize) -> u8 {
        self.pat.get(i).copied().unwrap_or(0)
    }

    fn s(&self, i: usize) -> u8 {
        self.src.get(i).copied().unwrap_or(0)
    }

    fn step(&mut self) -> Result<(), PatternError> {
        self.steps += 1;
        if self.steps >= STEP_CHUNK {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), PatternError> {
        let steps = std::mem::take(&mut self.steps);
        if steps > 0 && !self.meter.charge(steps) {
            return Err(PatternError::Budget);
        }
        Ok(())
    }

    fn check_capture(&self, l: u8) -> Result<usize, PatternError> {
        let l = i32::from(l) - i32::from(b'1');
        if l < 0 || l as usize >= self.level || self.capture[l as usize].1 == CAP_UNFINISHED {
            return Err(PatternError::Invalid("invalid capture index"));
        }
        Ok(l as usize)
    }

    fn capture_to_close(&self) -> Result<usize, PatternError> {
        (0..self.level)
            .rev()
            .find(|&l| self.capture[l].1 == CAP_UNFINISHED)
            .ok_or(PatternError::Invalid("invalid pattern capture"))
    }

    fn class_end(&self, mut p: usize) -> Result<usize, PatternError> {
        let c = self.p(p);
        p += 1;
        match c {
            L_ESC => {
                if self.p(p) == 0 {
                    return Err(PatternError::Invalid("malformed pattern (ends with '%')"));
                }
                Ok(p + 1)
            }
            b'[' => {
                if self.p(p) == b'^' {
                    p += 1;
                }
                loop {
                    if self.p(p) == 0 {
                        return Err(PatternError::Invalid("malformed pattern (missing ']')"));
                    }
                    let c = self.p(p);
                    p += 1;
                    if c == L_ESC && self.p(p) != 0 {
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

    /// `matchbracketclass`: `p` at the `[`, `ec` at the closing `]`.
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
            if self.p(p) == L_ESC {
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

    fn single_match(&self, c: u8, p: usize, ep: usize) -> bool {
        match self.p(p) {
            b'.' => true,
            L_ESC => match_class(c, self.p(p + 1)),
            b'[' => self.bracket_class(c, p, ep - 1),
            other => other == c,
        }
    }

    fn match_balance(&mut self, s: usize, p: usize) -> Result<Option<usize>, PatternError> {
        if self.p(p) == 0 || self.p(p + 1) == 0 {
            return Err(PatternError::Invalid("unbalanced pattern"));
        }
        if self.s(s) != self.p(p) {
            return Ok(None);
        }
        let (b, e) = (self.p(p), self.p(p + 1));
        let mut cont = 1usize;
        let mut s = s;
        loop {
            s += 1;
            if s >= self.src.len() {
                return Ok(None);
            }
            self.step()?;
            let c = self.src[s];
            if c == e {
                cont -= 1;
                if cont == 0 {
                    return Ok(Some(s + 1));
                }
            } else if c == b {
                cont += 1;
            }
        }
    }

    fn max_expand(&mut self, s: usize, p: usize, ep: usize) -> Result<Option<usize>, PatternError> {
        let mut i = 0usize;
        while s + i < self.src.len() && self.single_match(self.src[s + i], p, ep) {
            self.step()?;
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

    fn min_expand(&mut self, mut s: usize, p: usize, ep: usize) -> Result<Option<usize>, PatternError> {
        loop {
            if let Some(r) = self.do_match(s, ep + 1)? {
                return Ok(Some(r));
            }
            if s < self.src.len() && self.single_match(self.src[s], p, ep) {
                s += 1;
            } else {
                return Ok(None);
            }
        }
    }

    fn start_capture(&mut self, s: usize, p: usize, what: isize) -> Result<Option<usize>, PatternError> {
        let level = self.level;
        if level >= MAX_CAPTURES {
            return Err(PatternError::Invalid("too many captures"));
        }
        self.capture[level] = (s, what);
        self.level = level + 1;
        let res = self.do_match(s, p)?;
        if res.is_none() {
            self.level -= 1;
        }
        Ok(res)
    }

    fn end_capture(&mut self, s: usize, p: usize) -> Result<Option<usize>, PatternError> {
        let l = self.capture_to_close()?;
        self.capture[l].1 = (s - self.capture[l].0) as isize;
        let res = self.do_match(s, p)?;
        if res.is_none() {
            self.capture[l].1 = CAP_UNFINISHED;
        }
        Ok(res)
    }

    fn match_capture(&mut self, s: usize, l: u8) -> Result<Option<usize>, PatternError> {
        let l = self.check_capture(l)?;
        let (init, len) = self.capture[l];
        // A position capture's length is negative: as `size_t` in C it never fits.
        let Ok(len) = usize::try_from(len) else { return Ok(None) };
        for _ in 0..len / 64 {
            self.step()?;
        }
        if self.src.len() - s >= len && self.src[init..init + len] == self.src[s..s + len] {
            Ok(Some(s + len))
        } else {
            Ok(None)
        }
    }

    fn do_match(&mut self, s: usize, p: usize) -> Result<Option<usize>, PatternError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(PatternError::Invalid("pattern too complex"));
        }
        let out = self.match_here(s, p);
        self.depth -= 1;
        out
    }

    fn match_here(&mut self, mut s: usize, mut p: usize) -> Result<Option<usize>, PatternError> {
        loop {
            self.step()?;
            match self.p(p) {
                b'(' => {
                    return if self.p(p + 1) == b')' {
                        self.start_capture(s, p + 2, CAP_POSITION)
                    } else {
                        self.start_capture(s, p + 1, CAP_UNFINISHED)
                    };
                }
                b')' => return self.end_capture(s, p + 1),
                L_ESC if self.p(p + 1) == b'b' => match self.match_balance(s, p + 2)? {
                    None => return Ok(None),
                    Some(next) => {
                        s = next;
                        p += 4;
                        continue;
                    }
                },
                L_ESC if self.p(p + 1) == b'f' => {
                    p += 2;
                    if self.p(p) != b'[' {
                        return Err(PatternError::Invalid("missing '[' after '%f' in pattern"));
                    }
                    let ep = self.class_end(p)?;
                    let previous = if s == 0 { 0 } else { self.s(s - 1) };
                    if self.bracket_class(previous, p, ep - 1) || !self.bracket_class(self.s(s), p, ep - 1) {
                        return Ok(None);
                    }
                    p = ep;
                    continue;
                }
                L_ESC if self.p(p + 1).is_ascii_digit() => match self.match_capture(s, self.p(p + 1))? {
                    None => return Ok(None),
                    Some(next) => {
                        s = next;
                        p += 2;
                        continue;
                    }
                },
                0 => return Ok(Some(s)),
                b'$' if self.p(p + 1) == 0 => return Ok((s == self.src.len()).then_some(s)),
                _ => {}
            }
            // A pattern item: a single-character class and its repetition, if any.
            let ep = self.class_end(p)?;
            let m = s < self.src.len() && self.single_match(self.src[s], p, ep);
            match self.p(ep) {
                b'?' => {
                    if m && let Some(r) = self.do_match(s + 1, ep + 1)? {
                        return Ok(Some(r));
                    }
                    p = ep + 1;
                }
                b'*' => return self.max_expand(s, p, ep),
                b'+' => return if m { self.max_expand(s + 1, p, ep) } else { Ok(None) },
                b'-' => return self.min_expand(s, p, ep),
                _ => {
                    if !m {
                        return Ok(None);
                    }
                    s += 1;
                    p = ep;
                }
            }
        }
    }

    /// `push_onecapture`: capture `i` of the match `s..e`.
    fn one_capture(&self, i: usize, s: usize, e: usize) -> Result<Capture, PatternError> {
        if i >= self.level {
            return if i == 0 { Ok(Capture::Text(s..e)) } else { Err(PatternError::Invalid("invalid capture index")) };
        }
        let (init, len) = self.capture[i];
        match len {
            CAP_UNFINISHED => Err(PatternError::Invalid("unfinished capture")),
            CAP_POSITION => Ok(Capture::Position(init + 1)),
            len => Ok(Capture::Text(init..init + len as usize)),
        }
    }

    /// `push_captures`: every capture, or the whole match `whole` when there is none.
    fn captures(&self, whole: Option<Range<usize>>) -> Result<Vec<Capture>, PatternError> {
        let n = if self.level == 0 && whole.is_some() { 1 } else { self.level };
        let (s, e) = whole.map_or((0, 0), |r| (r.start, r.end));
        (0..n).map(|i| self.one_capture(i, s, e)).collect()
    }

    fn start(&mut self, s: usize, p: usize) -> Result<Option<usize>, PatternError> {
        self.level = 0;
        self.depth = 0;
        self.do_match(s, p)
    }
}

fn match_class(c: u8, cl: u8) -> bool {
    let res = match cl.to_ascii_lowercase() {
        b'a' => c.is_ascii_alphabetic(),
        b'c' => c.is_ascii_control(),
        b'd' => c.is_ascii_digit(),
        b'l' => c.is_ascii_lowercase(),
        b'p' => c.is_ascii_punctuation(),
        // C's isspace: also the vertical tab, which Rust's is_ascii_whitespace leaves out.
        b's' => c == b' ' || (b'\t'..=b'\r').contains(&c),
        b'u' => c.is_ascii_uppercase(),
        b'w' => c.is_ascii_alphanumeric(),
        b'x' => c.is_ascii_hexdigit(),
        b'z' => c == 0,
        _ => return cl == c,
    };
    if cl.is_ascii_lowercase() { res } else { !res }
}

fn state<'a, 'm>(src: &'a [u8], pat: &'a [u8], meter: &'m mut dyn Meter) -> State<'a, 'm> {
    State { src, pat, level: 0, capture: [(0, 0); MAX_CAPTURES], depth: 0, steps: 0, meter }
}

/// `string.find` (`find`) and `string.match` (not `find`) from byte `init` (0-based, already
/// clamped to `0..=len` as `str_find_aux` does).
pub fn find(
    src: &[u8],
    pattern: &[u8],
    init: usize,
    plain: bool,
    find: bool,
    meter: &mut dyn Meter,
) -> Result<Option<Found>, PatternError> {
    let init = init.min(src.len());
    let pat = c_string(pattern);
    if find && (plain || !pat.iter().any(|c| SPECIALS.contains(c))) {
        // A linear search for the whole pattern (NULs included, as `lmemfind` does).
        let hay = &src[init..];
        let at = if pattern.is_empty() { Some(0) } else { memchr::memmem::find(hay, pattern) };
        meter.charge(hay.len() as u64 / 64 + 1).then_some(()).ok_or(PatternError::Budget)?;
        return Ok(at.map(|at| Found { range: init + at..init + at + pattern.len(), captures: Vec::new() }));
    }
    let (anchor, p0) = if pat.first() == Some(&b'^') { (true, 1) } else { (false, 0) };
    let mut ms = state(src, pat, meter);
    let mut s1 = init;
    loop {
        if let Some(e) = ms.start(s1, p0)? {
            let captures = if find { ms.captures(None)? } else { ms.captures(Some(s1..e))? };
            ms.flush()?;
            return Ok(Some(Found { range: s1..e, captures }));
        }
        if s1 >= src.len() || anchor {
            break;
        }
        s1 += 1;
    }
    ms.flush()?;
    Ok(None)
}

/// One step of a `string.gmatch` iterator from byte `from`: the match, its captures (the whole
/// match without any) and where the next step starts; `None` when no match is left. The
/// pattern's `^` is an ordinary character here, as in Lua 5.1.
pub fn gmatch_next(
    src: &[u8],
    pattern: &[u8],
    from: usize,
    meter: &mut dyn Meter,
) -> Result<Option<(Found, usize)>, PatternError> {
    let pat = c_string(pattern);
    let mut ms = state(src, pat, meter);
    let mut at = from;
    while at <= src.len() {
        if let Some(e) = ms.start(at, 0)? {
            let next = if e == at { e + 1 } else { e };
            let captures = ms.captures(Some(at..e))?;
            ms.flush()?;
            return Ok(Some((Found { range: at..e, captures }, next)));
        }
        at += 1;
    }
    ms.flush()?;
    Ok(None)
}

/// A `gsub` callback: the subject and one match, to the bytes that replace it (`None`: keep it).
pub type EachMatch<'r> = dyn FnMut(&[u8], &Found) -> Result<Option<Vec<u8>>, ReplaceError> + 'r;

/// What replaces one match in `gsub`.
pub enum Replacement<'r> {
    /// A string with `%0`–`%9` and `%x` escapes (`add_s`).
    Template(&'r [u8]),
    /// Asked for each match (a function or table in Lua): the bytes to put instead, or `None`
    /// to keep the match. The match's captures ([`Found::captures`]) come with it: all of them
    /// (a function's arguments), or with `first_only` the first alone (a table's key: C pushes
    /// only that one, so a later unfinished capture is no error there).
    Each { first_only: bool, f: &'r mut EachMatch<'r> },
}

/// Why a replacement failed: the pattern's own error, or the callback's.
#[derive(Debug)]
pub enum ReplaceError {
    Pattern(PatternError),
    /// The replacement (a Lua function or table) failed; passed through.
    Callback(mlua::Error),
}

impl From<PatternError> for ReplaceError {
    fn from(e: PatternError) -> Self {
        ReplaceError::Pattern(e)
    }
}

/// `string.gsub`: the new string and the number of matches replaced, at most `max_n`;
/// the result may not grow past `max_len` bytes ([`PatternError::Memory`]).
pub fn gsub(
    src: &[u8],
    pattern: &[u8],
    mut replacement: Replacement<'_>,
    max_n: i64,
    max_len: usize,
    meter: &mut dyn Meter,
) -> Result<(Vec<u8>, i64), ReplaceError> {
    let pat = c_string(pattern);
    let (anchor, p0) = if pat.first() == Some(&b'^') { (true, 1) } else { (false, 0) };
    let mut ms = state(src, pat, meter);
    let mut out: Vec<u8> = Vec::new();
    let push = |out: &mut Vec<u8>, bytes: &[u8]| -> Result<(), PatternError> {
        if out.len() + bytes.len() > max_len {
            return Err(PatternError::Memory);
        }
        out.extend_from_slice(bytes);
        Ok(())
    };
    let mut s = 0usize;
    let mut n = 0i64;
    while n < max_n {
        ms.step()?;
        let e = ms.start(s, p0)?;
        if let Some(e) = e {
            n += 1;
            match &mut replacement {
                Replacement::Template(t) => {
                    let mut piece = Vec::new();
                    expand(&ms, t, s, e, &mut piece)?;
                    push(&mut out, &piece)?;
                }
                Replacement::Each { first_only, f } => {
                    let captures = match first_only {
                        true => vec![ms.one_capture(0, s, e)?],
                        false => ms.captures(Some(s..e))?,
                    };
                    let found = Found { range: s..e, captures };
                    ms.flush()?;
                    match f(src, &found)? {
                        Some(bytes) => push(&mut out, &bytes)?,
                        None => push(&mut out, &src[s..e])?,
                    }
                }
            }
        }
        match e {
            Some(e) if e > s => s = e,
            _ if s < src.len() => {
                push(&mut out, &src[s..s + 1])?;
                s += 1;
            }
            _ => break,
        }
        if anchor {
            break;
        }
    }
    push(&mut out, &src[s..])?;
    ms.flush()?;
    Ok((out, n))
}

/// `add_s`: the template with its escapes replaced for the match `s..e`. A `%` at the very
/// end adds the string's terminating NUL, as C reads it.
fn expand(ms: &State<'_, '_>, template: &[u8], s: usize, e: usize, out: &mut Vec<u8>) -> Result<(), PatternError> {
    let mut i = 0;
    while i < template.len() {
        let c = template[i];
        if c != L_ESC {
            out.push(c);
        } else {
            i += 1;
            let d = template.get(i).copied().unwrap_or(0);
            if !d.is_ascii_digit() {
                out.push(d);
            } else if d == b'0' {
                out.extend_from_slice(&ms.src[s..e]);
            } else {
                match ms.one_capture(usize::from(d - b'1'), s, e)? {
                    Capture::Text(r) => out.extend_from_slice(&ms.src[r]),
                    Capture::Position(at) => out.extend_from_slice(at.to_string().as_bytes()),
                }
            }
        }
        i += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(src: &str, found: &Found) -> Vec<String> {
        found
            .captures
            .iter()
            .map(|c| match c {
                Capture::Text(r) => src[r.clone()].to_string(),
                Capture::Position(p) => format!("@{p}"),
            })
            .collect()
    }

    fn m(src: &str, pat: &str) -> Option<Vec<String>> {
        find(src.as_bytes(), pat.as_bytes(), 0, false, false, &mut Unmetered).expect("valid").map(|f| caps(src, &f))
    }

    #[test]
    fn matches_like_lua() {
        assert_eq!(m("hello world", "o w"), Some(vec!["o w".into()]));
        assert_eq!(m("key = value", "(%w+)%s*=%s*(%w+)"), Some(vec!["key".into(), "value".into()]));
        assert_eq!(m("1.5Gi", "^(%d+%.?%d*)([a-z]*)$"), None, "upper-case unit");
        assert_eq!(m("1.5gi", "^(%d+%.?%d*)([a-z]*)$"), Some(vec!["1.5".into(), "gi".into()]));
        assert_eq!(m("THE (quick) fox", "%((%a+)%)"), Some(vec!["quick".into()]));
        assert_eq!(m("f(a(b)c)d", "%b()"), Some(vec!["(a(b)c)".into()]));
        assert_eq!(m("THE quick", "%f[%a]%a+"), Some(vec!["THE".into()]));
        assert_eq!(m("abc", "()b()"), Some(vec!["@2".into(), "@3".into()]));
        assert_eq!(m("aXa", "(a)X%1"), Some(vec!["a".into()]));
        assert_eq!(m("a-b", "[%-]"), Some(vec!["-".into()]));
        assert_eq!(m("]", "[]]"), Some(vec!["]".into()]));
        assert_eq!(m("x\u{b}y", "%s"), Some(vec!["\u{b}".into()]), "C's isspace has the vertical tab");
        assert_eq!(m("aaa", "a-"), Some(vec!["".into()]));
        assert_eq!(m("aaab", "a-b"), Some(vec!["aaab".into()]));
    }

    #[test]
    fn errors_are_luas() {
        for (pat, msg) in [
            ("%", "malformed pattern (ends with '%')"),
            ("[a", "malformed pattern (missing ']')"),
            ("%f", "missing '[' after '%f' in pattern"),
            ("(a", "unfinished capture"),
            ("a)", "invalid pattern capture"),
            ("%1", "invalid capture index"),
            ("%b", "unbalanced pattern"),
        ] {
            let e = find(b"a", pat.as_bytes(), 0, false, false, &mut Unmetered).expect_err(pat);
            assert_eq!(e, PatternError::Invalid(msg), "{pat}");
        }
        let many = "()".repeat(33);
        assert_eq!(
            find(b"a", many.as_bytes(), 0, false, false, &mut Unmetered),
            Err(PatternError::Invalid("too many captures"))
        );
    }

    struct Limit(u64);
    impl Meter for Limit {
        fn charge(&mut self, steps: u64) -> bool {
            self.0 = self.0.saturating_sub(steps);
            self.0 > 0
        }
    }

    #[test]
    fn backtracking_is_bounded_and_recursion_too() {
        let src = "a".repeat(30);
        let pat = format!("{}b", "a*".repeat(30));
        let e = find(src.as_bytes(), pat.as_bytes(), 0, false, true, &mut Limit(1_000_000));
        assert_eq!(e, Err(PatternError::Budget));
        let src = "a".repeat(1_000_000);
        let pat = "a?".repeat(1_000_000);
        let e = find(src.as_bytes(), pat.as_bytes(), 0, false, true, &mut Unmetered);
        assert_eq!(e, Err(PatternError::Invalid("pattern too complex")));
    }

    #[test]
    fn plain_find_uses_the_whole_pattern_and_a_pattern_stops_at_nul() {
        let f = find(b"xa\0*y", b"a\0*", 0, false, true, &mut Unmetered).expect("ok").expect("found");
        assert_eq!(f.range, 1..4, "no specials before the NUL: a plain search for all three bytes");
        let f = find(b"xa\0*y", b"a\0", 0, false, false, &mut Unmetered).expect("ok").expect("found");
        assert_eq!(f.range, 1..2, "match: the pattern ends at the NUL");
    }

    #[test]
    fn gsub_templates_and_limits() {
        let (out, n) =
            gsub(b"hello world", b"(%w+)", Replacement::Template(b"<%1>"), i64::MAX, 1 << 20, &mut Unmetered)
                .expect("ok");
        assert_eq!((out.as_slice(), n), (&b"<hello> <world>"[..], 2));
        let (out, n) = gsub(b"abc", b"", Replacement::Template(b"-"), i64::MAX, 1 << 20, &mut Unmetered).expect("ok");
        assert_eq!((out.as_slice(), n), (&b"-a-b-c-"[..], 4));
        let (out, n) = gsub(b"abc", b"^a", Replacement::Template(b"%%"), 5, 1 << 20, &mut Unmetered).expect("ok");
        assert_eq!((out.as_slice(), n), (&b"%bc"[..], 1));
        let (out, _) = gsub(b"ab", b"a", Replacement::Template(b"x%"), 5, 1 << 20, &mut Unmetered).expect("ok");
        assert_eq!(out.as_slice(), b"x\0b", "a trailing % adds the C string's NUL");
        let e = gsub(b"aaaa", b"a", Replacement::Template(b"xxxx"), 100, 10, &mut Unmetered);
        assert!(matches!(e, Err(ReplaceError::Pattern(PatternError::Memory))));
    }
}
