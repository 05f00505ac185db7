//! `synapse-mcp skills check`: every finding about every skill of the given roots, in the
//! order the files were read, then each git source: its ref, the commit its copy holds, when it
//! was fetched, the last failure, and the `sha256:` digest of every file of its skills. Nothing
//! is written (no `index.json`), and every SKILL.md is read.

use std::fmt::Write as _;

use super::catalog::{self, Catalog};
use super::discover::Root;
use super::files::Location;
use super::sources::Checkout;
use super::validate::Level;

/// The report and whether the check failed: a skill was skipped, or, in strict mode, any rule
/// of the specification was broken.
pub fn report(roots: &[Root], sources: &[Checkout], strict: bool) -> (String, bool) {
    let catalog = catalog::build(roots, None);
    let mut text = String::new();
    for checkout in sources {
        describe(checkout, &catalog, &mut text);
    }
    for diagnostic in &catalog.diagnostics {
        text.push_str(&diagnostic.render(strict));
        text.push('\n');
    }
    let count = |level: Level| {
        catalog
            .diagnostics
            .iter()
            .filter(|diagnostic| diagnostic.level == level)
            .count()
    };
    let (skipped, errors, warnings) = (
        count(Level::Fatal),
        count(Level::Error),
        count(Level::Warning),
    );
    let mode = if strict { "strict" } else { "lenient" };
    let (errors, warnings) = if strict {
        (errors, warnings)
    } else {
        (0, warnings + errors)
    };
    writeln!(
        text,
        "{} skills usable, {skipped} skipped, {errors} errors, {warnings} warnings ({mode} mode, {} roots)",
        catalog.skills.len(),
        roots.len()
    )
    .ok();
    (text, skipped > 0 || errors > 0)
}

/// A git source: where its copy stands, then every file of its skills with its digest.
fn describe(checkout: &Checkout, catalog: &Catalog, text: &mut String) {
    let source = &checkout.source;
    writeln!(text, "git source {}", source.spec).ok();
    let state = checkout.state().unwrap_or_default();
    let commit = state
        .commit
        .as_deref()
        .filter(|_| checkout.present())
        .unwrap_or("none (not fetched yet: the server fetches it when it starts, or run `synapse-mcp skills update`)");
    writeln!(
        text,
        "  url {}, ref {}, commit {commit}, fetched {}",
        source.url,
        source.reference,
        state.fetched.as_deref().unwrap_or("never")
    )
    .ok();
    writeln!(text, "  copy {}", checkout.root().display()).ok();
    if let Some(failure) = &state.failure {
        let kept = if checkout.present() {
            "the last good copy is served"
        } else {
            "there is no copy to serve"
        };
        writeln!(
            text,
            "  warning: the last update failed at {}: {}; {kept}",
            failure.at, failure.message
        )
        .ok();
    }
    let root = checkout.root();
    for skill in &catalog.skills {
        let Location::Disk(folder) = &skill.location else {
            continue;
        };
        if !folder.starts_with(&root) {
            continue;
        }
        writeln!(text, "  skill {}", skill.name).ok();
        for file in skill.location.files() {
            let digest = skill.location.digest(&file, None).map_or_else(
                |error| format!("(unreadable: {error})"),
                |(digest, _)| digest,
            );
            writeln!(text, "    {digest} {file}").ok();
        }
    }
}
