//! Other MCP servers as tool groups, over stdio against the real binary, with a real upstream:
//! `examples/upstream_server.rs`, started by synapse-mcp from the `[[upstream]]` table of the
//! config file. Its tools pass the whole pipeline (truncation with the hint, `$VAR_REF`,
//! `RunPlan`, `_outputPath`, approvals), its progress, cancellation, elicitation and sampling
//! pass through, it is restarted after it dies, its re-listing and changes to the config file
//! reach the client with one `tools/list_changed` each.

use std::path::PathBuf;
use std::time::Duration;

use pretty_assertions::assert_eq;
use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};

use crate::common::{
    Client, Elicitation, TestClient, assert_golden_text, binary, call, error_part, example,
    is_error, quiet_home, spawn_binary, text, tool_names,
};

/// An `[[upstream]]` table that starts the test server, with more keys.
fn upstream(name: &str, more: &str) -> String {
    let command = example("upstream_server").display().to_string();
    format!("[[upstream]]\nname = \"{name}\"\ncommand = {command:?}\n{more}\n")
}

/// A config file in a folder of its own.
struct Setup {
    directory: tempfile::TempDir,
}

impl Setup {
    fn new(config: &str) -> Self {
        let setup = Self {
            directory: tempfile::tempdir().unwrap(),
        };
        setup.write(config);
        setup
    }

    /// The test server, its tools auto-approved, with the environment variable `variable`
    /// naming `file` in the setup's folder; gives the file's path.
    fn naming_a_file(variable: &str, file: &str) -> (Self, PathBuf) {
        let setup = Self::new("");
        let path = setup.path(file);
        let env = format!(
            "execution = \"auto\"\nenv = {{ {variable} = {:?} }}",
            path.display().to_string()
        );
        setup.write(&upstream("test", &env));
        (setup, path)
    }

    fn config(&self) -> PathBuf {
        self.directory.path().join("config.toml")
    }

    fn path(&self, name: &str) -> PathBuf {
        self.directory.path().join(name)
    }

    /// Replaces the config file at once, as editors save.
    fn write(&self, config: &str) {
        let staged = self.path("config.toml.new");
        std::fs::write(&staged, config).unwrap();
        std::fs::rename(staged, self.config()).unwrap();
    }

    async fn start(&self, client: TestClient) -> Client {
        let config = self.config();
        spawn_binary(&["--config", config.to_str().unwrap()], client).await
    }
}

fn approving() -> TestClient {
    TestClient::new(Elicitation::Accept(
        json!({"approve": true, "answer": "blue"}),
    ))
}

fn ok(result: &rmcp::model::CallToolResult) -> String {
    assert!(!is_error(result), "{}", text(result));
    text(result)
}

/// Waits, a tenth of a second at a time for up to `seconds`, until `done` holds.
async fn eventually(seconds: u64, what: &str, mut done: impl AsyncFnMut() -> bool) {
    for _ in 0..seconds * 10 {
        if done().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what} did not happen within {seconds} s");
}

#[tokio::test]
async fn an_upstream_result_passes_the_pipeline_truncation_references_plans_and_output_paths() {
    let setup = Setup::new(&upstream("test", "execution = \"auto\""));
    let client = setup.start(TestClient::new(Elicitation::Unsupported)).await;
    let names = tool_names(&client).await;
    for expected in [
        "test__echo",
        "test__big",
        "test__dotted_name",
        "test__loose",
    ] {
        assert!(names.contains(&expected.to_owned()), "{names:?}");
    }
    assert!(
        !names.iter().any(|name| name.contains("not-an-object")),
        "a tool whose schema clients refuse is not served: {names:?}"
    );

    let big = ok(&call(&client, "test__big", json!({"size": 30_000})).await);
    assert!(big.starts_with("line 00000\n"), "{big}");
    let variable = big
        .split_once("[Output truncated: the full result (30000 characters) is in variable `")
        .and_then(|(_, rest)| rest.split_once('`'))
        .map_or_else(
            || panic!("no truncation hint: {}", &big[big.len() - 600..]),
            |(name, _)| name.to_owned(),
        );
    assert!(variable.starts_with("test__big_") && variable.ends_with("_result"));

    let reference = format!("$VAR_REF{{{{{variable}:11:10}}}}");
    let echoed = call(&client, "test__echo", json!({"text": reference})).await;
    assert_eq!(ok(&echoed), "line 00001");

    let plan = json!({"steps": [
        {"_id": "big", "_tool": "test__big", "size": 22},
        {"_id": "echo", "_tool": "test__echo", "text": "†steps.big", "_outputPath": "†state.echoed"}
    ]});
    let ran = call(&client, "RunPlan", plan).await;
    let report = ran
        .structured_content
        .clone()
        .expect("RunPlan is structured");
    assert_eq!(report["ok"], true, "{report}");
    let state = ok(&call(&client, "ReadState", json!({"path": "echoed"})).await);
    assert!(state.ends_with("\"line 00000\\nline 00001\\n\""), "{state}");

    let listed = call(&client, "ToolGroups", json!({})).await;
    let groups = listed.structured_content.unwrap();
    let group = groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|group| group["name"] == "test")
        .expect("the upstream's group");
    assert_eq!(group["origin"], "the MCP server `test`");
    let tools = group["tools"].as_array().unwrap();
    assert!(tools.contains(
        &json!({"name": "test__dotted_name", "originName": "dotted.name", "enabled": true})
    ));
    let long = tools
        .iter()
        .find(|tool| {
            tool["originName"]
                .as_str()
                .unwrap()
                .starts_with("a_tool_with")
        })
        .unwrap();
    let long_name = long["name"].as_str().unwrap();
    assert_eq!(long_name.len(), 64, "{long_name}");
    assert_eq!(
        ok(&call(&client, long_name, json!({})).await),
        "the long one ran"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn tools_not_marked_read_only_ask_first_unless_configured() {
    let config = format!(
        "{}\n[tools.test__echo]\nexecution = \"ask-always\"\n",
        upstream("test", "")
    );
    let setup = Setup::new(&config);
    let asker = approving();
    let client = setup.start(asker.clone()).await;

    assert_eq!(
        ok(&call(&client, "test__pid", json!({})).await).is_empty(),
        false
    );
    assert_eq!(asker.asked().len(), 0, "read-only tools run without asking");
    ok(&call(&client, "test__grow", json!({})).await);
    assert_eq!(asker.asked().len(), 1, "{:?}", asker.asked());
    assert!(asker.asked()[0].starts_with("Allow `test__grow` to run"));
    ok(&call(&client, "test__echo", json!({"text": "x"})).await);
    assert_eq!(
        asker.asked().len(),
        2,
        "[tools.X] wins over the annotations"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn an_upstream_killed_mid_session_answers_a_clear_error_then_works_again() {
    let (setup, block) = Setup::naming_a_file("UPSTREAM_BLOCK", "block");
    let client = setup.start(TestClient::new(Elicitation::Unsupported)).await;
    let first = ok(&call(&client, "test__pid", json!({})).await);

    std::fs::write(&block, "").unwrap();
    let killed = std::process::Command::new("kill")
        .args(["-9", &first])
        .status()
        .unwrap();
    assert!(killed.success());
    eventually(20, "the error naming the stopped server", async || {
        let answer = call(&client, "test__echo", json!({"text": "x"})).await;
        assert!(
            is_error(&answer),
            "a dead server answered: {}",
            text(&answer)
        );
        let message = text(&answer);
        assert!(message.contains("the MCP server `test`"), "{message}");
        message.contains("is not running") && message.contains("blocked by")
    })
    .await;

    std::fs::remove_file(&block).unwrap();
    eventually(40, "the restarted server answering", async || {
        !is_error(&call(&client, "test__echo", json!({"text": "x"})).await)
    })
    .await;
    let second = ok(&call(&client, "test__pid", json!({})).await);
    assert_ne!(first, second);
    assert!(tool_names(&client).await.contains(&"ReadVar".to_owned()));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn progress_and_cancellation_pass_through() {
    let (setup, log) = Setup::naming_a_file("UPSTREAM_LOG", "upstream.log");
    let observer = TestClient::new(Elicitation::Unsupported);
    let client = setup.start(observer.clone()).await;

    let done = call(&client, "test__slow", json!({"steps": 3, "delayMs": 1})).await;
    assert_eq!(ok(&done), "3 steps done");
    // The client, too, handles each notification in a task of its own.
    observer.wait_for_more("progress 3 step 3", 0).await;
    let progress: Vec<String> = observer
        .notifications()
        .into_iter()
        .filter(|seen| seen.starts_with("progress"))
        .collect();
    assert_eq!(
        progress,
        [
            "progress 1 step 1",
            "progress 2 step 2",
            "progress 3 step 3"
        ]
    );

    let before = observer.count("progress 1 step 1");
    let params = CallToolRequestParams::new("test__slow").with_arguments(
        json!({"steps": 100_000, "delayMs": 20})
            .as_object()
            .unwrap()
            .clone(),
    );
    tokio::select! {
        answer = client.call_tool(params) => panic!("the slow call ended: {answer:?}"),
        // Dropping the call once it runs upstream cancels it.
        () = observer.wait_for_more("progress 1 step 1", before) => {}
    }
    eventually(20, "the upstream seeing the cancellation", async || {
        std::fs::read_to_string(&log).is_ok_and(|logged| logged == "cancelled slow")
    })
    .await;
    assert_eq!(
        ok(&call(&client, "test__echo", json!({"text": "still here"})).await),
        "still here"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn the_upstreams_elicitation_and_sampling_reach_the_client() {
    let setup = Setup::new(&upstream("test", "execution = \"auto\""));
    let asker = TestClient::new(Elicitation::Accept(json!({"answer": "blue"})))
        .with_model(|message| Ok(format!("echo of {message}")));
    let client = setup.start(asker.clone()).await;

    let answered = call(
        &client,
        "test__ask",
        json!({"question": "Favourite colour?"}),
    )
    .await;
    assert_eq!(ok(&answered), "the user answered: blue");
    // The user is told who asks (second round, finding 12: the question looked like ours).
    assert_eq!(
        asker.asked(),
        ["The MCP server `test` asks: Favourite colour?"]
    );
    let sampled = call(&client, "test__sample", json!({"prompt": "Say hi"})).await;
    assert_eq!(ok(&sampled), "the model said: echo of Say hi");
    assert_eq!(asker.sampled(), [(String::new(), "Say hi".to_owned())]);
    client.cancel().await.unwrap();

    let unable = setup.start(TestClient::new(Elicitation::Unsupported)).await;
    let refused = call(&unable, "test__ask", json!({"question": "?"})).await;
    assert!(is_error(&refused));
    assert_golden_text("upstreams/cannot-be-asked.txt", &text(&refused));
    unable.cancel().await.unwrap();
}

#[tokio::test]
async fn an_upstream_that_lists_new_tools_is_listed_anew_with_list_changed() {
    let setup = Setup::new(&upstream("test", "execution = \"auto\""));
    let observer = TestClient::new(Elicitation::Unsupported);
    let client = setup.start(observer.clone()).await;
    assert!(
        !tool_names(&client)
            .await
            .contains(&"test__grown".to_owned())
    );
    let before = observer.count("tools/list_changed");

    ok(&call(&client, "test__grow", json!({})).await);

    observer.wait_for_more("tools/list_changed", before).await;
    // Another change (a tool folder read at start) may send a list_changed of its own first:
    // wait until the listing has the new tool.
    let mut listed = tool_names(&client).await;
    for _ in 0..200 {
        if listed.contains(&"test__grown".to_owned()) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        listed = tool_names(&client).await;
    }
    assert!(listed.contains(&"test__grown".to_owned()), "{listed:?}");
    assert_eq!(
        ok(&call(&client, "test__grown", json!({})).await),
        "grown ran"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn config_changes_start_and_stop_upstreams_with_one_list_changed_each() {
    let setup = Setup::new("# no upstream yet\n");
    let observer = TestClient::new(Elicitation::Unsupported);
    let client = setup.start(observer.clone()).await;
    let upstream_names = async || -> Vec<String> {
        let mut names: Vec<String> = tool_names(&client)
            .await
            .into_iter()
            .filter(|name| name.ends_with("__echo"))
            .collect();
        names.sort();
        names
    };
    assert_eq!(upstream_names().await, Vec::<String>::new());

    setup.write(&format!(
        "{}{}",
        upstream("one", "execution = \"auto\""),
        upstream("two", "")
    ));
    observer.wait_for_more("tools/list_changed", 0).await;
    assert_eq!(upstream_names().await, ["one__echo", "two__echo"]);
    assert_eq!(
        ok(&call(&client, "one__echo", json!({"text": "1"})).await),
        "1"
    );

    setup.write(&upstream("two", ""));
    observer.wait_for_more("tools/list_changed", 1).await;
    assert_eq!(upstream_names().await, ["two__echo"]);
    let gone = client
        .call_tool(
            CallToolRequestParams::new("one__echo")
                .with_arguments(json!({"text": "1"}).as_object().unwrap().clone()),
        )
        .await
        .unwrap_err();
    assert_golden_text("upstreams/removed-tool-called.txt", &gone.to_string());

    // A file that no longer checks changes nothing; the next good one applies.
    setup.write(&format!("{}{}", upstream("vars", ""), upstream("two", "")));
    tokio::time::sleep(Duration::from_secs(1)).await;
    setup.write(&format!("{}{}", upstream("three", ""), upstream("two", "")));
    observer.wait_for_more("tools/list_changed", 2).await;
    assert_eq!(upstream_names().await, ["three__echo", "two__echo"]);
    call(&client, "ToolGroups", json!({})).await;
    assert_eq!(
        observer.count("tools/list_changed"),
        3,
        "{:?}",
        observer.notifications()
    );
    client.cancel().await.unwrap();
}

#[test]
fn an_upstream_named_like_a_built_in_group_is_refused_at_start() {
    let setup = Setup::new(&upstream("vars", ""));
    let output = std::process::Command::new(binary())
        .env("HOME", quiet_home())
        .args(["--store", "memory", "--config"])
        .arg(setup.config())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(output.stdout.is_empty());
    let said = String::from_utf8_lossy(&output.stderr);
    assert_golden_text("upstreams/built-in-name-refused.txt", &error_part(&said));
}

#[tokio::test]
async fn the_upstreams_stderr_goes_to_our_log_and_stdout_carries_only_protocol() {
    let setup = Setup::new(&upstream("test", "execution = \"auto\""));
    let mut server = tokio::process::Command::new(binary())
        .env("HOME", quiet_home())
        .args(["--store", "memory", "--log-level", "info", "--config"])
        .arg(setup.config())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let lines = [
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "test__echo", "arguments": {"text": "hi"}}}),
    ];
    let input = lines
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n")
        + "\n";
    let mut stdin = server.stdin.take().unwrap();
    tokio::io::AsyncWriteExt::write_all(&mut stdin, input.as_bytes())
        .await
        .unwrap();
    let mut stdout = tokio::io::BufReader::new(server.stdout.take().unwrap());
    let mut answered = false;
    while !answered {
        let mut line = String::new();
        tokio::io::AsyncBufReadExt::read_line(&mut stdout, &mut line)
            .await
            .unwrap();
        let message: Value = serde_json::from_str(&line)
            .unwrap_or_else(|_| panic!("stdout carried a non-JSON line: {line}"));
        answered = message["id"] == 1;
        if answered {
            assert_eq!(message["result"]["content"][0]["text"], "hi");
        }
    }
    drop(stdin);
    let output = server.wait_with_output().await.unwrap();
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(
        log.contains("stderr: upstream_server ready (pid"),
        "the upstream's stderr is not in our log:\n{log}"
    );
    let rest = String::from_utf8_lossy(&output.stdout);
    assert!(
        rest.lines()
            .all(|line| serde_json::from_str::<Value>(line).is_ok()),
        "{rest}"
    );
}
