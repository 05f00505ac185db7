//! Rebuilds the binary when anything under `skills/` changes: the bundled skills are compiled in
//! with `include_dir!`, which tracks the files it read but not files added later. Also builds
//! the workspace view (`app/`): its page with the stylesheet and the script it links inlined,
//! one self-contained HTML document the server embeds (hosts load an MCP App without network).

use std::path::Path;

fn main() {
    println!("cargo::rerun-if-changed=skills");
    println!("cargo::rerun-if-changed=app");
    let app = Path::new("app");
    let read = |name: &str| {
        std::fs::read_to_string(app.join(name))
            .unwrap_or_else(|error| panic!("cannot read app/{name}: {error}"))
    };
    let page = read("workspace.html");
    let style = read("workspace.css");
    let script = read("workspace.js");
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
