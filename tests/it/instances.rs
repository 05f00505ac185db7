//! Two `serve --http` processes on one real PostgreSQL server (started by the test harness)
//! behave as one: a write acknowledged by one is read by the other at once; subscribers of one
//! hear of writes made on the other; concurrent writers on both keep the workspace's capacity,
//! each overflow evicting one variable once; an instance killed with SIGKILL loses nothing it
//! acknowledged, and its clients carry on on the other one; the connection that listens for the
//! other instance's changes comes back when it is cut; a write waiting on the database holds up
//! no other request, and is not shown before it is committed.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use pretty_assertions::assert_eq;
use rmcp::model::SubscribeRequestParams;
use serde_json::{Value, json};

use crate::common::{Client, Elicitation, TestClient, call, is_error, text, wait_for};
use crate::http::{HttpServer, add_token, initialize};

/// The workspace every test's token opens.
const WORKSPACE: &str = "team";

/// Another workspace the token may use.
const ELSEWHERE: &str = "elsewhere";

/// Two instances on one database, with one token for both.
struct Pair {
    first: HttpServer,
    second: HttpServer,
    token: String,
    /// The database's URL.
    url: String,
    /// Holds the shared tokens and configuration files.
    _shared: tempfile::TempDir,
}

impl Pair {
    /// Two servers on a new database, with `config` (TOML) as their configuration file; `None`
    /// when PostgreSQL is not installed (outside CI).
    async fn start(config: &str) -> Option<Self> {
        let url = crate::postgres_server::database()?;
        let shared = tempfile::tempdir().unwrap();
        let tokens = shared.path().join("tokens.toml");
        std::fs::write(&tokens, "").unwrap();
        let token = add_token(&tokens, "alice", &[WORKSPACE, ELSEWHERE], false);
        let config_file = shared.path().join("config.toml");
        std::fs::write(&config_file, config).unwrap();
        let first = start(&tokens, &url, &config_file).await;
        let second = start(&tokens, &url, &config_file).await;
        Some(Self {
            first,
            second,
            token,
            url,
            _shared: shared,
        })
    }

    async fn client(&self, server: &HttpServer, observer: TestClient) -> Client {
        server.client("/mcp", &self.token, observer).await
    }
}

async fn start(tokens: &Path, url: &str, config: &Path) -> HttpServer {
    HttpServer::start_with(
        tempfile::tempdir().unwrap(),
        tokens,
        url,
        &["--config", config.to_str().unwrap()],
    )
    .await
}

fn observer() -> TestClient {
    TestClient::new(Elicitation::Unsupported)
}

/// A call that must succeed; its structured content.
async fn succeed(client: &Client, tool: &str, arguments: Value) -> Value {
    let result = call(client, tool, arguments).await;
    assert!(!is_error(&result), "{tool}: {result:?}");
    result.structured_content.unwrap_or(Value::Null)
}

/// The capacity `ListVars` reports, and each variable it shows with its description.
async fn listed(client: &Client) -> (u64, HashMap<String, String>) {
    let listing = succeed(client, "ListVars", json!({})).await;
    let variables = listing["variables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|variable| {
            let description = variable["desc"].as_str().unwrap_or_default().to_owned();
            (variable["name"].as_str().unwrap().to_owned(), description)
        })
        .collect();
    (listing["capacity"].as_u64().unwrap(), variables)
}

/// The names of the variables `ListVars` shows.
async fn names(client: &Client) -> BTreeSet<String> {
    listed(client).await.1.into_keys().collect()
}

/// A client on the second instance subscribed to `var://topic` (written there first) with what
/// it is notified of, and a client on the first.
#[expect(
    deprecated,
    reason = "resources/subscribe is how initialize-era clients subscribe"
)]
async fn watching_topic(pair: &Pair) -> (TestClient, Client, Client) {
    let watcher = observer();
    let watching = pair.client(&pair.second, watcher.clone()).await;
    succeed(
        &watching,
        "WriteVar",
        json!({"name": "topic", "value": "ants"}),
    )
    .await;
    watching
        .subscribe(SubscribeRequestParams::new("var://topic"))
        .await
        .unwrap();
    let writer = pair.client(&pair.first, observer()).await;
    (watcher, watching, writer)
}

#[tokio::test]
async fn a_write_acknowledged_by_one_instance_is_read_by_the_other_at_once() {
    let Some(pair) = Pair::start("").await else {
        return;
    };
    let on_first = pair.client(&pair.first, observer()).await;
    let on_second = pair.client(&pair.second, observer()).await;
    // Each instance has the workspace open (and in memory) before the other writes.
    succeed(&on_second, "ListVars", json!({})).await;
    for round in 0..5 {
        let value = format!("bees {round}");
        succeed(
            &on_first,
            "WriteVar",
            json!({"name": "topic", "value": value}),
        )
        .await;
        let read = call(&on_second, "ReadVar", json!({"name": "topic"})).await;
        assert!(text(&read).contains(&value), "round {round}: {read:?}");
        // And back the other way, a patch of one field included.
        succeed(
            &on_second,
            "WriteVar",
            json!({"name": "topic", "desc": format!("round {round}")}),
        )
        .await;
        let read = call(&on_first, "ReadVar", json!({"name": "topic"})).await;
        assert!(text(&read).contains(&value), "round {round}: {read:?}");
        let (_, descriptions) = listed(&on_first).await;
        assert_eq!(descriptions["topic"], format!("round {round}"));
    }
    // A write on the second right after one on the first, with no read between: the second
    // decides create-or-update on what the store holds, so the value stays.
    for round in 0..5 {
        let name = format!("fresh-{round}");
        succeed(
            &on_first,
            "WriteVar",
            json!({"name": name, "value": "kept"}),
        )
        .await;
        succeed(
            &on_second,
            "WriteVar",
            json!({"name": name, "desc": "described"}),
        )
        .await;
        let read = call(&on_first, "ReadVar", json!({"name": name})).await;
        assert!(text(&read).contains("kept"), "{name}: {read:?}");
    }
    succeed(&on_second, "RemoveVars", json!({"names": ["topic"]})).await;
    let gone = call(&on_first, "ReadVar", json!({"name": "topic"})).await;
    assert!(is_error(&gone), "{gone:?}");
    succeed(
        &on_first,
        "WriteState",
        json!({"path": "plan.step", "value": 3}),
    )
    .await;
    let state = call(&on_second, "ReadState", json!({"path": "plan.step"})).await;
    assert!(text(&state).contains('3'), "{state:?}");
    on_first.cancel().await.unwrap();
    on_second.cancel().await.unwrap();
}

#[tokio::test]
#[expect(
    deprecated,
    reason = "resources/subscribe is how initialize-era clients subscribe"
)]
async fn subscribers_on_one_instance_hear_of_changes_made_on_the_other() {
    let Some(pair) = Pair::start("").await else {
        return;
    };
    let (watcher, watching, writer) = watching_topic(&pair).await;
    watching
        .subscribe(SubscribeRequestParams::new("state://plan"))
        .await
        .unwrap();
    let before = watcher.count("resources/list_changed");
    succeed(
        &writer,
        "WriteVar",
        json!({"name": "topic", "value": "bees"}),
    )
    .await;
    wait_for(&watcher, "resources/updated var://topic").await;
    // A new variable changes what `resources/list` shows.
    succeed(
        &writer,
        "WriteVar",
        json!({"name": "fresh", "value": "wasps"}),
    )
    .await;
    watcher
        .wait_for_more("resources/list_changed", before)
        .await;
    succeed(
        &writer,
        "WriteState",
        json!({"path": "plan", "value": {"step": 1}}),
    )
    .await;
    wait_for(&watcher, "resources/updated state://plan").await;
    // A tool group switched off on the first is switched off on the second, which says so.
    let approving = pair
        .client(
            &pair.first,
            TestClient::new(Elicitation::Accept(json!({"approve": true}))),
        )
        .await;
    let before = watcher.count("tools/list_changed");
    succeed(
        &approving,
        "ToolGroups",
        json!({"action": "disable", "group": "snapshots"}),
    )
    .await;
    watcher.wait_for_more("tools/list_changed", before).await;
    let tools = watching.list_all_tools().await.unwrap();
    assert!(
        !tools.iter().any(|tool| tool.name == "SnapshotGet"),
        "{tools:?}"
    );
    approving.cancel().await.unwrap();
    // The instance that made the changes does not hear them twice: its own subscriber gets
    // one update per write.
    let own = observer();
    let own_client = pair.client(&pair.first, own.clone()).await;
    own_client
        .subscribe(SubscribeRequestParams::new("var://topic"))
        .await
        .unwrap();
    succeed(
        &writer,
        "WriteVar",
        json!({"name": "topic", "value": "moths"}),
    )
    .await;
    wait_for(&own, "resources/updated var://topic").await;
    succeed(&writer, "WriteVar", json!({"name": "marker", "value": "m"})).await;
    own.wait_for_more("resources/list_changed", 0).await;
    assert_eq!(
        own.count("resources/updated var://topic"),
        1,
        "{:?}",
        own.notifications()
    );
    for client in [watching, writer, own_client] {
        client.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn concurrent_writers_on_two_instances_keep_the_capacity_and_evict_once_per_overflow() {
    const CAPACITY: usize = 12;
    const WRITERS_PER_INSTANCE: usize = 3;
    const WRITES: usize = 12;
    let Some(pair) = Pair::start(&format!("capacity = {CAPACITY}\n")).await else {
        return;
    };
    let mut writers = Vec::new();
    for instance in 0..2 {
        for writer in 0..WRITERS_PER_INSTANCE {
            let server = if instance == 0 {
                &pair.first
            } else {
                &pair.second
            };
            let client = pair.client(server, observer()).await;
            writers.push(tokio::spawn(async move {
                let mut acknowledged = HashMap::new();
                for write in 0..WRITES {
                    let name = format!("w{instance}-{writer}-{write}");
                    let value = format!("value of {name}");
                    let written =
                        succeed(&client, "WriteVar", json!({"name": name, "value": value})).await;
                    let evicted: Vec<String> = written["evicted"]
                        .as_array()
                        .map(|names| {
                            names
                                .iter()
                                .map(|name| name.as_str().unwrap().to_owned())
                                .collect()
                        })
                        .unwrap_or_default();
                    acknowledged.insert(name, (value, evicted));
                }
                client.cancel().await.unwrap();
                acknowledged
            }));
        }
    }
    let mut acknowledged = HashMap::new();
    for writer in writers {
        acknowledged.extend(writer.await.unwrap());
    }
    let total = 2 * WRITERS_PER_INSTANCE * WRITES;
    assert_eq!(acknowledged.len(), total);
    let mut evicted = Vec::new();
    for (_, names) in acknowledged.values() {
        evicted.extend(names.iter().cloned());
    }
    let evicted_once: BTreeSet<String> = evicted.iter().cloned().collect();
    assert_eq!(
        evicted.len(),
        evicted_once.len(),
        "a variable evicted twice: {evicted:?}"
    );
    let on_first = pair.client(&pair.first, observer()).await;
    let on_second = pair.client(&pair.second, observer()).await;
    let (capacity, _) = listed(&on_first).await;
    assert_eq!(capacity, CAPACITY as u64);
    let survivors = names(&on_first).await;
    assert_eq!(
        names(&on_second).await,
        survivors,
        "both instances see one workspace"
    );
    let ours: BTreeSet<String> = survivors
        .iter()
        .filter(|name| acknowledged.contains_key(*name))
        .cloned()
        .collect();
    assert!(
        survivors.len() <= CAPACITY,
        "{} variables: {survivors:?}",
        survivors.len()
    );
    // Every acknowledged write is either still there, with its value, or was evicted (and
    // reported so to the writer that caused it), never both and never neither.
    let all: BTreeSet<String> = acknowledged.keys().cloned().collect();
    assert_eq!(ours.intersection(&evicted_once).count(), 0);
    let accounted: BTreeSet<String> = ours.union(&evicted_once).cloned().collect();
    assert_eq!(accounted, all);
    assert_eq!(
        evicted.len(),
        total - ours.len(),
        "one eviction per overflow"
    );
    for name in &ours {
        let read = call(&on_second, "ReadVar", json!({"name": name})).await;
        assert!(
            text(&read).contains(&acknowledged[name].0),
            "{name}: {read:?}"
        );
    }
    on_first.cancel().await.unwrap();
    on_second.cancel().await.unwrap();
}

#[tokio::test]
async fn a_killed_instance_loses_nothing_acknowledged_and_its_clients_continue_on_the_other() {
    let Some(mut pair) = Pair::start("").await else {
        return;
    };
    let on_first = pair.client(&pair.first, observer()).await;
    for index in 0..10 {
        succeed(
            &on_first,
            "WriteVar",
            json!({"name": format!("kept-{index}"), "value": format!("value {index}")}),
        )
        .await;
    }
    // A raw session on the first instance, as a client that will be moved to the second.
    let session = session_of(&pair.first, &pair.token).await;
    pair.first.child.start_kill().unwrap();
    pair.first.child.wait().await.unwrap();

    let on_second = pair.client(&pair.second, observer()).await;
    for index in 0..10 {
        let read = call(
            &on_second,
            "ReadVar",
            json!({"name": format!("kept-{index}")}),
        )
        .await;
        assert!(text(&read).contains(&format!("value {index}")), "{read:?}");
    }
    // The session the first instance held is unknown to the second: 404, so the client
    // initializes again, there.
    let listing = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let (status, body) = post_in_session(&pair.second, &pair.token, &session, &listing).await;
    assert_eq!(status, 404, "{body}");
    let (status, _, _) = pair
        .second
        .post("/mcp", Some(&pair.token), &initialize())
        .await;
    assert_eq!(status, 200);
    // A 2026-07-28 client has no session: it just sends its next request to the second.
    let modern = pair
        .second
        .modern_client(&format!("/mcp/{WORKSPACE}"), &pair.token, observer())
        .await;
    let read = call(&modern, "ReadVar", json!({"name": "kept-9"})).await;
    assert!(text(&read).contains("value 9"), "{read:?}");
    succeed(
        &modern,
        "WriteVar",
        json!({"name": "after", "value": "the kill"}),
    )
    .await;
    let read = call(&on_second, "ReadVar", json!({"name": "after"})).await;
    assert!(text(&read).contains("the kill"), "{read:?}");
    modern.cancel().await.unwrap();
    on_second.cancel().await.unwrap();
}

/// A new initialize-era session's id on `server`.
async fn session_of(server: &HttpServer, token: &str) -> String {
    let response = raw_post(server, token, None, &initialize()).await;
    assert_eq!(response.status(), 200);
    response
        .headers()
        .get("mcp-session-id")
        .expect("a session id")
        .to_str()
        .unwrap()
        .to_owned()
}

/// A JSON-RPC POST to `/mcp`, in `session` if one is given; the status and the body.
async fn post_in_session(
    server: &HttpServer,
    token: &str,
    session: &str,
    body: &Value,
) -> (u16, String) {
    let response = raw_post(server, token, Some(session), body).await;
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

async fn raw_post(
    server: &HttpServer,
    token: &str,
    session: Option<&str>,
    body: &Value,
) -> reqwest::Response {
    let mut request = crate::http::http_client()
        .post(server.url("/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .bearer_auth(token)
        .body(body.to_string());
    if let Some(session) = session {
        request = request
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", "2025-06-18");
    }
    request.send().await.unwrap()
}

#[tokio::test]
async fn the_connection_listening_for_the_other_instance_comes_back_when_it_is_cut() {
    let Some(pair) = Pair::start("").await else {
        return;
    };
    let (watcher, watching, writer) = watching_topic(&pair).await;
    succeed(
        &writer,
        "WriteVar",
        json!({"name": "topic", "value": "bees"}),
    )
    .await;
    wait_for(&watcher, "resources/updated var://topic").await;
    // Cut both instances' listening connections, as a database restart or a proxy would.
    let (database, connection) = tokio_postgres::connect(&pair.url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let cut = database
        .query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE application_name = $1 AND datname = current_database()",
            &[&"synapse-mcp listener"],
        )
        .await
        .unwrap();
    assert_eq!(cut.len(), 2, "one listening connection per instance");
    // A change made while nobody listens is caught up with once listening begins again, and
    // changes made after are heard as before.
    for value in ["wasps", "moths"] {
        let before = watcher.count("resources/updated var://topic");
        succeed(
            &writer,
            "WriteVar",
            json!({"name": "topic", "value": value}),
        )
        .await;
        watcher
            .wait_for_more("resources/updated var://topic", before)
            .await;
    }
    watching.cancel().await.unwrap();
    writer.cancel().await.unwrap();
}

/// A write that loses the race to other commits many times in a row is decided again, after
/// pauses, until it commits: the database makes the next 45 conditional commits of the
/// workspace lose (a trigger bumps the sequence and skips the update, as another instance's
/// commit in between would), more than the 32 tries a write once had.
#[tokio::test]
async fn a_write_that_keeps_losing_the_race_is_made_once_it_wins() {
    let Some(pair) = Pair::start("").await else {
        return;
    };
    let writer = pair.client(&pair.first, observer()).await;
    // The workspace's row exists before the trigger is in place.
    succeed(&writer, "WriteVar", json!({"name": "first", "value": "1"})).await;
    let (database, connection) = tokio_postgres::connect(&pair.url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    // A sequence, not a table: `nextval` is not undone when the losing transaction is.
    database
        .batch_execute(
            "CREATE SEQUENCE lost_races; \
             CREATE FUNCTION lose_the_race() RETURNS trigger LANGUAGE plpgsql AS $$ \
             BEGIN \
               IF pg_trigger_depth() = 1 AND nextval('lost_races') <= 45 THEN \
                 UPDATE workspaces SET sequence = sequence + 1 WHERE name = NEW.name; \
                 RETURN NULL; \
               END IF; \
               RETURN NEW; \
             END $$; \
             CREATE TRIGGER lose_the_race BEFORE UPDATE ON workspaces \
               FOR EACH ROW EXECUTE FUNCTION lose_the_race();",
        )
        .await
        .unwrap();
    let written = call(
        &writer,
        "WriteVar",
        json!({"name": "contended", "value": "made"}),
    )
    .await;
    assert!(!is_error(&written), "{}", text(&written));
    let lost: i64 = database
        .query_one("SELECT last_value FROM lost_races", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(lost, 46, "45 lost races, then the one that won");
    let reader = pair.client(&pair.second, observer()).await;
    let read = call(&reader, "ReadVar", json!({"name": "contended"})).await;
    assert!(text(&read).ends_with("\nmade"), "{read:?}");
    writer.cancel().await.unwrap();
    reader.cancel().await.unwrap();
}

/// A write that keeps losing for the whole deadline gives up with an error that says so, and
/// changes nothing.
#[tokio::test]
async fn a_write_that_never_wins_gives_up_after_its_deadline_and_changes_nothing() {
    let Some(pair) = Pair::start("").await else {
        return;
    };
    let writer = pair.client(&pair.first, observer()).await;
    succeed(&writer, "WriteVar", json!({"name": "first", "value": "1"})).await;
    let (database, connection) = tokio_postgres::connect(&pair.url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    database
        .batch_execute(
            "CREATE FUNCTION always_lose() RETURNS trigger LANGUAGE plpgsql AS $$ \
             BEGIN \
               IF pg_trigger_depth() = 1 THEN \
                 UPDATE workspaces SET sequence = sequence + 1 WHERE name = NEW.name; \
                 RETURN NULL; \
               END IF; \
               RETURN NEW; \
             END $$; \
             CREATE TRIGGER always_lose BEFORE UPDATE ON workspaces \
               FOR EACH ROW EXECUTE FUNCTION always_lose();",
        )
        .await
        .unwrap();
    let started = std::time::Instant::now();
    let refused = crate::common::call_error(
        &writer,
        "WriteVar",
        json!({"name": "contended", "value": "never"}),
    )
    .await;
    let waited = started.elapsed();
    assert!(
        refused.contains("before this write for 5 s")
            && refused.contains("nothing was changed, try again"),
        "{refused}"
    );
    assert!(waited >= std::time::Duration::from_secs(5), "{waited:?}");
    database
        .batch_execute("DROP TRIGGER always_lose ON workspaces")
        .await
        .unwrap();
    let reader = pair.client(&pair.second, observer()).await;
    assert_eq!(
        names(&reader).await,
        [
            "Rule/Agent/Plans",
            "Rule/Agent/TODO",
            "Rule/Agent/VarRef",
            "first"
        ]
        .map(str::to_owned)
        .into()
    );
    writer.cancel().await.unwrap();
    reader.cancel().await.unwrap();
}

/// A write whose commit waits on the database (another transaction holds the workspace's row)
/// holds up no other request on the same instance: a read of another workspace is answered (the
/// waiting commit hands its runtime worker on, and the server has more than one), and so is a
/// read of the same workspace, which shows what is committed and not the write in flight.
#[tokio::test]
async fn a_write_waiting_on_the_database_holds_up_no_other_request() {
    let Some(pair) = Pair::start("").await else {
        return;
    };
    let writer = pair.client(&pair.first, observer()).await;
    let beside = pair.client(&pair.first, observer()).await;
    let elsewhere = pair
        .first
        .client(&format!("/mcp/{ELSEWHERE}"), &pair.token, observer())
        .await;
    succeed(&writer, "WriteVar", json!({"name": "first", "value": "1"})).await;
    succeed(
        &elsewhere,
        "WriteVar",
        json!({"name": "there", "value": "2"}),
    )
    .await;
    let (database, connection) = tokio_postgres::connect(&pair.url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    database
        .batch_execute(&format!(
            "BEGIN; SELECT 1 FROM workspaces WHERE name = '{WORKSPACE}' FOR UPDATE"
        ))
        .await
        .unwrap();
    let waiting = tokio::spawn(async move {
        let written = call(&writer, "WriteVar", json!({"name": "late", "value": "3"})).await;
        writer.cancel().await.unwrap();
        written
    });
    // The write's commit is waiting on the row lock.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let waits: i64 = database
            .query_one(
                "SELECT count(*) FROM pg_stat_activity \
                 WHERE wait_event_type = 'Lock' AND datname = current_database()",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        if waits == 1 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the write never reached the lock"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let read = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        call(&elsewhere, "ReadVar", json!({"name": "there"})),
    )
    .await
    .expect("a read of another workspace waited for the blocked write");
    assert!(text(&read).ends_with("\n2"), "{read:?}");
    let same = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        call(&beside, "ReadVar", json!({"name": "first"})),
    )
    .await
    .expect("a read of the same workspace waited for the blocked write");
    assert!(text(&same).ends_with("\n1"), "{same:?}");
    let pending = call(&beside, "ReadVar", json!({"name": "late"})).await;
    assert!(
        is_error(&pending) && text(&pending).contains("`late` not found"),
        "a write not yet committed was shown: {pending:?}"
    );
    assert!(
        !waiting.is_finished(),
        "the write went through a locked row"
    );
    database.batch_execute("ROLLBACK").await.unwrap();
    let written = waiting.await.unwrap();
    assert!(!is_error(&written), "{}", text(&written));
    let read = call(&elsewhere, "ListVars", json!({})).await;
    assert!(!is_error(&read), "{read:?}");
    let reader = pair.client(&pair.second, observer()).await;
    let read = call(&reader, "ReadVar", json!({"name": "late"})).await;
    assert!(text(&read).ends_with("\n3"), "{read:?}");
    let read = call(&beside, "ReadVar", json!({"name": "late"})).await;
    assert!(text(&read).ends_with("\n3"), "{read:?}");
    elsewhere.cancel().await.unwrap();
    beside.cancel().await.unwrap();
    reader.cancel().await.unwrap();
}
