//! `synapse-mcp skills check`: every finding about every skill of the given roots, in the
//! order the files were read. Nothing is written (no `index.json`), and every SKILL.md is read.

use std::fmt::Write as _;

use super::catalog;
use super::discover::Root;
use super::validate::Level;

/// The report and whether the check failed: a skill was skipped, or, in strict mode, any rule
/// of the specification was broken.
pub fn report(roots: &[Root], strict: bool) -> (String, bool) {
    let catalog = catalog::build(roots, false);
    let mut text = String::new();
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
