//! The sandbox's cost over plain mlua on the same VM, and how long the hostile mods of
//! `tests/lua_sandbox.rs` take per handler call.
//!
//! `ratio/*`: each workload runs once as a hook handler of a sandboxed mod (budget, allow-listed
//! environment, deterministic `pairs`, the runner's protected call) and once as a plain function
//! in a plain `mlua::Lua` on the same patched VM, unmetered. `hostile/*`: one handler call of a
//! hostile mod with the default limits, from the call to the `mod.error` answer.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use world_streaming::host::{HookArgs, HookHandler, HookValue, Log, ModErrors, ModId, Steps};
use world_streaming::mods::lua::{load, LuaLimits, LuaSetup};

/// `(name, body)`: the body of a function of no arguments.
const WORKLOADS: &[(&str, &str)] = &[
    ("arith loop", "local s = 0 for i = 1, 20000 do s = s + i % 7 end return s"),
    (
        "calls",
        "local function f(a, b) return a + b end local s = 0 for i = 1, 5000 do s = f(s, i) end return s",
    ),
    (
        "tables",
        "local t = {} for i = 1, 2000 do t[i] = {x = i, z = -i} end return #t",
    ),
    (
        "string.find",
        "local s, n = 'the quick brown fox jumps over the lazy dog', 0 for i = 1, 1000 do if s:find('l%a+') then n = n + 1 end end return n",
    ),
    (
        "gsub with a function",
        "local s = ('key=value; '):rep(50) local n = 0 for i = 1, 20 do s:gsub('(%w+)=(%w+)', function(k, v) n = n + 1 end) end return n",
    ),
    (
        "concat",
        "local t = {} for i = 1, 1000 do t[#t + 1] = 'x' .. i end return #table.concat(t)",
    ),
];

const HOOK: &str = "world.chunk.load";

fn sandboxed(body: &str, limits: LuaLimits) -> Box<dyn HookHandler> {
    let source = format!("on({HOOK:?}, function(c) local function work() {body} end work() end)");
    let hooks = [HOOK.to_owned()];
    let setup = LuaSetup {
        file: "bench.lua",
        id: ModId::new("bench"),
        seed: 0,
        streaming: None,
        terrain: None,
        district: None,
        nav: None,
        hooks: &hooks,
        log: Log::default(),
        errors: ModErrors::default(),
        steps: Steps::default(),
        // One ask after another, no engine between: no tick budget (each ask is measured).
        limits: LuaLimits {
            instructions_per_tick: u64::MAX,
            ..limits
        },
    };
    let mut loaded = load(&source, setup).expect("the bench mod loads");
    assert_eq!(loaded.error, None);
    loaded.handlers.remove(0).1
}

fn bench(c: &mut Criterion) {
    let fields = [("x", HookValue::Int(0)), ("z", HookValue::Int(0))];
    let args = HookArgs {
        hook: HOOK,
        fields: &fields,
    };
    let mut g = c.benchmark_group("ratio");
    for (name, body) in WORKLOADS {
        let unlimited = LuaLimits {
            instructions_per_call: 1 << 40,
            ..LuaLimits::default()
        };
        let handler = sandboxed(body, unlimited);
        assert!(handler.ask(&args).is_ok(), "{name} runs in the sandbox");
        g.bench_function(BenchmarkId::new("sandbox", name), |b| {
            b.iter(|| handler.ask(&args))
        });
        let lua = mlua::Lua::new();
        let f: mlua::Function = lua
            .load(format!(
                "return function(c) local function work() {body} end work() end"
            ))
            .eval()
            .unwrap();
        g.bench_function(BenchmarkId::new("plain mlua", name), |b| {
            b.iter(|| {
                let t = lua.create_table().unwrap();
                t.raw_set("x", 0).unwrap();
                t.raw_set("z", 0).unwrap();
                f.call::<()>(t).unwrap()
            })
        });
    }
    g.finish();

    let mut g = c.benchmark_group("hostile");
    g.sample_size(10);
    for (name, body) in [
        ("xpcall endless handler", "xpcall(function() while true do end end, function() while true do end end)"),
        ("concat 4 MiB", "local big = string.rep('x', 4 * 1024 * 1024) for i = 1, 200000 do local y = big .. 'a' end"),
        ("vararg tail call", "local function f(...) return f(1, ...) end f()"),
        ("pairs 6 MiB key", "local t = {[string.rep('k', 6 * 1024 * 1024)] = 1} for i = 1, 1e9 do for k in pairs(t) do end end"),
        ("table.concat", "local t = {} for i = 1, 100000 do t[i] = 'ab' end for i = 1, 1e9 do local s = table.concat(t) end"),
        ("long string ==", "local a, b = string.rep('x', 4 * 1024 * 1024) .. '1', string.rep('x', 4 * 1024 * 1024) .. '2' for i = 1, 1e9 do local e = a == b end"),
        ("memory bomb", "local t = {} for i = 1, 1e9 do t[i] = {i, i, i} end"),
        ("pcall(error) loop", "while true do pcall(error) end"),
        ("pcall(nil) loop", "while true do pcall(nothing) end"),
        ("pcall(error) loop with <close>", "local x <close> = setmetatable({}, {__close = function() while true do end end}) while true do pcall(error) end"),
        ("%b() unbalanced", "local s = string.rep('(', 100000) for i = 1, 1e9 do local f = s:find('%b()') end"),
        ("100 KB class", "local s, p = string.rep('b', 100000), '[' .. string.rep('a', 100000) .. ']' for i = 1, 1e9 do local f = s:find(p) end"),
        ("4 MiB pattern, short subject", "local p = string.rep('x', 4 * 1024 * 1024) for i = 1, 1e9 do local f = ('y'):find(p) end"),
        ("tostring(1e308)", "for i = 1, 1e9 do local s = tostring(1e308) end"),
        ("%99.99f", "for i = 1, 1e9 do local s = string.format('%99.99f', 1e308) end"),
        ("__index chain", "local t = {} for i = 1, 1999 do t = setmetatable({}, {__index = t}) end for i = 1, 1e9 do local v = t.x end"),
        ("__call loop", "local t = setmetatable({}, {}) getmetatable(t).__call = t pcall(t)"),
        ("table.concat over a C __index", "local t = setmetatable({}, {__index = tostring, __name = ''}) table.concat(t, '', math.mininteger, math.maxinteger)"),
        ("failed plain find, 6 MB", "local s = string.rep('a', 6e6) for i = 1, 1e9 do local f = s:find('z', 1, true) end"),
        ("unpack 'z', 6 MB", "local s = string.rep('a', 6e6) for i = 1, 1e9 do pcall(string.unpack, 'z', s) end"),
        ("pairs over an emptied array", "local t = {} for i = 1, 1e5 do t[i] = true end for i = 1, 1e5 do t[i] = nil end for i = 1, 1e9 do for k in pairs(t) do end end"),
        ("< on strings of NULs", "local a, b = ('\\0'):rep(4e6), ('\\0'):rep(3999999) .. '\\0' for i = 1, 1e9 do local l = a < b end"),
        ("pattern bomb", "local s = string.rep('a', 5000) local i = s:find('.-.-.-b')"),
        ("sort 200 000", "local t = {} for i = 1, 200000 do t[i] = i end for i = 1, 1e9 do table.sort(t, function(a, b) return a > b end) end"),
    ] {
        let handler = sandboxed(body, LuaLimits::default());
        assert!(handler.ask(&args).is_err(), "{name} is stopped");
        g.bench_function(name, |b| b.iter(|| handler.ask(&args)));
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
