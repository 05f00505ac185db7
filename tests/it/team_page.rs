//! docs/http.md's "Run it for a team" cannot rot: its commands run here as written — `synapse-mcp`
//! from the build, on a real PostgreSQL database, `https://mcp.example.com` replaced by the
//! server's loopback address — and each answer is checked: the token, the server starting on
//! PostgreSQL, `/readyz`, a `curl` initialize, and MCP clients connecting with the URL and the
//! header of the Claude Code command and of the VS Code file.

use std::collections::HashMap;
use std::process::Stdio;

use rmcp::ServiceExt as _;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt as _, BufReader};

use crate::common::{Elicitation, TestClient, binary, manifest, quiet_home};
use crate::http::http_client;

/// The public address the page uses, replaced by the test server's.
const PUBLIC: &str = "https://mcp.example.com";

/// The page's team section: its `sh` commands (continuation lines joined) and its JSON blocks.
struct Section {
    commands: Vec<String>,
    json: Vec<Value>,
}

fn team_section() -> Section {
    let page = std::fs::read_to_string(manifest("docs/http.md")).unwrap();
    let start = page.find("\n## Run it for a team\n").unwrap();
    let rest = &page[start + 1..];
    let section = &rest[..rest[3..].find("\n## ").map_or(rest.len(), |end| end + 3)];
    let mut commands = Vec::new();
    let mut json = Vec::new();
    let mut blocks = section.split("```").skip(1).step_by(2);
    for block in blocks.by_ref() {
        let (language, body) = block.split_once('\n').unwrap();
        match language {
            "sh" => commands.extend(
                body.replace("\\\n", " ")
                    .lines()
                    .map(str::trim)
                    .filter(|line| !line.is_empty() && !line.starts_with('#'))
                    .map(str::to_owned),
            ),
            "json" => json.push(serde_json::from_str(body).unwrap()),
            other => panic!("a `{other}` block in the team section"),
        }
    }
    Section { commands, json }
}

/// The one command that starts with `start`.
fn command<'section>(section: &'section Section, start: &str) -> &'section str {
    let mut found = section
        .commands
        .iter()
        .filter(|command| command.starts_with(start));
    let command = found
        .next()
        .unwrap_or_else(|| panic!("no `{start}…` command"));
    assert!(found.next().is_none(), "two `{start}…` commands");
    command
}

/// Runs a command of the page under `sh` in `folder`, `synapse-mcp` being the binary under test.
fn shell(folder: &std::path::Path, line: &str, token: &str) -> std::process::Command {
    let bin = std::path::Path::new(binary()).parent().unwrap();
    let path = std::env::join_paths(
        std::iter::once(bin.to_owned())
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap();
    let mut command = std::process::Command::new("sh");
    command
        .args(["-c", line])
        .current_dir(folder)
        .env("PATH", path)
        .env("HOME", quiet_home())
        .env("TOKEN", token);
    command
}

fn run(folder: &std::path::Path, line: &str, token: &str) -> String {
    let output = shell(folder, line, token).output().unwrap();
    assert!(
        output.status.success(),
        "`{line}` failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// An MCP client on `url` sending `authorization` as its `Authorization` header, as the hosts
/// configured by the page do; it lists the tools.
async fn connect(url: &str, authorization: &str) -> usize {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url);
    config.custom_headers = HashMap::from([(
        reqwest::header::AUTHORIZATION,
        reqwest::header::HeaderValue::from_str(authorization).unwrap(),
    )]);
    let transport = StreamableHttpClientTransport::with_client(http_client(), config);
    let client = TestClient::new(Elicitation::Unsupported)
        .serve(transport)
        .await
        .expect("initialize");
    let tools = client.list_all_tools().await.unwrap();
    client.cancel().await.unwrap();
    tools.len()
}

#[tokio::test]
async fn the_team_commands_of_the_page_run() {
    let section = team_section();
    let Some(database) = crate::postgres_server::database() else {
        return;
    };
    let folder = tempfile::tempdir().unwrap();

    let token = run(
        folder.path(),
        command(&section, "synapse-mcp token add "),
        "",
    );
    let token = token.trim().to_owned();
    assert!(
        token.starts_with("syn_") && !token.contains('\n'),
        "{token}"
    );

    let serve = command(&section, "synapse-mcp serve ");
    let (_, after) = serve.split_once("--store ").unwrap();
    let store = after.split_whitespace().next().unwrap();
    assert!(store.starts_with("postgres://"), "{serve}");
    let serve = serve
        .replace(store, &database)
        .replace("0.0.0.0:8080", "127.0.0.1:0")
        .replace("127.0.0.1:9464", "127.0.0.1:0");
    // `exec`: the server replaces the shell, so dropping the child ends the server itself (a
    // shell left the server running after every test run, holding the runner's output open).
    let mut server =
        tokio::process::Command::from(shell(folder.path(), &format!("exec {serve}"), ""));
    let mut server = server
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(server.stderr.take().unwrap()).lines();
    let address = loop {
        let line = lines
            .next_line()
            .await
            .unwrap()
            .expect("the server says where it listens");
        if let Some((_, rest)) = line.split_once("ready on http://") {
            break format!("http://{}", rest.split('/').next().unwrap());
        }
    };
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    let local = |text: &str| text.replace(PUBLIC, &address);

    let curls: Vec<&String> = section
        .commands
        .iter()
        .filter(|command| command.starts_with("curl "))
        .collect();
    assert_eq!(curls.len(), 2, "{curls:?}");
    let folder_path = folder.path().to_owned();
    let answers: Vec<String> = curls
        .iter()
        .map(|line| run(&folder_path, &local(line), &token))
        .collect();
    assert_eq!(answers[0], "ready\n");
    assert!(
        answers[1].contains(r#""serverInfo":{"name":"synapse-mcp""#),
        "{}",
        answers[1]
    );

    // Claude Code: `claude mcp add --transport http NAME URL --header "Authorization: …"`.
    let claude = command(&section, "claude mcp add ");
    let words: Vec<&str> = claude.split_whitespace().collect();
    assert_eq!(&words[..5], ["claude", "mcp", "add", "--transport", "http"]);
    let url = local(words[6]);
    let (_, header) = claude.split_once("--header \"Authorization: ").unwrap();
    let header = header.trim_end_matches('"').replace("$TOKEN", &token);
    assert!(connect(&url, &header).await > 0);

    // VS Code: the `http` server of `mcp.json`, its input filled with the token.
    let [vscode] = &section.json[..] else {
        panic!("one JSON block: {:?}", section.json)
    };
    let server_config = &vscode["servers"]["synapse"];
    assert_eq!(server_config["type"], "http");
    let input = vscode["inputs"][0]["id"].as_str().unwrap();
    let header = server_config["headers"]["Authorization"]
        .as_str()
        .unwrap()
        .replace(&format!("${{input:{input}}}"), &token);
    let url = local(server_config["url"].as_str().unwrap());
    assert!(connect(&url, &header).await > 0);
    server.start_kill().unwrap();
}
