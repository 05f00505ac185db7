//! The crate's layers, checked from its source: modules import downward only, and no module
//! imports one that imports it back. `docs/architecture.md` draws the same map.
//!
//! Imports are read from `crate::…` and `super::…` paths in every file under `src/` (outside its
//! `#[cfg(test)]` module and comments), and from a parent's calls into its own submodules
//! (`child::…`; a `pub use` that only re-exports a child's item names it, it calls nothing). An
//! import of a submodule counts as an edge to that file; an import of an item counts as an edge
//! to the module that declares it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Top-level modules from the top layer down; a module may import only from layers below its
/// own. `text` and `config` are the ground floor.
const LAYERS: &[&[&str]] = &[
    // The two front ends over the wiring: the MCP server and the offline subcommands.
    &["server", "maintenance"],
    &["app"],
    &["upstreams"],
    &["tokens"],
    &["groups"],
    &["plans"],
    &["tools"],
    // `snapshots` imports only the store and `json`; `tools/errors.rs` converts its errors.
    &["workspace", "snapshots"],
    &["refs", "rules", "store"],
    &["skills", "vars", "script_tools"],
    // Shared by the skill library and the script tools: running a script, watching folders.
    &["runner", "folders"],
    &["json"],
    // `config` is plain data (the command line, the file's schema): it imports nothing;
    // `digest` is SHA-256 in hex; `hosts` the entries `config HOST` writes.
    &["text", "config", "digest", "hosts"],
];

/// A module, as the path of its file below `src/` without `.rs` (`tools/executor`); the crate
/// root is empty.
type Module = Vec<String>;

#[test]
fn every_top_level_module_imports_only_from_the_layers_below_it() {
    let graph = import_graph();
    let layer_of = |name: &str| {
        LAYERS
            .iter()
            .position(|layer| layer.contains(&name))
            .unwrap_or_else(|| panic!("module `{name}` is in no layer: add it to LAYERS"))
    };
    let mut upward = Vec::new();
    for (from, targets) in &graph {
        let Some(from_top) = from.first() else {
            continue;
        };
        for to in targets {
            let Some(to_top) = to.first() else { continue };
            if from_top != to_top && layer_of(to_top) <= layer_of(from_top) {
                upward.push(format!("{} → {}", from.join("/"), to.join("/")));
            }
        }
    }
    assert_eq!(
        upward,
        Vec::<String>::new(),
        "imports that go up or sideways"
    );
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let graph = import_graph();
    let edges: BTreeMap<&Module, Vec<&Module>> = graph
        .iter()
        .map(|(from, targets)| (from, targets.iter().collect()))
        .collect();
    let loops = find_cycles(&edges);
    assert_eq!(loops, Vec::<String>::new(), "import loops");
}

#[test]
fn the_checker_sees_loops_and_paths() {
    let module = |path: &str| -> Module { path.split('/').map(str::to_owned).collect() };
    let (a, b, c) = (module("tools/a"), module("tools/b"), module("plans"));
    let edges = BTreeMap::from([(&a, vec![&b]), (&b, vec![&a, &c])]);
    assert_eq!(find_cycles(&edges), ["tools/a → tools/b → tools/a"]);
    let known = BTreeSet::from([module("tools"), a.clone(), b.clone(), c.clone()]);
    let source = "use super::{b, Tool};\nfn f() { crate::plans::run(); }\n// crate::json\n";
    assert_eq!(
        imports_of(&a, source, &known),
        BTreeSet::from([b.clone(), c.clone(), module("tools")])
    );
    // A parent and the modules nested in it may use each other; a loop through a sibling is
    // still a loop, parent↔child edges included (`server` → `server/metrics` →
    // `server/http` → `server`).
    let (parent, first, second) = (
        module("server"),
        module("server/metrics"),
        module("server/http"),
    );
    let nested = BTreeMap::from([(&parent, vec![&first]), (&first, vec![&parent])]);
    assert_eq!(find_cycles(&nested), Vec::<String>::new());
    let looped = BTreeMap::from([
        (&parent, vec![&first]),
        (&first, vec![&second]),
        (&second, vec![&parent]),
    ]);
    assert_eq!(
        find_cycles(&looped),
        ["server/metrics → server/http → server → server/metrics"]
    );
    // A parent's calls into its children are read; its re-exports are not.
    let known = BTreeSet::from([parent.clone(), first.clone(), second.clone()]);
    let source = "pub use http::Access;\nfn f() { metrics::start(); }\n";
    assert_eq!(imports_of(&parent, source, &known), BTreeSet::from([first]));
}

/// Every module's imports of other modules of the crate.
fn import_graph() -> BTreeMap<Module, BTreeSet<Module>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    collect_sources(&root, &mut files);
    let module_of = |file: &Path| -> Module {
        let relative = file.strip_prefix(&root).unwrap().with_extension("");
        let parts: Module = relative
            .iter()
            .map(|part| part.to_string_lossy().into_owned())
            .collect();
        if parts == ["lib"] || parts == ["main"] {
            Vec::new()
        } else {
            parts
        }
    };
    let known: BTreeSet<Module> = files.iter().map(|file| module_of(file)).collect();
    files
        .iter()
        .map(|file| {
            let module = module_of(file);
            let source = std::fs::read_to_string(file).unwrap();
            let imports = imports_of(&module, &source, &known);
            (module, imports)
        })
        .collect()
}

/// Every `.rs` file below `folder` (`tests/it/sizes.rs` reads them too).
pub(crate) fn collect_sources(folder: &Path, files: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(folder).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect_sources(&path, files);
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            files.push(path);
        }
    }
}

/// The modules `source` (the file of `module`) imports, itself left out.
fn imports_of(module: &Module, source: &str, known: &BTreeSet<Module>) -> BTreeSet<Module> {
    let code = source
        .split("#[cfg(test)]\nmod tests")
        .next()
        .unwrap_or_default();
    let code: String = code
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let code = without_re_exports(&code);
    let mut imports = BTreeSet::new();
    for (start, _) in code.match_indices("::") {
        let before = &code[..start];
        let Some(anchor) = ["crate", "super"]
            .into_iter()
            .find(|anchor| ends_with_word(before, anchor))
        else {
            // A parent's call into a child of its own: `child::…`, not `other::child::…`.
            let name_start = before
                .rfind(|character: char| !(character.is_alphanumeric() || character == '_'))
                .map_or(0, |index| index + 1);
            let mut child = module.clone();
            child.push(before[name_start..].to_owned());
            if !before[..name_start].ends_with("::") && known.contains(&child) {
                imports.insert(child);
            }
            continue;
        };
        // Only the first `::` of a path starts it (`super::super::x` is read once).
        if before[..before.len() - anchor.len()].ends_with("::") {
            continue;
        }
        let mut base: Module = if anchor == "crate" {
            Vec::new()
        } else {
            module[..module.len().saturating_sub(1)].to_vec()
        };
        let mut rest = &code[start + 2..];
        while let Some(after) = rest.strip_prefix("super::") {
            base.pop();
            rest = after;
        }
        for path in paths_at(rest) {
            let mut target = base.clone();
            for segment in path {
                target.push(segment);
                if !known.contains(&target) {
                    target.pop();
                    break;
                }
            }
            if &target != module {
                imports.insert(target);
            }
        }
    }
    imports
}

/// `code` without its `pub use …;` items: a re-export names a child's item, it calls nothing.
fn without_re_exports(code: &str) -> String {
    let mut kept = Vec::new();
    let mut in_re_export = false;
    for line in code.lines() {
        let trimmed = line.trim_start();
        let after_visibility = trimmed.strip_prefix("pub").map(|rest| {
            rest.strip_prefix('(')
                .and_then(|inner| inner.split_once(')'))
                .map_or(rest, |(_, after)| after)
        });
        if !in_re_export && after_visibility.is_some_and(|rest| rest.starts_with(" use ")) {
            in_re_export = true;
        }
        if in_re_export {
            in_re_export = !line.contains(';');
        } else {
            kept.push(line);
        }
    }
    kept.join("\n")
}

/// Whether `text` ends with `word` as a whole identifier.
fn ends_with_word(text: &str, word: &str) -> bool {
    text.strip_suffix(word).is_some_and(|head| {
        !head
            .chars()
            .next_back()
            .is_some_and(|character| character.is_alphanumeric() || character == '_')
    })
}

/// The paths that start at `text`: `a::b` gives one, `a::{b, c::d}` gives `a::b` and `a::c`.
fn paths_at(text: &str) -> Vec<Vec<String>> {
    let mut segments = Vec::new();
    let mut rest = text;
    loop {
        let length = rest
            .find(|character: char| !(character.is_alphanumeric() || character == '_'))
            .unwrap_or(rest.len());
        if length == 0 {
            break;
        }
        segments.push(rest[..length].to_owned());
        rest = &rest[length..];
        match rest.strip_prefix("::") {
            Some(after) => rest = after,
            None => return vec![segments],
        }
    }
    let Some(group) = rest.strip_prefix('{') else {
        return vec![segments];
    };
    let mut depth = 0;
    let end = group
        .char_indices()
        .find(|&(_, character)| {
            match character {
                '{' => depth += 1,
                '}' if depth == 0 => return true,
                '}' => depth -= 1,
                _ => {}
            }
            false
        })
        .map_or(group.len(), |(index, _)| index);
    let mut paths = Vec::new();
    let mut depth = 0;
    let mut item_start = 0;
    let inner = &group[..end];
    for (index, character) in inner.char_indices().chain([(inner.len(), ',')]) {
        match character {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                let item = inner[item_start..index].trim();
                for tail in paths_at(item) {
                    let mut path = segments.clone();
                    path.extend(tail);
                    paths.push(path);
                }
                item_start = index + 1;
            }
            _ => {}
        }
    }
    paths
}

/// Every loop in the graph, written `a → b → … → a`: an edge between two modules neither of
/// which is nested in the other, and a way back from its end to its start. A parent and the
/// modules nested in it may use each other: that is nesting, not a loop.
fn find_cycles(edges: &BTreeMap<&Module, Vec<&Module>>) -> Vec<String> {
    let nested = |a: &Module, b: &Module| a.starts_with(b) || b.starts_with(a);
    let mut loops = Vec::new();
    let mut seen = BTreeSet::new();
    for (&from, targets) in edges {
        for &to in targets {
            if nested(from, to) {
                continue;
            }
            if let Some(back) = shortest_path(edges, to, from) {
                let mut members: Vec<&Module> = back.clone();
                members.sort();
                if !seen.insert(members) {
                    continue;
                }
                let names: Vec<String> = std::iter::once(from)
                    .chain(back)
                    .map(|module| module.join("/"))
                    .collect();
                loops.push(names.join(" → "));
            }
        }
    }
    loops
}

/// The modules on a shortest path from `start` to `goal`, both included.
fn shortest_path<'a>(
    edges: &BTreeMap<&Module, Vec<&'a Module>>,
    start: &'a Module,
    goal: &Module,
) -> Option<Vec<&'a Module>> {
    let mut came_from: BTreeMap<&Module, Option<&'a Module>> = BTreeMap::from([(start, None)]);
    let mut queue = std::collections::VecDeque::from([start]);
    while let Some(node) = queue.pop_front() {
        if node == goal {
            let mut path = vec![node];
            let mut at = node;
            while let Some(&Some(previous)) = came_from.get(at) {
                path.push(previous);
                at = previous;
            }
            path.reverse();
            return Some(path);
        }
        for &next in edges.get(node).into_iter().flatten() {
            if !came_from.contains_key(next) {
                came_from.insert(next, Some(node));
                queue.push_back(next);
            }
        }
    }
    None
}
