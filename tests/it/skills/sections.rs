//! Long skills over stdio: `incident-response` (tests/fixtures/skills-long), a runbook of some
//! 21,000 characters with nested, repeated and setext headings and `#` comments in its code
//! fences, served as its opening and table of sections, then one section a call; its reference
//! file read by section; a search hit naming the section that matches.

use pretty_assertions::assert_eq;
use serde_json::json;

use super::{Fixture, copy_tree, fixtures};
use crate::common::{
    Client, Elicitation, TestClient, assert_golden_text, call, is_error, spawn_binary, text,
};

/// The fixture's skills and the long one, with extra arguments.
async fn client(fixture: &Fixture, extra: &[&str]) -> Client {
    let long = fixture.root().with_file_name("skills-long");
    copy_tree(&fixtures().join("skills-long"), &long);
    let mut args = fixture.args();
    args.extend(["--skills".to_owned(), long.display().to_string()]);
    args.extend(extra.iter().map(|arg| (*arg).to_owned()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    spawn_binary(&args, TestClient::new(Elicitation::Unsupported)).await
}

fn skill_text() -> String {
    let path = fixtures().join("skills-long/incident-response/SKILL.md");
    std::fs::read_to_string(path).unwrap()
}

/// The characters from the line `from` up to the line `to` (or the end) of the skill file.
fn characters_between(from: &str, to: Option<&str>) -> usize {
    let text = skill_text();
    let start = text.find(from).unwrap();
    let end = to.map_or(text.len(), |to| start + text[start..].find(to).unwrap());
    text[start..end].chars().count()
}

async fn load(client: &Client, arguments: serde_json::Value) -> String {
    let result = call(client, "SkillLoad", arguments).await;
    assert!(!is_error(&result), "{}", text(&result));
    text(&result)
}

/// The table of contents' lines without their sizes: indentation, id and heading.
fn contents(answer: &str) -> Vec<String> {
    let start = answer.find("<sections>\n").unwrap() + "<sections>\n".len();
    let end = answer.find("</sections>").unwrap();
    answer[start..end]
        .lines()
        .map(|line| line.rsplit_once(" (").unwrap().0.to_owned())
        .collect()
}

/// The long skill's table of contents, without the sizes.
const CONTENTS: [&str; 51] = [
    "- incident-response: Incident response",
    "  - when-to-use-this-skill: When to use this skill",
    "  - severity-levels: Severity levels",
    "    - sev1: SEV1",
    "      - example: Example",
    "    - sev2: SEV2",
    "      - example-1: Example",
    "    - sev3: SEV3",
    "      - example-2: Example",
    "  - first-five-minutes: First five minutes",
    "    - checklist: Checklist",
    "  - gathering-evidence: Gathering evidence",
    "    - logs: Logs",
    "    - metrics: Metrics",
    "    - traces: Traces",
    "    - profiles: Profiles",
    "  - mitigation-playbooks: Mitigation playbooks",
    "    - roll-back-a-deploy: Roll back a deploy",
    "    - turn-off-a-feature-flag: Turn off a feature flag",
    "    - fail-over-a-database: Fail over a database",
    "    - shed-load: Shed load",
    "    - rotate-a-leaked-credential: Rotate a leaked credential",
    "  - communication: Communication",
    "    - status-page-updates: Status page updates",
    "    - stakeholder-updates: Stakeholder updates",
    "    - checklist-1: Checklist",
    "  - handing-over: Handing over",
    "  - postmortem: Postmortem",
    "    - timeline: Timeline",
    "    - root-cause-analysis: Root cause analysis",
    "    - action-items: Action items",
    "  - working-with-other-teams: Working with other teams",
    "    - paging-another-team: Paging another team",
    "    - roles-in-a-large-incident: Roles in a large incident",
    "      - example-3: Example",
    "  - measuring-the-response: Measuring the response",
    "  - special-cases: Special cases",
    "    - data-loss: Data loss",
    "      - example-4: Example",
    "    - security-incident: Security incident",
    "      - example-5: Example",
    "    - third-party-outage: Third-party outage",
    "    - incidents-during-a-release-freeze: Incidents during a release freeze",
    "    - out-of-hours-and-holidays: Out of hours and holidays",
    "  - tools-and-access: Tools and access",
    "    - access-you-need-before-your-shift: Access you need before your shift",
    "    - dashboards: Dashboards",
    "      - example-6: Example",
    "    - runbook-maintenance: Runbook maintenance",
    "    - checklist-2: Checklist",
    // A setext heading; the `# Stop the bleeding…` comments in the code fences are none.
    "  - appendix-glossary: Appendix: glossary",
];

#[tokio::test]
async fn a_long_skill_comes_as_its_opening_and_a_table_of_sections() {
    let fixture = Fixture::new();
    let client = client(&fixture, &[]).await;
    let overview = load(&client, json!({"name": "incident-response"})).await;
    assert_golden_text("skills/sections/overview.txt", &overview);
    assert_eq!(contents(&overview), CONTENTS);
    assert!(overview.chars().count() < 6_000, "{}", overview.len());
    assert_eq!(
        load(&client, json!({"name": "incident-response"})).await,
        overview,
        "the same ids on every load"
    );

    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_section_comes_with_its_subsections_by_a_stable_id() {
    let fixture = Fixture::new();
    let client = client(&fixture, &[]).await;
    let failover = load(
        &client,
        json!({"name": "incident-response", "section": "fail-over-a-database"}),
    )
    .await;
    assert_golden_text("skills/sections/fail-over-a-database.txt", &failover);
    let severity = load(
        &client,
        json!({"name": "incident-response", "section": "severity-levels"}),
    )
    .await;
    let sizes = characters_between("## Severity levels", Some("## First five minutes"));
    assert_golden_text("skills/sections/severity-levels.txt", &severity);
    assert!(
        severity.contains(&format!(
            "[Section `severity-levels` of the instructions, {sizes} of their 21212 characters;"
        )),
        "the size is counted from the file: {severity}"
    );
    let second_example = load(
        &client,
        json!({"name": "incident-response", "section": "example-1"}),
    )
    .await;
    assert_golden_text("skills/sections/example-1.txt", &second_example);

    let fake = call(
        &client,
        "SkillLoad",
        json!({"name": "incident-response", "section": "stop-the-bleeding-first-then-read"}),
    )
    .await;
    assert!(is_error(&fake));
    assert_golden_text("skills/sections/no-such-section.txt", &text(&fake));
    // A short skill is still served whole, and a section of it alone when asked for.
    let short = load(&client, json!({"name": "pdf-tools"})).await;
    assert_golden_text("skills/sections/short-skill.txt", &short);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn reference_files_are_read_by_section_and_search_names_the_section() {
    let fixture = Fixture::new();
    let client = client(&fixture, &[]).await;
    let read = |arguments| call(&client, "SkillReadFile", arguments);
    let replication = text(
        &read(json!({"name": "incident-response", "path": "references/commands.md", "section": "replication"}))
            .await,
    );
    let expected_text = {
        let file = std::fs::read_to_string(
            fixtures().join("skills-long/incident-response/references/commands.md"),
        )
        .unwrap();
        let start = file.find("### Replication").unwrap();
        let end = file.find("### Locks").unwrap();
        file[start..end].to_owned()
    };
    let count = expected_text.chars().count();
    assert_eq!(
        replication,
        format!(
            "[Section `replication` of file `references/commands.md` of skill `incident-response`: characters 0–{count} of {count}; nothing more remains]\n{expected_text}"
        )
    );
    let window = text(
        &read(
            json!({"name": "incident-response", "path": "references/commands.md",
                     "section": "replication", "start": 4, "length": 11}),
        )
        .await,
    );
    assert_golden_text("skills/sections/file-section-window.txt", &window);
    let in_skill_md = text(
        &read(json!({"name": "incident-response", "path": "SKILL.md", "section": "shed-load"}))
            .await,
    );
    assert_golden_text("skills/sections/skill-md-section.txt", &in_skill_md);
    let script =
        read(json!({"name": "pdf-tools", "path": "scripts/merge.py", "section": "x"})).await;
    assert!(is_error(&script));
    assert_golden_text("skills/sections/script-has-no-sections.txt", &text(&script));

    let result = call(
        &client,
        "SkillSearch",
        json!({"query": "promote a replica when the primary database fails over"}),
    )
    .await;
    let first = &result.structured_content.clone().unwrap()["matched_skills"][0];
    assert_eq!(
        (first["name"].as_str(), first["section"].as_str()),
        (Some("incident-response"), Some("fail-over-a-database"))
    );
    assert_golden_text(
        "skills/sections/search-names-the-section.txt",
        &text(&result),
    );
    let short = call(&client, "SkillSearch", json!({"query": "merge pdf files"})).await;
    let first = &short.structured_content.unwrap()["matched_skills"][0];
    assert_eq!(
        (first["name"].as_str(), first.get("section")),
        (Some("pdf-tools"), None),
        "a short skill is loaded whole, so its hit names no section"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn the_body_limit_is_configurable_and_applies_to_markdown_files_read_whole() {
    let fixture = Fixture::new();
    let client = client(&fixture, &["--skill-body-limit", "1000"]).await;
    let overview = text(
        &call(
            &client,
            "SkillReadFile",
            json!({"name": "incident-response", "path": "references/commands.md"}),
        )
        .await,
    );
    assert_golden_text("skills/sections/file-overview.txt", &overview);
    assert_eq!(
        contents(&overview),
        [
            "- commands-for-incidents: Commands for incidents",
            "  - kubernetes: Kubernetes",
            "    - pods: Pods",
            "    - deploys: Deploys",
            "  - postgresql: PostgreSQL",
            "    - replication: Replication",
            "    - locks: Locks",
            "  - redis: Redis",
            "    - memory: Memory",
            "    - slow-commands: Slow commands",
        ]
    );
    let paged = text(
        &call(
            &client,
            "SkillReadFile",
            json!({"name": "incident-response", "path": "references/commands.md", "start": 0}),
        )
        .await,
    );
    assert_golden_text("skills/sections/file-paged.txt", &paged);
    let csv = text(&call(&client, "SkillLoad", json!({"name": "csv-cleaner"})).await);
    assert_golden_text("skills/sections/short-body.txt", &csv);
    client.cancel().await.unwrap();
}
