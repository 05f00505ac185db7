//! Script tools over stdio against the real binary, from a tool folder holding Python and shell
//! scripts: namespaced names with their schemas in tools/list, JSON on stdin and words on the
//! command line, JSON output checked against the output schema, a non-zero exit and a timeout as
//! tool errors, an approval asked once and again after the script changes, a broken manifest
//! reported by `tools check` and skipped, a tool added while the server runs, a large result cut
//! with its variable usable by `$VAR_REF` and in a plan, and the example group of
//! `examples/tools` working as it is when copied into `~/.synapse/tools`.

use std::path::{Path, PathBuf};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::common::{
    Client, Elicitation, TestClient, assert_golden_text, binary, call, copy_tree, is_error,
    manifest, spawn_binary_at_home, text, tool_names,
};

/// A temporary home, and a tool root holding the group `lab`.
struct Lab {
    directory: tempfile::TempDir,
}

impl Lab {
    fn new() -> Self {
        let lab = Self {
            directory: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir_all(lab.home()).unwrap();
        std::fs::create_dir_all(lab.group()).unwrap();
        lab.tool("echo_json", "echo_json.py", ECHO_PY, &echo_manifest());
        lab.tool("shout", "shout.sh", SHOUT_SH, &shout_manifest());
        let failing = json!({"description": "Fails.", "script": "fail.sh",
            "inputSchema": {"type": "object"}, "approval": "auto"});
        lab.tool(
            "fail",
            "fail.sh",
            "echo partial\necho boom >&2\nexit 3\n",
            &failing,
        );
        let sleepy = json!({"description": "Sleeps.", "script": "sleepy.sh",
            "inputSchema": {"type": "object"}, "timeoutSeconds": 1, "approval": "auto"});
        lab.tool("sleepy", "sleepy.sh", SLEEPY_SH, &sleepy);
        let big = json!({"description": "Writes `size` digits.", "script": "big.py",
            "inputSchema": {"type": "object", "properties": {"size": {"type": "integer"}}},
            "approval": "auto", "annotations": {"readOnly": true}});
        lab.tool("big", "big.py", BIG_PY, &big);
        let broken = json!({"description": "Broken.", "script": "missing.sh",
            "inputSchema": {"type": "object"}});
        lab.write("broken.tool.json", &broken.to_string());
        lab
    }

    fn home(&self) -> PathBuf {
        self.directory.path().join("home")
    }

    fn root(&self) -> PathBuf {
        self.directory.path().join("tools")
    }

    fn group(&self) -> PathBuf {
        self.root().join("lab")
    }

    fn write(&self, file: &str, contents: &str) {
        std::fs::write(self.group().join(file), contents).unwrap();
    }

    /// A script and its manifest `NAME.tool.json`, the manifest last and whole (a rename).
    fn tool(&self, name: &str, script: &str, source: &str, manifest: &Value) {
        self.write(script, source);
        let staged = self.directory.path().join(format!("{name}.staged"));
        std::fs::write(&staged, manifest.to_string()).unwrap();
        std::fs::rename(staged, self.group().join(format!("{name}.tool.json"))).unwrap();
    }

    async fn client(&self, config: &str, observer: TestClient) -> Client {
        let config_path = self.directory.path().join("config.toml");
        std::fs::write(&config_path, config).unwrap();
        let args = [
            "--tools".to_owned(),
            self.root().display().to_string(),
            "--data-dir".to_owned(),
            self.directory.path().join("data").display().to_string(),
            "--config".to_owned(),
            config_path.display().to_string(),
        ];
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        spawn_binary_at_home(&self.home(), &args, observer).await
    }
}

const ECHO_PY: &str = r#"import json, sys
arguments = json.load(sys.stdin)
name = arguments["name"]
if name == "bad-output":
    print(json.dumps({"greeting": 5}))
elif name == "not-json":
    print("plain words")
else:
    print(json.dumps({"greeting": "hello " + name, "count": len(name)}))
"#;

fn echo_manifest() -> Value {
    json!({
        "title": "Echo JSON",
        "description": "Greets `name`.",
        "script": "echo_json.py",
        "inputSchema": {
            "type": "object",
            "properties": {"name": {"type": "string", "minLength": 1, "description": "Who."}},
            "required": ["name"]
        },
        "outputSchema": {
            "type": "object",
            "properties": {"greeting": {"type": "string"}, "count": {"type": "integer"}},
            "required": ["greeting", "count"]
        },
        "annotations": {"readOnly": true, "idempotent": true, "openWorld": false}
    })
}

const SHOUT_SH: &str = "for word in \"$@\"; do printf '[%s]\\n' \"$word\"; done
printf 'dir=%s cwd=%s secret=%s stdin=%s\\n' \"$(basename \"$TOOL_DIR\")\" \
\"$(basename \"$PWD\")\" \"${CARGO_PKG_NAME:-unset}\" \"$(cat)\"
";

fn shout_manifest() -> Value {
    json!({
        "description": "Prints its command line.",
        "script": "shout.sh",
        "inputSchema": {
            "type": "object",
            "properties": {
                "words": {"type": "array", "items": {"type": "string"}},
                "times": {"type": "integer"},
                "loud": {"type": "boolean"}
            }
        },
        "arguments": {"argv": ["say", {"arg": "words"}, {"arg": "times", "option": "-n"},
            {"arg": "loud", "flag": "--loud"}]},
        "approval": "auto"
    })
}

const SLEEPY_SH: &str = "sleep 60 &\necho $! > \"$TOOL_DIR/../../sleepy.pid\"\nwait\n";

const BIG_PY: &str = r#"import json, sys
size = json.load(sys.stdin)["size"]
sys.stdout.write(("0123456789" * (size // 10 + 1))[:size])
"#;

fn approving() -> TestClient {
    TestClient::new(Elicitation::Accept(
        json!({"approve": true, "remember": true}),
    ))
}

fn quiet() -> TestClient {
    TestClient::new(Elicitation::Unsupported)
}

/// The configuration that lets `lab__echo_json` run without asking.
const ECHO_AUTO: &str = "[tools.lab__echo_json]\nexecution = \"auto\"\n";

#[tokio::test]
async fn script_tools_are_listed_under_their_group_with_their_schemas() {
    let lab = Lab::new();
    let client = lab.client("", quiet()).await;
    assert!(
        !lab.home().join(".synapse").exists(),
        "a start with no tools folder makes none"
    );
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools
        .iter()
        .map(|tool| tool.name.as_ref())
        .filter(|name| name.contains("__"))
        .collect();
    assert_eq!(
        names,
        [
            "lab__big",
            "lab__echo_json",
            "lab__fail",
            "lab__shout",
            "lab__sleepy"
        ]
    );
    let echo = tools.iter().find(|tool| tool.name == "lab__echo_json");
    let mut listed = serde_json::to_value(echo.unwrap()).unwrap();
    let meta = listed["inputSchema"]["properties"].as_object_mut().unwrap();
    assert!(meta.remove("_outputLimit").is_some() && meta.remove("_outputPath").is_some());
    assert_eq!(
        listed,
        json!({
            "name": "lab__echo_json",
            "title": "Echo JSON",
            "description": "Greets `name`.",
            "inputSchema": echo_manifest()["inputSchema"],
            "outputSchema": echo_manifest()["outputSchema"],
            "annotations": {
                "readOnlyHint": true,
                "destructiveHint": false,
                "idempotentHint": true,
                "openWorldHint": false
            }
        })
    );
    let groups = call(&client, "ToolGroups", json!({})).await;
    let origins: Vec<(String, String)> = groups.structured_content.unwrap()["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|group| {
            let field = |key: &str| group[key].as_str().unwrap().to_owned();
            (field("name"), field("origin"))
        })
        .collect();
    let built_in: Vec<&str> = origins
        .iter()
        .filter(|(_, origin)| origin == "built-in")
        .map(|(name, _)| name.as_str())
        .collect();
    assert_eq!(
        built_in,
        synapse_mcp::groups::BUILT_IN,
        "a folder may take no built-in group's name"
    );
    assert_eq!(
        origins.last().unwrap(),
        &(
            "lab".to_owned(),
            format!("scripts in {}", lab.group().display())
        )
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_run_is_approved_once_and_asked_again_after_the_script_changes() {
    let lab = Lab::new();
    let observer = approving();
    let client = lab.client("", observer.clone()).await;
    for (name, count) in [("Ada", 3), ("Grace", 5)] {
        let result = call(&client, "lab__echo_json", json!({"name": name})).await;
        assert!(!is_error(&result), "{}", text(&result));
        let greeting = format!("hello {name}");
        assert_eq!(
            result.structured_content,
            Some(json!({"greeting": greeting, "count": count}))
        );
    }
    assert_eq!(observer.asked().len(), 1, "{:?}", observer.asked());
    assert_golden_text("script_tools/question.txt", &observer.asked()[0]);
    let refused = call(&client, "lab__echo_json", json!({"name": ""})).await;
    assert_eq!(
        text(&refused),
        "invalid arguments for `lab__echo_json`: at `/name`: \"\" is shorter than 1 character; \
         its inputSchema in tools/list says what it takes"
    );
    assert_eq!(
        observer.asked().len(),
        1,
        "a bad call is refused before asking"
    );

    lab.write("echo_json.py", &ECHO_PY.replace("hello ", "hi "));
    let changed = call(&client, "lab__echo_json", json!({"name": "Ada"})).await;
    assert_eq!(changed.structured_content.unwrap()["greeting"], "hi Ada");
    assert_eq!(observer.asked().len(), 2, "a changed script asks again");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn json_output_must_match_the_output_schema() {
    let lab = Lab::new();
    let client = lab.client(ECHO_AUTO, quiet()).await;
    let mismatch = call(&client, "lab__echo_json", json!({"name": "bad-output"})).await;
    assert!(is_error(&mismatch) && mismatch.structured_content.is_none());
    assert_eq!(
        text(&mismatch),
        "`lab__echo_json` failed: its script's output does not match the manifest's output \
         schema: at `/`: \"count\" is a required property; at `/greeting`: 5 is not of type \
         \"string\"\n\nstdout:\n{\"greeting\": 5}"
    );
    let plain = call(&client, "lab__echo_json", json!({"name": "not-json"})).await;
    assert!(is_error(&plain));
    assert_golden_text("script_tools/stdout-not-json.txt", &text(&plain));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn arguments_pass_on_the_command_line_in_a_scrubbed_environment() {
    let lab = Lab::new();
    let client = lab.client("", quiet()).await;
    let arguments = json!({"words": ["a b", "c"], "times": 2, "loud": true});
    let result = call(&client, "lab__shout", arguments).await;
    assert!(!is_error(&result), "{}", text(&result));
    assert_eq!(
        text(&result),
        "[say]\n[a b]\n[c]\n[-n]\n[2]\n[--loud]\ndir=lab cwd=lab secret=unset stdin=\n"
    );
    let few = call(&client, "lab__shout", json!({"loud": false})).await;
    assert_eq!(text(&few), "[say]\ndir=lab cwd=lab secret=unset stdin=\n");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_failing_script_is_a_tool_error_with_stderr_and_stdout() {
    let lab = Lab::new();
    let client = lab.client("", quiet()).await;
    let result = call(&client, "lab__fail", json!({})).await;
    assert!(is_error(&result));
    assert_eq!(
        text(&result),
        "`lab__fail` failed: its script exited with code 3\n\nstderr:\nboom\n\nstdout:\npartial"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_script_past_its_timeout_is_killed_with_what_it_started() {
    let lab = Lab::new();
    let client = lab.client("", quiet()).await;
    let result = call(&client, "lab__sleepy", json!({})).await;
    assert!(is_error(&result));
    assert_golden_text("script_tools/killed-after-timeout.txt", &text(&result));
    let pid_file = lab.directory.path().join("sleepy.pid");
    assert!(
        crate::skills::hardening::ends(&pid_file).await,
        "the script's child outlived the timeout"
    );
    client.cancel().await.unwrap();
}

/// Whether this machine gives a run a ceiling on its processes: any user but root
/// (`RLIMIT_NPROC`), or root where the cgroup v1 `pids` hierarchy is mounted for writing.
fn processes_can_be_capped() -> bool {
    let root = std::fs::read_to_string("/proc/self/status").is_ok_and(|status| {
        status
            .lines()
            .any(|line| line.starts_with("Uid:") && line.split_whitespace().nth(1) == Some("0"))
    });
    let probe =
        Path::new("/sys/fs/cgroup/pids").join(format!("synapse-probe-{}", std::process::id()));
    !root || (std::fs::create_dir(&probe).is_ok() && std::fs::remove_dir(&probe).is_ok())
}

#[tokio::test]
async fn a_fork_bomb_stops_at_the_runs_process_ceiling() {
    // Root without a writable `pids` cgroup has no ceiling here (docs/script-tools.md).
    if !processes_can_be_capped() {
        return;
    }
    let lab = Lab::new();
    let forks = json!({"description": "Starts 400 sleepers.", "script": "forks.sh",
        "inputSchema": {"type": "object"}, "approval": "auto", "timeoutSeconds": 20});
    let counter = lab.directory.path().join("started");
    let script = format!(
        "n=0\nwhile [ $n -lt 400 ]; do\n  sleep 20 &\n  n=$((n+1))\n  echo $n > '{}'\ndone\necho all started\n",
        counter.display()
    );
    lab.tool("forks", "forks.sh", &script, &forks);
    let client = lab.client("", quiet()).await;
    let result = call(&client, "lab__forks", json!({})).await;
    let started: u32 = std::fs::read_to_string(&counter)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        (200..synapse_mcp::runner::pids::PROCESS_LIMIT).contains(&started),
        "{started} sleepers started: {}",
        text(&result)
    );
    assert!(is_error(&result), "{}", text(&result));
    assert!(!text(&result).contains("all started"), "{}", text(&result));
    client.cancel().await.unwrap();
}

/// `synapse-mcp tools check` with these arguments, under a temporary home: the report and
/// whether it passed.
fn check(home: &Path, args: &[&str]) -> (String, bool) {
    let output = std::process::Command::new(binary())
        .env("HOME", home)
        .args(["tools", "check"])
        .args(args)
        .output()
        .unwrap();
    (
        String::from_utf8(output.stdout).unwrap(),
        output.status.success(),
    )
}

#[tokio::test]
async fn a_broken_manifest_is_reported_by_tools_check_and_skipped_while_the_rest_is_served() {
    let lab = Lab::new();
    let reserved = lab.root().join("tools");
    std::fs::create_dir(&reserved).unwrap();
    std::fs::write(reserved.join("x.tool.json"), "{}").unwrap();
    let root = lab.root().display().to_string();
    let (report, passed) = check(&lab.home(), &[&root]);
    assert!(!passed, "{report}");
    let broken = lab.group().join("broken.tool.json");
    assert_eq!(
        report,
        format!(
            "{}: error (skipped): `script`: `missing.sh` is not a file of {}; put the script \
             there or fix the name\n{}: error (skipped): `tools` is the name of a built-in tool \
             group; rename the folder\n5 tools usable in 1 groups, 2 skipped, 0 warnings (1 roots)\n",
            broken.display(),
            lab.group().display(),
            reserved.display()
        )
    );
    assert!(
        !lab.root().join("index.json").exists(),
        "a check writes nothing"
    );
    let client = lab.client("", quiet()).await;
    let names = tool_names(&client).await;
    assert!(
        names.contains(&"lab__fail".to_owned()) && !names.contains(&"lab__broken".to_owned()),
        "{names:?}"
    );
    client.cancel().await.unwrap();
    lab.write("broken.sh", "echo mended\n");
    lab.write(
        "broken.tool.json",
        &json!({"description": "Mended.", "script": "broken.sh",
            "inputSchema": {"type": "object"}})
        .to_string(),
    );
    std::fs::remove_dir_all(reserved).unwrap();
    let (report, passed) = check(&lab.home(), &[&root]);
    assert!(passed, "{report}");
}

#[tokio::test]
async fn a_tool_added_while_the_server_runs_is_listed_after_one_list_changed() {
    let lab = Lab::new();
    let observer = quiet();
    let client = lab.client("", observer.clone()).await;
    assert!(!tool_names(&client).await.contains(&"lab__later".to_owned()));
    let later = json!({"description": "Added later.", "script": "later.sh",
        "inputSchema": {"type": "object"}, "approval": "auto"});
    lab.tool("later", "later.sh", "echo late\n", &later);
    observer.wait_for_more("tools/list_changed", 0).await;
    assert!(tool_names(&client).await.contains(&"lab__later".to_owned()));
    let result = call(&client, "lab__later", json!({})).await;
    assert_eq!(text(&result), "late\n");

    std::fs::remove_file(lab.group().join("later.tool.json")).unwrap();
    observer.wait_for_more("tools/list_changed", 1).await;
    assert!(!tool_names(&client).await.contains(&"lab__later".to_owned()));
    assert_eq!(
        observer.count("tools/list_changed"),
        2,
        "one notification per change: {:?}",
        observer.notifications()
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_large_result_is_cut_and_its_variable_feeds_var_ref_and_a_plan() {
    let lab = Lab::new();
    let client = lab.client(ECHO_AUTO, quiet()).await;
    let result = call(
        &client,
        "lab__big",
        json!({"size": 5000, "_outputLimit": 100}),
    )
    .await;
    let shown = text(&result);
    assert_golden_text("script_tools/cut-in-the-middle.txt", &shown);
    let variable = shown
        .split("variable `")
        .nth(1)
        .and_then(|rest| rest.split('`').next())
        .unwrap_or_else(|| panic!("no variable in the hint: {shown}"))
        .to_owned();
    assert!(
        variable.starts_with("lab__big_") && variable.ends_with("_result"),
        "{variable}"
    );

    let reference = format!("$VAR_REF{{{{{variable}:4990:10}}}}");
    let greeted = call(&client, "lab__echo_json", json!({"name": reference})).await;
    assert_eq!(
        greeted.structured_content,
        Some(json!({"greeting": "hello 0123456789", "count": 10}))
    );

    let plan = json!({"steps": [
        {"_id": "digits", "_tool": "lab__big", "size": 12},
        {"_id": "greet", "_tool": "lab__echo_json", "name": "†steps.digits",
            "_outputPath": "†state.greeting"}
    ]});
    let ran = call(&client, "RunPlan", plan).await;
    let output = ran.structured_content.unwrap();
    assert_eq!(output["ok"], json!(true), "{output}");
    let state = call(&client, "ReadState", json!({"path": "greeting.greeting"})).await;
    assert!(
        text(&state).ends_with("\n\"hello 012345678901\""),
        "{}",
        text(&state)
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn the_example_group_works_when_copied_into_the_home_tools_folder() {
    let home = tempfile::tempdir().unwrap();
    let tools = home.path().join(".synapse/tools");
    copy_tree(&manifest("examples/tools"), &tools);
    std::fs::create_dir_all(home.path().join("notes/deep")).unwrap();
    for file in ["notes/a.md", "notes/deep/b.md", "notes/c.txt"] {
        std::fs::write(home.path().join(file), "x\n").unwrap();
    }
    let (report, passed) = check(home.path(), &[]);
    assert!(
        passed && report.ends_with("2 tools usable in 1 groups, 0 skipped, 0 warnings (1 roots)\n"),
        "{report}"
    );
    let observer = approving();
    let client = spawn_binary_at_home(home.path(), &["--store", "memory"], observer.clone()).await;
    let counted = call(
        &client,
        "text__word_count",
        json!({"text": "The cat saw the other cat.\nThe end.", "top": 2}),
    )
    .await;
    assert_eq!(
        counted.structured_content,
        Some(json!({"words": 8, "lines": 2, "characters": 35,
            "top": [{"word": "the", "count": 3}, {"word": "cat", "count": 2}]}))
    );
    let found = call(
        &client,
        "text__find_files",
        json!({"folder": "notes", "name": "*.md"}),
    )
    .await;
    let notes = home.path().join("notes");
    assert_eq!(
        text(&found),
        format!("{0}/a.md\n{0}/deep/b.md\n", notes.display())
    );
    assert_eq!(
        observer.asked().len(),
        1,
        "find_files asks once; word_count never"
    );
    let rules = client
        .get_prompt(rmcp::model::GetPromptRequestParams::new("tool-rules"))
        .await
        .unwrap();
    assert!(
        serde_json::to_string(&rules.messages)
            .unwrap()
            .contains("The text tools count words"),
        "the group's instructions reach the rules"
    );
    client.cancel().await.unwrap();
}

/// A manifest declares where its tool writes by pinning `_outputPath` with `const` in its input
/// schema; a plan's validator knows it, so a later step may read it.
#[tokio::test]
async fn a_plan_may_read_what_a_script_tool_declares_it_writes() {
    let lab = Lab::new();
    let pinned = json!({"description": "Finds the answer.", "script": "answer.sh",
        "inputSchema": {"type": "object",
            "properties": {"_outputPath": {"const": "†state.lab.answer"}}},
        "approval": "auto"});
    lab.tool("answer", "answer.sh", "echo 42\n", &pinned);
    let client = lab.client(ECHO_AUTO, quiet()).await;
    let plan = json!({"steps": [
        {"_id": "find", "_tool": "lab__answer"},
        {"_id": "keep", "_tool": "WriteState", "path": "kept", "value": "†state.lab.answer"}
    ]});
    let ran = call(&client, "RunPlan", plan).await;
    assert!(!is_error(&ran), "{}", text(&ran));
    let output = ran.structured_content.unwrap();
    assert_eq!(output["order"], json!([["find"], ["keep"]]), "{output}");
    assert_eq!(output["ok"], json!(true), "{output}");
    let kept = call(&client, "ReadState", json!({"path": "kept"})).await;
    assert!(text(&kept).contains("42"), "{}", text(&kept));
    client.cancel().await.unwrap();
}

const LOOKUP_PY: &str = r#"import json, sys
key = json.load(sys.stdin)["key"]
if key == "a":
    print(json.dumps({"value": "alpha"}))
elif key == "b":
    print(json.dumps({"value": None}))
    sys.exit(1)
else:
    print("boom", file=sys.stderr)
    sys.exit(7)
"#;

const TRAIN_PY: &str = r#"import json, sys
minutes = json.load(sys.stdin)["minutes"]
print(json.dumps({"status": "late" if minutes > 0 else "on_time", "minutes": minutes}))
"#;

/// The state at `path`, as JSON, or `None` when nothing is there.
async fn state_at(client: &Client, path: &str) -> Option<Value> {
    let read = call(client, "ReadState", json!({"path": path})).await;
    if is_error(&read) {
        return None;
    }
    let shown = text(&read);
    Some(serde_json::from_str(shown.split_once('\n').unwrap().1).unwrap())
}

/// A script tool declares its outcomes; `A || B || C` maps to them in order. It chooses by its
/// exit code (a run that fails goes to the outcome named `error`) or by a member of its JSON
/// output. More branches than outcomes is refused, naming them; an outcome without a branch is
/// not written; `&&` inside a branch writes it to every target.
#[tokio::test]
async fn a_script_tool_chooses_the_branch_its_result_goes_to() {
    let lab = Lab::new();
    let object = json!({"type": "object"});
    lab.tool(
        "lookup",
        "lookup.py",
        LOOKUP_PY,
        &json!({"description": "Looks `key` up.", "script": "lookup.py",
            "inputSchema": {"type": "object", "properties": {"key": {"type": "string"}}},
            "outputSchema": object, "approval": "auto",
            "outcomes": ["found", "missing", "error"]}),
    );
    lab.tool(
        "train",
        "train.py",
        TRAIN_PY,
        &json!({"description": "Says whether the train is late.", "script": "train.py",
            "inputSchema": {"type": "object", "properties": {"minutes": {"type": "integer"}}},
            "outputSchema": object, "approval": "auto",
            "outcomes": ["on_time", "late"], "outcomeMember": "status"}),
    );
    let client = lab.client(ECHO_AUTO, quiet()).await;
    let three = "†state.hit || †state.miss || †state.failed";
    for key in ["a", "b"] {
        let result = call(
            &client,
            "lab__lookup",
            json!({"key": key, "_outputPath": three}),
        )
        .await;
        assert!(!is_error(&result), "{key}: {}", text(&result));
    }
    // A failed run is still a tool error for the model, saying where its error went.
    let caught = call(
        &client,
        "lab__lookup",
        json!({"key": "z", "_outputPath": three}),
    )
    .await;
    assert!(
        text(&caught)
            .starts_with("`lab__lookup` failed and its error was written to †state.failed"),
        "{}",
        text(&caught)
    );
    assert_eq!(
        state_at(&client, "hit").await,
        Some(json!({"value": "alpha"}))
    );
    assert_eq!(
        state_at(&client, "miss").await,
        Some(json!({"value": null}))
    );
    let failed = state_at(&client, "failed").await.unwrap();
    assert!(
        failed.as_str().unwrap().contains("exited with code 7"),
        "{failed}"
    );

    let four = call(
        &client,
        "lab__lookup",
        json!({"key": "a", "_outputPath": "†state.a || †state.b || †state.c || †state.d"}),
    )
    .await;
    assert!(is_error(&four));
    assert_eq!(
        text(&four),
        "_outputPath has 4 branches (separated by `||`) but `lab__lookup` has 3 outcomes: found, \
         missing, error; give at most 3 paths, one per outcome in that order"
    );
    let fewer = call(
        &client,
        "lab__lookup",
        json!({"key": "b", "_outputPath": "†state.only"}),
    )
    .await;
    assert!(!is_error(&fewer), "{}", text(&fewer));
    assert_eq!(state_at(&client, "only").await, None);
    let fanned = call(
        &client,
        "lab__lookup",
        json!({"key": "b", "_outputPath": "†state.x || †state.m1 && †var.m2"}),
    )
    .await;
    assert!(!is_error(&fanned), "{}", text(&fanned));
    assert_eq!(state_at(&client, "m1").await, Some(json!({"value": null})));
    let variable = call(&client, "ReadVar", json!({"name": "m2"})).await;
    assert!(
        text(&variable).ends_with("{\"value\":null}"),
        "{}",
        text(&variable)
    );
    assert_eq!(state_at(&client, "x").await, None);

    let late = call(
        &client,
        "lab__train",
        json!({"minutes": 5, "_outputPath": "†state.on_time || †state.late"}),
    )
    .await;
    assert!(!is_error(&late), "{}", text(&late));
    assert_eq!(
        state_at(&client, "late").await,
        Some(json!({"status": "late", "minutes": 5}))
    );
    assert_eq!(state_at(&client, "on_time").await, None);

    // A built-in tool keeps success and error; a plan's validator knows them too.
    let plan = call(
        &client,
        "RunPlan",
        json!({"dryRun": true, "steps": [{"_id": "read", "_tool": "ReadState",
            "_outputPath": "†state.a || †state.b || †state.c"}]}),
    )
    .await;
    assert!(is_error(&plan));
    assert_eq!(
        text(&plan),
        "the plan is not valid (1 problems):\n- step `read`: _outputPath has 3 branches \
         (separated by `||`) but `ReadState` has 2 outcomes: success, error; give at most 2 \
         paths, one per outcome in that order"
    );
    client.cancel().await.unwrap();
}
