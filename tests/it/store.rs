//! Durable workspaces through the real binary, on an SQLite file in a temporary data folder and
//! on a fresh database of a PostgreSQL server the tests start: restarts, SIGKILL in the middle
//! of a burst, two processes on one workspace, eviction, export/import (and from one store to
//! the other), and the ways a store can be broken.

use std::path::Path;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

use crate::common::{
    Elicitation, RawSession, TestClient, Transcript, assert_golden_text, call, error_part,
    is_error, run_command, spawn_binary, text,
};

/// Where a test's servers keep their workspaces, and a folder for the test's other files.
struct Place {
    folder: tempfile::TempDir,
    /// The arguments that choose the store.
    store: Vec<String>,
}

impl Place {
    /// An SQLite file in the folder.
    fn sqlite() -> Self {
        let folder = tempfile::tempdir().unwrap();
        let store = vec!["--data-dir".to_owned(), folder.path().display().to_string()];
        Self { folder, store }
    }

    /// A new database on the tests' PostgreSQL server (`None`: no server here, skipped).
    fn postgres() -> Option<Self> {
        let url = crate::postgres_server::database()?;
        Some(Self {
            folder: tempfile::tempdir().unwrap(),
            store: vec!["--store".to_owned(), url],
        })
    }

    fn path(&self) -> &Path {
        self.folder.path()
    }

    /// `sqlite` or `postgres`, for golden files that differ by store.
    fn kind(&self) -> &'static str {
        if self.store[0] == "--store" {
            "postgres"
        } else {
            "sqlite"
        }
    }

    /// The store's arguments after `args`.
    fn with<'a>(&'a self, args: &[&'a str]) -> Vec<&'a str> {
        let mut all = args.to_vec();
        all.extend(self.store.iter().map(String::as_str));
        all
    }
}

/// Runs a test taking a [`Place`] once on each store, as `<test>::sqlite` and `<test>::postgres`.
macro_rules! on_every_store {
    ($($test:ident),* $(,)?) => {$(
        mod $test {
            #[tokio::test]
            async fn sqlite() {
                super::$test(super::Place::sqlite()).await;
            }

            #[tokio::test]
            async fn postgres() {
                if let Some(place) = super::Place::postgres() {
                    super::$test(place).await;
                }
            }
        }
    )*};
}

on_every_store!(
    values_survive_a_restart,
    every_acknowledged_write_survives_sigkill_in_a_burst,
    two_processes_on_one_workspace_see_each_other_and_lose_nothing,
    eviction_is_reflected_after_a_restart,
    export_delete_import_restores_the_workspace_byte_for_byte,
    a_file_put_from_the_command_line_is_the_users_and_read_by_the_running_server,
);

async fn durable_client(place: &Place, extra: &[&str]) -> crate::common::Client {
    spawn_binary(
        &place.with(extra),
        TestClient::new(Elicitation::Unsupported),
    )
    .await
}

fn variable_names(listed: &rmcp::model::CallToolResult) -> Vec<String> {
    listed.structured_content.as_ref().unwrap()["variables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|variable| variable["name"].as_str().unwrap().to_owned())
        .collect()
}

async fn values_survive_a_restart(place: Place) {
    let client = durable_client(&place, &[]).await;
    let long = "long value ".repeat(100);
    call(
        &client,
        "WriteVar",
        json!({"name": "kept", "value": long, "desc": "d", "tags": ["t"]}),
    )
    .await;
    call(
        &client,
        "WriteVar",
        json!({"name": "json", "value": {"a": [1, 2]}}),
    )
    .await;
    client.cancel().await.unwrap();

    let client = durable_client(&place, &[]).await;
    let read = call(&client, "ReadVar", json!({"name": "kept", "length": 20})).await;
    assert!(
        text(&read).ends_with("\nlong value long valu"),
        "{}",
        text(&read)
    );
    let listed = call(&client, "ListVars", json!({"filter": {"tag": "t"}})).await;
    assert_eq!(
        listed.structured_content.as_ref().unwrap()["variables"][0]["desc"],
        json!("d")
    );
    let whole = call(&client, "ReadVar", json!({"name": "json"})).await;
    assert!(text(&whole).ends_with("\n{\"a\":[1,2]}"));
    let sliced = call(
        &client,
        "WriteVar",
        json!({"name": "s", "value": "$VAR_REF{{json:0:2}}"}),
    )
    .await;
    assert!(is_error(&sliced), "the JSON kind survives the restart too");
    client.cancel().await.unwrap();
}

async fn every_acknowledged_write_survives_sigkill_in_a_burst(place: Place) {
    // Room for the whole burst: with the default capacity of 1,000, the last writes would
    // evict the first (by design), and an eviction is not a lost write.
    let config = place.path().join("config.toml");
    std::fs::write(&config, "capacity = 2000\n").unwrap();
    let config_arg = config.display().to_string();
    let args = place.with(&["--config", &config_arg]);
    let (mut child, mut stdin, mut stdout) = RawSession::initialized(&args).await.split();
    let writer = tokio::spawn(async move {
        for index in 0..1_000 {
            let request = json!({"jsonrpc": "2.0", "id": 1_000 + index, "method": "tools/call",
                "params": {"name": "WriteVar", "arguments": {"name": format!("burst-{index}"), "value": format!("value {index}")}}});
            if stdin
                .write_all(format!("{request}\n").as_bytes())
                .await
                .is_err()
            {
                break;
            }
        }
    });
    let mut acknowledged = Vec::new();
    let mut line = String::new();
    while acknowledged.len() < 300 {
        line.clear();
        assert!(
            stdout.read_line(&mut line).await.unwrap() > 0,
            "the server stopped early"
        );
        let message: Value = serde_json::from_str(&line).unwrap();
        if message["result"]["isError"] == json!(false) {
            acknowledged.push(message["id"].as_i64().unwrap() - 1_000);
        }
    }
    child.start_kill().unwrap();
    child.wait().await.unwrap();
    writer.await.unwrap();

    let config = config.display().to_string();
    let client = durable_client(&place, &["--config", &config]).await;
    let listed = call(
        &client,
        "ListVars",
        // The whole list: the default output limit would cut it.
        json!({"filter": {"search": "burst-"}, "_outputLimit": -1}),
    )
    .await;
    let stored = variable_names(&listed);
    let missing: Vec<i64> = acknowledged
        .iter()
        .copied()
        .filter(|index| !stored.contains(&format!("burst-{index}")))
        .collect();
    assert!(
        missing.is_empty(),
        "acknowledged but lost after SIGKILL: {missing:?}"
    );
    assert!(stored.len() >= acknowledged.len());
    client.cancel().await.unwrap();
}

async fn two_processes_on_one_workspace_see_each_other_and_lose_nothing(place: Place) {
    let first = durable_client(&place, &[]).await;
    let second = durable_client(&place, &[]).await;
    call(
        &first,
        "WriteVar",
        json!({"name": "from-first", "value": "1"}),
    )
    .await;
    let seen = call(&second, "ReadVar", json!({"name": "from-first"})).await;
    assert!(
        text(&seen).ends_with("\n1"),
        "a write by one is visible to the other's next read"
    );

    let write_many = |client: &crate::common::Client, prefix: &'static str| {
        let client = client.peer().clone();
        async move {
            for index in 0..50 {
                let arguments = json!({"name": format!("{prefix}-{index}"), "value": index})
                    .as_object()
                    .cloned()
                    .unwrap();
                let request =
                    rmcp::model::CallToolRequestParams::new("WriteVar").with_arguments(arguments);
                let result = client.call_tool(request).await.unwrap();
                assert_ne!(result.is_error, Some(true));
                let shared = json!({"name": "shared", "value": format!("{prefix} {index}")})
                    .as_object()
                    .cloned()
                    .unwrap();
                client
                    .call_tool(
                        rmcp::model::CallToolRequestParams::new("WriteVar").with_arguments(shared),
                    )
                    .await
                    .unwrap();
            }
        }
    };
    tokio::join!(write_many(&first, "a"), write_many(&second, "b"));

    for client in [&first, &second] {
        let listed = call(
            client,
            "ListVars",
            json!({"filter": {"type": "LLMAdd"}, "_outputLimit": -1}),
        )
        .await;
        let names = variable_names(&listed);
        assert_eq!(names.len(), 102, "{names:?}");
        for index in 0..50 {
            assert!(names.contains(&format!("a-{index}")) && names.contains(&format!("b-{index}")));
        }
        let shared = call(client, "ReadVar", json!({"name": "shared"})).await;
        assert!(
            text(&shared).ends_with(" 49"),
            "the last write wins: {}",
            text(&shared)
        );
    }
    first.cancel().await.unwrap();
    second.cancel().await.unwrap();
}

async fn eviction_is_reflected_after_a_restart(place: Place) {
    let config = place.path().join("config.toml");
    std::fs::write(&config, "capacity = 6\n").unwrap();
    let config = config.display().to_string();
    let client = durable_client(&place, &["--config", &config]).await;
    for name in ["a", "b", "c", "d", "e"] {
        call(&client, "WriteVar", json!({"name": name, "value": name})).await;
    }
    let before = variable_names(&call(&client, "ListVars", json!({})).await);
    assert_eq!(
        before,
        [
            "Rule/Agent/Plans",
            "Rule/Agent/TODO",
            "Rule/Agent/VarRef",
            "c",
            "d",
            "e"
        ]
    );
    client.cancel().await.unwrap();

    let client = durable_client(&place, &["--config", &config]).await;
    let after = variable_names(&call(&client, "ListVars", json!({})).await);
    assert_eq!(after, before);
    client.cancel().await.unwrap();
}

/// An export file without the moment it was made.
fn without_time(path: &Path) -> Value {
    let mut export: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    export.as_object_mut().unwrap().remove("exportedAt");
    export
}

/// Exports a workspace to a file with `place`'s store.
fn export_to(place: &Place, file: &Path) {
    let (_, stderr, ok) = run_command(&place.with(&[
        "workspace",
        "export",
        "default",
        "--output",
        file.to_str().unwrap(),
    ]));
    assert!(ok, "{stderr}");
}

#[tokio::test]
async fn a_workspace_moves_between_sqlite_and_postgres_and_back_unchanged() {
    let Some(postgres) = Place::postgres() else {
        return;
    };
    let sqlite = Place::sqlite();
    let client = durable_client(&sqlite, &[]).await;
    fill_workspace(&client).await;
    client.cancel().await.unwrap();
    let from_sqlite = sqlite.path().join("from-sqlite.json");
    export_to(&sqlite, &from_sqlite);

    let (out, stderr, ok) =
        run_command(&postgres.with(&["workspace", "import", from_sqlite.to_str().unwrap()]));
    assert!(
        ok && out.contains("imported 11 variables and 1 snapshots"),
        "{out}{stderr}"
    );
    let from_postgres = postgres.path().join("from-postgres.json");
    export_to(&postgres, &from_postgres);
    assert_eq!(without_time(&from_sqlite), without_time(&from_postgres));

    let back = Place::sqlite();
    let (_, stderr, ok) =
        run_command(&back.with(&["workspace", "import", from_postgres.to_str().unwrap()]));
    assert!(ok, "{stderr}");
    let again = back.path().join("again.json");
    export_to(&back, &again);
    assert_eq!(without_time(&from_sqlite), without_time(&again));
}

/// Variables (one pooled), a state value, a template, a character's function and a snapshot;
/// returns the snapshot's id.
async fn fill_workspace(client: &crate::common::Client) -> Value {
    call(
        client,
        "WriteVar",
        json!({"name": "unicode", "value": "héllo 😀 \u{0} \"quoted\"\n", "tags": ["x"]}),
    )
    .await;
    call(
        client,
        "WriteVar",
        json!({"name": "pooled", "value": "p".repeat(5_000)}),
    )
    .await;
    call(
        client,
        "WriteState",
        json!({"path": "plan.step", "value": 3}),
    )
    .await;
    call(
        client,
        "TemplateSet",
        json!({"characterId": "hero", "template": {"hp": 10, "bio": "b".repeat(100)}}),
    )
    .await;
    call(client, "FunctionUpsert", json!({"characterId": "hero", "function": {"name": "HEAL", "type": "active", "pattern": "@\\.HEAL\\((\\d+)\\)", "executor": "snapshot.hp += args[0];"}})).await;
    let applied = call(
        client,
        "SnapshotApply",
        json!({"chatFile": "c", "characterId": "hero", "text": "@.HEAL(5)"}),
    )
    .await;
    applied.structured_content.clone().unwrap()["snapshotId"].clone()
}

async fn export_delete_import_restores_the_workspace_byte_for_byte(place: Place) {
    let client = durable_client(&place, &[]).await;
    let snapshot_id = fill_workspace(&client).await;
    client.cancel().await.unwrap();

    let first = place.path().join("first.json");
    let (_, stderr, ok) = run_command(&place.with(&[
        "workspace",
        "export",
        "default",
        "--output",
        first.to_str().unwrap(),
    ]));
    assert!(ok, "{stderr}");
    let mut outputs = Transcript::default();
    let (out, stderr, ok) = run_command(&place.with(&["workspace", "delete", "default", "--yes"]));
    assert!(ok, "{stderr}");
    outputs.add("workspace delete default --yes", &out);
    let (out, _, _) = run_command(&place.with(&["workspace", "list"]));
    outputs.add("workspace list", &out);
    let (out, stderr, ok) =
        run_command(&place.with(&["workspace", "import", first.to_str().unwrap()]));
    assert!(ok, "{stderr}");
    outputs.add("workspace import", &out);
    let (_, stderr, refused) =
        run_command(&place.with(&["workspace", "import", first.to_str().unwrap()]));
    assert!(!refused);
    outputs.add("workspace import again, stderr", &stderr);
    outputs.assert_golden(&format!("store/{}-delete-and-import.txt", place.kind()));

    let second = place.path().join("second.json");
    run_command(&place.with(&[
        "workspace",
        "export",
        "default",
        "--output",
        second.to_str().unwrap(),
    ]));
    assert_eq!(without_time(&first), without_time(&second));
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(crate::common::manifest("schemas/workspace-export.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(schema["title"], json!("WorkspaceExport"));

    let client = durable_client(&place, &[]).await;
    let read = call(&client, "ReadVar", json!({"name": "unicode"})).await;
    assert!(text(&read).ends_with("\nhéllo 😀 \u{0} \"quoted\"\n"));
    let snapshot = call(&client, "SnapshotGet", json!({"id": snapshot_id})).await;
    assert_eq!(
        snapshot.structured_content.unwrap()["snapshot"],
        json!({"hp": 15, "bio": "b".repeat(100)})
    );
    let state = call(&client, "ReadState", json!({"path": "plan.step"})).await;
    assert!(text(&state).ends_with("\n3"), "{}", text(&state));
    let again = call(
        &client,
        "SnapshotApply",
        json!({"chatFile": "c", "characterId": "hero", "text": "@.HEAL(1)"}),
    )
    .await;
    assert_eq!(
        again.structured_content.unwrap()["snapshot"]["hp"],
        json!(11),
        "the template and the function came back"
    );
    client.cancel().await.unwrap();
}

/// A store that fails under a running server is an error the client reads without where the
/// store is (review finding: it named the database's path or URL).
#[tokio::test]
async fn a_failing_store_is_reported_without_where_it_is() {
    let Some(place) = Place::postgres() else {
        return;
    };
    let client = durable_client(&place, &[]).await;
    let written = call(&client, "WriteVar", json!({"name": "a", "value": "1"})).await;
    assert!(!is_error(&written), "{}", text(&written));
    crate::postgres_server::drop_database(&place.store[1]);
    let failed =
        crate::common::call_error(&client, "WriteVar", json!({"name": "b", "value": "2"})).await;
    let database = place.store[1].rsplit('/').next().unwrap();
    assert!(
        !failed.contains("127.0.0.1")
            && !failed.contains("postgres://")
            && !failed.contains(database),
        "{failed}"
    );
    assert_golden_text("store/failing-store.txt", &failed);
    client.cancel().await.unwrap();
}

#[test]
fn doctor_reports_the_store_and_its_integrity() {
    let directory = tempfile::tempdir().unwrap();
    let data = directory.path().display().to_string();
    let (out, stderr, ok) = run_command(&["doctor", "--data-dir", &data]);
    assert!(ok, "{stderr}");
    let mut outputs = Transcript::default();
    outputs.add("doctor", &out);
    let (_, stderr, ok) = run_command(&["doctor", "--store", "memory"]);
    assert!(!ok);
    outputs.add("doctor of a memory store, stderr", &stderr);
    outputs.assert_golden("store/doctor.txt");
}

#[test]
fn doctor_reports_a_postgres_store() {
    let Some(place) = Place::postgres() else {
        return;
    };
    let (out, stderr, ok) = run_command(&place.with(&["doctor"]));
    assert!(ok, "{stderr}");
    assert_golden_text("store/doctor-postgres.txt", &out);
}

#[test]
fn an_unreachable_postgres_store_stops_the_server_with_the_reason() {
    let (out, stderr, ok) = run_command(&["--store", "postgres://nobody:secret@127.0.0.1:1/none"]);
    assert!(!ok && out.is_empty(), "no silent fallback to memory");
    assert!(
        !stderr.contains("secret"),
        "the password is never shown: {stderr}"
    );
    assert_golden_text("store/postgres-unreachable.txt", &error_part(&stderr));
}

#[test]
fn broken_stores_are_refused_at_start_with_the_reason() {
    let directory = tempfile::tempdir().unwrap();
    let blocker = directory.path().join("a-file");
    std::fs::write(&blocker, "").unwrap();
    let unwritable = blocker.join("data").display().to_string();
    let (out, stderr, ok) = run_command(&["--data-dir", &unwritable]);
    assert!(!ok && out.is_empty(), "no silent fallback to memory");
    let mut refusals = Transcript::default();
    refusals.add("an unwritable data folder", &error_part(&stderr));

    let corrupt = directory.path().join("corrupt");
    std::fs::create_dir(&corrupt).unwrap();
    std::fs::write(
        corrupt.join("synapse.db"),
        "this is not a database at all, just text ".repeat(200),
    )
    .unwrap();
    let (_, stderr, ok) = run_command(&["--data-dir", corrupt.to_str().unwrap()]);
    assert!(!ok);
    refusals.add("a corrupt database", &error_part(&stderr));

    let newer = directory.path().join("newer");
    std::fs::create_dir(&newer).unwrap();
    let connection = rusqlite::Connection::open(newer.join("synapse.db")).unwrap();
    connection
        .execute_batch("CREATE TABLE future (x); PRAGMA user_version = 99;")
        .unwrap();
    drop(connection);
    let (_, stderr, ok) = run_command(&["--data-dir", newer.to_str().unwrap()]);
    assert!(!ok);
    refusals.add("a database of a newer schema", &error_part(&stderr));
    let (_, _, ok) = run_command(&["doctor", "--data-dir", newer.to_str().unwrap()]);
    assert!(!ok);
    let still: i64 = rusqlite::Connection::open(newer.join("synapse.db"))
        .unwrap()
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .unwrap();
    assert_eq!(still, 99, "a newer database is never rewritten");
    refusals.assert_golden("store/broken-stores.txt");
}

/// `workspace put`: a file written into a variable from the command line while a server runs
/// on the store is read by that server's next call, whole and typed `USER_ADD`; JSON with
/// `--json`; a file that is not text, not JSON with `--json`, a name that is not one, or a
/// rule's name, is refused naming it, with nothing stored changed.
async fn a_file_put_from_the_command_line_is_the_users_and_read_by_the_running_server(
    place: Place,
) {
    let client = durable_client(&place, &[]).await;
    call(
        &client,
        "WriteVar",
        json!({"name": "mine", "value": "the model's"}),
    )
    .await;
    let notes = place.path().join("notes.md");
    std::fs::write(&notes, "# Notes\nsecond line, ünïcode\n").unwrap();
    let put = |arguments: &[&str]| {
        let mut all = vec!["workspace", "put"];
        all.extend_from_slice(arguments);
        run_command(&place.with(&all))
    };
    let notes = notes.to_str().unwrap();
    let (out, stderr, ok) = put(&["notes", notes, "--desc", "my notes", "--tag", "mine"]);
    assert!(ok, "{stderr}");
    assert!(
        out.starts_with(
            "wrote variable `notes` (USER_ADD, 29 characters) in workspace `default` in "
        ),
        "{out}"
    );
    let read = call(&client, "ReadVar", json!({"name": "notes"})).await;
    assert!(
        text(&read).ends_with("\n# Notes\nsecond line, ünïcode\n"),
        "{}",
        text(&read)
    );
    let listed = call(&client, "ListVars", json!({"filter": {"type": "USER_ADD"}})).await;
    let mut entry = listed.structured_content.unwrap()["variables"][0].clone();
    entry.as_object_mut().unwrap().remove("updated");
    assert_eq!(
        entry,
        json!({"name": "notes", "length": 29, "type": "USER_ADD", "desc": "my notes", "tags": ["mine"]})
    );

    let data = place.path().join("data.json");
    std::fs::write(&data, r#"{"rows": [1, 2]}"#).unwrap();
    let (_, stderr, ok) = put(&["data", data.to_str().unwrap(), "--json"]);
    assert!(ok, "{stderr}");
    let sliced = call(
        &client,
        "WriteVar",
        json!({"name": "copy", "value": "$VAR_REF{{data}}"}),
    )
    .await;
    assert_eq!(
        call(&client, "ReadVar", json!({"name": "copy"}))
            .await
            .structured_content,
        call(&client, "ReadVar", json!({"name": "data"}))
            .await
            .structured_content,
        "{sliced:?}"
    );

    let mut outputs = Transcript::default();
    let binary = place.path().join("binary");
    std::fs::write(&binary, [0x61, 0xff, 0x62]).unwrap();
    let (_, stderr, ok) = put(&["bad", binary.to_str().unwrap()]);
    assert!(!ok);
    outputs.add(
        "a file that is not UTF-8",
        &stderr.replace(&*place.path().to_string_lossy(), "DIR"),
    );
    let (_, stderr, ok) = put(&["bad", notes, "--json"]);
    assert!(!ok);
    outputs.add(
        "--json with a file that is not JSON",
        &stderr.replace(&*place.path().to_string_lossy(), "DIR"),
    );
    let (_, stderr, ok) = put(&["bad:name", notes]);
    assert!(!ok);
    outputs.add("a name that is not one", &stderr);
    let (_, stderr, ok) = put(&["Rule/Agent/TODO", notes]);
    assert!(!ok);
    outputs.add("a rule", &stderr);
    outputs.assert_golden("store/put-refused.txt");
    let names = variable_names(&call(&client, "ListVars", json!({})).await);
    let rules = ["Rule/Agent/Plans", "Rule/Agent/TODO", "Rule/Agent/VarRef"];
    assert_eq!(
        names,
        [&rules[..], &["copy", "data", "mine", "notes"]].concat()
    );
    client.cancel().await.unwrap();
}
