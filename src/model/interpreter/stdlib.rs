//! The library functions the sandbox replaces, so that no call into the library can run
//! longer than the script's budget allows: Lua 5.1's C functions run where the instruction
//! hook never fires.
//!
//! - `string.find`, `string.match`, `string.gmatch`, `string.gsub`: the patterns of
//!   [`super::pattern`] (Lua 5.1's matcher, step-metered), each step charged to the call's
//!   [`Budget`] as one instruction.
//! - `string.rep`: refuses a result larger than the memory the script has left, before
//!   building it (C's `string.rep('', 2^31 - 1)` loops two billion times without allocating).
//! - `table.sort`: Lua 5.1's quicksort (`ltablib.c`'s `auxsort`, the same pivots and swaps, so
//!   the same order for any comparator) written in Lua, so each comparison is VM instructions
//!   the hook counts (C's sort compares two long strings byte by byte, n·log n times, in one
//!   instruction). Its errors carry a `table.sort:` position where C's had none.
//!
//! The other library functions cost at most one pass over their arguments, which the memory
//! budget bounds. Errors are raised as mlua errors (a userdata to a script that catches them
//! with `coroutine.resume`, where C raised a string; `pcall` and `xpcall` give their message
//! as a string, as gopher-lua does); their text is Lua's, with the position of the calling
//! line as `luaL_error` gives it.
//!
//! And the functions whose answers differ between C Lua 5.1 and Karmada's gopher-lua, made
//! gopher-lua's so that a script gives the same results in both (issue 48, item 9; the
//! probes of `tests/fixtures/karmada-interpret` check each against `karmadactl interpret`):
//!
//! - `pcall`, `xpcall` ([`PROTECTED`]): there, missing in a bare sandbox; they cannot catch
//!   the instruction, time or memory budget (the error is raised again, and the call fails).
//! - `tostring` of a number ([`go_number_text`]): `0.3333333333333333`, `1000000000000000`,
//!   `9007199254740992`, `1.7976931348623157e+308` (C: `0.33333333333333`, `1e+15`…).
//! - `tonumber` ([`go_tonumber`]): `"1e2"` is nil there.
//! - `string.format` ([`go_format`]): `%g` without a precision is Go's shortest.
//! - `math.huge` is the largest double (gopher-lua's), not infinity.
//!
//! Deliberately not gopher-lua's: numbers converted to text by the VM itself (`..`,
//! `table.concat`, a number where a string function wants a string) keep C's `%.14g` (they
//! differ from Karmada only for whole numbers of 15 digits or more and fractions needing more
//! than 14 significant digits); `string.rep`, `string.gsub` (and the pattern functions) are
//! there, bounded by the budget, where Karmada's sandbox refuses `string.rep` and
//! `string.gsub` ("not supported by Karmada"): a script that runs in Karmada runs the same
//! here, one that uses them runs here only.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Instant;

use mlua::{Function, Lua, MultiValue, Table, Value as LuaValue};

use super::pattern::{self, Capture, Found, Meter, PatternError, ReplaceError, Replacement};

/// Why a call's budget ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exceeded {
    /// Its instructions (and library steps).
    Instructions,
    /// Its wall-clock time.
    Time,
    /// Its memory, where a script caught the error (`pcall`, `xpcall`, `coroutine.resume`):
    /// marked so that the call fails all the same.
    Memory,
}

/// The budget of the call running in a VM: spent by the instruction hook (on every coroutine:
/// the hook is the VM's global one, which `coroutine.create` inherits) and by the library
/// functions of this module. Once spent it stays spent for the rest of the call, so a script
/// that catches the error (`coroutine.resume`) fails at its next hook, and the call fails
/// whatever it returns.
pub struct Budget {
    fuel: Cell<u64>,
    deadline: Cell<Option<Instant>>,
    exceeded: Cell<Option<Exceeded>>,
    /// The memory limit set on the VM for this call (0: none).
    pub(super) memory_limit: Cell<usize>,
    /// `string.gsub` calls with a function or table replacement under way (each level runs
    /// the VM again on the thread's stack, through mlua's and this module's frames).
    nested: Cell<u32>,
}

/// `string.gsub`s with a function or table replacement that may run inside one another: C Lua
/// stops at 200 C levels of any kind, but a level here is much deeper (tens of KiB of Rust
/// frames in a debug build) and a pool thread has 2 MiB.
const MAX_NESTED_GSUB: u32 = 16;

impl Budget {
    pub(super) fn new() -> Rc<Budget> {
        Rc::new(Budget {
            fuel: Cell::new(u64::MAX),
            deadline: Cell::new(None),
            exceeded: Cell::new(None),
            memory_limit: Cell::new(0),
            nested: Cell::new(0),
        })
    }

    /// A new call's budget.
    pub(super) fn reset(&self, fuel: u64, deadline: Option<Instant>) {
        self.fuel.set(fuel);
        self.deadline.set(deadline);
        self.exceeded.set(None);
        self.nested.set(0);
    }

    /// No limit (between calls).
    pub(super) fn lift(&self) {
        self.reset(u64::MAX, None);
    }

    pub(super) fn exceeded(&self) -> Option<Exceeded> {
        self.exceeded.get()
    }

    /// The script ran out of memory (and caught the error): the call fails.
    fn memory_spent(&self) {
        if self.exceeded.get().is_none() {
            self.exceeded.set(Some(Exceeded::Memory));
        }
    }

    /// Spends `n` instructions; `false` once the budget is spent (and from then on).
    pub(super) fn spend(&self, n: u64) -> bool {
        if self.exceeded.get().is_some() {
            return false;
        }
        let left = self.fuel.get();
        if left <= n {
            self.fuel.set(0);
            self.exceeded.set(Some(Exceeded::Instructions));
            return false;
        }
        self.fuel.set(left - n);
        if self.deadline.get().is_some_and(|d| Instant::now() > d) {
            self.exceeded.set(Some(Exceeded::Time));
            return false;
        }
        true
    }

    /// Bytes a library function may still build for the script.
    fn memory_left(&self, lua: &Lua) -> usize {
        match self.memory_limit.get() {
            0 => super::lua::MEMORY_BUDGET,
            limit => limit.saturating_sub(lua.used_memory()),
        }
    }
}

/// The error the hook and the library raise when the budget is spent.
pub(super) fn budget_error() -> mlua::Error {
    mlua::Error::runtime("script budget exhausted")
}

struct Metered<'a>(&'a Budget);

impl Meter for Metered<'_> {
    fn charge(&mut self, steps: u64) -> bool {
        self.0.spend(steps)
    }
}

/// `luaL_where(L, 1)`: the calling line's `chunk:line: `, if it has one.
fn at(lua: &Lua) -> String {
    lua.inspect_stack(1, |d| match (d.source().short_src, d.current_line()) {
        (Some(src), Some(line)) if line > 0 => format!("{src}:{line}: "),
        _ => String::new(),
    })
    .unwrap_or_default()
}

fn error(lua: &Lua, message: &str) -> mlua::Error {
    mlua::Error::runtime(format!("{}{message}", at(lua)))
}

fn pattern_error(lua: &Lua, e: PatternError) -> mlua::Error {
    match e {
        PatternError::Invalid(m) => error(lua, m),
        PatternError::Budget => budget_error(),
        PatternError::Memory => mlua::Error::MemoryError("not enough memory".into()),
    }
}

fn type_name(v: Option<&LuaValue>) -> &'static str {
    v.map_or("no value", LuaValue::type_name)
}

/// `luaL_checklstring`: a string, or a number as its text.
fn check_string(lua: &Lua, args: &MultiValue, n: usize, name: &str) -> mlua::Result<mlua::LuaString> {
    let v = args.get(n - 1);
    let s = match v {
        Some(v @ (LuaValue::String(_) | LuaValue::Number(_) | LuaValue::Integer(_))) => lua.coerce_string(v.clone())?,
        _ => None,
    };
    s.ok_or_else(|| error(lua, &format!("bad argument #{n} to '{name}' (string expected, got {})", type_name(v))))
}

/// `luaL_optinteger`: `default` for none or nil, else a number (or numeric string)
/// truncated as C casts it.
fn opt_integer(lua: &Lua, args: &MultiValue, n: usize, name: &str, default: i64) -> mlua::Result<i64> {
    let v = args.get(n - 1);
    match v {
        None | Some(LuaValue::Nil) => Ok(default),
        Some(v) => check_number(lua, v, n, name),
    }
}

fn check_number(lua: &Lua, v: &LuaValue, n: usize, name: &str) -> mlua::Result<i64> {
    let number = match v {
        LuaValue::Number(_) | LuaValue::Integer(_) | LuaValue::String(_) => lua.coerce_number(v.clone())?,
        _ => None,
    };
    number
        .map(|x| x as i64)
        .ok_or_else(|| error(lua, &format!("bad argument #{n} to '{name}' (number expected, got {})", v.type_name())))
}

/// `posrelat` then clamped to `0..=len`, 0-based (`str_find_aux`'s `init`).
fn start_at(init: i64, len: usize) -> usize {
    let len_i = len as i64;
    let pos = if init < 0 { init + len_i + 1 } else { init };
    let pos = pos.max(0) - 1;
    pos.clamp(0, len_i) as usize
}

fn capture_value(lua: &Lua, src: &[u8], c: &Capture) -> mlua::Result<LuaValue> {
    Ok(match c {
        Capture::Text(r) => LuaValue::String(lua.create_string(&src[r.clone()])?),
        Capture::Position(p) => LuaValue::Number(*p as f64),
    })
}

fn captures(lua: &Lua, src: &[u8], found: &Found) -> mlua::Result<MultiValue> {
    found.captures.iter().map(|c| capture_value(lua, src, c)).collect()
}

fn str_find(lua: &Lua, args: MultiValue, budget: &Budget, find: bool) -> mlua::Result<MultiValue> {
    let name = if find { "find" } else { "match" };
    let s = check_string(lua, &args, 1, name)?;
    let p = check_string(lua, &args, 2, name)?;
    let (src, pat) = (s.as_bytes(), p.as_bytes());
    let init = start_at(opt_integer(lua, &args, 3, name, 1)?, src.len());
    let plain = args.get(3).is_some_and(|v| !matches!(v, LuaValue::Nil | LuaValue::Boolean(false)));
    let found =
        pattern::find(&src, &pat, init, plain, find, &mut Metered(budget)).map_err(|e| pattern_error(lua, e))?;
    let Some(found) = found else { return Ok(MultiValue::from_vec(vec![LuaValue::Nil])) };
    let mut out = MultiValue::new();
    if find {
        out.push_back(LuaValue::Number((found.range.start + 1) as f64));
        out.push_back(LuaValue::Number(found.range.end as f64));
    }
    out.extend(captures(lua, &src, &found)?);
    Ok(out)
}

fn gmatch(lua: &Lua, args: MultiValue, budget: Rc<Budget>) -> mlua::Result<Function> {
    let s = check_string(lua, &args, 1, "gmatch")?;
    let p = check_string(lua, &args, 2, "gmatch")?;
    let next = Cell::new(0usize);
    lua.create_function(move |lua, ()| {
        let (src, pat) = (s.as_bytes(), p.as_bytes());
        match pattern::gmatch_next(&src, &pat, next.get(), &mut Metered(&budget)) {
            Ok(Some((found, from))) => {
                next.set(from);
                captures(lua, &src, &found)
            }
            Ok(None) => Ok(MultiValue::new()),
            Err(e) => Err(pattern_error(lua, e)),
        }
    })
}

/// `add_value`'s check of what a function or table gave: `None` keeps the match.
fn replacement_bytes(lua: &Lua, v: LuaValue) -> mlua::Result<Option<Vec<u8>>> {
    match v {
        LuaValue::Nil | LuaValue::Boolean(false) => Ok(None),
        LuaValue::String(s) => Ok(Some(s.as_bytes().to_vec())),
        v @ (LuaValue::Number(_) | LuaValue::Integer(_)) => Ok(lua.coerce_string(v)?.map(|s| s.as_bytes().to_vec())),
        other => Err(error(lua, &format!("invalid replacement value (a {})", other.type_name()))),
    }
}

fn gsub(lua: &Lua, args: MultiValue, budget: &Budget) -> mlua::Result<(mlua::LuaString, f64)> {
    if matches!(args.get(2), Some(LuaValue::Function(_) | LuaValue::Table(_))) {
        if budget.nested.get() >= MAX_NESTED_GSUB {
            return Err(error(lua, "C stack overflow (string.gsub inside string.gsub too deeply)"));
        }
        budget.nested.set(budget.nested.get() + 1);
        let out = gsub_here(lua, args, budget);
        budget.nested.set(budget.nested.get() - 1);
        return out;
    }
    gsub_here(lua, args, budget)
}

fn gsub_here(lua: &Lua, args: MultiValue, budget: &Budget) -> mlua::Result<(mlua::LuaString, f64)> {
    let s = check_string(lua, &args, 1, "gsub")?;
    let p = check_string(lua, &args, 2, "gsub")?;
    let src = s.as_bytes();
    // `luaL_optint`: an int, as C casts it.
    let max_n = i64::from(opt_integer(lua, &args, 4, "gsub", src.len() as i64 + 1)? as i32);
    let repl = args.get(2).cloned().unwrap_or(LuaValue::Nil);
    let max_len = budget.memory_left(lua);
    let meter = &mut Metered(budget);
    let out = match &repl {
        LuaValue::String(_) | LuaValue::Number(_) | LuaValue::Integer(_) => {
            let template = lua.coerce_string(repl.clone())?.map(|t| t.as_bytes().to_vec()).unwrap_or_default();
            pattern::gsub(&src, &p.as_bytes(), Replacement::Template(&template), max_n, max_len, meter)
        }
        LuaValue::Function(f) => {
            let mut each = |src: &[u8], found: &Found| -> Result<Option<Vec<u8>>, ReplaceError> {
                let args = captures(lua, src, found).map_err(ReplaceError::Callback)?;
                let v = f.call::<LuaValue>(args).map_err(ReplaceError::Callback)?;
                replacement_bytes(lua, v).map_err(ReplaceError::Callback)
            };
            pattern::gsub(
                &src,
                &p.as_bytes(),
                Replacement::Each { first_only: false, f: &mut each },
                max_n,
                max_len,
                meter,
            )
        }
        LuaValue::Table(t) => {
            let mut each = |src: &[u8], found: &Found| -> Result<Option<Vec<u8>>, ReplaceError> {
                let key = match found.captures.first() {
                    Some(c) => capture_value(lua, src, c).map_err(ReplaceError::Callback)?,
                    None => LuaValue::Nil,
                };
                let v = t.get::<LuaValue>(key).map_err(ReplaceError::Callback)?;
                replacement_bytes(lua, v).map_err(ReplaceError::Callback)
            };
            pattern::gsub(
                &src,
                &p.as_bytes(),
                Replacement::Each { first_only: true, f: &mut each },
                max_n,
                max_len,
                meter,
            )
        }
        other => {
            return Err(error(
                lua,
                &format!("bad argument #3 to 'gsub' (string/function/table expected, got {})", other.type_name()),
            ));
        }
    };
    match out {
        Ok((bytes, n)) => Ok((lua.create_string(&bytes)?, n as f64)),
        Err(ReplaceError::Pattern(e)) => Err(pattern_error(lua, e)),
        Err(ReplaceError::Callback(e)) => Err(e),
    }
}

fn rep(lua: &Lua, args: MultiValue, budget: &Budget) -> mlua::Result<mlua::LuaString> {
    let s = check_string(lua, &args, 1, "rep")?;
    let n = match args.get(1) {
        Some(v) => check_number(lua, v, 2, "rep")?,
        None => return Err(error(lua, "bad argument #2 to 'rep' (number expected, got no value)")),
    };
    // `luaL_checkint`: an int, as C casts it.
    let n = n as i32;
    let unit = s.as_bytes();
    if n <= 0 || unit.is_empty() {
        return lua.create_string("");
    }
    let total = unit.len().checked_mul(n as usize).filter(|&t| t <= budget.memory_left(lua));
    let Some(total) = total else { return Err(mlua::Error::MemoryError("not enough memory".into())) };
    if !budget.spend(total as u64 / 64 + 1) {
        return Err(budget_error());
    }
    lua.create_string(unit.repeat(n as usize))
}

/// Lua 5.1's `table.sort` (`ltablib.c`), statement for statement; `rawget`, `rawset`,
/// `error`, `type`, `select` and `math.floor` are the real ones, given when the chunk is loaded.
const SORT: &str = r##"
local rawget, rawset, error, type, select, floor = ...
local function less(a, b) return a < b end
local function auxsort(t, l, u, lt, d)
  while l < u do
    local al, au = rawget(t, l), rawget(t, u)
    if lt(au, al) then rawset(t, l, au) rawset(t, u, al) end
    if u - l == 1 then break end
    local i = floor((l + u) / 2)
    local ai
    ai, al = rawget(t, i), rawget(t, l)
    if lt(ai, al) then
      rawset(t, i, al) rawset(t, l, ai)
    else
      au = rawget(t, u)
      if lt(au, ai) then rawset(t, i, au) rawset(t, u, ai) end
    end
    if u - l == 2 then break end
    local p = rawget(t, i)
    rawset(t, i, rawget(t, u - 1)) rawset(t, u - 1, p)
    local j = u - 1
    i = l
    while true do
      i = i + 1
      ai = rawget(t, i)
      while lt(ai, p) do
        if i > u then error("invalid order function for sorting", d + 2) end
        i = i + 1
        ai = rawget(t, i)
      end
      j = j - 1
      local aj = rawget(t, j)
      while lt(p, aj) do
        if j < l then error("invalid order function for sorting", d + 2) end
        j = j - 1
        aj = rawget(t, j)
      end
      if j < i then break end
      rawset(t, i, aj) rawset(t, j, ai)
    end
    local last = rawget(t, u - 1)
    rawset(t, u - 1, rawget(t, i)) rawset(t, i, last)
    if i - l < u - i then
      j = l i = i - 1 l = i + 2
    else
      j = i + 1 i = u u = j - 2
    end
    auxsort(t, j, i, lt, d + 1)
  end
end
return function(...)
  local t, comp = ...
  if type(t) ~= "table" then
    error("bad argument #1 to 'sort' (table expected, got " .. (select("#", ...) == 0 and "no value" or type(t)) .. ")", 2)
  end
  if comp ~= nil and type(comp) ~= "function" then
    error("bad argument #2 to 'sort' (function expected, got " .. type(comp) .. ")", 2)
  end
  auxsort(t, 1, #t, comp or less, 1)
end
"##;

/// Coroutines: a new coroutine starts its own instruction count (the hook fires after
/// `HOOK_EVERY` instructions of that coroutine), so a tree of short coroutines would never
/// meet the hook; and `resume` catches errors, the budget's included. Creating one is charged
/// a hook's worth of instructions, and once the budget is spent, `create`, `wrap` and
/// `resume` raise its error again; and `resume` raises a budget or memory error its coroutine
/// died of again at once (as [`PROTECTED`]'s `pcall` does; a wrapped coroutine's errors go
/// through anyway). A coroutine that dies of its own `error("not enough memory", 0)` is taken
/// for one out of memory (C gives `resume` no way to tell them apart).
const COROUTINES: &str = r#"
local create, resume, wrap, charge, step, after = ...
return function(f) charge(step) return create(f) end,
  function(co, ...) charge(0) return after(resume(co, ...)) end,
  function(f) charge(step) return wrap(f) end
"#;

/// gopher-lua's text of a number (`LNumber.String`, what `tostring` gives in Karmada): a whole
/// number in `int64`'s range as that integer (`1e15` → `1000000000000000`), any other as Go's
/// `%v` ([`go_g`]): C Lua's `%.14g` gives `1e+15` and `0.33333333333333`.
pub fn go_number_text(n: f64) -> String {
    // Go converts with CVTTSD2SI on amd64 (where karmadactl ran): out of range is
    // `int64` min, which is not equal to the number, so the `%v` form.
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if n.fract() == 0.0 && (-TWO_63..TWO_63).contains(&n) {
        return (n as i64).to_string();
    }
    go_g(n)
}

/// Go's `%g` / `%v` of a float64 without a precision: the shortest digits that read back,
/// in `%e` form (`1.2345675e+06`, two exponent digits at least) when the exponent is below
/// -4 or from 6 on, else plainly (`0.3333333333333333`); `NaN`, `+Inf`, `-Inf`.
pub fn go_g(n: f64) -> String {
    if n.is_nan() {
        return "NaN".into();
    }
    if n.is_infinite() {
        return if n > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    let sign = if n.is_sign_negative() { "-" } else { "" };
    // Rust's `{:e}` is the shortest form that reads back: its digits and exponent are Go's.
    let e = format!("{:e}", n.abs());
    let (mantissa, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..6).contains(&exp) {
        let (first, rest) = digits.split_at(1);
        let dot = if rest.is_empty() { String::new() } else { format!(".{rest}") };
        let esign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{first}{dot}e{esign}{:02}", exp.unsigned_abs());
    }
    if exp < 0 {
        return format!("{sign}0.{}{digits}", "0".repeat((-exp - 1) as usize));
    }
    let whole = exp as usize + 1;
    if digits.len() <= whole {
        return format!("{sign}{digits}{}", "0".repeat(whole - digits.len()));
    }
    format!("{sign}{}.{}", &digits[..whole], &digits[whole..])
}

/// gopher-lua's `tonumber`: a number as it is; a string (trimmed of spaces, tabs and newlines)
/// with a `.` read as Go's `ParseFloat` (out of range: nil), any other as an integer in the
/// base (10, or 16 after a `0x` when no base is given) that fits `int64` — so `"1e2"` is nil,
/// where C Lua gives 100; anything else nil.
fn go_tonumber(lua: &Lua, args: MultiValue) -> mlua::Result<LuaValue> {
    let Some(v) = args.front() else {
        return Err(error(lua, "bad argument #1 to 'tonumber' (value expected)"));
    };
    let base = match args.get(1) {
        None | Some(LuaValue::Nil) => None,
        Some(b) => Some(check_number(lua, b, 2, "tonumber")?),
    };
    let s = match v {
        LuaValue::Number(_) | LuaValue::Integer(_) => return Ok(v.clone()),
        LuaValue::String(s) => s.to_string_lossy(),
        _ => return Ok(LuaValue::Nil),
    };
    let s = s.trim_matches([' ', '\n', '\t']);
    let number = if s.contains('.') {
        s.parse::<f64>().ok().filter(|n| n.is_finite())
    } else {
        let (digits, base) = match base {
            None if s.len() >= 2 && s[..2].eq_ignore_ascii_case("0x") => (&s[2..], 16),
            None => (s, 10),
            Some(b) => (s, b),
        };
        go_parse_int(digits, base).map(|i| i as f64)
    };
    Ok(number.map_or(LuaValue::Nil, LuaValue::Number))
}

/// Go's `strconv.ParseInt(s, base, 64)` without underscores: a sign, then digits of the base
/// (0: by its prefix `0x`, `0o`, `0b`, `0`).
fn go_parse_int(s: &str, base: i64) -> Option<i64> {
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let (body, base) = match base {
        0 => {
            let lower = body.to_ascii_lowercase();
            if lower.starts_with("0x") {
                (&body[2..], 16)
            } else if lower.starts_with("0b") {
                (&body[2..], 2)
            } else if lower.starts_with("0o") {
                (&body[2..], 8)
            } else if body.len() > 1 && body.starts_with('0') {
                (&body[1..], 8)
            } else {
                (body, 10)
            }
        }
        2..=36 => (body, base as u32),
        _ => return None,
    };
    if body.is_empty() || !body.chars().all(|c| c.is_digit(base)) {
        return None;
    }
    let magnitude = u64::from_str_radix(body, base).ok()?;
    if neg {
        if magnitude == 1 << 63 { Some(i64::MIN) } else { i64::try_from(magnitude).ok().map(|m| -m) }
    } else {
        i64::try_from(magnitude).ok()
    }
}

/// gopher-lua's `string.format` is Go's `Sprintf`: where the two differ on what scripts use,
/// the argument is formatted here and handed to C's `format` as a `%s`. `%g` and `%G` without
/// a precision are Go's shortest (`0.3333333333333333`, where C gives `0.333333`); `%s` of a
/// number is [`go_number_text`]; `%i` is `%d`. Everything else is C's, as before.
fn go_format(lua: &Lua, real: &Function, mut args: MultiValue) -> mlua::Result<MultiValue> {
    let Some(LuaValue::String(fmt)) = args.front().cloned() else { return real.call(args) };
    let fmt = fmt.as_bytes().to_vec();
    let mut out = Vec::with_capacity(fmt.len());
    let mut changed = false;
    let (mut i, mut arg) = (0, 1);
    while i < fmt.len() {
        out.push(fmt[i]);
        if fmt[i] != b'%' {
            i += 1;
            continue;
        }
        i += 1;
        if fmt.get(i) == Some(&b'%') {
            out.push(b'%');
            i += 1;
            continue;
        }
        let start = i;
        while i < fmt.len() && b"-+ #0".contains(&fmt[i]) {
            i += 1;
        }
        let flags = &fmt[start..i];
        let width_start = i;
        while i < fmt.len() && fmt[i].is_ascii_digit() {
            i += 1;
        }
        let width_digits = &fmt[width_start..i];
        let width: usize = std::str::from_utf8(width_digits).ok().and_then(|w| w.parse().ok()).unwrap_or(0);
        let precision = fmt.get(i) == Some(&b'.');
        while i < fmt.len() && (fmt[i] == b'.' || fmt[i].is_ascii_digit()) {
            i += 1;
        }
        let Some(&conv) = fmt.get(i) else {
            out.extend_from_slice(&fmt[start..]);
            break;
        };
        let number = match args.get(arg) {
            Some(LuaValue::Number(n)) => Some(*n),
            Some(LuaValue::Integer(n)) => Some(*n as f64),
            _ => None,
        };
        match (conv, number) {
            (b'g' | b'G', Some(n)) if !precision => {
                let mut t = go_g(n);
                if conv == b'G' {
                    t = t.to_uppercase();
                }
                if !t.starts_with('-') {
                    if flags.contains(&b'+') {
                        t.insert(0, '+');
                    } else if flags.contains(&b' ') {
                        t.insert(0, ' ');
                    }
                }
                if flags.contains(&b'0') && !flags.contains(&b'-') && t.len() < width {
                    let at = usize::from(t.starts_with(['-', '+', ' ']));
                    t.insert_str(at, &"0".repeat(width - t.len()));
                }
                // The width still applies, as C's `%-10s` pads.
                if flags.contains(&b'-') {
                    out.push(b'-');
                }
                out.extend_from_slice(width_digits);
                out.push(b's');
                args[arg] = LuaValue::String(lua.create_string(t)?);
                changed = true;
            }
            (b's', Some(n)) => {
                out.extend_from_slice(&fmt[start..i]);
                out.push(b's');
                args[arg] = LuaValue::String(lua.create_string(go_number_text(n))?);
                changed = true;
            }
            _ => {
                out.extend_from_slice(&fmt[start..i]);
                out.push(if conv == b'i' { b'd' } else { conv });
                changed |= conv == b'i';
            }
        }
        i += 1;
        arg += 1;
    }
    if changed {
        args[0] = LuaValue::String(lua.create_string(&out)?);
    }
    // C's errors name the function they can see (none, called from here) and no line.
    real.call(args).map_err(|e| match e {
        mlua::Error::RuntimeError(m) => error(lua, &m.replacen("to '?'", "to 'format'", 1)),
        other => other,
    })
}

/// `pcall` and `xpcall` as gopher-lua has them (the error value itself; a library function's
/// error as its message), on top of C's `xpcall`, without catching the budget: the handler
/// passes a budget error on untouched and boxes every other, and an error that comes back
/// unboxed — the budget's, or Lua's memory error, for which C calls no handler — is raised
/// again. A memory error a script caught is marked as the budget spent.
const PROTECTED: &str = r##"
local xpcall, error, setmetatable, getmetatable, rawequal, rawget, type, select, unpack, caught, uncaught = ...
local BOX = {}
local function boxed(e)
  local pass, v = caught(e)
  if pass then return e end
  return setmetatable({v}, BOX)
end
local function finish(ok, ...)
  if ok then return true, ... end
  local e = ...
  if type(e) == "table" and rawequal(getmetatable(e), BOX) then return false, rawget(e, 1) end
  if uncaught(e) then error(e, 0) end
  return false, e
end
local function callable(f)
  if type(f) == "function" then return true end
  local mt = getmetatable(f)
  return type(mt) == "table" and type(rawget(mt, "__call")) == "function"
end
local function pcall(f, ...)
  if not callable(f) then return false, "attempt to call a " .. type(f) .. " value" end
  local n, args = select("#", ...), {...}
  return finish(xpcall(function() return f(unpack(args, 1, n)) end, boxed))
end
local function xpcall2(f, h)
  if type(f) ~= "function" then error("bad argument #1 to 'xpcall' (function expected, got " .. type(f) .. ")", 2) end
  if type(h) ~= "function" then error("bad argument #2 to 'xpcall' (function expected, got " .. type(h) .. ")", 2) end
  return finish(xpcall(f, function(e)
    local pass, v = caught(e)
    if pass then return e end
    return setmetatable({(h(v))}, BOX)
  end))
end
return pcall, xpcall2, function(ok, ...)
  if not ok and uncaught((...)) then error((...), 0) end
  return ok, ...
end
"##;

/// A library function's error as the text gopher-lua would give (no `runtime error: `).
fn message_of(e: &mlua::Error) -> String {
    match e {
        mlua::Error::RuntimeError(m) => m.clone(),
        mlua::Error::CallbackError { cause, .. } | mlua::Error::WithContext { cause, .. } => message_of(cause),
        other => other.to_string(),
    }
}

/// [`PROTECTED`]'s chunk name, as positions show it.
const PROTECTED_CHUNK: &str = "(pcall)";

/// A message without the position of [`PROTECTED`]'s own line (`(pcall):24: `).
fn unplaced(m: &str) -> String {
    let rest = m.strip_prefix(PROTECTED_CHUNK).and_then(|r| r.strip_prefix(':'));
    match rest.and_then(|r| r.split_once(": ")) {
        Some((line, text)) if !line.is_empty() && line.bytes().all(|b| b.is_ascii_digit()) => text.to_string(),
        _ => m.to_string(),
    }
}

/// Lua 5.1's message for a memory error (the only error for which it calls no handler).
const MEMORY_MESSAGE: &[u8] = b"not enough memory";
/// "Error in error handling" this close to the memory limit is taken for a memory error.
const MEMORY_SLACK: usize = 1 << 20;

/// Puts the bounded functions into the real `string` and `table` libraries (before the
/// sandbox wraps them in read-only proxies; strings' metatable indexes the same table).
pub(super) fn install(lua: &Lua, budget: &Rc<Budget>) -> mlua::Result<()> {
    let g = lua.globals();
    let string: Table = g.get("string")?;
    let b = Rc::clone(budget);
    string.raw_set("find", lua.create_function(move |lua, args| str_find(lua, args, &b, true))?)?;
    let b = Rc::clone(budget);
    string.raw_set("match", lua.create_function(move |lua, args| str_find(lua, args, &b, false))?)?;
    let b = Rc::clone(budget);
    string.raw_set("gmatch", lua.create_function(move |lua, args| gmatch(lua, args, Rc::clone(&b)))?)?;
    let b = Rc::clone(budget);
    string.raw_set("gsub", lua.create_function(move |lua, args| gsub(lua, args, &b))?)?;
    let b = Rc::clone(budget);
    string.raw_set("rep", lua.create_function(move |lua, args| rep(lua, args, &b))?)?;
    let table: Table = g.get("table")?;
    let math: Table = g.get("math")?;
    let sort: Function = lua.load(SORT).set_name("=table.sort").call((
        g.get::<Function>("rawget")?,
        g.get::<Function>("rawset")?,
        g.get::<Function>("error")?,
        g.get::<Function>("type")?,
        g.get::<Function>("select")?,
        math.get::<Function>("floor")?,
    ))?;
    table.raw_set("sort", sort)?;
    // pcall, xpcall, and resume's check: the budget is not theirs to catch.
    let b = Rc::clone(budget);
    let caught = lua.create_function(move |lua, e: LuaValue| -> mlua::Result<(bool, LuaValue)> {
        if b.exceeded().is_some() {
            return Ok((true, LuaValue::Nil));
        }
        match &e {
            LuaValue::Error(err) if super::lua::is_memory_error(err) => {
                b.memory_spent();
                Ok((true, LuaValue::Nil))
            }
            LuaValue::Error(err) => Ok((false, LuaValue::String(lua.create_string(unplaced(&message_of(err)))?))),
            // `error(m)` called straight from `pcall` places itself in the wrapper's line: C's
            // `pcall` calls it with no Lua line in between, so without a position.
            LuaValue::String(m) => match m.to_str() {
                Ok(t) if t.starts_with(PROTECTED_CHUNK) => {
                    Ok((false, LuaValue::String(lua.create_string(unplaced(&t))?)))
                }
                _ => Ok((false, e)),
            },
            _ => Ok((false, e)),
        }
    })?;
    let b = Rc::clone(budget);
    let uncaught = lua.create_function(move |lua, e: LuaValue| -> mlua::Result<bool> {
        if b.exceeded().is_some() {
            return Ok(true);
        }
        let memory = match &e {
            LuaValue::Error(err) => super::lua::is_memory_error(err),
            LuaValue::String(s) if s.as_bytes().as_ref() == MEMORY_MESSAGE => true,
            // The handler failed (C's "error in error handling") at the limit: out of memory.
            LuaValue::String(_) => {
                let limit = b.memory_limit.get();
                limit != 0 && lua.used_memory().saturating_add(MEMORY_SLACK) >= limit
            }
            _ => false,
        };
        if memory {
            b.memory_spent();
        }
        Ok(memory)
    })?;
    let (pcall, xpcall, after): (Function, Function, Function) =
        lua.load(PROTECTED).set_name(format!("={PROTECTED_CHUNK}")).call((
            g.get::<Function>("xpcall")?,
            g.get::<Function>("error")?,
            g.get::<Function>("setmetatable")?,
            g.get::<Function>("getmetatable")?,
            g.get::<Function>("rawequal")?,
            g.get::<Function>("rawget")?,
            g.get::<Function>("type")?,
            g.get::<Function>("select")?,
            g.get::<Function>("unpack")?,
            caught,
            uncaught,
        ))?;
    g.raw_set("pcall", pcall)?;
    g.raw_set("xpcall", xpcall)?;
    // Numbers as text, and text as numbers, as gopher-lua has them.
    let real_tostring: Function = g.get("tostring")?;
    g.raw_set(
        "tostring",
        lua.create_function(move |lua, args: MultiValue| match args.front() {
            Some(LuaValue::Number(n)) => Ok(LuaValue::String(lua.create_string(go_number_text(*n))?)),
            // mlua hands a whole number over as an integer.
            Some(LuaValue::Integer(n)) => Ok(LuaValue::String(lua.create_string(n.to_string())?)),
            _ => real_tostring.call(args),
        })?,
    )?;
    g.raw_set("tonumber", lua.create_function(go_tonumber)?)?;
    let real_format: Function = string.get("format")?;
    string.raw_set("format", lua.create_function(move |lua, args| go_format(lua, &real_format, args))?)?;
    // gopher-lua's `math.huge` is the largest double, not infinity.
    math.raw_set("huge", f64::MAX)?;
    let coroutine: Table = g.get("coroutine")?;
    let b = Rc::clone(budget);
    let charge = lua.create_function(move |_, n: u64| if b.spend(n) { Ok(()) } else { Err(budget_error()) })?;
    let (create, resume, wrap): (Function, Function, Function) = lua.load(COROUTINES).set_name("=coroutine").call((
        coroutine.get::<Function>("create")?,
        coroutine.get::<Function>("resume")?,
        coroutine.get::<Function>("wrap")?,
        charge,
        u64::from(super::lua::HOOK_EVERY),
        after,
    ))?;
    coroutine.raw_set("create", create)?;
    coroutine.raw_set("resume", resume)?;
    coroutine.raw_set("wrap", wrap)?;
    Ok(())
}

/// The replacements against Lua 5.1's own C functions, on random subjects and patterns
/// (results and error messages).
#[cfg(test)]
mod tests {
    use super::super::lua::{self, LuaArg, LuaFailure, LuaOut};
    use proptest::prelude::*;
    use serde_json::{Value, json};

    /// One operation per script, on line 1 (errors read `t:1: …` on both sides).
    const SCRIPTS: &[&str] = &[
        "function F(s, p, i, plain) return {string.find(s, p, i, plain)} end",
        "function F(s, p, i) return {string.match(s, p, i)} end",
        "function F(s, p) local r = {} for a, b in string.gmatch(s, p) do r[#r + 1] = tostring(a) .. '|' .. tostring(b) end return r end",
        "function F(s, p, i) return {string.gsub(s, p, '<%0|%1>', i)} end",
        "function F(s, p) local r = {} local o, n = string.gsub(s, p, function(...) r[#r + 1] = select('#', ...) .. tostring((...)) if #r % 2 == 0 then return #r end end) return {o, n, table.concat(r, ',')} end",
        "function F(s, p) return {string.gsub(s, p, setmetatable({}, {__index = function(t, k) if type(k) == 'number' then return false end return type(k) .. k end}))} end",
        "function F(s, p) return {(s):rep(3, p)} end",
    ];

    /// What C Lua 5.1 answers: the same script in a VM with the C library.
    fn reference(script: &str, args: &[Value]) -> Result<Value, String> {
        let lua = mlua::Lua::new();
        lua.load(script).set_name("=t").exec().map_err(|e| e.to_string())?;
        let f: mlua::Function = lua.globals().get("F").map_err(|e| e.to_string())?;
        let args: Vec<mlua::Value> =
            args.iter().map(|a| lua::to_lua(&lua, a, 0)).collect::<mlua::Result<_>>().map_err(|e| e.to_string())?;
        let out: mlua::Value = f.call(mlua::MultiValue::from_vec(args)).map_err(|e| lua::clean(&e))?;
        match lua::from_lua(&out) {
            Ok(LuaOut::Table(v)) => Ok(v),
            other => Err(format!("{other:?}")),
        }
    }

    fn ours(script: &str, args: &[Value]) -> Result<Value, String> {
        let args: Vec<LuaArg<'_>> = args.iter().map(LuaArg::Json).collect();
        match lua::call(script, "t", "F", &args, 0) {
            Ok(out) => match out.as_slice() {
                [LuaOut::Table(v)] => Ok(v.clone()),
                other => Err(format!("{other:?}")),
            },
            Err(LuaFailure::Runtime(m)) => Err(m),
            Err(other) => Err(other.to_string()),
        }
    }

    /// The message after its position (`t:1: `), whatever wraps it.
    fn message(e: &str) -> &str {
        let e = e.split("\nstack traceback").next().unwrap_or(e);
        e.rsplit("t:1: ").next().unwrap_or(e).trim()
    }

    const ITEMS: &[&str] = &[
        "a", "b", ".", "%a", "%d", "%s", "%w", "%p", "%x", "%z", "%A", "%S", "%c", "%l", "%u", "[ab]", "[^a]", "[a-c]",
        "[%a-]", "[]]", "[^]b]", "(", ")", "()", "%1", "%2", "%b()", "%bab", "%f[%a]", "%f[%z]", "^", "$", "*", "+",
        "-", "?", "%", "[", "]", "%%", "%.", "\0", "x",
    ];

    fn subject() -> impl Strategy<Value = String> {
        proptest::collection::vec(
            proptest::sample::select(&['a', 'b', 'c', 'A', '1', ' ', '(', ')', '.', '%', '\0', '\u{b}', 'x'][..]),
            0..10,
        )
        .prop_map(|cs| cs.into_iter().collect())
    }

    fn pattern() -> impl Strategy<Value = String> {
        proptest::collection::vec(proptest::sample::select(ITEMS), 0..7).prop_map(|items| items.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]
        #[test]
        fn the_bounded_library_answers_as_lua_5_1(
            script in proptest::sample::select(SCRIPTS),
            s in subject(),
            p in pattern(),
            init in -12i64..12,
            plain in any::<bool>(),
        ) {
            let args = [json!(s), json!(p), json!(init), json!(plain)];
            let (want, got) = (reference(script, &args), ours(script, &args));
            match (&want, &got) {
                (Ok(w), Ok(g)) => prop_assert_eq!(w, g, "{} on {:?} {:?}", script, s, p),
                (Err(w), Err(g)) => prop_assert_eq!(message(w), message(g), "{} on {:?} {:?}", script, s, p),
                _ => prop_assert!(false, "{script} on {s:?} {p:?}: C {want:?}, ours {got:?}"),
            }
        }
    }

    /// What Go printed for these (`fmt.Sprint`, `%g`: the Go program of the corpus' notes).
    #[test]
    fn numbers_print_as_go_prints_them() {
        for (n, sprint) in [
            (1.0 / 3.0, "0.3333333333333333"),
            (1e6, "1e+06"),
            (1_234_567.5, "1.2345675e+06"),
            (123_456.5, "123456.5"),
            (1e21, "1e+21"),
            (1e20, "1e+20"),
            (0.0001, "0.0001"),
            (0.000_012_34, "1.234e-05"),
            (-2.5e-7, "-2.5e-07"),
            (1.5e300, "1.5e+300"),
            (9.223_372_036_854_776e18, "9.223372036854776e+18"),
            (f64::MAX, "1.7976931348623157e+308"),
            (f64::INFINITY, "+Inf"),
            (f64::NEG_INFINITY, "-Inf"),
            (f64::NAN, "NaN"),
            (0.0, "0"),
        ] {
            assert_eq!(super::go_g(n), sprint, "{n}");
        }
        for (n, text) in [
            (1e15, "1000000000000000"),
            (1e16, "10000000000000000"),
            (9_007_199_254_740_992.0, "9007199254740992"),
            (-(2f64.powi(63)), "-9223372036854775808"),
            (2f64.powi(63), "9.223372036854776e+18"),
            (1e6, "1000000"),
            (-0.0, "0"),
            (0.5, "0.5"),
            (1.0 / 3.0, "0.3333333333333333"),
        ] {
            assert_eq!(super::go_number_text(n), text, "{n}");
        }
    }

    fn one(script: &str) -> Result<Value, String> {
        ours(&format!("function F() return {{{script}}} end"), &[])
    }

    #[test]
    fn tostring_tonumber_and_format_are_gopher_luas() {
        for (script, want) in [
            (
                "tostring(1/3), tostring(1e15), tostring(2^53), tostring(math.huge), tostring(-math.huge)",
                json!([
                    "0.3333333333333333",
                    "1000000000000000",
                    "9007199254740992",
                    "1.7976931348623157e+308",
                    "-1.7976931348623157e+308"
                ]),
            ),
            (
                "tostring(1/0), tostring(0/0) ~= nil, tostring(true), tostring('x'), tostring(nil)",
                json!(["+Inf", true, "true", "x", "nil"]),
            ),
            (
                "tostring(tonumber('1e2')), tonumber('1.5e2'), tonumber(' 12 '), tonumber('0x10'), tonumber('10', 16), tonumber('+5')",
                json!(["nil", 150, 12, 16, 16, 5]),
            ),
            (
                "tostring(tonumber('99999999999999999999')), tostring(tonumber('-0x10')), tostring(tonumber('x1')), tostring(tonumber({})), tonumber(7)",
                json!(["nil", "nil", "nil", "nil", 7]),
            ),
            (
                "tonumber('-9223372036854775808') == -2^63, tostring(tonumber('1.0e400')), tonumber('.5'), tonumber('5.'), tonumber('z', 36)",
                json!([true, "nil", 0.5, 5, 35]),
            ),
            (
                "string.format('%g', 1/3), string.format('%d', 3), string.format('%5.2f', 3.14159), string.format('%.3g', 1/3)",
                json!(["0.3333333333333333", "3", " 3.14", "0.333"]),
            ),
            (
                "string.format('[%10g|%-8g|%+g|%08g]', 1e6, 0.5, 2.5, -1.5), string.format('%s %s', 1/3, 'a'), string.format('%i%%', 7)",
                json!(["[     1e+06|0.5     |+2.5|-00001.5]", "0.3333333333333333 a", "7%"]),
            ),
            (
                "string.format('%G', 1e-7), string.format('%x', 255), ('%g'):format(1e15)",
                json!(["1E-07", "ff", "1e+15"]),
            ),
            // Deliberately C's (docs/guide/karmada.md, deliberate differences): the VM's own conversion.
            (
                "'v' .. 1/3, table.concat({1e15}), tostring(1/3)",
                json!(["v0.33333333333333", "1e+15", "0.3333333333333333"]),
            ),
        ] {
            assert_eq!(one(script), Ok(want), "{script}");
        }
        let e = one("string.format('%d')").expect_err("no argument");
        assert!(e.contains("bad argument #2 to 'format'"), "{e}");
        let e = one("tonumber()").expect_err("no argument");
        assert!(e.contains("bad argument #1 to 'tonumber' (value expected)"), "{e}");
    }

    #[test]
    fn pcall_and_xpcall_catch_errors_as_gopher_lua_does() {
        for (script, want) in [
            ("pcall(function(a, b) return a + b, 'x' end, 1, 2)", json!([true, 3, "x"])),
            ("pcall(function() error('boom', 0) end)", json!([false, "boom"])),
            ("pcall(function() error({code = 7}) end)", json!([false, {"code": 7}])),
            ("pcall(error)", json!([false])),
            ("pcall(nil)", json!([false, "attempt to call a nil value"])),
            ("pcall(setmetatable({}, {__call = function(_, x) return x * 2 end}), 21)", json!([true, 42])),
            // A library function's error is its message, a string, as a Go function's is.
            ("select(2, pcall(string.rep))", json!(["bad argument #1 to 'rep' (string expected, got no value)"])),
            (
                "select(2, pcall(function() return ('x'):rep() end))",
                json!(["t:1: bad argument #2 to 'rep' (number expected, got no value)"]),
            ),
            (
                "select(2, pcall(function() local x = nil; return x.y end))",
                json!(["t:1: attempt to index local 'x' (a nil value)"]),
            ),
            (
                "xpcall(function() error('boom', 0) end, function(m) return 'handled ' .. m end)",
                json!([false, "handled boom"]),
            ),
            ("xpcall(function() return 1, 2 end, print)", json!([true, 1, 2])),
            ("pcall(pcall, error, 'x')", json!([true, false, "x"])),
            (
                "coroutine.resume(coroutine.create(function() return pcall(error, 'in', 0) end))",
                json!([true, false, "in"]),
            ),
        ] {
            assert_eq!(one(script), Ok(want), "{script}");
        }
    }

    /// No way of catching the budget: each of these fails the call with it, and the VM works
    /// afterwards.
    #[test]
    fn pcall_xpcall_and_resume_cannot_catch_the_budget() {
        for (script, memory) in [
            ("while true do pcall(function() while true do end end) end", false),
            ("pcall(function() while true do end end) return 1", false),
            ("xpcall(function() while true do end end, function(e) return e end) return 1", false),
            ("xpcall(function() while true do end end, function(e) while true do end end) return 1", false),
            ("xpcall(error, function(e) while true do end end) return 1", false),
            ("pcall(pcall, pcall, function() while true do end end) return 1", false),
            (
                "coroutine.resume(coroutine.create(function() pcall(function() while true do end end) end)) return 1",
                false,
            ),
            ("pcall(coroutine.wrap(function() while true do end end)) return 1", false),
            ("local ok, e = pcall(function() while true do end end) while true do pcall(error, e) end", false),
            ("pcall(string.rep, 'x', 2147483647) return 1", true),
            ("pcall(function() local t = {} local i = 0 while true do i = i + 1 t[i] = {i, i} end end) return 1", true),
            ("pcall(function() local s = 'x' while true do s = s .. s end end) return 1", true),
            (
                "xpcall(function() local s = 'x' while true do s = s .. s end end, function(e) return 'fine' end) return 1",
                true,
            ),
            (
                "coroutine.resume(coroutine.create(function() local s = 'x' while true do s = s .. s end end)) return 1",
                true,
            ),
        ] {
            let e = lua::call(&format!("function F() {script} end"), "t", "F", &[], 0).expect_err(script);
            match memory {
                true => assert_eq!(e, LuaFailure::Budget(lua::Spent::Memory), "{script}"),
                false => assert!(
                    matches!(e, LuaFailure::Budget(lua::Spent::Instructions | lua::Spent::Time)),
                    "{script}: {e}"
                ),
            }
            assert_eq!(one("pcall(error, 'after')"), Ok(json!([false, "after"])), "after {script}");
        }
    }

    #[test]
    fn sort_orders_as_lua_5_1_for_every_comparator() {
        let scripts = [
            "function F(t) table.sort(t) return t end",
            "function F(t) table.sort(t, function(a, b) return a > b end) return t end",
            // Ties and an inconsistent comparator: the same quicksort gives the same order.
            "function F(t) table.sort(t, function(a, b) return a % 3 < b % 3 end) return t end",
            "function F(t) local n = 0 table.sort(t, function(a, b) n = n + 1 return (a * 7 + n) % 5 < (b * 3) % 5 end) return t end",
        ];
        let mut seed = 7u64;
        for len in [0usize, 1, 2, 3, 4, 5, 8, 13, 50, 200] {
            for _ in 0..5 {
                let items: Vec<Value> = (0..len)
                    .map(|_| {
                        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                        json!((seed >> 33) % 20)
                    })
                    .collect();
                for script in scripts {
                    let args = [Value::Array(items.clone())];
                    let (want, got) = (reference(script, &args), ours(script, &args));
                    match (&want, &got) {
                        (Ok(w), Ok(g)) => assert_eq!(w, g, "{script} on {items:?}"),
                        (Err(w), Err(g)) => assert_eq!(message(w), message(g), "{script} on {items:?}"),
                        _ => panic!("{script} on {items:?}: C {want:?}, ours {got:?}"),
                    }
                }
            }
        }
        let e = ours("function F() table.sort({1, 'x', 2}) end", &[]).expect_err("mixed");
        assert!(e.contains("attempt to compare"), "{e}");
        let e = ours("function F() table.sort(nil) end", &[]).expect_err("nil");
        assert!(e.contains("t:1: bad argument #1 to 'sort' (table expected, got nil)"), "{e}");
    }
}
