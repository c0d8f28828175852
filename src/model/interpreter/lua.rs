//! The Lua 5.1 VM that runs `ResourceInterpreterCustomization` scripts, sandboxed the way
//! Karmada's gopher-lua VM is and bounded per call.
//!
//! - **Libraries**: base (without `load`, `loadstring`, `dofile`, `loadfile`, `require`,
//!   `module`, `getfenv`, `setfenv`, `rawset`, `collectgarbage`, `newproxy`), `table`,
//!   `string` (without `string.dump`), `math`, an `os` holding only `os.date` / `os.time`
//!   (answered from the caller's clock, so a call is a function of its inputs), and
//!   `require("kube")` for the [`super::kube`] helpers. No `io`, no `os.execute`, no bytecode.
//!   Every library table a script sees is a read-only proxy. `pcall`, `xpcall`, `tostring`,
//!   `tonumber`, `string.format` and `math.huge` are gopher-lua's ([`super::stdlib`]); `pcall`
//!   and `xpcall` cannot catch the budget.
//! - **Isolation**: each call runs the compiled chunk in a fresh global environment (a copy of
//!   the sandbox's globals), so globals a script sets or clears (`replica = ...`, `error = ''`)
//!   never leak into the next object.
//! - **Deliberate difference** (docs/guide/karmada.md): `pairs` visits a table's string keys in C Lua 5.1's
//!   hash order, where gopher-lua visits them in insertion order; a script that builds a list
//!   from `pairs` over a table it filled may order it differently than Karmada (the MPIJob
//!   aggregation's conditions, a list Kubernetes treats as a map keyed by `type`): under a
//!   `pairs` shuffled by seed (the test puts it before each script) every corpus script gives
//!   the same results but for that order (`it::interpret_corpus::
//!   pairs_order_changes_no_corpus_result_beyond_the_order_of_conditions`). The order is a function of the keys and
//!   the table's history (Lua 5.1 seeds no hash), so the same call gives the same list in
//!   every VM and run. Insertion order would need Lua's C table changed (`ltable.c`, built by
//!   mlua-sys): no hook sees a table's insertions.
//! - **Budgets**: [`INSTRUCTION_BUDGET`] VM instructions, [`TIME_BUDGET`] of wall-clock time
//!   (checked at the same points) and [`MEMORY_BUDGET`] bytes per call. A
//!   script that exceeds either fails with [`LuaFailure::Budget`]; the VM is then dropped and a
//!   new one is made for the next call. The memory budget is the script's: it starts once the
//!   arguments are in the VM and ends before the results are read out, and the `kube` helpers
//!   convert with it lifted ([`unlimited`]; what they return counts from the script's next
//!   allocation on). mlua protects every table operation while a limit is set (a `pcall` and
//!   two C closures each), which made moving an object in and out most of a call's cost.
//! - **Numbers**: Lua 5.1 has only doubles. Going back to JSON, a finite whole number becomes a
//!   JSON integer (`replicas: 3`, never `3.0`), like Karmada's JSON round trip of gopher-lua
//!   numbers; other numbers stay floats; NaN and ±inf are errors.
//! - **Tables**: a table whose keys are exactly `1..n` is an array, one with only string keys an
//!   object, any other mix an error. An empty table comes out as `[]`; the caller turns it back
//!   into `{}` where the input had an object ([`super::results::fix_empty`]).
//!
//! One VM per thread, compiled chunks cached by script text. Pure from the caller's point of
//! view: the same script and arguments give the same result.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

use mlua::chunk::ChunkMode;
use mlua::prelude::{LuaGcIncParams, LuaGcMode};
use mlua::{Function, HookTriggers, Lua, LuaOptions, MultiValue, StdLib, Table, Value as LuaValue, VmState};
use serde_json::{Map, Number, Value};

use super::kube;
use super::stdlib::{self, Budget, Exceeded};

/// VM instructions one call may run (counted in steps of [`HOOK_EVERY`]).
pub const INSTRUCTION_BUDGET: u64 = 20_000_000;
/// Bytes one call may allocate above what the VM held before it.
pub const MEMORY_BUDGET: usize = 64 << 20;
/// Wall-clock time one call may take (checked with the instruction budget): C functions can be
/// slow without running many instructions (Lua 5.1's string hashing under collisions).
pub const TIME_BUDGET: std::time::Duration = std::time::Duration::from_secs(2);
/// Instructions between two checks of the budget. A check costs about 40 machine instructions;
/// the whole budget (this hook and the metered library) costs a cold call 0–13 %, a
/// pattern-heavy one ≈ 28 % (BENCHMARKS.md, "The Lua interpreter"), and a script
/// whose loop calls a library function that takes milliseconds on tens of MiB (`s:upper()`,
/// `table.insert(t, 1, x)` on a million entries) passes a check every 25 or so such calls.
pub(super) const HOOK_EVERY: u32 = 100;
const MAX_DEPTH: usize = 200;
const MAX_CACHED_CHUNKS: usize = 512;
/// The collector's pause (percent): a cycle starts when the VM holds this much of what it held
/// after the last one. Lua's 200 makes a VM whose live data is small (the sandbox, the chunks)
/// collect every few calls; each call leaves its arguments and results as garbage.
const GC_PAUSE: i32 = 400;
/// Garbage the VM may gather between two full collections.
const COLLECT_EVERY: usize = 16 << 20;

/// Why a script call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LuaFailure {
    /// The script does not compile.
    Syntax(String),
    /// The script does not define the function the operation calls.
    MissingFunction(&'static str),
    /// The script raised an error (or called something that is not there, such as `os.execute`).
    Runtime(String),
    /// The script ran past its instruction, time or memory budget.
    Budget(Spent),
    /// A value could not cross between Lua and JSON.
    Convert(String),
}

impl std::fmt::Display for LuaFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LuaFailure::Syntax(m) => write!(f, "script does not compile: {m}"),
            LuaFailure::MissingFunction(name) => write!(f, "script defines no function {name}"),
            LuaFailure::Runtime(m) => write!(f, "script failed: {m}"),
            LuaFailure::Budget(spent) => write!(f, "script exceeded its budget: {spent}"),
            LuaFailure::Convert(m) => write!(f, "script result cannot be used: {m}"),
        }
    }
}

/// Which budget a call spent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spent {
    /// [`INSTRUCTION_BUDGET`] (VM instructions and library steps).
    Instructions,
    /// The time the call was given ([`TIME_BUDGET`] at most).
    Time,
    /// [`MEMORY_BUDGET`].
    Memory,
}

impl std::fmt::Display for Spent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Spent::Instructions => write!(f, "more than {INSTRUCTION_BUDGET} instructions"),
            Spent::Time => write!(f, "more than {} s", TIME_BUDGET.as_secs()),
            Spent::Memory => write!(f, "more than {} MiB of memory", MEMORY_BUDGET >> 20),
        }
    }
}

impl From<Exceeded> for Spent {
    fn from(e: Exceeded) -> Self {
        match e {
            Exceeded::Instructions => Spent::Instructions,
            Exceeded::Time => Spent::Time,
            Exceeded::Memory => Spent::Memory,
        }
    }
}

/// A value a script returned, converted out of the VM.
#[derive(Debug, Clone, PartialEq)]
pub enum LuaOut {
    Nil,
    Bool(bool),
    Number(f64),
    String(String),
    /// A table, as JSON (empty tables as `[]`).
    Table(Value),
    /// A function, userdata or thread.
    Other(&'static str),
}

impl LuaOut {
    /// The Lua type name, for error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            LuaOut::Nil => "nil",
            LuaOut::Bool(_) => "boolean",
            LuaOut::Number(_) => "number",
            LuaOut::String(_) => "string",
            LuaOut::Table(_) => "table",
            LuaOut::Other(t) => t,
        }
    }
}

/// An argument passed to a script function.
#[derive(Debug, Clone, PartialEq)]
pub enum LuaArg<'a> {
    Json(&'a Value),
    Number(f64),
    Nil,
}

struct Vm {
    lua: Lua,
    /// Makes a fresh copy of the sandbox's globals (a Lua function: copying in the VM is
    /// several times faster than one API call per global).
    fresh_env: Function,
    /// How many globals the sandbox has: a fresh environment is made that size at once.
    globals: usize,
    chunks: HashMap<u64, Function>,
    budget: Rc<Budget>,
    now_ms: Rc<Cell<u64>>,
    /// What the VM held after its last full collection.
    settled: usize,
}

thread_local! {
    static VM: RefCell<Option<Vm>> = const { RefCell::new(None) };
    /// [`unbounded_for_benchmarks`].
    static UNBOUNDED: Cell<bool> = const { Cell::new(false) };
}

/// For `benches/interpreter` only (BENCHMARKS.md, the bounding's cost as a same-run ratio):
/// the VMs this thread makes from now on run without the instruction hook and with Lua's own
/// C `string.find`, `match`, `gmatch`, `gsub`, `rep`, `table.sort` and coroutine functions,
/// as before issue 47 (the memory budget stays). A script can then run forever: fedsched
/// never calls this, and nothing but a benchmark of known scripts may.
#[doc(hidden)]
pub fn unbounded_for_benchmarks(on: bool) {
    UNBOUNDED.with(|u| u.set(on));
    VM.with(|cell| *cell.borrow_mut() = None);
}

/// A script's key in the in-memory caches (compiled chunks, results): SipHash with fixed keys,
/// several times faster than FNV byte by byte on a script of a few KiB.
pub fn script_hash(script: &str) -> u64 {
    use std::hash::Hasher;
    let mut h = std::hash::DefaultHasher::new();
    h.write(script.as_bytes());
    h.finish()
}

/// Checks that a script compiles in the sandbox (`fedsched interpret --check`, loading).
pub fn check(script: &str, chunk_name: &str) -> Result<(), LuaFailure> {
    with_vm(|vm| vm.chunk(script, chunk_name).map(|_| ()))
}

/// Runs `function` of `script` with `args`; the script's top level runs first, in a fresh
/// environment. `now_ms` is what `os.date` / `os.time` answer.
pub fn call(
    script: &str,
    chunk_name: &str,
    function: &'static str,
    args: &[LuaArg<'_>],
    now_ms: u64,
) -> Result<Vec<LuaOut>, LuaFailure> {
    call_within(script, chunk_name, function, args, now_ms, TIME_BUDGET)
}

/// [`call`] given `time` of wall-clock time ([`TIME_BUDGET`] at most): what its scope has
/// left ([`super::scope::Scope`]).
pub fn call_within(
    script: &str,
    chunk_name: &str,
    function: &'static str,
    args: &[LuaArg<'_>],
    now_ms: u64,
    time: std::time::Duration,
) -> Result<Vec<LuaOut>, LuaFailure> {
    with_vm(|vm| vm.call(script, chunk_name, function, args, now_ms, time))
}

fn with_vm<T>(f: impl FnOnce(&mut Vm) -> Result<T, LuaFailure>) -> Result<T, LuaFailure> {
    VM.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = Some(Vm::new().map_err(|e| LuaFailure::Runtime(format!("cannot start the Lua VM: {e}")))?);
        }
        let Some(vm) = slot.as_mut() else {
            return Err(LuaFailure::Runtime("cannot start the Lua VM".into()));
        };
        let out = f(vm);
        if matches!(out, Err(LuaFailure::Budget(_))) {
            // A script that ran out of budget may have left the VM full: start afresh.
            *slot = None;
        }
        out
    })
}

impl Vm {
    fn new() -> mlua::Result<Vm> {
        let lua = Lua::new_with(StdLib::TABLE | StdLib::STRING | StdLib::MATH, LuaOptions::default())?;
        lua.gc_set_mode(LuaGcMode::Incremental(LuaGcIncParams::default().pause(GC_PAUSE)));
        let budget = Budget::new();
        let now_ms = Rc::new(Cell::new(0u64));
        if !UNBOUNDED.with(Cell::get) {
            // The VM's global hook: every coroutine a script creates inherits it (a hook set
            // on the main thread alone is removed from each new coroutine by mlua).
            let b = budget.clone();
            lua.set_global_hook(HookTriggers::new().every_nth_instruction(HOOK_EVERY), move |_, _| {
                match b.spend(u64::from(HOOK_EVERY)) {
                    true => Ok(VmState::Continue),
                    false => Err(stdlib::budget_error()),
                }
            })?;
            stdlib::install(&lua, &budget)?;
        }
        // Strings' metatable would hand out the real `string` table: hide it.
        lua.load("getmetatable('').__metatable = false").exec()?;
        let g = lua.globals();
        for name in [
            "load",
            "loadstring",
            "dofile",
            "loadfile",
            "require",
            "module",
            "getfenv",
            "setfenv",
            "rawset",
            "collectgarbage",
            "newproxy",
            "gcinfo",
            "print",
        ] {
            g.raw_set(name, LuaValue::Nil)?;
        }
        if let Ok(string) = g.get::<Table>("string") {
            string.raw_set("dump", LuaValue::Nil)?;
        }
        // os: date and time only, from the caller's clock.
        let os = lua.create_table()?;
        {
            let now = now_ms.clone();
            os.set(
                "date",
                lua.create_function(move |lua, (format, time): (Option<String>, Option<f64>)| {
                    let secs = time.map(|t| t as i64).unwrap_or((now.get() / 1000) as i64);
                    os_date(lua, format.as_deref().unwrap_or("%c"), secs)
                })?,
            )?;
            let now = now_ms.clone();
            os.set("time", lua.create_function(move |_, ()| Ok((now.get() / 1000) as f64))?)?;
        }
        g.raw_set("os", os)?;
        let kube_table = kube::library(&lua)?;
        g.raw_set("print", lua.create_function(|_, _: MultiValue| Ok(()))?)?;
        // Read-only proxies for every library table.
        for name in ["string", "table", "math", "os", "coroutine"] {
            let real: Table = g.get(name)?;
            g.raw_set(name, read_only(&lua, real)?)?;
        }
        let kube_proxy = read_only(&lua, kube_table)?;
        g.raw_set(
            "require",
            lua.create_function(move |_, name: String| {
                if name == "kube" {
                    Ok(kube_proxy.clone())
                } else {
                    Err(mlua::Error::runtime(format!("module {name:?} is not available (only \"kube\")")))
                }
            })?,
        )?;
        let globals = g.pairs::<LuaValue, LuaValue>().count();
        let fresh_env: Function = lua
            .load(
                "local base, nxt = ... return function(e) for k, v in nxt, base do e[k] = v end e._G = e return e end",
            )
            .set_mode(ChunkMode::Text)
            .call((g.clone(), g.get::<Function>("next")?))?;
        let settled = lua.used_memory();
        Ok(Vm { lua, fresh_env, globals, chunks: HashMap::new(), budget, now_ms, settled })
    }

    fn chunk(&mut self, script: &str, chunk_name: &str) -> Result<Function, LuaFailure> {
        let key = script_hash(script);
        if let Some(f) = self.chunks.get(&key) {
            return Ok(f.clone());
        }
        let f = self
            .lua
            .load(script)
            .set_name(format!("={chunk_name}"))
            .set_mode(ChunkMode::Text)
            .into_function()
            .map_err(|e| LuaFailure::Syntax(clean(&e)))?;
        if self.chunks.len() >= MAX_CACHED_CHUNKS {
            self.chunks.clear();
        }
        self.chunks.insert(key, f.clone());
        Ok(f)
    }

    fn call(
        &mut self,
        script: &str,
        chunk_name: &str,
        function: &'static str,
        args: &[LuaArg<'_>],
        now_ms: u64,
        time: std::time::Duration,
    ) -> Result<Vec<LuaOut>, LuaFailure> {
        let chunk = self.chunk(script, chunk_name)?;
        let lua = self.lua.clone();
        // The arguments cross into the VM before the budget starts, and the results cross out
        // after it ends: with no memory limit set, mlua moves each table slot without a
        // protected call of its own (several times faster). The budget is the script's: what
        // it allocates above what the VM held with its arguments in.
        let values: mlua::Result<Vec<LuaValue>> = args
            .iter()
            .map(|a| match a {
                LuaArg::Json(v) => to_lua(&lua, v, 0),
                LuaArg::Number(n) => Ok(LuaValue::Number(*n)),
                LuaArg::Nil => Ok(LuaValue::Nil),
            })
            .collect();
        // The fresh environment, sized for the globals at once (no rehash while it is filled;
        // only `pairs(_G)`'s order depends on it).
        let env = lua.create_table_with_capacity(0, self.globals + 1);
        let used = lua.used_memory();
        let limit = used.saturating_add(MEMORY_BUDGET);
        let _ = lua.set_memory_limit(limit);
        self.budget.memory_limit.set(limit);
        self.budget.reset(INSTRUCTION_BUDGET, Some(std::time::Instant::now() + time.min(TIME_BUDGET)));
        self.now_ms.set(now_ms);
        let ret = self.run(env, &chunk, function, values);
        let _ = lua.set_memory_limit(0);
        self.budget.memory_limit.set(0);
        // Spent, even if the script caught the error (`coroutine.resume`) and returned.
        let ret = match self.budget.exceeded() {
            Some(e) => Err(LuaFailure::Budget(e.into())),
            None => ret,
        };
        self.budget.lift();
        let out = ret.and_then(|ret| ret.iter().map(from_lua).collect());
        if lua.used_memory() > self.settled.saturating_add(COLLECT_EVERY) {
            let _ = lua.gc_collect();
            self.settled = lua.used_memory();
        }
        out
    }

    fn run(
        &self,
        env: mlua::Result<Table>,
        chunk: &Function,
        function: &'static str,
        values: mlua::Result<Vec<LuaValue>>,
    ) -> Result<MultiValue, LuaFailure> {
        let fail = |e: mlua::Error| self.failure(e);
        // A fresh copy of the globals: a script may assign (or clear, `error = nil`) any of them.
        let env: Table = self.fresh_env.call(env.map_err(fail)?).map_err(fail)?;
        chunk.set_environment(env.clone()).map_err(fail)?;
        chunk.call::<()>(()).map_err(fail)?;
        let f = match env.raw_get::<LuaValue>(function).map_err(fail)? {
            LuaValue::Function(f) => f,
            _ => return Err(LuaFailure::MissingFunction(function)),
        };
        // An argument that could not be converted fails here, after the script's own top
        // level (the order in which a call reports its errors).
        let values = values.map_err(fail)?;
        f.call(MultiValue::from_vec(values)).map_err(fail)
    }

    fn failure(&self, e: mlua::Error) -> LuaFailure {
        if let Some(e) = self.budget.exceeded() {
            return LuaFailure::Budget(e.into());
        }
        if is_memory_error(&e) {
            return LuaFailure::Budget(Spent::Memory);
        }
        match e {
            mlua::Error::SyntaxError { message, .. } => LuaFailure::Syntax(shorten(&message)),
            other => LuaFailure::Runtime(clean(&other)),
        }
    }
}

pub(super) fn is_memory_error(e: &mlua::Error) -> bool {
    match e {
        mlua::Error::MemoryError(_) => true,
        mlua::Error::CallbackError { cause, .. } => is_memory_error(cause),
        mlua::Error::WithContext { cause, .. } => is_memory_error(cause),
        _ => false,
    }
}

/// The longest error message kept from a script: `error(string.rep('x', 6e7))` must not
/// reach the logs, the store and the API whole.
const MAX_MESSAGE: usize = 2048;

/// An error message without the Lua stack traceback, at most [`MAX_MESSAGE`] bytes.
pub(super) fn clean(e: &mlua::Error) -> String {
    let text = e.to_string();
    shorten(text.split("\nstack traceback:").next().unwrap_or(&text).trim())
}

/// `text`, cut to about [`MAX_MESSAGE`] bytes: its start and its end, where the cause is when
/// each level of a chain of coroutines or errors prefixed its position (`f:2: f:2: … stack
/// overflow`).
fn shorten(text: &str) -> String {
    if text.len() <= MAX_MESSAGE {
        return text.to_string();
    }
    let half = MAX_MESSAGE / 2;
    let mut head = half;
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len() - half;
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    format!("{} … ({} bytes in all) … {}", &text[..head], text.len(), &text[tail..])
}

fn read_only(lua: &Lua, real: Table) -> mlua::Result<Table> {
    let proxy = lua.create_table()?;
    let meta = lua.create_table()?;
    meta.raw_set("__index", real)?;
    meta.raw_set(
        "__newindex",
        lua.create_function(|_, (_t, k, _v): (LuaValue, LuaValue, LuaValue)| -> mlua::Result<()> {
            let name = k.to_string().unwrap_or_else(|_| "?".into());
            Err(mlua::Error::runtime(format!("the library is read-only (assigning {name})")))
        })?,
    )?;
    meta.raw_set("__metatable", false)?;
    proxy.set_metatable(Some(meta))?;
    Ok(proxy)
}

/// Runs `f` with the VM's memory limit lifted, then sets it again: the `kube` helpers move
/// tables in and out of the VM, which mlua does without a protected call per table slot only
/// when no limit is set. What they allocate still counts (the limit is an absolute figure): a
/// script past its budget fails at its next allocation.
pub(super) fn unlimited<T>(lua: &Lua, f: impl FnOnce() -> T) -> T {
    let limit = lua.set_memory_limit(0).unwrap_or(0);
    let out = f();
    if limit != 0 {
        let _ = lua.set_memory_limit(limit);
    }
    out
}

/// JSON into Lua: objects and arrays become tables, numbers doubles, null nil.
pub fn to_lua(lua: &Lua, v: &Value, depth: usize) -> mlua::Result<LuaValue> {
    if depth > MAX_DEPTH {
        return Err(mlua::Error::runtime("object nested too deeply"));
    }
    Ok(match v {
        Value::Null => LuaValue::Nil,
        Value::Bool(b) => LuaValue::Boolean(*b),
        Value::Number(n) => LuaValue::Number(n.as_f64().unwrap_or(0.0)),
        Value::String(s) => LuaValue::String(lua.create_string(s)?),
        Value::Array(items) => {
            let t = lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.iter().enumerate() {
                set_json(lua, &t, i + 1, item, depth + 1)?;
            }
            LuaValue::Table(t)
        }
        Value::Object(map) => {
            let t = lua.create_table_with_capacity(0, map.len())?;
            for (k, item) in map {
                set_json(lua, &t, k.as_str(), item, depth + 1)?;
            }
            LuaValue::Table(t)
        }
    })
}

/// `t[key] = item` (`item` at `depth`): a scalar goes straight onto the stack, without a VM
/// handle of its own (the same `rawset` as converting it first, at a fraction of the cost).
fn set_json(lua: &Lua, t: &Table, key: impl mlua::IntoLua, item: &Value, depth: usize) -> mlua::Result<()> {
    if depth > MAX_DEPTH {
        return Err(mlua::Error::runtime("object nested too deeply"));
    }
    match item {
        Value::String(s) => t.raw_set(key, s.as_str()),
        Value::Number(n) => t.raw_set(key, n.as_f64().unwrap_or(0.0)),
        Value::Bool(b) => t.raw_set(key, *b),
        Value::Null => t.raw_set(key, LuaValue::Nil),
        Value::Array(_) | Value::Object(_) => t.raw_set(key, to_lua(lua, item, depth)?),
    }
}

pub(super) fn from_lua(v: &LuaValue) -> Result<LuaOut, LuaFailure> {
    Ok(match v {
        LuaValue::Nil => LuaOut::Nil,
        LuaValue::Boolean(b) => LuaOut::Bool(*b),
        LuaValue::Integer(i) => LuaOut::Number(*i as f64),
        LuaValue::Number(n) => LuaOut::Number(*n),
        LuaValue::String(s) => LuaOut::String(text(s)),
        LuaValue::Table(t) => LuaOut::Table(table_to_json(t, 0)?),
        LuaValue::Function(_) => LuaOut::Other("function"),
        LuaValue::Thread(_) => LuaOut::Other("thread"),
        _ => LuaOut::Other("userdata"),
    })
}

/// A Lua string as Rust text (invalid UTF-8 replaced, as `to_string_lossy` does; valid text,
/// nearly always, without the lossy scan).
fn text(s: &mlua::LuaString) -> String {
    match s.to_str() {
        Ok(t) => t.to_owned(),
        Err(_) => s.to_string_lossy(),
    }
}

/// A Lua number as JSON, as Karmada's JSON round trip of a gopher-lua number gives it: Go
/// writes a whole float64 below 1e21 as its shortest digits padded with zeros (`2^63` is
/// `9223372036854776000`), which reads back as an integer where it fits (`int64`, here also
/// `u64`: the same text); any other number stays a float.
pub fn number_to_json(n: f64) -> Result<Value, LuaFailure> {
    if !n.is_finite() {
        return Err(LuaFailure::Convert(format!("number {n} is not finite")));
    }
    if n.fract() == 0.0 && n.abs() < 9.007_199_254_740_992e15 {
        return Ok(Value::Number(Number::from(n as i64)));
    }
    if n.fract() == 0.0 && n.abs() < 1e21 {
        // Rust's `{}` of a float is Go's `'f', -1`: the shortest digits, then zeros.
        let text = format!("{n}");
        if let Ok(i) = text.parse::<i64>() {
            return Ok(Value::Number(Number::from(i)));
        }
        if let Ok(u) = text.parse::<u64>() {
            return Ok(Value::Number(Number::from(u)));
        }
    }
    Number::from_f64(n).map(Value::Number).ok_or_else(|| LuaFailure::Convert(format!("number {n}")))
}

/// A Lua value as JSON (for the `kube` helpers, which take tables).
pub(super) fn lua_to_json(v: &LuaValue) -> Result<Value, LuaFailure> {
    value_to_json(v, 0)
}

fn value_to_json(v: &LuaValue, depth: usize) -> Result<Value, LuaFailure> {
    match v {
        LuaValue::Nil => Ok(Value::Null),
        LuaValue::Boolean(b) => Ok(Value::Bool(*b)),
        LuaValue::Integer(i) => Ok(Value::from(*i)),
        LuaValue::Number(n) => number_to_json(*n),
        LuaValue::String(s) => Ok(Value::String(text(s))),
        LuaValue::Table(t) => table_to_json(t, depth + 1),
        other => Err(LuaFailure::Convert(format!("a {} cannot be encoded", other.type_name()))),
    }
}

/// Which parts of a table to convert to JSON: a helper that reads a few fields of a large
/// object (a pod template) converts only those, not everything a script passes it.
pub(super) enum Shape {
    /// The whole value.
    All,
    /// Only these fields of a table (the keys made once per VM, so a lookup hashes nothing):
    /// any other value is converted whole.
    Fields(Vec<(mlua::LuaString, Shape)>),
    /// Every item of a list, each to the inner shape; the keys are checked as
    /// [`lua_to_json`] checks them.
    Items(Box<Shape>),
}

/// A Lua value as JSON, only the parts `shape` names (for the `kube` helpers).
pub(super) fn lua_to_json_shaped(v: &LuaValue, shape: &Shape) -> Result<Value, LuaFailure> {
    shaped(v, shape, 0)
}

fn shaped(v: &LuaValue, shape: &Shape, depth: usize) -> Result<Value, LuaFailure> {
    let t = match (v, shape) {
        (LuaValue::Table(t), Shape::Fields(_) | Shape::Items(_)) => t,
        _ => return value_to_json(v, depth),
    };
    if depth > MAX_DEPTH {
        return Err(LuaFailure::Convert("table nested too deeply (or cyclic)".into()));
    }
    match shape {
        Shape::Fields(fields) => {
            let mut out = Map::new();
            for (key, inner) in fields {
                let item: LuaValue = t.raw_get(key).map_err(|e| LuaFailure::Convert(clean(&e)))?;
                if !item.is_nil() {
                    let name = text(key);
                    out.insert(name, shaped(&item, inner, depth + 1)?);
                }
            }
            Ok(Value::Object(out))
        }
        Shape::Items(inner) => table_entries(t, depth + 1, |v, depth| shaped(v, inner, depth)),
        Shape::All => table_to_json(t, depth + 1),
    }
}

fn table_to_json(t: &Table, depth: usize) -> Result<Value, LuaFailure> {
    table_entries(t, depth, value_to_json)
}

/// A table as a JSON array or object, each value converted by `convert`.
fn table_entries(
    t: &Table,
    depth: usize,
    convert: impl Fn(&LuaValue, usize) -> Result<Value, LuaFailure>,
) -> Result<Value, LuaFailure> {
    if depth > MAX_DEPTH {
        return Err(LuaFailure::Convert("table nested too deeply (or cyclic)".into()));
    }
    let mut ints: Vec<(i64, Value)> = Vec::new();
    let mut strs: Map<String, Value> = Map::new();
    for pair in t.pairs::<LuaValue, LuaValue>() {
        let (k, v) = pair.map_err(|e| LuaFailure::Convert(clean(&e)))?;
        let v = convert(&v, depth)?;
        match k {
            LuaValue::String(s) => {
                strs.insert(text(&s), v);
            }
            LuaValue::Integer(i) => ints.push((i, v)),
            LuaValue::Number(n) if n.fract() == 0.0 && n.is_finite() => ints.push((n as i64, v)),
            other => {
                return Err(LuaFailure::Convert(format!(
                    "a table key of type {} cannot be encoded",
                    other.type_name()
                )));
            }
        }
    }
    match (ints.is_empty(), strs.is_empty()) {
        (true, true) => Ok(Value::Array(Vec::new())),
        (true, false) => Ok(Value::Object(strs)),
        (false, true) => {
            ints.sort_by_key(|(i, _)| *i);
            if ints.iter().enumerate().any(|(n, (i, _))| *i != n as i64 + 1) {
                return Err(LuaFailure::Convert("a sparse array cannot be encoded".into()));
            }
            Ok(Value::Array(ints.into_iter().map(|(_, v)| v).collect()))
        }
        (false, false) => Err(LuaFailure::Convert("a table with both array and string keys cannot be encoded".into())),
    }
}

/// `os.date` for UTC: `*t`/`!*t` tables and strftime's `%Y %m %d %H %M %S %y %j %p %c %x %X %%`.
fn os_date(lua: &Lua, format: &str, secs: i64) -> mlua::Result<LuaValue> {
    let f = format.strip_prefix('!').unwrap_or(format);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    let (hh, mm, ss) = (rem / 3600, (rem % 3600) / 60, rem % 60);
    if f == "*t" {
        let t = lua.create_table()?;
        for (k, v) in [("year", y), ("month", m), ("day", d), ("hour", hh), ("min", mm), ("sec", ss)] {
            t.raw_set(k, v)?;
        }
        t.raw_set("isdst", false)?;
        return Ok(LuaValue::Table(t));
    }
    let mut out = String::new();
    let mut chars = f.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('Y') => out.push_str(&format!("{y:04}")),
            Some('y') => out.push_str(&format!("{:02}", y.rem_euclid(100))),
            Some('m') => out.push_str(&format!("{m:02}")),
            Some('d') => out.push_str(&format!("{d:02}")),
            Some('H') => out.push_str(&format!("{hh:02}")),
            Some('M') => out.push_str(&format!("{mm:02}")),
            Some('S') => out.push_str(&format!("{ss:02}")),
            Some('p') => out.push_str(if hh < 12 { "AM" } else { "PM" }),
            Some('c') => out.push_str(&format!("{y:04}-{m:02}-{d:02} {hh:02}:{mm:02}:{ss:02}")),
            Some('x') => out.push_str(&format!("{m:02}/{d:02}/{:02}", y.rem_euclid(100))),
            Some('X') => out.push_str(&format!("{hh:02}:{mm:02}:{ss:02}")),
            Some('%') => out.push('%'),
            other => {
                return Err(mlua::Error::runtime(format!(
                    "os.date: unsupported conversion %{}",
                    other.map(String::from).unwrap_or_default()
                )));
            }
        }
    }
    Ok(LuaValue::String(lua.create_string(out)?))
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian.
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(script: &str, function: &'static str, args: &[LuaArg<'_>]) -> Result<Vec<LuaOut>, LuaFailure> {
        call(script, "test", function, args, 1_700_000_000_000)
    }

    #[test]
    fn whole_numbers_come_back_as_integers() {
        let obj = json!({"spec": {"replicas": 4, "ratio": 0.5}});
        let out = run("function F(o) o.spec.replicas = o.spec.replicas - 1; return o end", "F", &[LuaArg::Json(&obj)])
            .expect("runs");
        assert_eq!(out, vec![LuaOut::Table(json!({"spec": {"replicas": 3, "ratio": 0.5}}))]);
        let text = match &out[0] {
            LuaOut::Table(v) => v.to_string(),
            _ => String::new(),
        };
        assert!(text.contains("\"replicas\":3,") || text.contains("\"replicas\":3}"), "{text}");
    }

    #[test]
    fn globals_do_not_leak_between_calls() {
        let s = "function F() if seen then return 1 end seen = true return 0 end";
        assert_eq!(run(s, "F", &[]).expect("runs"), vec![LuaOut::Number(0.0)]);
        assert_eq!(run(s, "F", &[]).expect("runs"), vec![LuaOut::Number(0.0)]);
    }

    #[test]
    fn sandbox_has_no_os_io_or_loaders() {
        for (script, needle) in [
            ("function F() os.execute('true') end", "execute"),
            ("function F() return io.open('/etc/passwd') end", "io"),
            ("function F() return loadstring('return 1')() end", "loadstring"),
            ("function F() return load(string.dump(F)) end", "dump"),
            ("function F() return require('os') end", "not available"),
            ("function F() string.upper = nil end", "read-only"),
        ] {
            let e = run(script, "F", &[]).expect_err(script);
            assert!(e.to_string().contains(needle), "{script}: {e}");
        }
        assert_eq!(
            run("function F() return os.date('!%Y-%m-%dT%H:%M:%SZ') end", "F", &[]).expect("date"),
            vec![LuaOut::String("2023-11-14T22:13:20Z".into())]
        );
    }

    /// What the instruction hook never saw in C Lua: a loop inside a coroutine, a tree of short
    /// coroutines, a budget error caught by `coroutine.resume`, the C pattern matcher, the C
    /// `string.rep` and `table.sort`. Each ends as a budget failure (or a clean error), and the
    /// VM works afterwards.
    #[test]
    fn budgets_hold_in_coroutines_and_library_functions() {
        for (script, want) in [
            ("function F() coroutine.wrap(function() while true do end end)() end", Some(Spent::Instructions)),
            (
                "function F() while true do coroutine.resume(coroutine.create(function() while true do end end)) end end",
                Some(Spent::Instructions),
            ),
            // The budget error caught, and the call returns as if nothing happened: it fails.
            (
                "function F() coroutine.resume(coroutine.create(function() while true do end end)) return 1 end",
                Some(Spent::Instructions),
            ),
            (
                "local function f(d) if d > 0 then for i = 1, 10 do coroutine.resume(coroutine.create(f), d - 1) end end end function F() f(200) return 1 end",
                Some(Spent::Instructions),
            ),
            ("function F() return string.find(string.rep('a', 30), string.rep('a*', 30) .. 'b') end", None),
            (
                "function F() for i = 1, 100 do string.gsub(string.rep('a', 40), string.rep('a?', 40) .. string.rep('a', 40), 'x') end end",
                None,
            ),
            ("function F() for w in string.gmatch(string.rep('a', 30), string.rep('a*', 30) .. 'b') do end end", None),
            ("function F() return #string.rep('x', 2147483647) end", Some(Spent::Memory)),
            (
                "function F() local s = string.rep('a', 8000000) local t = {} for i = 1, 50000 do t[i] = s end table.sort(t) end",
                None,
            ),
            (
                "function F() local t = {} for i = 1, 1000 do t[i] = i end table.sort(t, function(a, b) while true do end end) end",
                Some(Spent::Instructions),
            ),
        ] {
            let started = std::time::Instant::now();
            let e = run(script, "F", &[]).expect_err(script);
            // Instructions or time, whichever runs out first on a loaded machine.
            match want {
                Some(Spent::Memory) => assert_eq!(e, LuaFailure::Budget(Spent::Memory), "{script}"),
                _ => assert!(matches!(e, LuaFailure::Budget(Spent::Instructions | Spent::Time)), "{script}: {e}"),
            }
            // Not a timing assertion: a hang would never get here; this names the slow one.
            eprintln!("{:?} {script}", started.elapsed());
        }
        // C's `string.rep('', 2^31 - 1)` loops two billion times to build nothing.
        assert_eq!(run("function F() return #string.rep('', 2147483647) end", "F", &[]), Ok(vec![LuaOut::Number(0.0)]));
        // A pattern a million items long is refused, not a million C frames deep (which
        // aborted the process).
        let e =
            run("function F() return string.find(string.rep('a', 1000000), string.rep('a?', 1000000)) end", "F", &[])
                .expect_err("too complex");
        assert!(e.to_string().contains("pattern too complex"), "{e}");
        // Recursion through a library function stops at Lua's C-stack limit, on a thread with a
        // pool thread's 2 MiB stack.
        let e = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(|| {
                run("local function f() return string.gsub('aaaa', '.', f) end function F() return f() end", "F", &[])
            })
            .expect("thread")
            .join()
            .expect("no stack overflow")
            .expect_err("C stack overflow");
        assert!(e.to_string().contains("stack overflow"), "{e}");
        // A huge error message is cut.
        let e = run("function F() error(string.rep('x', 10000000)) end", "F", &[]).expect_err("error");
        assert!(e.to_string().len() < 4096, "{} bytes", e.to_string().len());
        // A cut message keeps its end, where the cause is: each level of nested coroutines
        // prefixes its position to the error.
        let e = run("local function f() coroutine.wrap(f)() end function F() f() end", "F", &[]).expect_err("nest");
        let text = e.to_string();
        assert!(text.contains("stack overflow"), "{text}");
        let chain = format!("{}C stack overflow", "evil-coroutine-nest/InterpretReplica:2: ".repeat(200));
        let cut = shorten(&chain);
        assert!(cut.len() < 4096 && cut.contains("bytes in all") && cut.ends_with("C stack overflow"), "{cut}");
        assert_eq!(run("function F() return true end", "F", &[]).expect("runs"), vec![LuaOut::Bool(true)]);
    }

    #[test]
    fn budgets_stop_runaway_scripts() {
        let e = run("function F() while true do end end", "F", &[]).expect_err("loop");
        assert!(matches!(e, LuaFailure::Budget(_)), "{e}");
        let e =
            run("function F() local t = {} local i = 0 while true do i = i + 1 t[i] = {i, i, i, i} end end", "F", &[])
                .expect_err("alloc");
        assert!(matches!(e, LuaFailure::Budget(_)), "{e}");
        let e = run("function F() return string.rep('x', 1000000000) end", "F", &[]).expect_err("rep");
        assert!(matches!(e, LuaFailure::Budget(_)), "{e}");
        // The next call works again.
        assert_eq!(run("function F() return true end", "F", &[]).expect("runs"), vec![LuaOut::Bool(true)]);
    }

    #[test]
    fn the_memory_budget_holds_after_a_kube_helper() {
        // The helpers convert with the limit lifted; it is set again when they return.
        let template = json!({"spec": {"nodeSelector": {"zone": "a"},
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}});
        let script = "local kube = require('kube') function F(t) local r = kube.accuratePodRequirements(t) \
            local s = string.rep('x', 100 * 1024 * 1024) return r end";
        let e = run(script, "F", &[LuaArg::Json(&template)]).expect_err("past the budget");
        assert_eq!(e, LuaFailure::Budget(Spent::Memory), "{e}");
        let script = "local kube = require('kube') function F(t) local d = kube.getPodDependencies(t, 'ns') \
            local s = string.rep('x', 100 * 1024 * 1024) return d end";
        let e = run(script, "F", &[LuaArg::Json(&template)]).expect_err("past the budget");
        assert_eq!(e, LuaFailure::Budget(Spent::Memory), "{e}");
        // And the helper's result comes back whole.
        let out = run(
            "local kube = require('kube') function F(t) return kube.accuratePodRequirements(t) end",
            "F",
            &[LuaArg::Json(&template)],
        )
        .expect("runs");
        assert!(matches!(&out[0], LuaOut::Table(t) if t["nodeClaim"]["nodeSelector"]["zone"] == "a"), "{out:?}");
    }

    #[test]
    fn garbage_is_collected_within_a_call_and_between_calls() {
        // 80 MB of short-lived strings in one call, under a 64 MiB budget: the collector runs
        // while the script does. (Few large strings rather than many small ones: the same
        // bytes in far fewer instructions, so a loaded debug build stays within the 2 s.)
        let script = "function F() local n = 0 for i = 1, 80 do local s = string.rep('x', 1000000) .. i n = n + #s end return n end";
        assert_eq!(run(script, "F", &[]).expect("within the budget"), vec![LuaOut::Number(80_000_151.0)]);
        // Calls that leave their arguments behind do not make the VM grow without bound.
        let big = json!({"items": (0..2000).map(|i| json!({"name": format!("item-{i}"), "n": i})).collect::<Vec<_>>()});
        let mut high = 0;
        for _ in 0..200 {
            run("function F(o) return #o.items end", "F", &[LuaArg::Json(&big)]).expect("runs");
            high = high.max(VM.with(|cell| cell.borrow().as_ref().map(|vm| vm.lua.used_memory()).unwrap_or(0)));
        }
        assert!(high < (COLLECT_EVERY + (48 << 20)), "the VM held {high} bytes");
    }

    #[test]
    fn tables_encode_like_karmada() {
        assert_eq!(run("function F() return {} end", "F", &[]).expect("x"), vec![LuaOut::Table(json!([]))]);
        assert!(run("function F() return {1, a = 2} end", "F", &[]).is_err());
        assert!(run("function F() local t = {} t[1] = 1 t[3] = 3 return t end", "F", &[]).is_err());
        assert!(run("function F() local t = {} t.self = t return t end", "F", &[]).is_err());
        let e = run("function G() end", "F", &[]).expect_err("missing");
        assert_eq!(e, LuaFailure::MissingFunction("F"));
        assert!(matches!(run("function F( end", "F", &[]), Err(LuaFailure::Syntax(_))));
    }

    /// `pairs` order is C Lua's hash order (a deliberate difference from gopher-lua's insertion
    /// order, docs/guide/karmada.md), and the same in every VM: a fresh thread's VM gives the same list.
    #[test]
    fn pairs_order_is_the_same_in_every_vm() {
        let script = "function F() local t = {} t.zeta = 1 t.alpha = 2 t.mid = 3 t.beta = 4 t.omega = 5 \
            local ks = {} for k in pairs(t) do ks[#ks + 1] = k end return table.concat(ks, ',') end";
        let here = run(script, "F", &[]).expect("runs");
        let there = std::thread::spawn(move || run(script, "F", &[]).expect("runs")).join().expect("thread");
        assert_eq!(here, there);
        assert_ne!(here, vec![LuaOut::String("zeta,alpha,mid,beta,omega".into())], "not insertion order");
    }

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
    }
}
