//! The stdio transport: newline-delimited JSON-RPC over the process's pipes, with answers for
//! requests the SDK's own transport would drop without a word.
//!
//! rmcp ignores lines that are not valid JSON, and answers well-formed JSON of the wrong shape
//! with an id-less "Invalid Request". A client whose request is lost that way waits until its
//! timeout. Here, when a broken line still shows a request id (and a method) before its
//! `params`, the client gets an error with that id: `-32700` for a line that does not parse
//! (invalid UTF-8, JSON nested past serde's limit, truncated JSON), `-32600` for a request of the
//! wrong shape or one longer than [`MAX_LINE_BYTES`]. Lines without a recoverable id are skipped,
//! as JSON-RPC allows, so that two peers can never echo errors at each other forever.

use std::io;
use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

/// The longest line accepted; longer requests are answered with an error and discarded.
pub const MAX_LINE_BYTES: usize = 64 << 20;

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;

/// Newline-delimited JSON-RPC over any reader and writer (stdio pipes in the binary).
pub struct LineTransport<R, W> {
    reader: BufReader<R>,
    writer: Arc<Mutex<W>>,
    /// The line being read; kept across cancelled reads, so no byte is lost.
    line: Vec<u8>,
    /// Bytes of the current line dropped past [`MAX_LINE_BYTES`].
    dropped: usize,
    /// Answers to broken lines still being written (see [`LineTransport::answer`]).
    answering: Vec<tokio::task::JoinHandle<()>>,
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    pub fn new(reader: R, writer: W) -> Self {
        Self {
            reader: BufReader::with_capacity(64 * 1024, reader),
            writer: Arc::new(Mutex::new(writer)),
            line: Vec::new(),
            dropped: 0,
            answering: Vec::new(),
        }
    }

    /// Writes the answer to a broken line on a task of its own. rmcp polls `receive` in a
    /// `select!` and drops it when another branch is ready first; an answer written inside
    /// `receive` was lost when that happened while it waited for the writer (held by a response
    /// being sent), and its request was never answered (found by the `jsonrpc_lines` fuzz
    /// target). The task finishes the whole line whatever becomes of `receive`.
    fn answer(&mut self, bytes: Vec<u8>) {
        self.answering.retain(|task| !task.is_finished());
        let writer = Arc::clone(&self.writer);
        self.answering.push(tokio::spawn(async move {
            if let Err(error) = write_line(&writer, &bytes).await {
                tracing::error!(%error, "cannot write stdout");
            }
        }));
    }

    /// Reads up to the next newline; `false` at the end of input. Cancel-safe: bytes are moved
    /// into `self.line` only after a read completes.
    async fn read_line(&mut self) -> io::Result<bool> {
        loop {
            let available = self.reader.fill_buf().await?;
            if available.is_empty() {
                return Ok(false);
            }
            let (chunk, complete) = match available.iter().position(|&byte| byte == b'\n') {
                Some(end) => (&available[..=end], true),
                None => (available, false),
            };
            let taken = chunk.len();
            let room = MAX_LINE_BYTES.saturating_sub(self.line.len());
            self.line.extend_from_slice(&chunk[..taken.min(room)]);
            self.dropped += taken.saturating_sub(room);
            self.reader.consume(taken);
            if complete {
                return Ok(true);
            }
        }
    }
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let writer = Arc::clone(&self.writer);
        async move {
            let mut bytes = serde_json::to_vec(&item).map_err(io::Error::other)?;
            bytes.push(b'\n');
            write_line(&writer, &bytes).await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            match self.read_line().await {
                Ok(true) => {}
                Ok(false) => return None,
                Err(error) => {
                    tracing::error!(%error, "cannot read stdin");
                    return None;
                }
            }
            let decoded = decode(&self.line, self.dropped);
            self.line.clear();
            self.dropped = 0;
            match decoded {
                Decoded::Message(message) => return Some(*message),
                Decoded::Skip => {}
                Decoded::Answer(bytes) => self.answer(bytes),
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // Answers to broken lines go out before the output closes.
        for task in self.answering.drain(..) {
            task.await.ok();
        }
        self.writer.lock().await.shutdown().await
    }
}

async fn write_line<W: AsyncWrite + Unpin>(writer: &Mutex<W>, bytes: &[u8]) -> io::Result<()> {
    let mut writer = writer.lock().await;
    writer.write_all(bytes).await?;
    writer.flush().await
}

/// What one line amounts to.
enum Decoded {
    Message(Box<RxJsonRpcMessage<RoleServer>>),
    /// Nothing to deliver and nobody to answer.
    Skip,
    /// An error response to write back.
    Answer(Vec<u8>),
}

fn decode(line: &[u8], dropped: usize) -> Decoded {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Decoded::Skip;
    }
    if dropped > 0 {
        let size = line.len() + dropped;
        let message = format!(
            "request of {size} bytes exceeds the {MAX_LINE_BYTES}-byte line limit; store large values with several WriteVar calls or pass them by $VAR_REF"
        );
        return answer(request_id_in(line), INVALID_REQUEST, &message);
    }
    match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(line) {
        Ok(message) => Decoded::Message(Box::new(message)),
        Err(error) if error.is_data() => {
            let id = serde_json::from_slice::<Value>(line)
                .ok()
                .filter(|value| value.get("method").is_some())
                .and_then(|value| value.get("id").cloned())
                .filter(|id| id.is_number() || id.is_string());
            answer(id, INVALID_REQUEST, &format!("invalid request: {error}"))
        }
        Err(error) => answer(
            request_id_in(line),
            PARSE_ERROR,
            &format!("parse error: {error}"),
        ),
    }
}

fn answer(id: Option<Value>, code: i64, message: &str) -> Decoded {
    let Some(id) = id else {
        tracing::warn!(message, "skipped an input line that names no request id");
        return Decoded::Skip;
    };
    tracing::warn!(%id, message, "answered a broken request");
    let response = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    let mut bytes = response.to_string().into_bytes();
    bytes.push(b'\n');
    Decoded::Answer(bytes)
}

/// The id of a request that does not parse, when its text shows `"id": <number or string>` and
/// a `"method"` before any `"params"` (so an `id` inside the arguments is never taken for it).
fn request_id_in(line: &[u8]) -> Option<Value> {
    let head = match find(line, b"\"params\"") {
        Some(end) => &line[..end],
        None => line,
    };
    find(head, b"\"method\"")?;
    let mut rest = head;
    while let Some(start) = find(rest, b"\"id\"") {
        rest = &rest[start + 4..];
        let after_colon = rest.trim_ascii_start().strip_prefix(b":")?;
        let mut values = serde_json::Deserializer::from_slice(after_colon).into_iter::<Value>();
        if let Some(Ok(id)) = values.next()
            && (id.is_number() || id.is_string())
        {
            return Some(id);
        }
    }
    None
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn finds_the_request_id_before_the_params_only() {
        let line = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"id":9,"x":[[[["#;
        assert_eq!(request_id_in(line), Some(json!(7)));
        let text_id = br#"{"method":"x","id" : "abc","params":{"#;
        assert_eq!(request_id_in(text_id), Some(json!("abc")));
        let inner_only = br#"{"method":"x","params":{"id":9}"#;
        assert_eq!(request_id_in(inner_only), None);
        let no_method = br#"{"id":3,"result":{"#;
        assert_eq!(request_id_in(no_method), None);
    }

    #[test]
    fn broken_requests_with_an_id_are_answered_and_the_rest_skipped() {
        let Decoded::Answer(bytes) = decode(
            b"{\"id\":1,\"method\":\"x\",\"params\":{\"a\":\"\xff\"}}\n",
            0,
        ) else {
            panic!("expected an answer")
        };
        let response: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(response["id"], json!(1));
        assert_eq!(response["error"]["code"], json!(PARSE_ERROR));
        assert!(matches!(decode(b"not json at all\n", 0), Decoded::Skip));
        assert!(matches!(decode(b"\r\n", 0), Decoded::Skip));
        let Decoded::Answer(bytes) = decode(br#"{"id":2,"method":"x","params":{"#, 10) else {
            panic!("expected an answer")
        };
        let response: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(response["error"]["code"], json!(INVALID_REQUEST));
    }
}
