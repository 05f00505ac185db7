//! Rebuilds the binary when anything under `skills/` changes: the bundled skills are compiled in
//! with `include_dir!`, which tracks the files it read but not files added later. Also builds
//! the workspace view (`app/`): its page with the stylesheet and the script it links inlined,
//! one self-contained HTML document the server embeds (hosts load an MCP App without network),
//! with the management screens' logic it shares with the SillyTavern extension
//! (`integrations/sillytavern/lib/manage.js`, an ES module, its `export`s made plain functions).
//! And has release builds for `x86_64` Linux place the start-up code first in the binary
//! (`link/startup-order.txt`, written by `benches/startup_order.py`), pack their relocations,
//! and strips their symbol table.

use std::path::Path;

fn main() {
    order_startup_code();
    pack_relative_relocations();
    strip_symbols();
    println!("cargo::rerun-if-changed=skills");
    println!("cargo::rerun-if-changed=app");
    println!("cargo::rerun-if-changed={MANAGE}");
    let app = Path::new("app");
    let read = |name: &str| {
        std::fs::read_to_string(app.join(name))
            .unwrap_or_else(|error| panic!("cannot read app/{name}: {error}"))
    };
    let page = read("workspace.html");
    let style = read("workspace.css");
    let script = format!("{}\n{}", read("workspace.js"), shared_script());
    assert!(
        !script.contains("</script") && !style.contains("</style"),
        "app/workspace.js or .css closes its own element; write `<\\/` in strings instead"
    );
    let link = r#"<link rel="stylesheet" href="workspace.css">"#;
    let source = r#"<script src="workspace.js"></script>"#;
    assert!(
        page.contains(link) && page.contains(source),
        "app/workspace.html must link workspace.css and workspace.js exactly once: {link} {source}"
    );
    let built = page
        .replace(link, &format!("<style>\n{style}</style>"))
        .replace(source, &format!("<script>\n{script}</script>"));
    let out = std::env::var("OUT_DIR").unwrap_or_else(|error| panic!("no OUT_DIR: {error}"));
    std::fs::write(Path::new(&out).join("workspace.html"), built)
        .unwrap_or_else(|error| panic!("cannot write the built workspace view: {error}"));
}

/// The extension's management logic, shared with the view.
const MANAGE: &str = "integrations/sillytavern/lib/manage.js";

/// [`MANAGE`] as a classic script: the view is one inline script, not a module.
fn shared_script() -> String {
    let module = std::fs::read_to_string(MANAGE)
        .unwrap_or_else(|error| panic!("cannot read {MANAGE}: {error}"));
    let script = module.replace("\nexport function ", "\nfunction ");
    assert!(
        !script.contains("\nexport ") && !script.contains("\nimport "),
        "{MANAGE} is inlined into the view as a plain script: only `export function` may be exported, and it imports nothing"
    );
    script
}

/// Release builds leave their symbol table out (9.6 MB of function names, which only a profiler
/// reads) unless `SYNAPSE_KEEP_SYMBOLS=1`. The profile's `strip` would do the same but
/// changes every symbol's name (cargo hashes it into them), so the start-up order written from
/// a build with symbols would match nothing in one without.
fn strip_symbols() {
    println!("cargo::rerun-if-env-changed=SYNAPSE_KEEP_SYMBOLS");
    if variable("PROFILE") != "release" || variable("SYNAPSE_KEEP_SYMBOLS") == "1" {
        return;
    }
    match variable("CARGO_CFG_TARGET_OS").as_str() {
        "linux" | "android" => println!("cargo::rustc-link-arg-bins=-Wl,--strip-all"),
        "macos" | "ios" => println!("cargo::rustc-link-arg-bins=-Wl,-x,-S"),
        _ => {}
    }
}

/// An idle server keeps only the code it ran in memory, but the kernel maps code 64 KB around
/// each page first touched: start-up code scattered over 25 MB of text kept 18 MB resident, and
/// 11 MB once it comes first. Only where the linker is known to be LLD (Rust's default for
/// `x86_64` Linux since 1.90) and nothing chose another: `--symbol-ordering-file` is LLD's (and
/// mold's); GNU ld would refuse it. `SYNAPSE_STARTUP_ORDER=0` turns it off.
fn order_startup_code() {
    println!("cargo::rerun-if-changed=link/startup-order.txt");
    println!("cargo::rerun-if-env-changed=SYNAPSE_STARTUP_ORDER");
    if !release_linked_by_lld() || variable("SYNAPSE_STARTUP_ORDER") == "0" {
        return;
    }
    let order = Path::new(&variable("CARGO_MANIFEST_DIR")).join("link/startup-order.txt");
    println!(
        "cargo::rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
        order.display()
    );
    println!("cargo::rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
}

/// A position-independent binary has the loader fix up every pointer in its read-only data
/// at start: 68,000 relative relocations of 24 bytes each, 1.6 MB read (and kept resident) by
/// every start. Packed (`DT_RELR`, a bitmap per run of pointers) they take a few kilobytes.
/// The loader must know the format (glibc 2.36 or later; an older one refuses the binary by
/// name, `GLIBC_ABI_DT_RELR`), so only where the building machine's glibc does: `cargo
/// install` runs where it builds.
fn pack_relative_relocations() {
    if !release_linked_by_lld() || variable("HOST") != variable("TARGET") {
        return;
    }
    let version = std::process::Command::new("getconf")
        .arg("GNU_LIBC_VERSION")
        .output()
        .map(|output| String::from_utf8_lossy(&output.stdout).into_owned())
        .unwrap_or_default();
    let numbers: Vec<u32> = (version.trim().strip_prefix("glibc ").unwrap_or(""))
        .split('.')
        .map_while(|part| part.parse().ok())
        .collect();
    if numbers.as_slice() >= [2, 36].as_slice() {
        println!("cargo::rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// A release build for `x86_64` Linux whose linker is Rust's default (LLD), which nothing
/// chose otherwise.
fn release_linked_by_lld() -> bool {
    let chosen_linker = !variable("RUSTC_LINKER").is_empty()
        || variable("CARGO_ENCODED_RUSTFLAGS").contains("link");
    variable("TARGET") == "x86_64-unknown-linux-gnu"
        && variable("PROFILE") == "release"
        && !chosen_linker
}

/// An environment variable cargo gives build scripts, empty when unset.
fn variable(name: &str) -> String {
    std::env::var(name).unwrap_or_default()
}
