//! Builds the Lua 5.4.7 VM that the mod sandbox runs on, from `vendor/lua-5.4.7`: the
//! unmodified release (as the `lua-src` crate ships it) with the patches marked `WS:` — a work
//! budget counted inside the VM, a constant string-hash seed, no weak tables or table
//! finalizers, one NaN. `vendor/lua-5.4.7/PATCHES.md` lists them. mlua is built with its
//! `module` feature, so it links no Lua of its own and uses this one.
//!
//! Only with the `lua` feature (on by default): a build without it (the wasm build,
//! `scripts/build-web.sh`) has no Lua mods and compiles no C.

use std::path::Path;

const SOURCES: &[&str] = &[
    "lapi.c",
    "lauxlib.c",
    "lbaselib.c",
    "lcode.c",
    "lcorolib.c",
    "lctype.c",
    "ldblib.c",
    "ldebug.c",
    "ldo.c",
    "ldump.c",
    "lfunc.c",
    "lgc.c",
    "linit.c",
    "liolib.c",
    "llex.c",
    "lmathlib.c",
    "lmem.c",
    "loadlib.c",
    "lobject.c",
    "lopcodes.c",
    "loslib.c",
    "lparser.c",
    "lstate.c",
    "lstring.c",
    "lstrlib.c",
    "ltable.c",
    "ltablib.c",
    "ltm.c",
    "lundump.c",
    "lutf8lib.c",
    "lvm.c",
    "lzio.c",
];

fn main() {
    let dir = Path::new("vendor/lua-5.4.7");
    println!("cargo:rerun-if-changed={}", dir.display());
    if std::env::var_os("CARGO_FEATURE_LUA").is_none() {
        return;
    }
    let target = std::env::var("TARGET").unwrap_or_default();
    let mut build = cc::Build::new();
    build
        .include(dir)
        .opt_level(2)
        .warnings(false)
        .flag_if_supported("-fno-common")
        // The same configuration the `lua-src` crate builds Lua 5.4 with for mlua.
        .define("LUA_COMPAT_5_3", None);
    if target.contains("linux") || target.ends_with("bsd") {
        build.define("LUA_USE_LINUX", None);
    } else if target.contains("apple") {
        build.define("LUA_USE_MACOSX", None);
    } else if target.contains("windows") {
        build.define("LUA_USE_WINDOWS", None);
    }
    for file in SOURCES {
        build.file(dir.join(file));
    }
    // `link-lib` below with whole-archive: mlua-sys, which needs these symbols, is linked after
    // this crate, so the linker must keep every object of the archive.
    build.cargo_metadata(false).compile("ws_lua54");
    let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    println!("cargo:rustc-link-search=native={out}");
    println!("cargo:rustc-link-lib=static:+whole-archive=ws_lua54");
}
