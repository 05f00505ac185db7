//! `SkillRunScript` over stdio: off unless the config turns the `scripts` group on; a run
//! approved once per skill and digest set (a changed file asks again); a declined run that
//! runs nothing; a script killed at its timeout; paths leaving the skill folder refused.

use std::path::PathBuf;
use std::time::Instant;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::common::{
    Client, Elicitation, TestClient, assert_golden_text, call, is_error, spawn_binary, text,
    tool_names, write_skill,
};

const ON: &str = "[groups]\nscripts = true\n";
const ON_AUTO: &str = "[groups]\nscripts = true\n[tools.SkillRunScript]\nexecution = \"auto\"\n";

/// A skills folder holding the skill `runner` and its scripts, and a script outside it.
struct Scripts {
    directory: tempfile::TempDir,
}

impl Scripts {
    fn new() -> Self {
        let directory = tempfile::tempdir().unwrap();
        let description = "Runs small scripts. Use when testing scripts.";
        let skill = write_skill(
            &directory.path().join("skills"),
            "runner",
            description,
            "# Runner",
        );
        std::fs::create_dir_all(skill.join("scripts")).unwrap();
        let scripts = [
            (
                "hello.sh",
                "echo \"hello $1 from $(basename \"$SKILL_DIR\") in $(basename \"$PWD\")\"\n\
                 echo \"secret=${CARGO_PKG_NAME:-unset}\"\ncat\necho oops >&2\nexit 3\n",
            ),
            ("mark.sh", "touch \"$SKILL_DIR/../../ran-marker\"\n"),
            ("hang.sh", "sleep 60\n"),
        ];
        for (name, source) in scripts {
            std::fs::write(skill.join("scripts").join(name), source).unwrap();
        }
        std::fs::write(directory.path().join("outside.sh"), "echo escaped\n").unwrap();
        Self { directory }
    }

    /// `scripts/link.sh`, a symlink to a script outside the skill folder.
    fn link_out(&self) {
        std::os::unix::fs::symlink(
            self.directory.path().join("outside.sh"),
            self.skill().join("scripts/link.sh"),
        )
        .unwrap();
    }

    /// A script of the skill, written now.
    fn script(&self, name: &str, source: &str) {
        std::fs::write(self.skill().join("scripts").join(name), source).unwrap();
    }

    fn pid_file(&self) -> PathBuf {
        self.directory.path().join("child.pid")
    }

    fn skill(&self) -> PathBuf {
        self.directory.path().join("skills/runner")
    }

    fn marker(&self) -> PathBuf {
        self.directory.path().join("ran-marker")
    }

    async fn client(&self, config: &str, elicitation: Elicitation) -> (Client, TestClient) {
        let observer = TestClient::new(elicitation);
        (self.client_with(config, observer.clone()).await, observer)
    }

    async fn client_with(&self, config: &str, observer: TestClient) -> Client {
        let root = self.directory.path();
        let config_path = root.join("config.toml");
        std::fs::write(&config_path, config).unwrap();
        let args = [
            "--skills".to_owned(),
            root.join("skills").display().to_string(),
            "--data-dir".to_owned(),
            root.join("data").display().to_string(),
            "--config".to_owned(),
            config_path.display().to_string(),
        ];
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        spawn_binary(&args, observer).await
    }
}

async fn run(client: &Client, script: &str, extra: Value) -> (bool, Value, String) {
    let mut arguments = json!({"name": "runner", "script": script});
    if let (Value::Object(arguments), Value::Object(extra)) = (&mut arguments, extra) {
        arguments.extend(extra);
    }
    let result = call(client, "SkillRunScript", arguments).await;
    let structured = result.structured_content.clone().unwrap_or(Value::Null);
    (is_error(&result), structured, text(&result))
}

fn approve() -> Elicitation {
    Elicitation::Accept(json!({"approve": true, "remember": true}))
}

#[tokio::test]
async fn the_group_is_off_unless_the_config_turns_it_on() {
    let scripts = Scripts::new();
    // An empty `[groups]` leaves every group to its default.
    let (client, _) = scripts.client("[groups]\n", Elicitation::Unsupported).await;
    assert!(
        !tool_names(&client)
            .await
            .contains(&"SkillRunScript".to_owned())
    );
    client.cancel().await.unwrap();
    let (client, _) = scripts.client(ON, Elicitation::Unsupported).await;
    assert!(
        tool_names(&client)
            .await
            .contains(&"SkillRunScript".to_owned())
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn an_approved_script_runs_in_its_folder_with_a_scrubbed_environment() {
    let scripts = Scripts::new();
    let (client, observer) = scripts.client(ON, approve()).await;
    let (error, output, message) = run(
        &client,
        "scripts/hello.sh",
        json!({"args": ["world"], "stdin": "piped in\n"}),
    )
    .await;
    assert!(!error, "{message}");
    assert_eq!(
        output,
        json!({
            "exitCode": 3,
            "stdout": "hello world from runner in runner\nsecret=unset\npiped in\n",
            "stderr": "oops\n",
            "timedOut": false
        })
    );
    assert_eq!(observer.asked().len(), 1, "{:?}", observer.asked());
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_script_runs_by_the_id_the_skills_index_lists() {
    let scripts = Scripts::new();
    let (client, _) = scripts.client(ON_AUTO, Elicitation::Unsupported).await;
    let result = call(
        &client,
        "SkillRunScript",
        json!({"script": "skill:runner:mark"}),
    )
    .await;
    assert!(!is_error(&result), "{}", text(&result));
    assert!(scripts.marker().exists(), "the script named by its id ran");
    let (_, index) = crate::common::index_of(
        &scripts.directory.path().join("data"),
        "skills",
        &scripts.directory.path().join("skills"),
    );
    assert_eq!(
        index["skills"][0]["tools"],
        json!([
            "skill:runner:hang",
            "skill:runner:hello",
            "skill:runner:mark"
        ])
    );
    let other = call(
        &client,
        "SkillRunScript",
        json!({"name": "pdf-tools", "script": "skill:runner:mark"}),
    )
    .await;
    assert!(is_error(&other));
    assert_golden_text("skills/scripts/script-of-another-skill.txt", &text(&other));
    let unknown = call(
        &client,
        "SkillRunScript",
        json!({"script": "skill:runner:nope"}),
    )
    .await;
    assert_eq!(
        text(&unknown),
        "skill `runner` has no script `skill:runner:nope`; its scripts are: skill:runner:hang, \
         skill:runner:hello, skill:runner:mark"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_declined_run_runs_nothing() {
    let scripts = Scripts::new();
    let (client, observer) = scripts.client(ON, Elicitation::Decline).await;
    let (error, _, message) = run(&client, "scripts/mark.sh", json!({})).await;
    assert!(error);
    assert_golden_text("skills/scripts/declined.txt", &message);
    assert_eq!(observer.asked().len(), 1);
    assert!(!scripts.marker().exists(), "the declined script ran");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_changed_file_voids_the_approval() {
    let scripts = Scripts::new();
    let (client, observer) = scripts.client(ON, approve()).await;
    for _ in 0..2 {
        let (error, _, message) = run(&client, "scripts/mark.sh", json!({})).await;
        assert!(!error, "{message}");
    }
    assert_eq!(observer.asked().len(), 1, "approved once for both runs");
    assert!(scripts.marker().exists());
    std::fs::write(scripts.skill().join("scripts/hang.sh"), "echo changed\n").unwrap();
    let (error, output, message) = run(&client, "scripts/hang.sh", json!({})).await;
    assert!(!error, "{message}");
    assert_eq!(output["stdout"], json!("changed\n"));
    assert_eq!(observer.asked().len(), 2, "a changed file asks again");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_file_changed_while_asking_is_not_run() {
    let scripts = Scripts::new();
    let notes = scripts.skill().join("notes.md");
    let observer = TestClient::new(approve())
        .while_asking(move || std::fs::write(&notes, "changed while asking\n").unwrap());
    let client = scripts.client_with(ON, observer.clone()).await;
    let (error, _, message) = run(&client, "scripts/mark.sh", json!({})).await;
    assert!(error);
    assert_golden_text("skills/scripts/changed-while-asking.txt", &message);
    assert!(!scripts.marker().exists(), "the changed skill ran");
    let (error, _, message) = run(&client, "scripts/mark.sh", json!({})).await;
    assert!(!error, "{message}");
    assert_eq!(observer.asked().len(), 2, "the new version is asked about");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_hanging_script_is_killed_at_its_timeout() {
    let scripts = Scripts::new();
    let (client, _) = scripts.client(ON_AUTO, Elicitation::Unsupported).await;
    let started = Instant::now();
    let (error, output, message) =
        run(&client, "scripts/hang.sh", json!({"timeoutSeconds": 1})).await;
    assert!(!error, "{message}");
    assert!(started.elapsed().as_secs() < 10, "{:?}", started.elapsed());
    assert_eq!(output["timedOut"], json!(true), "{output}");
    assert_eq!(output.get("exitCode"), None);
    assert!(
        output["note"]
            .as_str()
            .unwrap()
            .contains("killed after 1 s")
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn paths_leaving_the_skill_folder_are_refused_before_asking() {
    let scripts = Scripts::new();
    scripts.link_out();
    let (client, observer) = scripts.client(ON, approve()).await;
    let cases = [
        ("../../outside.sh", "is refused"),
        ("/bin/sh", "is refused"),
        ("scripts/link.sh", "outside the skill folder"),
        ("scripts/missing.sh", "has no file"),
    ];
    for (script, expected) in cases {
        let (error, _, message) = run(&client, script, json!({})).await;
        assert!(error && message.contains(expected), "{script}: {message}");
    }
    let unknown = call(
        &client,
        "SkillRunScript",
        json!({"name": "nobody", "script": "scripts/hello.sh"}),
    )
    .await;
    assert!(is_error(&unknown) && text(&unknown).contains("unknown skill `nobody`"));
    assert_eq!(observer.asked(), Vec::<String>::new());
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn bundled_skills_have_no_scripts_to_run() {
    // Without `--skills` the roots are the bundled skills and an empty home.
    let directory = tempfile::tempdir().unwrap();
    let config = directory.path().join("config.toml");
    std::fs::write(&config, ON_AUTO).unwrap();
    let config = config.display().to_string();
    let client = spawn_binary(
        &["--config", &config],
        TestClient::new(Elicitation::Unsupported),
    )
    .await;
    let result = call(
        &client,
        "SkillRunScript",
        json!({"name": "synapse-workspace", "script": "SKILL.md"}),
    )
    .await;
    assert!(is_error(&result));
    assert_golden_text("skills/scripts/bundled-script.txt", &text(&result));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn an_approval_covers_one_script_and_every_file_of_the_folder() {
    let scripts = Scripts::new();
    let (client, observer) = scripts.client(ON, approve()).await;
    let (error, _, message) = run(&client, "scripts/mark.sh", json!({})).await;
    assert!(!error, "{message}");
    let (error, _, message) = run(&client, "scripts/hello.sh", json!({})).await;
    assert!(!error, "{message}");
    assert_eq!(observer.asked().len(), 2, "another script asks again");
    assert_golden_text("skills/scripts/second-question.txt", &observer.asked()[1]);
    for vendored in [
        "node_modules/lib/util.sh",
        ".git/hooks/x",
        "a/b/c/d/e/f/g/h/i/j/deep.sh",
    ] {
        let path = scripts.skill().join(vendored);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "echo sourced\n").unwrap();
        let before = observer.asked().len();
        let (error, _, message) = run(&client, "scripts/mark.sh", json!({})).await;
        assert!(!error, "{message}");
        assert_eq!(observer.asked().len(), before + 1, "{vendored} counts");
    }
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_link_out_of_the_folder_keeps_every_script_from_running() {
    let scripts = Scripts::new();
    scripts.link_out();
    let (client, observer) = scripts.client(ON, approve()).await;
    let (error, _, message) = run(&client, "scripts/mark.sh", json!({})).await;
    assert!(error);
    assert_golden_text("skills/scripts/symlink-leaves.txt", &message);
    assert!(!scripts.marker().exists());
    assert_eq!(observer.asked(), Vec::<String>::new());
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn what_a_script_leaves_running_dies_when_it_exits() {
    let scripts = Scripts::new();
    scripts.script(
        "background.sh",
        "sleep 60 &\necho $! > \"$SKILL_DIR/../../child.pid\"\necho started\n",
    );
    let (client, _) = scripts.client(ON_AUTO, Elicitation::Unsupported).await;
    let (error, output, message) = run(&client, "scripts/background.sh", json!({})).await;
    assert!(!error, "{message}");
    assert_eq!(output["exitCode"], json!(0));
    assert!(
        super::hardening::ends(&scripts.pid_file()).await,
        "the background child outlived the script"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn setsid_does_not_escape_the_timeout() {
    let scripts = Scripts::new();
    scripts.script(
        "escape.sh",
        "setsid sleep 60 &\necho $! > \"$SKILL_DIR/../../child.pid\"\nwait\n",
    );
    let (client, _) = scripts.client(ON_AUTO, Elicitation::Unsupported).await;
    let (error, output, message) =
        run(&client, "scripts/escape.sh", json!({"timeoutSeconds": 1})).await;
    assert!(!error, "{message}");
    assert_eq!(output["timedOut"], json!(true), "{output}");
    assert!(
        super::hardening::ends(&scripts.pid_file()).await,
        "the process in its own session outlived the timeout"
    );
    client.cancel().await.unwrap();
}

/// Second round, finding 3: only processes still carrying the run's marker variable were
/// killed, so a child started with `env -i` (outside the group with `setsid`, or orphaned by a
/// subshell that exits) outlived the script. Now the script runs under a reaper, its subreaper,
/// which kills every descendant left when the script ends.
#[tokio::test]
async fn children_that_clear_their_environment_die_when_the_script_exits() {
    let scripts = Scripts::new();
    scripts.script(
        "daemons.sh",
        "env -i /bin/sleep 3999 &\necho $! > \"$SKILL_DIR/../../child.pid\"\n\
         ( setsid env -i /bin/sleep 3998 & echo $! > \"$SKILL_DIR/../../orphan.pid\" )\n\
         sleep 0.5\necho started\n",
    );
    let (client, _) = scripts.client(ON_AUTO, Elicitation::Unsupported).await;
    let (error, output, message) = run(&client, "scripts/daemons.sh", json!({})).await;
    assert!(!error, "{message}");
    assert_eq!(output["exitCode"], json!(0), "{output}");
    for file in ["child.pid", "orphan.pid"] {
        assert!(
            super::hardening::ends(&scripts.directory.path().join(file)).await,
            "the process in {file} outlived the script"
        );
    }
    client.cancel().await.unwrap();
}

/// Finding 3 at the timeout: a Python child with an empty environment in a session of its own.
#[tokio::test]
async fn a_python_child_in_a_new_session_with_no_environment_dies_at_the_timeout() {
    let scripts = Scripts::new();
    scripts.script(
        "escape.py",
        "import os, subprocess, time\n\
         child = subprocess.Popen(['/bin/sleep', '3997'], env={}, start_new_session=True)\n\
         open(os.environ['SKILL_DIR'] + '/../../child.pid', 'w').write(str(child.pid))\n\
         time.sleep(60)\n",
    );
    let (client, _) = scripts.client(ON_AUTO, Elicitation::Unsupported).await;
    let (error, output, message) =
        run(&client, "scripts/escape.py", json!({"timeoutSeconds": 1})).await;
    assert!(!error, "{message}");
    assert_eq!(output["timedOut"], json!(true), "{output}");
    assert!(
        super::hardening::ends(&scripts.pid_file()).await,
        "the Python child outlived the timeout: {output}"
    );
    client.cancel().await.unwrap();
}
