//! Every table of the repository's pages renders as a table: a header row, a delimiter row, and
//! body rows with as many cells as the header, with no blank line or stray row breaking it into
//! raw pipes (GitHub's table rules: a `|` splits cells even inside a code span unless escaped).

use std::path::{Path, PathBuf};

use crate::common::manifest;

/// The pages a reader opens: the front door, the changelog, the figures, `docs/`, and any
/// `README.md` of a folder of the repository (integrations, examples, benches).
fn pages() -> Vec<PathBuf> {
    let mut pages: Vec<PathBuf> = ["README.md", "CHANGELOG.md", "BENCHMARKS.md"]
        .iter()
        .map(|page| manifest(page))
        .collect();
    for folder in [
        "docs",
        "integrations",
        "examples",
        "benches",
        "deploy",
        "skills",
    ] {
        collect_markdown(&manifest(folder), &mut pages);
    }
    pages.sort();
    pages
}

fn collect_markdown(folder: &Path, pages: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') || name == "node_modules" {
            continue;
        }
        if path.is_dir() {
            collect_markdown(&path, pages);
        } else if path.extension().is_some_and(|extension| extension == "md") {
            pages.push(path);
        }
    }
}

/// The cells of a table row: split on every `|` not escaped with `\`, the outer pipes dropped.
fn cells(row: &str) -> usize {
    let row = row.trim();
    let mut pipes = 0;
    let mut after_backslash = false;
    for character in row.chars() {
        if character == '|' && !after_backslash {
            pipes += 1;
        }
        after_backslash = character == '\\' && !after_backslash;
    }
    let outer = usize::from(row.starts_with('|'))
        + usize::from(row.ends_with('|') && !row.ends_with("\\|"));
    pipes + 1 - outer
}

fn is_delimiter(row: &str) -> bool {
    let row = row.trim();
    row.contains('-')
        && row
            .chars()
            .all(|character| matches!(character, '|' | '-' | ':' | ' '))
}

/// What is wrong with the tables of one page, one line each (`path:line: what`).
fn table_problems(page: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(page).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut problems = Vec::new();
    let mut in_fence = false;
    let mut header: Option<usize> = None;
    for (index, line) in lines.iter().enumerate() {
        let number = index + 1;
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            header = None;
            continue;
        }
        if in_fence {
            continue;
        }
        if !line.trim_start().starts_with('|') {
            header = None;
            continue;
        }
        if let Some(columns) = header {
            if cells(line) != columns {
                problems.push(format!(
                    "{}:{number}: {} cells in a table of {columns} columns",
                    page.display(),
                    cells(line)
                ));
            }
            continue;
        }
        let starts_table = lines
            .get(index + 1)
            .is_some_and(|next| is_delimiter(next) && cells(next) == cells(line));
        if starts_table {
            header = Some(cells(line));
        } else if !(index > 0 && is_delimiter(line)) {
            problems.push(format!(
                "{}:{number}: a row outside any table (a blank line or a missing delimiter row \
                 above it?)",
                page.display()
            ));
        }
    }
    problems
}

#[test]
fn every_table_of_every_page_renders() {
    let pages = pages();
    assert!(pages.len() > 10, "{pages:?}");
    let problems: Vec<String> = pages.iter().flat_map(|page| table_problems(page)).collect();
    assert_eq!(problems, Vec::<String>::new());
}

#[test]
fn a_table_broken_by_a_blank_line_or_a_wrong_row_is_found() {
    let folder = tempfile::tempdir().unwrap();
    let page = folder.path().join("page.md");
    std::fs::write(
        &page,
        "| a | b |\n|---|---|\n| 1 | `x \\| y` |\n| 1 | 2 | 3 |\n\n| 4 | 5 |\n\n```\n| in a fence |\n```\n",
    )
    .unwrap();
    let shown = page.display().to_string();
    assert_eq!(
        table_problems(&page),
        [
            format!("{shown}:4: 3 cells in a table of 2 columns"),
            format!(
                "{shown}:6: a row outside any table (a blank line or a missing delimiter row \
                 above it?)"
            ),
        ]
    );
}
