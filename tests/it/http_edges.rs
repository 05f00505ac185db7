//! The edges of `serve --http` a hostile or careless client reaches: a revoked token's open
//! stream ends within a second, a call waiting for the user's approval keeps its session past
//! the idle timer, and connections that trickle their headers or body are closed.

use std::time::{Duration, Instant};

use futures::StreamExt as _;
use serde_json::json;

use crate::common::{Elicitation, TestClient, binary, call, is_error, text};
use crate::http::{HttpServer, http_client};

/// Revokes every token of `principal`, as an operator does.
fn revoke(server: &HttpServer, principal: &str) {
    let output = std::process::Command::new(binary())
        .args(["token", "revoke", "--principal", principal, "--tokens"])
        .arg(server.tokens())
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
}

/// Opens an initialize-era session at `/mcp` and says it is initialized: its id.
async fn initialized_session(server: &HttpServer, token: &str) -> String {
    let session = server.open_session("/mcp", token).await;
    let initialized = http_client()
        .post(server.url("/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-06-18")
        .bearer_auth(token)
        .body(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(initialized.status().as_u16(), 202);
    session
}

/// A revoked token keeps no stream: the session's GET stream, open when the token is revoked,
/// ends within a second, and the next request is refused.
#[tokio::test]
async fn a_revoked_tokens_open_stream_ends_within_a_second() {
    let server = HttpServer::start(&[]).await;
    let token = server.token("alice", &["research"], false);
    let session = initialized_session(&server, &token).await;
    let stream = http_client()
        .get(server.url("/mcp"))
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-06-18")
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status().as_u16(), 200);
    let mut body = stream.bytes_stream();
    revoke(&server, "alice");
    let revoked = Instant::now();
    let ended = tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(chunk) = body.next().await {
            if chunk.is_err() {
                break;
            }
        }
    })
    .await;
    assert!(
        ended.is_ok(),
        "the stream of a revoked token is still open after 5 s"
    );
    assert!(
        revoked.elapsed() < Duration::from_secs(1),
        "ended {:?} after the revocation",
        revoked.elapsed()
    );
    let (status, _) = server.list_in_session("/mcp", &session, &token).await;
    assert_eq!(status, 401);
}

/// A call waiting for the user's approval is activity: with a 1 s idle timer, an approval
/// answered after 3 s still lets the call run and answer, and the session stays usable.
#[tokio::test]
async fn a_call_waiting_for_approval_keeps_its_session_past_the_idle_timer() {
    let folder = tempfile::tempdir().unwrap();
    let config = folder.path().join("config.toml");
    std::fs::write(&config, "[tools.WriteVar]\nexecution = \"ask-always\"\n").unwrap();
    let config = config.display().to_string();
    let server = HttpServer::start(&["--config", &config, "--session-idle-seconds", "1"]).await;
    let token = server.token("alice", &["research"], false);
    let slow_user = TestClient::new(Elicitation::Accept(json!({"approve": true})))
        .while_asking(|| std::thread::sleep(Duration::from_secs(3)));
    let client = server.client("/mcp", &token, slow_user.clone()).await;
    let answered = tokio::time::timeout(
        Duration::from_secs(10),
        call(
            &client,
            "WriteVar",
            json!({"name": "topic", "value": "bees"}),
        ),
    )
    .await;
    let written = answered.expect("no answer: the session was closed while the user was asked");
    assert!(!is_error(&written), "{written:?}");
    assert_eq!(slow_user.asked().len(), 1);
    let read = call(&client, "ReadVar", json!({"name": "topic"})).await;
    assert!(text(&read).ends_with("\nbees"), "{read:?}");
    client.cancel().await.unwrap();
}

/// The idle timer still closes a session with nothing in flight.
#[tokio::test]
async fn an_idle_session_is_closed() {
    let server = HttpServer::start(&["--session-idle-seconds", "1"]).await;
    let token = server.token("alice", &["research"], false);
    let session = initialized_session(&server, &token).await;
    assert_eq!(
        server.list_in_session("/mcp", &session, &token).await.0,
        200
    );
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(
        server.list_in_session("/mcp", &session, &token).await.0,
        404
    );
}

/// The `Bearer` scheme is case-insensitive (RFC 7235).
#[tokio::test]
async fn the_bearer_scheme_is_matched_without_regard_to_case() {
    let server = HttpServer::start(&[]).await;
    let token = server.token("alice", &["research"], false);
    for scheme in ["Bearer", "bearer", "BEARER", "bEaReR"] {
        let response = http_client()
            .post(server.url("/mcp"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("authorization", format!("{scheme} {token}"))
            .body(crate::http::initialize().to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 200, "{scheme}");
    }
}

/// A tokens file its group or others may write is refused at start, naming the fix.
#[cfg(unix)]
#[tokio::test]
async fn a_tokens_file_others_may_write_is_refused() {
    use std::os::unix::fs::PermissionsExt as _;
    let folder = tempfile::tempdir().unwrap();
    let tokens = folder.path().join("tokens.toml");
    crate::http::add_token(&tokens, "alice", &["research"], false);
    std::fs::set_permissions(&tokens, std::fs::Permissions::from_mode(0o666)).unwrap();
    let mut child = tokio::process::Command::new(binary())
        .env("HOME", crate::common::quiet_home())
        .args([
            "serve",
            "--http",
            "127.0.0.1:0",
            "--store",
            "memory",
            "--tokens",
        ])
        .arg(&tokens)
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let exited = tokio::time::timeout(Duration::from_secs(10), child.wait()).await;
    let status = exited.expect("the server started on a tokens file anyone may write");
    assert!(!status.unwrap().success());
    let mut stderr = String::new();
    tokio::io::AsyncReadExt::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr)
        .await
        .unwrap();
    assert!(
        stderr.contains("may be written by its group or by others (mode 666)")
            && stderr.contains("chmod 600"),
        "{stderr}"
    );
}

/// A tokens file broken while the server runs is logged once, not at every request; the tokens
/// read before keep working.
#[tokio::test]
async fn a_broken_tokens_file_is_logged_once_per_change() {
    let server = HttpServer::start(&[]).await;
    let token = server.token("alice", &["research"], false);
    assert_eq!(server.list_in_session("/mcp", "none", &token).await.0, 404);
    std::fs::write(server.tokens(), "[[token]\nbroken").unwrap();
    for _ in 0..5 {
        let response = http_client()
            .post(server.url("/mcp"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .bearer_auth(&token)
            .body(crate::http::initialize().to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 200);
    }
    // The log lines are read by a task of the test: let it catch up.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let warned = server
        .log
        .lock()
        .unwrap()
        .iter()
        .filter(|line| line.contains("keeping the tokens read before"))
        .count();
    assert_eq!(warned, 1);
}

/// Writes `first`, then `trickle` a byte at a time every 200 ms, until the server closes the
/// connection: how long it took, or `None` after 6 s.
async fn closed_after(server: &HttpServer, first: &[u8], trickle: &[u8]) -> Option<Duration> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut connection = tokio::net::TcpStream::connect(&server.address)
        .await
        .unwrap();
    connection.write_all(first).await.unwrap();
    let started = Instant::now();
    let (mut reading, mut writing) = connection.into_split();
    let trickle = trickle.to_vec();
    let writer = tokio::spawn(async move {
        for byte in trickle {
            tokio::time::sleep(Duration::from_millis(200)).await;
            if writing.write_all(&[byte]).await.is_err() {
                return;
            }
        }
        std::future::pending::<()>().await;
    });
    let mut answer = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(6), reading.read_to_end(&mut answer));
    let outcome = closed.await.ok().map(|_| started.elapsed());
    writer.abort();
    outcome
}

/// Headers or a body trickled in slower than `--read-timeout-seconds` allows close the
/// connection; the server goes on serving.
#[tokio::test]
async fn connections_that_trickle_their_headers_or_body_are_closed() {
    let server = HttpServer::start(&["--read-timeout-seconds", "1"]).await;
    let token = server.token("alice", &["research"], false);
    let headers = closed_after(
        &server,
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n",
        &[b'X'; 30],
    )
    .await;
    let took = headers.expect("a connection trickling its headers was open after 6 s");
    assert!(took < Duration::from_secs(3), "{took:?}");
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: 200\r\n\r\n{{"
    );
    let body = closed_after(&server, head.as_bytes(), &[b' '; 30]).await;
    let took = body.expect("a connection trickling its body was open after 6 s");
    assert!(took < Duration::from_secs(3), "{took:?}");
    assert_eq!(
        server
            .post("/mcp", Some(&token), &crate::http::initialize())
            .await
            .0,
        200
    );
}
