//! `serve --http`: the real binary on a loopback port, driven by rmcp's Streamable HTTP client
//! (both eras) and by raw HTTP requests for what clients should be refused: no, wrong or
//! revoked tokens (401), another principal's workspace (403), a disallowed `Host`, a body past
//! the limit; and a read-only token, approvals per principal, a graceful SIGTERM.

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::Stdio;

use pretty_assertions::assert_eq;
use rmcp::ServiceExt;
use rmcp::model::ProtocolVersion;
use rmcp::service::{ClientLifecycleMode, serve_client_with_lifecycle};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::common::{
    Client, Elicitation, TestClient, Transcript, assert_golden_text, binary, call, error_part,
    every_group_unless_chosen, is_error, quiet_home, text,
};

/// A `serve --http` process on a free loopback port, with its tokens file.
pub(crate) struct HttpServer {
    pub(crate) child: Child,
    pub(crate) address: String,
    folder: tempfile::TempDir,
    /// Where its `/metrics` are, when started with `--metrics`.
    pub(crate) metrics: Option<String>,
    /// Its log lines from the one that says where it listens on.
    pub(crate) log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl HttpServer {
    /// Starts the binary with `args` after `serve --http 127.0.0.1:0 --tokens FILE`, and waits
    /// for the line that says where it listens.
    pub(crate) async fn start(args: &[&str]) -> Self {
        let folder = tempfile::tempdir().unwrap();
        let tokens = folder.path().join("tokens.toml");
        std::fs::write(&tokens, "").unwrap();
        Self::start_with(folder, &tokens, "memory", args).await
    }

    /// The same, with a tokens file and a store of the caller's (several servers may share
    /// them); `folder` lives as long as the server.
    pub(crate) async fn start_with(
        folder: tempfile::TempDir,
        tokens: &Path,
        store: &str,
        args: &[&str],
    ) -> Self {
        let mut child = Command::new(binary())
            .env("HOME", quiet_home())
            .args(["serve", "--http", "127.0.0.1:0", "--tokens"])
            .arg(tokens)
            .args(["--store", store])
            .args(if args.contains(&"--log-level") {
                &[][..]
            } else {
                &["--log-level", "info"][..]
            })
            .args(args)
            .args(every_group_unless_chosen(args))
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut metrics = None;
        let (address, first) = loop {
            let line = lines
                .next_line()
                .await
                .unwrap()
                .expect("the server says where it listens");
            if let Some((_, rest)) = line.split_once("metrics at http://") {
                metrics = Some(rest.split('/').next().unwrap().to_owned());
            }
            if let Some((_, rest)) = line.split_once("ready on http://") {
                break (rest.split('/').next().unwrap().to_owned(), line);
            }
        };
        let log = std::sync::Arc::new(std::sync::Mutex::new(vec![first]));
        let kept = std::sync::Arc::clone(&log);
        // The rest of its log goes to the test's stderr, shown when a test fails.
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                let _ = writeln!(std::io::stderr(), "{line}");
                kept.lock().unwrap().push(line);
            }
        });
        Self {
            child,
            address,
            folder,
            metrics,
            log,
        }
    }

    pub(crate) fn tokens(&self) -> PathBuf {
        self.folder.path().join("tokens.toml")
    }

    /// A new token from `token add`, as a user makes one.
    pub(crate) fn token(&self, principal: &str, workspaces: &[&str], read_only: bool) -> String {
        add_token(&self.tokens(), principal, workspaces, read_only)
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }

    /// rmcp's Streamable HTTP client on `path` with `token`, in the initialize era.
    pub(crate) async fn client(&self, path: &str, token: &str, client: TestClient) -> Client {
        client
            .serve(self.transport(path, token))
            .await
            .expect("initialize")
    }

    /// The same, in the 2026-07-28 era: no `initialize`, every request stateless.
    pub(crate) async fn modern_client(
        &self,
        path: &str,
        token: &str,
        client: TestClient,
    ) -> Client {
        let lifecycle = ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        };
        serve_client_with_lifecycle(client, self.transport(path, token), lifecycle)
            .await
            .expect("discover")
    }

    fn transport(&self, path: &str, token: &str) -> StreamableHttpClientTransport<reqwest::Client> {
        let mut config = StreamableHttpClientTransportConfig::with_uri(self.url(path));
        config.auth_header = Some(token.to_owned());
        StreamableHttpClientTransport::with_client(http_client(), config)
    }

    /// A session opened by a raw `initialize` at `path` with `token`: its id.
    pub(crate) async fn open_session(&self, path: &str, token: &str) -> String {
        let opened = http_client()
            .post(self.url(path))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .bearer_auth(token)
            .body(initialize().to_string())
            .send()
            .await
            .unwrap();
        opened.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_owned()
    }

    /// A raw `tools/list` at `path` in `session` with `token`: the status and the body.
    pub(crate) async fn list_in_session(
        &self,
        path: &str,
        session: &str,
        token: &str,
    ) -> (u16, String) {
        let response = http_client()
            .post(self.url(path))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", "2025-06-18")
            .bearer_auth(token)
            .body(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string())
            .send()
            .await
            .unwrap();
        (response.status().as_u16(), response.text().await.unwrap())
    }

    /// A raw JSON-RPC POST: the status, the `WWW-Authenticate` header, the body.
    pub(crate) async fn post(
        &self,
        path: &str,
        token: Option<&str>,
        body: &Value,
    ) -> (u16, String, String) {
        self.send(reqwest::Method::POST, path, token, Some(body))
            .await
    }

    /// A raw request with any method, with or without a token and a JSON body: the status, the
    /// `WWW-Authenticate` header, the body.
    pub(crate) async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        token: Option<&str>,
        body: Option<&Value>,
    ) -> (u16, String, String) {
        let mut request = http_client()
            .request(method, self.url(path))
            .header("accept", "application/json, text/event-stream");
        if let Some(body) = body {
            request = request
                .header("content-type", "application/json")
                .body(body.to_string());
        }
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let challenge = response
            .headers()
            .get("www-authenticate")
            .map(|value| value.to_str().unwrap().to_owned())
            .unwrap_or_default();
        (status, challenge, response.text().await.unwrap_or_default())
    }
}

/// An HTTP client. reqwest is built with rustls (for the server's `git+https` skill sources), so
/// a process-wide crypto provider must be installed before a client is built, plain HTTP or not.
pub(crate) fn http_client() -> reqwest::Client {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Two tests can race here: the loser is told one is installed already, which is all it
        // needs.
        rustls::crypto::ring::default_provider()
            .install_default()
            .ok();
    }
    reqwest::Client::new()
}

pub(crate) fn add_token(
    tokens: &Path,
    principal: &str,
    workspaces: &[&str],
    read_only: bool,
) -> String {
    let mut command = std::process::Command::new(binary());
    command
        .args(["token", "add", "--tokens"])
        .arg(tokens)
        .args(["--principal", principal, "--workspace", workspaces[0]]);
    for other in &workspaces[1..] {
        command.args(["--allow", other]);
    }
    if read_only {
        command.arg("--read-only");
    }
    let output = command.output().unwrap();
    assert!(output.status.success(), "{output:?}");
    let token = String::from_utf8(output.stdout).unwrap();
    assert_eq!(
        token.lines().count(),
        1,
        "only the token on stdout: {token}"
    );
    token.trim().to_owned()
}

pub(crate) fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}})
}

#[tokio::test]
async fn tools_are_listed_and_called_over_http_in_both_eras() {
    let server = HttpServer::start(&[]).await;
    let token = server.token("alice", &["research"], false);
    let client = server
        .client("/mcp", &token, TestClient::new(Elicitation::Unsupported))
        .await;
    let tools = client.list_all_tools().await.unwrap();
    assert!(tools.iter().any(|tool| tool.name == "WriteVar"));
    let written = call(
        &client,
        "WriteVar",
        json!({"name": "topic", "value": "bees"}),
    )
    .await;
    assert!(!is_error(&written), "{written:?}");
    client.cancel().await.unwrap();

    let modern = server
        .modern_client(
            "/mcp/research",
            &token,
            TestClient::new(Elicitation::Unsupported),
        )
        .await;
    let tools = modern.list_all_tools().await.unwrap();
    assert!(tools.iter().any(|tool| tool.name == "ReadVar"));
    // The same principal's workspace, across eras and sessions: the token decides it.
    let read = call(&modern, "ReadVar", json!({"name": "topic"})).await;
    assert_golden_text("http/read-modern.txt", &text(&read));
    modern.cancel().await.unwrap();
}

#[tokio::test]
async fn each_workspace_keeps_its_own_variables() {
    let server = HttpServer::start(&[]).await;
    let alice = server.token("alice", &["research", "shared"], false);
    let bob = server.token("bob", &["shared"], false);
    let in_research = server
        .client("/mcp", &alice, TestClient::new(Elicitation::Unsupported))
        .await;
    call(
        &in_research,
        "WriteVar",
        json!({"name": "note", "value": "private"}),
    )
    .await;
    in_research.cancel().await.unwrap();
    let in_shared = server
        .client(
            "/mcp/shared",
            &alice,
            TestClient::new(Elicitation::Unsupported),
        )
        .await;
    call(
        &in_shared,
        "WriteVar",
        json!({"name": "note", "value": "for bob"}),
    )
    .await;
    in_shared.cancel().await.unwrap();
    let bobs = server
        .client("/mcp", &bob, TestClient::new(Elicitation::Unsupported))
        .await;
    let read = call(&bobs, "ReadVar", json!({"name": "note"})).await;
    assert_golden_text("http/read-bobs.txt", &text(&read));
    bobs.cancel().await.unwrap();
}

#[tokio::test]
async fn no_wrong_or_revoked_token_gets_401_with_a_bearer_challenge() {
    let server = HttpServer::start(&[]).await;
    let token = server.token("alice", &["research"], false);
    let (status, challenge, _) = server.post("/mcp", None, &initialize()).await;
    assert_eq!((status, challenge.starts_with("Bearer")), (401, true));
    let (status, challenge, _) = server
        .post("/mcp", Some("syn_not-a-token"), &initialize())
        .await;
    assert_eq!(status, 401);
    assert!(challenge.contains("invalid_token"), "{challenge}");
    assert_eq!(
        server.post("/mcp", Some(&token), &initialize()).await.0,
        200
    );

    let output = std::process::Command::new(binary())
        .args(["token", "revoke", "--principal", "alice", "--tokens"])
        .arg(server.tokens())
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let (status, challenge, body) = server.post("/mcp", Some(&token), &initialize()).await;
    assert_eq!(status, 401, "{body}");
    assert!(challenge.starts_with("Bearer"), "{challenge}");
}

#[tokio::test]
async fn another_principals_workspace_is_403_on_every_route() {
    let server = HttpServer::start(&[]).await;
    let alice = server.token("alice", &["research"], false);
    server.token("bob", &["bobs"], false);
    let requests = [
        initialize(),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
               "params": {"name": "ReadVar", "arguments": {"name": "x"}}}),
        json!({"jsonrpc": "2.0", "id": 4, "method": "resources/list"}),
        json!({"jsonrpc": "2.0", "id": 5, "method": "resources/read", "params": {"uri": "state://"}}),
        json!({"jsonrpc": "2.0", "id": 6, "method": "prompts/list"}),
        json!({"jsonrpc": "2.0", "id": 7, "method": "prompts/get", "params": {"name": "tool-rules"}}),
    ];
    for request in &requests {
        let (status, _, body) = server.post("/mcp/bobs", Some(&alice), request).await;
        assert_eq!(status, 403, "{request}: {body}");
        assert!(body.contains("may not use workspace `bobs`"), "{body}");
    }
}

#[tokio::test]
async fn a_session_is_not_found_with_another_principals_token() {
    let server = HttpServer::start(&[]).await;
    let alice = server.token("alice", &["team"], false);
    let bob = server.token("bob", &["team"], false);
    let session = server.open_session("/mcp", &alice).await;
    let list = |token| server.list_in_session("/mcp", &session, token);
    assert_eq!(list(&bob).await.0, 404);
    assert_ne!(list(&alice).await.0, 404);
}

#[tokio::test]
async fn a_read_only_token_reads_but_is_refused_a_write() {
    let server = HttpServer::start(&[]).await;
    let token = server.token("auditor", &["research"], true);
    let client = server
        .client("/mcp", &token, TestClient::new(Elicitation::Unsupported))
        .await;
    let refused = call(&client, "WriteVar", json!({"name": "x", "value": "y"})).await;
    assert!(is_error(&refused), "{refused:?}");
    assert_golden_text("http/read-only-refused.txt", &text(&refused));
    let listed = call(&client, "ListVars", json!({})).await;
    assert!(!is_error(&listed), "{listed:?}");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn ask_once_approvals_are_remembered_per_principal() {
    let folder = tempfile::tempdir().unwrap();
    let config = folder.path().join("config.toml");
    std::fs::write(&config, "[tools.WriteVar]\nexecution = \"ask-once\"\n").unwrap();
    let server = HttpServer::start(&["--config", config.to_str().unwrap()]).await;
    let alice = server.token("alice", &["team"], false);
    let bob = server.token("bob", &["team"], false);
    let approve = || {
        TestClient::new(Elicitation::Accept(
            json!({"approve": true, "remember": true}),
        ))
    };

    let asker = approve();
    let client = server.client("/mcp", &alice, asker.clone()).await;
    call(&client, "WriteVar", json!({"name": "a", "value": "1"})).await;
    call(&client, "WriteVar", json!({"name": "b", "value": "2"})).await;
    assert_eq!(asker.asked().len(), 1, "alice is asked once");
    client.cancel().await.unwrap();

    let asker = approve();
    let client = server.client("/mcp", &bob, asker.clone()).await;
    let written = call(&client, "WriteVar", json!({"name": "c", "value": "3"})).await;
    assert!(!is_error(&written), "{written:?}");
    assert_eq!(asker.asked().len(), 1, "bob answers for himself");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_tool_switch_holds_in_its_own_workspace_only() {
    let server = HttpServer::start(&[]).await;
    let alice = server.token("alice", &["research", "shared"], false);
    let approving = || TestClient::new(Elicitation::Accept(json!({"approve": true})));
    let names = |tools: Vec<rmcp::model::Tool>| -> Vec<String> {
        tools
            .into_iter()
            .map(|tool| tool.name.into_owned())
            .collect()
    };
    let research = server.client("/mcp", &alice, approving()).await;
    let switched = call(
        &research,
        "ToolGroups",
        json!({"action": "disable", "group": "snapshots"}),
    )
    .await;
    assert!(!is_error(&switched), "{switched:?}");
    let in_research = names(research.list_all_tools().await.unwrap());
    assert!(
        !in_research.contains(&"SnapshotGet".to_owned()),
        "{in_research:?}"
    );
    research.cancel().await.unwrap();

    let shared = server.client("/mcp/shared", &alice, approving()).await;
    let in_shared = names(shared.list_all_tools().await.unwrap());
    assert!(
        in_shared.contains(&"SnapshotGet".to_owned()),
        "{in_shared:?}"
    );
    let listed = call(&shared, "ToolGroups", json!({})).await;
    let groups = &listed.structured_content.unwrap()["groups"];
    let snapshots = groups
        .as_array()
        .unwrap()
        .iter()
        .find(|group| group["name"] == "snapshots")
        .unwrap();
    assert_eq!(snapshots["enabled"], true, "{groups}");
    shared.cancel().await.unwrap();
}

#[tokio::test]
async fn a_body_past_the_limit_gets_413() {
    let server = HttpServer::start(&["--max-body-bytes", "2048"]).await;
    let token = server.token("alice", &["research"], false);
    let big = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                     "params": {"name": "WriteVar", "arguments": {"name": "x", "value": "y".repeat(4096)}}});
    let (status, _, body) = server.post("/mcp", Some(&token), &big).await;
    assert_eq!(status, 413, "{body}");
    assert_eq!(
        server.post("/mcp", Some(&token), &initialize()).await.0,
        200
    );
}

#[tokio::test]
async fn a_disallowed_host_is_refused_and_an_allowed_one_served() {
    let server = HttpServer::start(&["--allowed-host", "mcp.example.org"]).await;
    let token = server.token("alice", &["research"], false);
    let post = |host: &'static str| {
        http_client()
            .post(server.url("/mcp"))
            .header("host", host)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .bearer_auth(&token)
            .body(initialize().to_string())
            .send()
    };
    assert_eq!(
        post("evil.example.com").await.unwrap().status().as_u16(),
        403
    );
    assert_eq!(
        post("mcp.example.org").await.unwrap().status().as_u16(),
        200
    );
}

#[tokio::test]
async fn health_needs_no_token_and_readiness_checks_the_store() {
    let server = HttpServer::start(&[]).await;
    for path in ["/healthz", "/readyz"] {
        let response = reqwest::get(server.url(path)).await.unwrap();
        assert_eq!(response.status().as_u16(), 200, "{path}");
    }
}

#[tokio::test]
async fn sigterm_lets_the_call_in_flight_finish_and_refuses_new_ones() {
    let folder = tempfile::tempdir().unwrap();
    let config = folder.path().join("config.toml");
    std::fs::write(&config, "[tools.WriteVar]\nexecution = \"ask-always\"\n").unwrap();
    let mut server = HttpServer::start(&["--config", config.to_str().unwrap()]).await;
    let token = server.token("alice", &["research"], false);
    let pid = server.child.id().unwrap();
    let address = server.address.clone();
    let refused = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let seen = std::sync::Arc::clone(&refused);
    let hook_token = token.clone();
    // While the call waits for the user, the server is told to stop, and a new request is made.
    let asker =
        TestClient::new(Elicitation::Accept(json!({"approve": true}))).while_asking(move || {
            let status = std::process::Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status()
                .unwrap();
            assert!(status.success());
            *seen.lock().unwrap() = raw_status_after_stop(&address, &hook_token);
        });
    let client = server.client("/mcp", &token, asker.clone()).await;
    // Not `common::call`: it lists the tools afterwards, and the server is gone by then.
    let arguments = json!({"name": "last", "value": "words"});
    let request = rmcp::model::CallToolRequestParams::new("WriteVar")
        .with_arguments(arguments.as_object().unwrap().clone());
    let result = client.call_tool(request).await.unwrap();
    assert!(!is_error(&result), "{result:?}");
    assert_eq!(asker.asked().len(), 1);
    assert!(
        refused.lock().unwrap().starts_with("HTTP/1.1 503"),
        "{}",
        refused.lock().unwrap()
    );
    let status = server.child.wait().await.unwrap();
    assert!(status.success(), "{status:?}");
    drop(client);
}

/// The status line of a new `tools/list` POST once the server is draining: the signal is
/// handled asynchronously, so the request is repeated until it is refused (or gives up).
fn raw_status_after_stop(address: &str, token: &str) -> String {
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}).to_string();
    for _ in 0..200 {
        let mut stream = std::net::TcpStream::connect(address).unwrap();
        write!(
            stream,
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n\
             Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             Connection: close\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        let status = answer.lines().next().unwrap_or_default().to_owned();
        if status.starts_with("HTTP/1.1 503") {
            return status;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    "never refused after SIGTERM".to_owned()
}

#[tokio::test]
async fn http_without_tokens_needs_no_auth_and_a_loopback_address() {
    let refused = |args: &[&str]| {
        let output = std::process::Command::new(binary())
            .env("HOME", quiet_home())
            .args(["serve", "--store", "memory"])
            .args(args)
            .output()
            .unwrap();
        assert!(!output.status.success(), "{args:?} was served");
        String::from_utf8(output.stderr).unwrap()
    };
    let mut refusals = Transcript::default();
    // Refused at once: before the store, the skills or the script tools are opened (each
    // would log a line at `info`), so the error is all it says.
    let stderr = refused(&["--http", "127.0.0.1:0", "--log-level", "info"]);
    assert_eq!(error_part(&stderr), stderr);
    refusals.add("no tokens", &error_part(&stderr));
    let stderr = refused(&["--http", "0.0.0.0:0", "--no-auth"]);
    refusals.add("--no-auth on every address", &error_part(&stderr));
    refusals.assert_golden("http/refused-at-start.txt");
}

/// Second round, finding 11: over HTTP, wrong-typed params of a known method answered -32601
/// (stdio: -32602), and a batch, `[]`, a null or object id and an id past 64 bits got HTTP 415
/// with a text. Now they get the JSON-RPC errors stdio gives, from the same decision.
#[tokio::test]
async fn broken_messages_get_json_rpc_errors_over_http_as_over_stdio() {
    let server = HttpServer::start(&[]).await;
    let token = server.token("alice", &["research"], false);
    let session = server.open_session("/mcp/research", &token).await;
    let raw = |body: &'static str| {
        let request = http_client()
            .post(server.url("/mcp/research"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", "2025-06-18")
            .bearer_auth(&token)
            .body(body);
        async move {
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            let text = response.text().await.unwrap();
            let answer: Value = serde_json::from_str(&text)
                .unwrap_or_else(|_| panic!("{body}: not JSON ({status}): {text}"));
            (status, answer)
        }
    };
    for (body, status, id, code) in [
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":[1]}}"#,
            200,
            json!(1),
            -32602,
        ),
        (
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/list""#,
            200,
            json!(2),
            -32700,
        ),
        (
            r#"{"jsonrpc":"2.0","id":null,"method":"tools/list"}"#,
            400,
            Value::Null,
            -32600,
        ),
        (
            r#"{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}"#,
            400,
            Value::Null,
            -32600,
        ),
        (
            r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"tools/list"}"#,
            400,
            Value::Null,
            -32600,
        ),
        ("[]", 400, Value::Null, -32600),
    ] {
        let (got_status, answer) = raw(body).await;
        assert_eq!(
            (got_status, &answer["id"], &answer["error"]["code"]),
            (status, &id, &json!(code)),
            "{body}: {answer}"
        );
    }
    let (status, answer) = raw(
        r#"[{"jsonrpc":"2.0","id":7,"method":"ping"},{"jsonrpc":"2.0","id":8,"method":"ping"}]"#,
    )
    .await;
    assert_eq!(status, 400);
    let codes: Vec<(Value, Value)> = answer
        .as_array()
        .unwrap()
        .iter()
        .map(|error| (error["id"].clone(), error["error"]["code"].clone()))
        .collect();
    assert_eq!(
        codes,
        [(json!(7), json!(-32600)), (json!(8), json!(-32600))]
    );
}
