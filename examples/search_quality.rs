//! Measures how well skill search finds the right skill: recall@3 and mean reciprocal rank, by
//! kind of query, over a corpus of real skills (`benches/search_corpus.sh` assembles it) and the
//! query sets in `benches/search-queries/*.toml` (each query names the skills that answer it).
//!
//! ```sh
//! benches/search_corpus.sh /tmp/skills-corpus ANTHROPICS_SKILLS_GIT SUPERPOWERS_GIT SCIENTIFIC_SKILLS_GIT
//! cargo run --release --example search_quality -- /tmp/skills-corpus [QUERIES.toml...] [--misses]
//! ```
//! Every folder directly inside the corpus folder is a root, in name order. Without query files
//! it reads `benches/search-queries/dev.toml`. `--misses` lists each query whose skill is not in
//! the top three, with what came first.
#![allow(
    clippy::print_stdout,
    clippy::cast_precision_loss,
    reason = "an example reports its figures on stdout, as approximate fractions"
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde::Deserialize;

use synapse_mcp::skills::Library;
use synapse_mcp::skills::discover::{Root, RootKind};

/// How deep in the ranking a skill still counts for the reciprocal rank.
const DEPTH: usize = 10;

#[derive(Debug, Deserialize)]
struct QuerySet {
    query: Vec<Query>,
}

#[derive(Debug, Deserialize)]
struct Query {
    kind: String,
    text: String,
    /// The skills that answer the query; finding any one counts.
    expect: Vec<String>,
}

#[derive(Debug, Default)]
struct Tally {
    queries: usize,
    in_top_three: usize,
    reciprocal_ranks: f64,
    empty: usize,
}

impl Tally {
    fn add(&mut self, rank: Option<usize>, empty: bool) {
        self.queries += 1;
        if rank.is_some_and(|rank| rank <= 3) {
            self.in_top_three += 1;
        }
        self.reciprocal_ranks += rank.map_or(0.0, |rank| 1.0 / rank as f64);
        self.empty += usize::from(empty);
    }

    fn row(&self, kind: &str) -> String {
        let count = self.queries.max(1) as f64;
        format!(
            "| {kind} | {} | {:.2} | {:.2} | {} |",
            self.queries,
            self.in_top_three as f64 / count,
            self.reciprocal_ranks / count,
            self.empty
        )
    }
}

fn roots(corpus: &Path) -> anyhow::Result<Vec<Root>> {
    let mut folders: Vec<PathBuf> = std::fs::read_dir(corpus)
        .with_context(|| format!("cannot read the corpus folder {}", corpus.display()))?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.is_dir())
        .collect();
    folders.sort();
    anyhow::ensure!(
        !folders.is_empty(),
        "{} holds no root folders; run benches/search_corpus.sh first",
        corpus.display()
    );
    Ok(folders
        .into_iter()
        .map(|path| Root {
            kind: RootKind::Configured,
            path,
        })
        .collect())
}

fn main() -> anyhow::Result<()> {
    let mut arguments: Vec<String> = std::env::args().skip(1).collect();
    let misses = arguments.iter().any(|argument| argument == "--misses");
    arguments.retain(|argument| argument != "--misses");
    let Some(corpus) = arguments.first().cloned() else {
        anyhow::bail!("usage: search_quality CORPUS [QUERIES.toml...] [--misses]");
    };
    let mut files: Vec<String> = arguments[1..].to_vec();
    if files.is_empty() {
        files.push(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("benches/search-queries/dev.toml")
                .display()
                .to_string(),
        );
    }
    let library = Library::load(&roots(Path::new(&corpus))?, None);
    library.warm_up();
    println!("{} skills in {corpus}", library.skills().len());
    for file in &files {
        let text = std::fs::read_to_string(file).with_context(|| format!("cannot read {file}"))?;
        let set: QuerySet =
            toml::from_str(&text).with_context(|| format!("cannot parse {file}"))?;
        for query in &set.query {
            for name in &query.expect {
                anyhow::ensure!(
                    library.find(name).is_some(),
                    "{file}: `{}` expects `{name}`, which the corpus does not hold",
                    query.text
                );
            }
        }
        evaluate(&library, file, &set.query, misses);
    }
    Ok(())
}

fn evaluate(library: &Library, file: &str, queries: &[Query], misses: bool) {
    let mut by_kind: BTreeMap<&str, Tally> = BTreeMap::new();
    let mut all = Tally::default();
    let mut times: Vec<Duration> = Vec::with_capacity(queries.len());
    for query in queries {
        let started = Instant::now();
        let hits = library.search(&query.text, &[], DEPTH);
        times.push(started.elapsed());
        let names: Vec<&str> = hits.iter().map(|hit| hit.skill.name.as_str()).collect();
        let rank = names
            .iter()
            .position(|name| query.expect.iter().any(|expected| expected == name))
            .map(|position| position + 1);
        by_kind
            .entry(query.kind.as_str())
            .or_default()
            .add(rank, names.is_empty());
        all.add(rank, names.is_empty());
        if misses && rank.is_none_or(|rank| rank > 3) {
            let shown = rank.map_or_else(|| "-".to_owned(), |rank| rank.to_string());
            println!(
                "  miss [{}] rank {shown} of {:?}: {:?} → {:?}",
                query.kind,
                query.expect,
                query.text,
                &names[..names.len().min(3)]
            );
        }
    }
    times.sort();
    println!("\n{file}\n");
    println!("| kind | queries | recall@3 | MRR | empty |");
    println!("|---|---|---|---|---|");
    for (kind, tally) in &by_kind {
        println!("{}", tally.row(kind));
    }
    println!("{}", all.row("all"));
    if let Some(median) = times.get(times.len() / 2) {
        println!(
            "\nsearch p50 over these queries: {:.1} µs",
            median.as_secs_f64() * 1e6
        );
    }
}
