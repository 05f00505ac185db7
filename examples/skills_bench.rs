//! Measures the skills library at scale against DESIGN.md's budgets: it writes N synthetic skills
//! (default 10,000; about 1 KB of body each) into a temporary root, then reports
//! - in process: the catalog scan cold (no `index.json`) and warm (`index.json` reused), the
//!   search index build, `SkillSearch` latency (p50/p99) and a cached `SkillLoad` body;
//! - over stdio against the release binary: start → `initialize` answered, cold and warm, and
//!   `SkillSearch` / `SkillLoad` round trips.
//!
//! ```sh
//! cargo build --release && cargo run --release --example skills_bench -- [SKILLS] [SERVER]
//! ```
//! `SERVER` defaults to `target/release/synapse-mcp` beside this example.
#![allow(
    clippy::print_stdout,
    clippy::cast_precision_loss,
    reason = "an example reports its figures on stdout, as approximate milliseconds"
)]

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use synapse_mcp::groups::skills::skill_content;
use synapse_mcp::skills::Library;
use synapse_mcp::skills::discover::{Root, RootKind};

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

fn word(seed: usize, position: usize) -> &'static str {
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

fn generate(root: &Path, count: usize) -> anyhow::Result<()> {
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

fn percentile(samples: &mut [Duration], per_mille: usize) -> Duration {
    samples.sort();
    samples[(samples.len() - 1) * per_mille / 1000]
}

fn milliseconds(duration: Duration) -> String {
    format!("{:.2} ms", duration.as_secs_f64() * 1000.0)
}

fn microseconds(duration: Duration) -> String {
    format!("{:.1} µs", duration.as_secs_f64() * 1_000_000.0)
}

const QUERIES: [&str; 8] = [
    "merge pdf files",
    "clean csv data",
    "kubernetes deploy",
    "database migrations",
    "translate documents",
    "stock forecast analysis",
    "mrege pdfs",
    "transcribe audio meeting",
];

fn in_process(root: &Path) -> anyhow::Result<()> {
    let roots = [Root {
        kind: RootKind::Configured,
        path: root.to_owned(),
    }];
    if let Err(error) = std::fs::remove_file(root.join("index.json")) {
        println!("(no index.json to remove: {error})");
    }
    let started = Instant::now();
    let library = Library::load(&roots);
    let cold = started.elapsed();
    let started = Instant::now();
    let library_warm = Library::load(&roots);
    let warm = started.elapsed();
    anyhow::ensure!(
        library.skills().len() == library_warm.skills().len(),
        "warm and cold catalogs differ"
    );
    let started = Instant::now();
    library.warm_up();
    println!(
        "catalog of {} skills: cold {} · warm (index.json) {} · search index build {}",
        library.skills().len(),
        milliseconds(cold),
        milliseconds(warm),
        milliseconds(started.elapsed())
    );
    let mut samples = Vec::new();
    for round in 0..50 {
        for query in QUERIES {
            let started = Instant::now();
            let hits = library.search(query, &[], 5);
            samples.push(started.elapsed());
            anyhow::ensure!(round > 0 || !hits.is_empty(), "no hits for {query}");
        }
    }
    println!(
        "SkillSearch in process: p50 {} · p99 {} (budget p50 ≤ 2 ms)",
        microseconds(percentile(&mut samples, 500)),
        microseconds(percentile(&mut samples, 990))
    );
    let skill = &library.skills()[42];
    let mut samples = Vec::new();
    for _ in 0..2000 {
        let started = Instant::now();
        let body = skill.body()?;
        std::hint::black_box(skill_content(skill, &body));
        samples.push(started.elapsed());
    }
    println!(
        "SkillLoad body (cached) in process: p50 {}",
        microseconds(percentile(&mut samples, 500))
    );
    Ok(())
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;

struct Session {
    child: Child,
    output: BufReader<std::process::ChildStdout>,
}

impl Session {
    /// Starts the server; returns the time to the `initialize` answer and to the first answer
    /// that needs the catalog (`prompts/list`, one prompt per skill).
    fn start(server: &Path, root: &Path) -> anyhow::Result<(Self, Duration, Duration)> {
        let started = Instant::now();
        let mut child = Command::new(server)
            .args([
                "--skills",
                &root.display().to_string(),
                "--store",
                "memory",
                "--log-level",
                "error",
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()?;
        let output = BufReader::new(
            child
                .stdout
                .take()
                .ok_or_else(|| anyhow::anyhow!("no stdout"))?,
        );
        let mut session = Self { child, output };
        session.request(INITIALIZE)?;
        let initialized = started.elapsed();
        session.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)?;
        session.request(r#"{"jsonrpc":"2.0","id":1,"method":"prompts/list"}"#)?;
        Ok((session, initialized, started.elapsed()))
    }

    /// A memory figure of the server from `/proc` (Linux): `VmRSS:` resident now, `VmHWM:` its
    /// peak.
    fn status_mebibytes(&self, field: &str) -> Option<f64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        let line = status.lines().find(|line| line.starts_with(field))?;
        let kibibytes: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kibibytes / 1024.0)
    }

    fn send(&mut self, line: &str) -> anyhow::Result<()> {
        let input = self
            .child
            .stdin
            .as_mut()
            .ok_or_else(|| anyhow::anyhow!("no stdin"))?;
        input.write_all(line.as_bytes())?;
        input.write_all(b"\n")?;
        input.flush()?;
        Ok(())
    }

    fn request(&mut self, line: &str) -> anyhow::Result<Duration> {
        let started = Instant::now();
        self.answer(line)?;
        Ok(started.elapsed())
    }

    /// Sends a request and returns the line that answers it.
    fn answer(&mut self, line: &str) -> anyhow::Result<String> {
        self.send(line)?;
        let mut answer = String::new();
        loop {
            answer.clear();
            anyhow::ensure!(
                self.output.read_line(&mut answer)? > 0,
                "the server closed stdout"
            );
            if answer.contains("\"id\"") {
                anyhow::ensure!(answer.contains("\"result\""), "unexpected answer: {answer}");
                return Ok(answer);
            }
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Err(error) = self.child.kill() {
            println!("(cannot stop the server: {error})");
        }
        self.child.wait().ok();
    }
}

fn over_stdio(server: &Path, root: &Path, count: usize) -> anyhow::Result<()> {
    std::fs::remove_file(root.join("index.json"))?;
    let (_, cold, cold_ready) = Session::start(server, root)?;
    let (mut session, warm, warm_ready) = Session::start(server, root)?;
    println!(
        "start → initialize answered, {count} skills: cold {} (budget ≤ 150 ms) · warm {} (budget ≤ 50 ms)",
        milliseconds(cold),
        milliseconds(warm)
    );
    println!(
        "start → catalog served (first prompts/list answered): cold {} · warm {}",
        milliseconds(cold_ready),
        milliseconds(warm_ready)
    );
    let call = |id: usize, tool: &str, arguments: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{arguments}}}}}"#
        )
    };
    let mut searches = Vec::new();
    for round in 0..40 {
        for (index, query) in QUERIES.iter().enumerate() {
            searches.push(session.request(&call(
                1000 + round * 10 + index,
                "SkillSearch",
                &format!(r#"{{"query":"{query}"}}"#),
            ))?);
        }
    }
    let mut loads = Vec::new();
    let load = format!(
        r#"{{"name":"{}-{}-0","force":true}}"#,
        word(0, 1),
        word(0, 2)
    );
    for round in 0..400 {
        loads.push(session.request(&call(10_000 + round, "SkillLoad", &load))?);
    }
    println!(
        "over stdio: SkillSearch p50 {} · SkillLoad (cached body) p50 {} (budget ≤ 60 µs)",
        microseconds(percentile(&mut searches, 500)),
        microseconds(percentile(&mut loads, 500))
    );
    report_memory(&session, "after the searches and loads", count);
    // The body index is built in the background after start: wait for it, then measure again,
    // which is what a long-running server holds.
    let started = Instant::now();
    let mut id = 20_000;
    loop {
        id += 1;
        let answer = session.answer(&call(id, "SkillSearch", r#"{"query":"pdf"}"#))?;
        if !answer.contains("metadata_only") {
            break;
        }
        anyhow::ensure!(
            started.elapsed() < Duration::from_mins(2),
            "the body index was never completed"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    println!(
        "body index ready {} after the searches began",
        milliseconds(started.elapsed())
    );
    report_memory(&session, "with the body index built", count);
    Ok(())
}

fn report_memory(session: &Session, when: &str, count: usize) {
    match (
        session.status_mebibytes("VmRSS:"),
        session.status_mebibytes("VmHWM:"),
    ) {
        (Some(resident), Some(peak)) => println!(
            "resident memory serving {count} skills ({when}): {resident:.1} MiB, peak {peak:.1} MiB (budget ≤ 15 MiB at 200 skills, ≤ 40 MiB at 10,000)"
        ),
        _ => println!("(resident memory is read from /proc, which this system lacks)"),
    }
}

fn main() -> anyhow::Result<()> {
    let mut arguments = std::env::args().skip(1);
    let count: usize = arguments.next().map_or(Ok(10_000), |text| text.parse())?;
    let server = arguments.next().map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/synapse-mcp"),
        PathBuf::from,
    );
    let directory = tempfile::tempdir()?;
    let root = directory.path().join("skills");
    let started = Instant::now();
    generate(&root, count)?;
    println!(
        "wrote {count} skills in {}",
        milliseconds(started.elapsed())
    );
    in_process(&root)?;
    if server.is_file() {
        over_stdio(&server, &root, count)?;
    } else {
        println!(
            "({} not built: run `cargo build --release` for the stdio figures)",
            server.display()
        );
    }
    Ok(())
}
