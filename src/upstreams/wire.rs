//! The wire to one upstream server's process: its stdout read line by line, its stdin written
//! one message at a time, in place of rmcp's child-process transport, so that nothing the
//! server sends is held without bound.
//!
//! - A line is read up to the limit (`max_message_bytes`); the rest of a longer one is skipped
//!   while [`IdScanner`] finds its top-level `id`, and the call it answers gets a JSON-RPC error
//!   saying how large the answer was (rather than being dropped, leaving the call waiting).
//! - Requests of the server (a `ping`, an elicitation) are passed on at most
//!   `requests_per_second` a second and 16 at a time (`IN_FLIGHT`); more are refused with an
//!   error, written one at a time (reading waits while a refusal waits to be written: a server
//!   that never reads its stdin is not read either). More refusals in one second than 4 times
//!   the rate (`FLOOD_FACTOR`), or any message it does not read for 10 s (`STALLED_WRITE`),
//!   end the session, with the reason kept for its tools' errors.

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use rmcp::model::{ErrorCode, JsonRpcMessage, RequestId, ServerNotification};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::{ErrorData, RoleClient};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{ChildStdin, ChildStdout};

use super::settings::Limits;

/// Requests of the server passed on at once (answered or being answered).
pub(super) const IN_FLIGHT: usize = 16;
/// Refusals in one second, as a multiple of the rate, that make a flood.
pub(super) const FLOOD_FACTOR: u32 = 4;
/// How long a refusal may wait for the server to read it.
pub(super) const STALLED_WRITE: Duration = Duration::from_secs(10);
/// The JSON-RPC error code of a request refused or an answer too large (implementation-defined
/// server errors are -32000 to -32099).
pub(super) const REFUSED: ErrorCode = ErrorCode(-32000);
/// Bytes of an `id` value kept while scanning a line too long to read.
const ID_BYTES: usize = 256;

type Writing = Pin<Box<dyn Future<Output = std::io::Result<()>> + Send>>;

/// What the wire and the supervisor share: the requests in flight both ways, and why the wire
/// ended the session, when it did.
#[derive(Default)]
pub(super) struct Shared {
    /// The server's requests passed on and not yet answered.
    answering: Mutex<HashSet<RequestId>>,
    /// Our requests the server has not answered yet.
    asked: Mutex<HashSet<RequestId>>,
    ended: Mutex<Option<String>>,
    /// Woken when the wire ends the session.
    ending: tokio::sync::Notify,
}

impl Shared {
    /// Why the wire ended the session, if it did.
    pub(super) fn ended(&self) -> Option<String> {
        lock(&self.ended).clone()
    }

    /// Waits until the wire ends the session; gives why.
    pub(super) async fn until_ended(&self) -> String {
        loop {
            if let Some(reason) = self.ended() {
                return reason;
            }
            self.ending.notified().await;
        }
    }

    fn end(&self, reason: String) {
        lock(&self.ended).get_or_insert(reason);
        self.ending.notify_one();
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Requests of the server counted in the current second.
struct Window {
    started: Instant,
    passed: u32,
    refused: u32,
}

pub(super) struct Wire {
    reader: BufReader<ChildStdout>,
    line: Vec<u8>,
    /// Set while the rest of a line over the limit is skipped.
    skipping: Option<IdScanner>,
    writer: Arc<tokio::sync::Mutex<Option<ChildStdin>>>,
    shared: Arc<Shared>,
    limits: Limits,
    /// A refusal being written.
    refusing: Option<Writing>,
    window: Window,
}

impl Wire {
    pub(super) fn new(
        stdout: ChildStdout,
        stdin: ChildStdin,
        limits: Limits,
        shared: Arc<Shared>,
    ) -> Self {
        Self {
            reader: BufReader::new(stdout),
            line: Vec::new(),
            skipping: None,
            writer: Arc::new(tokio::sync::Mutex::new(Some(stdin))),
            shared,
            limits,
            refusing: None,
            window: Window {
                started: Instant::now(),
                passed: 0,
                refused: 0,
            },
        }
    }

    /// Writes one message; a server that does not read it for [`STALLED_WRITE`] ends the
    /// session, and its stdin is closed so that no other write waits.
    fn write(&self, message: &TxJsonRpcMessage<RoleClient>) -> Writing {
        let mut bytes = serde_json::to_vec(message).unwrap_or_default();
        bytes.push(b'\n');
        let writer = Arc::clone(&self.writer);
        let shared = Arc::clone(&self.shared);
        Box::pin(async move {
            let writing = async {
                let mut writer = writer.lock().await;
                let Some(stdin) = writer.as_mut() else {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::NotConnected,
                        "the server's stdin is closed",
                    ));
                };
                stdin.write_all(&bytes).await?;
                stdin.flush().await
            };
            if let Ok(written) = tokio::time::timeout(STALLED_WRITE, writing).await {
                return written;
            }
            shared.end(format!(
                "it did not read its stdin for {} s; disconnected",
                STALLED_WRITE.as_secs()
            ));
            if let Ok(mut writer) = writer.try_lock() {
                writer.take();
            }
            Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the server stopped reading its stdin",
            ))
        })
    }

    /// The next whole line (without its newline) in `self.line`, or what ended the stream. A
    /// line over the limit is skipped, and gives the `id` it carried and its length.
    async fn read_line(&mut self) -> Option<Line> {
        loop {
            let (consumed, done) = {
                let available = match self.reader.fill_buf().await {
                    Ok(available) => available,
                    Err(error) => {
                        tracing::debug!(%error, "cannot read the server's stdout");
                        return None;
                    }
                };
                if available.is_empty() {
                    return None;
                }
                let newline = available.iter().position(|byte| *byte == b'\n');
                let take = newline.map_or(available.len(), |index| index + 1);
                let chunk = &available[..take];
                if let Some(scanner) = self.skipping.as_mut() {
                    scanner.feed(chunk);
                } else if self.line.len() + take > self.limits.message_bytes {
                    let mut scanner = IdScanner::default();
                    scanner.feed(&self.line);
                    scanner.feed(chunk);
                    self.line.clear();
                    self.line.shrink_to(64 * 1024);
                    self.skipping = Some(scanner);
                } else {
                    self.line.extend_from_slice(chunk);
                }
                (take, newline.is_some())
            };
            self.reader.consume(consumed);
            if done {
                return Some(match self.skipping.take() {
                    Some(scanner) => Line::TooLong {
                        id: scanner.id(),
                        bytes: scanner.bytes,
                    },
                    None => Line::Whole,
                });
            }
        }
    }

    /// Counts a request of the server; whether it may pass, else why it is refused.
    fn admit(&mut self, id: &RequestId) -> Result<(), String> {
        if self.window.started.elapsed() >= Duration::from_secs(1) {
            self.window = Window {
                started: Instant::now(),
                passed: 0,
                refused: 0,
            };
        }
        let rate = self.limits.requests_per_second;
        let in_flight = lock(&self.shared.answering).len();
        if self.window.passed < rate && in_flight < IN_FLIGHT {
            self.window.passed += 1;
            lock(&self.shared.answering).insert(id.clone());
            return Ok(());
        }
        self.window.refused += 1;
        if self.window.refused > rate.saturating_mul(FLOOD_FACTOR) {
            self.shared.end(format!(
                "it sent more than {} requests in a second (synapse-mcp answers {rate} a \
                 second and {IN_FLIGHT} at a time); disconnected as a flood",
                rate.saturating_mul(FLOOD_FACTOR + 1)
            ));
        }
        Err(format!(
            "too many requests: synapse-mcp answers {rate} a second and {IN_FLIGHT} at a time; \
             try again later"
        ))
    }

    /// The message a line holds, or `None` to read on (it was refused or not understood).
    fn message(&mut self, line: Line) -> Option<RxJsonRpcMessage<RoleClient>> {
        let text = match line {
            Line::TooLong { id, bytes } => return self.too_long(id, bytes),
            Line::Whole => {
                let text = self.line.strip_suffix(b"\n").unwrap_or(&self.line);
                text.strip_suffix(b"\r").unwrap_or(text)
            }
        };
        if text.iter().all(u8::is_ascii_whitespace) {
            return None;
        }
        let parsed = serde_json::from_slice::<RxJsonRpcMessage<RoleClient>>(text);
        let message = match parsed {
            Ok(message) => message,
            Err(error) => {
                tracing::debug!(%error, "a message of the server that is not MCP was skipped");
                return None;
            }
        };
        match &message {
            JsonRpcMessage::Request(request) => {
                if let Err(reason) = self.admit(&request.id) {
                    self.refuse(request.id.clone(), reason);
                    return None;
                }
            }
            JsonRpcMessage::Response(response) => {
                lock(&self.shared.asked).remove(&response.id);
            }
            JsonRpcMessage::Error(error) => {
                if let Some(id) = &error.id {
                    lock(&self.shared.asked).remove(id);
                }
            }
            JsonRpcMessage::Notification(notification) => {
                if let ServerNotification::CancelledNotification(cancelled) =
                    &notification.notification
                    && let Some(id) = &cancelled.params.request_id
                {
                    // rmcp drops the answer of a request its sender cancelled.
                    lock(&self.shared.answering).remove(id);
                }
            }
        }
        Some(message)
    }

    /// A line over the limit: an error for the call it answers, when it names one of ours (or
    /// when only one of ours waits).
    fn too_long(
        &mut self,
        id: Option<RequestId>,
        bytes: usize,
    ) -> Option<RxJsonRpcMessage<RoleClient>> {
        let limit = self.limits.message_bytes;
        let id = {
            let mut asked = lock(&self.shared.asked);
            let id = match id {
                Some(id) if asked.contains(&id) => Some(id),
                _ if asked.len() == 1 => asked.iter().next().cloned(),
                _ => None,
            };
            if let Some(id) = &id {
                asked.remove(id);
            }
            id
        };
        let Some(id) = id else {
            tracing::warn!(
                bytes,
                limit,
                "a message of the server over the size limit was skipped"
            );
            return None;
        };
        let error = ErrorData::new(
            REFUSED,
            format!(
                "its answer was {bytes} bytes, over the limit of {limit} bytes \
                 (`max_message_bytes`); ask it for less"
            ),
            None,
        );
        Some(JsonRpcMessage::error(error, Some(id)))
    }

    fn refuse(&mut self, id: RequestId, reason: String) {
        let refusal = JsonRpcMessage::error(ErrorData::new(REFUSED, reason, None), Some(id));
        self.refusing = Some(self.write(&refusal));
    }
}

/// How a line ended.
enum Line {
    /// In `Wire::line`.
    Whole,
    /// Skipped: over the limit.
    TooLong { id: Option<RequestId>, bytes: usize },
}

impl Transport<RoleClient> for Wire {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let answered = match &item {
            JsonRpcMessage::Response(response) => Some(response.id.clone()),
            JsonRpcMessage::Error(error) => error.id.clone(),
            JsonRpcMessage::Request(request) => {
                lock(&self.shared.asked).insert(request.id.clone());
                None
            }
            JsonRpcMessage::Notification(_) => None,
        };
        let writing = self.write(&item);
        let shared = Arc::clone(&self.shared);
        async move {
            let written = writing.await;
            if let Some(id) = answered {
                lock(&shared.answering).remove(&id);
            }
            written
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            // Cancelled (rmcp polls this in a select), a refusal being written is kept here
            // and goes on at the next call.
            if let Some(writing) = self.refusing.as_mut() {
                if let Err(error) = writing.await {
                    tracing::debug!(%error, "cannot write to the server");
                    return None;
                }
                self.refusing = None;
            }
            if self.shared.ended().is_some() {
                return None;
            }
            let line = self.read_line().await?;
            let message = self.message(line);
            self.line.clear();
            if let Some(message) = message {
                return Some(message);
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.writer.lock().await.take();
        Ok(())
    }
}

/// Finds the top-level `id` of a JSON object fed to it in pieces, keeping a few bytes whatever
/// its length: the id of a message too long to read.
#[derive(Debug, Default)]
#[expect(
    clippy::struct_excessive_bools,
    reason = "a tokenizer's flags, each read at every byte"
)]
pub struct IdScanner {
    /// Bytes fed so far.
    pub bytes: usize,
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// At depth 1: whether the next string is a member's name.
    expecting_name: bool,
    /// The member name being read, while at most a few bytes long.
    name: Option<Vec<u8>>,
    /// Whether the last member name read was `id`.
    named_id: bool,
    /// The raw value of `id`, while it is read.
    value: Option<Vec<u8>>,
    found: Option<Vec<u8>>,
}

impl IdScanner {
    pub fn feed(&mut self, chunk: &[u8]) {
        self.bytes += chunk.len();
        for &byte in chunk {
            // The first `id` found is the one: a later byte of the same piece must not find
            // another (the answer would depend on how the message was cut into pieces).
            if self.found.is_some() {
                return;
            }
            self.step(byte);
        }
    }

    /// The `id` found, if the object had a usable one at its top level.
    pub fn id(&self) -> Option<RequestId> {
        serde_json::from_slice(self.found.as_deref()?).ok()
    }

    fn step(&mut self, byte: u8) {
        if let Some(value) = self.value.as_mut() {
            let ends = !self.in_string && self.depth == 1 && matches!(byte, b',' | b'}');
            if ends {
                self.found = self.value.take();
            } else if value.len() < ID_BYTES {
                value.push(byte);
            } else {
                self.value = None;
            }
        }
        if self.in_string {
            if self.escaped {
                self.escaped = false;
            } else if byte == b'\\' {
                self.escaped = true;
            } else if byte == b'"' {
                self.in_string = false;
                if let Some(name) = self.name.take() {
                    self.named_id = name == b"id";
                }
                return;
            }
            if let Some(name) = self.name.as_mut() {
                if name.len() < 2 {
                    name.push(byte);
                } else {
                    // Longer than `id`: some other member.
                    name.push(byte);
                    name.truncate(3);
                }
            }
            return;
        }
        match byte {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 && self.expecting_name {
                    self.name = Some(Vec::new());
                    self.expecting_name = false;
                }
            }
            b'{' | b'[' => {
                self.depth += 1;
                if self.depth == 1 {
                    self.expecting_name = byte == b'{';
                }
            }
            b'}' | b']' => self.depth = self.depth.saturating_sub(1),
            b',' if self.depth == 1 => {
                self.expecting_name = true;
                self.named_id = false;
            }
            b':' if self.depth == 1 && self.named_id => {
                self.value = Some(Vec::new());
                self.named_id = false;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::{Value, json};

    use super::*;

    fn scanned(text: &str, piece: usize) -> (Option<RequestId>, usize) {
        let mut scanner = IdScanner::default();
        for chunk in text.as_bytes().chunks(piece.max(1)) {
            scanner.feed(chunk);
        }
        (scanner.id(), scanner.bytes)
    }

    #[test]
    fn finds_the_top_level_id_wherever_it_is() {
        let long = "x".repeat(10_000);
        for (text, expected) in [
            (
                format!(r#"{{"jsonrpc":"2.0","id":7,"result":{{"text":"{long}"}}}}"#),
                Some(RequestId::Number(7)),
            ),
            (
                format!(
                    r#"{{"result":{{"id":1,"content":["{long}", {{"id": 2}}]}}, "id" : "a\"b" }}"#
                ),
                Some(RequestId::String("a\"b".into())),
            ),
            (format!(r#"{{"idx":3,"result":"{long}","ids":4}}"#), None),
            (format!(r#"{{"result":"\"id\":5","x":"{long}"}}"#), None),
            (format!(r#"[{{"id":6,"x":"{long}"}}]"#), None),
        ] {
            for piece in [1, 7, 4096, usize::MAX] {
                assert_eq!(
                    scanned(&text, piece),
                    (expected.clone(), text.len()),
                    "{piece}"
                );
            }
        }
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<i64>().prop_map(Value::from),
            "[a-z\"\\\\{}\\[\\],:id ]{0,12}".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("(id|[a-z\"]{0,4})", inner, 0..4)
                    .prop_map(|members| Value::Object(members.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Any message with an id, in any pieces, gives that id back; the members around it
        /// (names and values that look like `id`) never confuse it.
        #[test]
        fn the_id_of_any_message_is_found(
            result in json_value(),
            number in any::<i64>(),
            text in "[a-z\"\\\\:,{}]{0,10}",
            by_number in any::<bool>(),
            id_first in any::<bool>(),
            piece in 1usize..64,
        ) {
            let id = if by_number { json!(number) } else { json!(text) };
            let message = if id_first {
                format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#)
            } else {
                format!(r#"{{"jsonrpc":"2.0","result":{result},"id":{id}}}"#)
            };
            let expected: RequestId = serde_json::from_value(id).unwrap();
            prop_assert_eq!(scanned(&message, piece).0, Some(expected));
        }

        /// Arbitrary bytes never panic, never report more bytes than fed, and give the same id
        /// whatever the pieces they come in.
        #[test]
        fn arbitrary_bytes_are_scanned_safely(
            bytes in prop::collection::vec(any::<u8>(), 0..512),
            piece in 1usize..64,
        ) {
            let text = String::from_utf8_lossy(&bytes);
            let whole = scanned(&text, usize::MAX);
            prop_assert_eq!(whole.1, text.len());
            prop_assert_eq!(scanned(&text, piece), whole);
        }
    }

    /// The `upstream_ids` fuzz target's first finding: of two top-level ids, a message read in
    /// one piece gave the second, and in small pieces the first.
    #[test]
    fn the_first_id_is_kept_whatever_the_pieces() {
        let text = r#"{"id":"x","a":{"b":1},"id":"y"}"#;
        for piece in [1, 5, 7, usize::MAX] {
            assert_eq!(
                scanned(text, piece),
                (Some(RequestId::String("x".into())), text.len()),
                "{piece}"
            );
        }
    }
}
