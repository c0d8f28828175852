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
//! with `coroutine.resume`, where C raised a string); their text is Lua's, with the position
//! of the calling line as `luaL_error` gives it.

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
/// `resume` raise its error again: a script that catches it (only `resume` does; a wrapped
/// coroutine's errors go through) unwinds, level by level.
const COROUTINES: &str = r#"
local create, resume, wrap, charge, step = ...
return function(f) charge(step) return create(f) end,
  function(co, ...) charge(0) return resume(co, ...) end,
  function(f) charge(step) return wrap(f) end
"#;

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
    let coroutine: Table = g.get("coroutine")?;
    let b = Rc::clone(budget);
    let charge = lua.create_function(move |_, n: u64| if b.spend(n) { Ok(()) } else { Err(budget_error()) })?;
    let (create, resume, wrap): (Function, Function, Function) = lua.load(COROUTINES).set_name("=coroutine").call((
        coroutine.get::<Function>("create")?,
        coroutine.get::<Function>("resume")?,
        coroutine.get::<Function>("wrap")?,
        charge,
        u64::from(super::lua::HOOK_EVERY),
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
