//! Inputs the fuzz targets (fuzz/) found to break the product, kept as tests so the fixes stay.
//! Each test names its target and what went wrong.

use pretty_assertions::assert_eq;
use synapse_mcp::skills::frontmatter;

use crate::common::binary;

/// `frontmatter`: start-up reads only a SKILL.md's head, and it ended lines at LF only, while
/// reading the whole file also ends them at a lone CR. A SKILL.md with classic Mac line ends
/// therefore had frontmatter when loaded but none at start-up, so the skill was skipped.
#[test]
fn a_lone_carriage_return_ends_a_frontmatter_line_at_start_up_too() {
    let found = b"---\n\r\0\0\0\x0c\r\n---\n\r\0\0\0\x0c\r";
    let text = std::str::from_utf8(found).unwrap();
    let whole = frontmatter::normalise(text);
    let head = frontmatter::read_head(std::io::Cursor::new(found)).unwrap();
    assert_eq!(
        frontmatter::split(&head).map(|split| split.yaml),
        frontmatter::split(&whole).map(|split| split.yaml)
    );

    let directory = tempfile::tempdir().unwrap();
    let skill = directory.path().join("classic-mac");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\rname: classic-mac\rdescription: Line ends of a classic Mac.\r---\rBody\r",
    )
    .unwrap();
    let output = std::process::Command::new(binary())
        .args([
            "skills",
            "check",
            directory.path().to_str().unwrap(),
            "--strict",
        ])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "the skill is refused: {report}");
}

/// `jsonrpc_lines`: the answer to a broken request was written inside `receive`, which rmcp
/// polls in a `select!` and drops whenever another branch is ready first. Dropped while the
/// answer waited on the output, the answer was lost half-written and the request never answered.
/// Here the output pipe holds 16 bytes until the client reads, and `receive` is dropped meanwhile.
#[tokio::test]
async fn a_broken_request_is_answered_whole_although_receiving_was_dropped() {
    use rmcp::transport::Transport;
    use synapse_mcp::server::transport::LineTransport;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

    let (server_input, mut client_output) = tokio::io::duplex(64 * 1024);
    let (server_output, client_input) = tokio::io::duplex(16);
    let mut transport = LineTransport::new(server_input, server_output);
    client_output
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":\n")
        .await
        .unwrap();
    let receiving = tokio::time::timeout(
        std::time::Duration::from_millis(100),
        Transport::<rmcp::RoleServer>::receive(&mut transport),
    )
    .await;
    assert!(receiving.is_err(), "a broken line delivers no message");

    let mut line = String::new();
    let mut reader = tokio::io::BufReader::new(client_input);
    tokio::time::timeout(
        std::time::Duration::from_secs(10),
        reader.read_line(&mut line),
    )
    .await
    .expect("the answer arrives")
    .unwrap();
    let answer: serde_json::Value = serde_json::from_str(&line)
        .unwrap_or_else(|error| panic!("a whole JSON line, not {line:?}: {error}"));
    assert_eq!(answer["id"], 7);
    assert_eq!(answer["error"]["code"], -32700);
}

/// `jsonrpc_lines` (a 20-second CI smoke on a fresh clone): a request with a 60-digit integer
/// id was answered with the id turned into a float (`8.888888888888889e59`), so the client could
/// not match the answer to its request. The id now comes back exactly as it was written.
#[tokio::test]
async fn a_sixty_digit_request_id_comes_back_digit_for_digit() {
    use tokio::io::AsyncBufReadExt;

    let found = include_str!("../../fuzz/seeds/jsonrpc_lines/crash_sixty_digit_id");
    let id = format!("{}1", "8".repeat(59));
    assert!(found.contains(&format!("\"id\":{id},")));
    let mut session = crate::common::RawSession::initialized(&[]).await;
    session.send_bytes(found.as_bytes()).await;
    let (_child, _stdin, mut stdout) = session.split();
    let mut line = String::new();
    while !line.contains("\"error\"") {
        line.clear();
        let read = tokio::time::timeout(
            std::time::Duration::from_secs(30),
            stdout.read_line(&mut line),
        )
        .await
        .expect("the request is answered")
        .unwrap();
        assert!(read > 0, "the server closed its output");
    }
    assert!(
        line.starts_with(&format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{{\"code\":-32601"
        )),
        "{line}"
    );
}
