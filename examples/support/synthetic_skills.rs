//! Synthetic skills for the benchmarks (`benches/budgets.rs`, `examples/skills_bench.rs`,
//! `benches/peers.sh` through `skills_bench generate`): N skill folders with a `SKILL.md` each,
//! about 1 KB of body over a vocabulary of ~8,000 pseudo-words drawn roughly as in real text, and
//! the queries the benchmarks search them with. Deterministic: the same N gives the same files.
//!
//! Included with `#[path = ".../support/synthetic_skills.rs"] mod synthetic_skills;`.

use std::fmt::Write as _;
use std::path::Path;

/// Searches the benchmarks run, one with a typo.
pub(crate) const QUERIES: [&str; 8] = [
    "merge pdf files",
    "clean csv data",
    "kubernetes deploy",
    "database migrations",
    "translate documents",
    "stock forecast analysis",
    "mrege pdfs",
    "transcribe audio meeting",
];

/// A long pasted message (68 words) whose relevant part is small, the costliest kind of query:
/// every word is looked up, stemmed, checked against the glossary and typo-expanded.
pub(crate) const LONG_QUERY: &str = "Hey, some context first: we are a small team shipping a \
    dashboard next month, the standups run long and priorities keep changing while marketing \
    wants a new landing page. Anyway, what I need today: finance sent me a spreadsheet report \
    where the chart and the totals broke after someone inserted rows, and I need to clean the \
    csv data and merge the pdf invoices before the review. Thanks!";

const WORDS: [&str; 48] = [
    "pdf",
    "merge",
    "split",
    "csv",
    "clean",
    "data",
    "chart",
    "plot",
    "report",
    "invoice",
    "email",
    "draft",
    "review",
    "code",
    "refactor",
    "test",
    "deploy",
    "docker",
    "kubernetes",
    "database",
    "migration",
    "schema",
    "query",
    "index",
    "search",
    "translate",
    "summarise",
    "document",
    "slide",
    "deck",
    "image",
    "resize",
    "audio",
    "transcribe",
    "video",
    "subtitle",
    "calendar",
    "meeting",
    "budget",
    "forecast",
    "stock",
    "analysis",
    "security",
    "audit",
    "license",
    "release",
    "notes",
    "changelog",
];

fn mix(seed: usize, position: usize) -> usize {
    seed.wrapping_mul(2_654_435_761)
        .wrapping_add(position.wrapping_mul(40_503))
        >> 7
}

pub(crate) fn word(seed: usize, position: usize) -> &'static str {
    WORDS[mix(seed, position) % WORDS.len()]
}

const SYLLABLES: [&str; 24] = [
    "ka", "lo", "mi", "ren", "tu", "vas", "no", "pel", "dri", "sto", "gan", "fe", "qua", "zin",
    "bor", "tel", "ash", "umb", "cor", "ix", "ya", "hep", "ond", "ral",
];

/// A body word: one of about 8,000 pseudo-words, common ones far more often (roughly Zipf), as
/// in real text; one in eight is a topic word.
fn body_word(seed: usize, position: usize) -> String {
    let draw = mix(seed, position);
    if draw.is_multiple_of(8) {
        return word(seed, position + 1000).to_owned();
    }
    let rank = (draw % 8000) * (draw % 8000) / 8000;
    format!(
        "{}{}{}",
        SYLLABLES[rank % 24],
        SYLLABLES[rank / 24 % 24],
        SYLLABLES[rank / 576 % 24]
    )
}

/// Writes `count` skills under `root`, a hundred per group folder.
pub(crate) fn generate(root: &Path, count: usize) -> anyhow::Result<()> {
    for number in 0..count {
        let name = format!("{}-{}-{number}", word(number, 1), word(number, 2));
        let folder = root.join(format!("group-{}", number % 100)).join(&name);
        std::fs::create_dir_all(&folder)?;
        let topic: Vec<&str> = (3..9).map(|position| word(number, position)).collect();
        let mut body = format!("# {}\n\n## Steps\n\n", topic.join(" "));
        for line in 0..12 {
            let words: Vec<String> = (0..10)
                .map(|position| body_word(number * 31 + line, position))
                .collect();
            writeln!(body, "{}. {}.", line + 1, words.join(" "))?;
        }
        let description = format!(
            "Handles {} tasks. Use when the user asks to {}.",
            topic[..3].join(", "),
            topic[3..].join(" ")
        );
        std::fs::write(
            folder.join("SKILL.md"),
            format!("---\nname: {name}\ndescription: {description}\n---\n\n{body}"),
        )?;
    }
    Ok(())
}

/// The name of the skill `generate` writes first.
pub(crate) fn first_skill_name() -> String {
    format!("{}-{}-0", word(0, 1), word(0, 2))
}
