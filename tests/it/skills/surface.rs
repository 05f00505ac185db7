//! The skills on the MCP surface: SEP-2640 `skills/list` and `skills/get` (verbatim frontmatter,
//! digests checked against a sha256 computed here), `skill://` resources, directory reads,
//! completion, and the `skill` prompt.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use pretty_assertions::assert_eq;
use rmcp::model::{
    ArgumentInfo, CompleteRequestParams, GetPromptRequestParams, GetSkillRequestParams,
    ReadResourceDirectoryRequestParams, ReadResourceRequestParams, Reference, ResourceContents,
    SkillResources,
};
use serde_json::json;
use sha2::{Digest, Sha256};

use super::{Fixture, USABLE};

pub(super) fn sha256(bytes: &[u8]) -> String {
    let mut hex = String::new();
    for byte in Sha256::digest(bytes) {
        write!(hex, "{byte:02x}").unwrap();
    }
    format!("sha256:{hex}")
}

#[tokio::test]
async fn skills_list_serves_verbatim_frontmatter_and_true_digests() {
    let fixture = Fixture::new();
    let client = fixture.client().await;
    let listed = client.list_skills(None).await.unwrap().skills;
    assert_eq!(listed.len(), USABLE.len());
    let pdf = listed
        .iter()
        .find(|skill| skill.name() == "pdf-tools")
        .unwrap();
    assert_eq!(pdf.uri, "skill://pdf-tools/SKILL.md");
    assert_eq!(
        serde_json::to_value(&pdf.frontmatter).unwrap(),
        json!({"name": "pdf-tools", "description": "Merge, split and rotate PDF files. Use when the user wants to combine PDFs, extract pages or fix page order.",
               "license": "MIT", "allowed-tools": "Read Bash", "tags": ["pdf", "documents"], "version": "1.2.0",
               "author": "Synapse Tests", "metadata": {"owner": "docs-team"}})
    );
    let SkillResources::Files(files) = &pdf.resources else {
        panic!("a manifest")
    };
    let folder = fixture.root().join("pdf-tools");
    let mut expected = Vec::new();
    for path in ["SKILL.md", "references/REFERENCE.md", "scripts/merge.py"] {
        let bytes = std::fs::read(folder.join(path)).unwrap();
        expected.push((
            format!("skill://pdf-tools/{path}"),
            sha256(&bytes),
            bytes.len() as u64,
        ));
    }
    let actual: Vec<(String, String, u64)> = files
        .iter()
        .map(|file| (file.uri.clone(), file.digest.clone(), file.size))
        .collect();
    assert_eq!(actual, expected);
    let got = client
        .get_skill(GetSkillRequestParams::new(
            "skill://lowercase-file/SKILL.md",
        ))
        .await
        .unwrap();
    assert_eq!(got.skill.name(), "lowercase-file");
    let unknown = client
        .get_skill(GetSkillRequestParams::new("skill://nope/SKILL.md"))
        .await
        .unwrap_err();
    assert!(
        unknown.to_string().contains("-32602") || format!("{unknown:?}").contains("-32602"),
        "{unknown:?}"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn skill_files_are_resources_with_directories_and_completion() {
    let fixture = Fixture::new();
    let client = fixture.client().await;
    let read = |uri: &str| client.read_resource(ReadResourceRequestParams::new(uri));
    let skill_md = read("skill://pdf-tools/SKILL.md").await.unwrap();
    let ResourceContents::TextResourceContents {
        mime_type, text, ..
    } = &skill_md.contents[0]
    else {
        panic!("text")
    };
    assert_eq!(mime_type.as_deref(), Some("text/markdown"));
    assert!(text.starts_with("---\nname: pdf-tools\n"));
    assert!(
        read("skill://pdf-tools/references/REFERENCE.md")
            .await
            .is_ok()
    );
    for bad in [
        "skill://pdf-tools/..%2F..%2Fetc%2Fpasswd",
        "skill://pdf-tools/leak/secret.txt",
        "skill://nope/SKILL.md",
        "skill://pdf-tools/missing.md",
    ] {
        let error = read(bad).await.unwrap_err();
        assert!(format!("{error:?}").contains("-32002"), "{bad}: {error:?}");
    }
    let children = client
        .read_resource_directory(ReadResourceDirectoryRequestParams::new("skill://pdf-tools"))
        .await
        .unwrap();
    let listed: Vec<(String, Option<String>)> = children
        .resources
        .iter()
        .map(|child| (child.uri.clone(), child.mime_type.clone()))
        .collect();
    assert_eq!(
        listed,
        [
            (
                "skill://pdf-tools/SKILL.md".to_owned(),
                Some("text/markdown".to_owned())
            ),
            (
                "skill://pdf-tools/references".to_owned(),
                Some("inode/directory".to_owned())
            ),
            (
                "skill://pdf-tools/scripts".to_owned(),
                Some("inode/directory".to_owned())
            ),
        ]
    );
    let leak = client
        .read_resource_directory(ReadResourceDirectoryRequestParams::new(
            "skill://pdf-tools/leak",
        ))
        .await;
    assert!(
        leak.is_err(),
        "a symlinked folder outside the skill is not listed"
    );
    let templates = client.list_all_resource_templates().await.unwrap();
    assert!(
        templates
            .iter()
            .any(|template| template.uri_template == "skill://{name}/SKILL.md")
    );
    let completion = client
        .complete(CompleteRequestParams::new(
            Reference::for_resource("skill://{name}/SKILL.md"),
            ArgumentInfo::new("name", "pd"),
        ))
        .await
        .unwrap();
    assert_eq!(completion.completion.values, ["pdf-tools"]);
    let mut context = rmcp::model::CompletionContext::new();
    context.arguments = Some(std::collections::HashMap::from([(
        "name".to_owned(),
        "pdf-tools".to_owned(),
    )]));
    let mut request = CompleteRequestParams::new(
        Reference::for_resource("skill://{name}/{path}"),
        ArgumentInfo::new("path", "ref"),
    );
    request.context = Some(context);
    let paths = client.complete(request).await.unwrap();
    assert_eq!(paths.completion.values, ["references/REFERENCE.md"]);
    let references = client
        .read_resource_directory(ReadResourceDirectoryRequestParams::new(
            "skill://pdf-tools/references",
        ))
        .await
        .unwrap();
    let uris: Vec<&str> = references
        .resources
        .iter()
        .map(|child| child.uri.as_str())
        .collect();
    assert_eq!(uris, ["skill://pdf-tools/references/REFERENCE.md"]);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_skill_is_a_prompt_by_name() {
    let fixture = Fixture::new();
    let client = fixture.client().await;
    let prompts = client.list_all_prompts().await.unwrap();
    let names: BTreeSet<String> = prompts.iter().map(|prompt| prompt.name.clone()).collect();
    assert_eq!(
        names,
        BTreeSet::from(["skill", "state-functions", "tool-rules"].map(str::to_owned))
    );
    let mut request = GetPromptRequestParams::new("skill");
    request.arguments = Some(serde_json::from_value(json!({"name": "csv-cleaner"})).unwrap());
    let prompt = client.get_prompt(request).await.unwrap();
    let message = serde_json::to_value(&prompt.messages[0]).unwrap();
    assert_eq!(message["role"], "user");
    assert!(
        message["content"]["text"]
            .as_str()
            .unwrap()
            .contains("# CSV Cleaner"),
        "{message}"
    );
    // Unlisted by default, a `skill-{name}` prompt is still answered.
    let legacy = client
        .get_prompt(GetPromptRequestParams::new("skill-csv-cleaner"))
        .await
        .unwrap();
    assert_eq!(legacy.messages, prompt.messages);
    client.cancel().await.unwrap();
}
