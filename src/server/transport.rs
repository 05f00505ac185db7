//! The stdio transport: newline-delimited JSON-RPC over the process's pipes, with answers for
//! requests the SDK's own transport would drop or misanswer, request ids echoed exactly, and a
//! bound on the requests a session works on at once.
//!
//! The same decisions answer a message posted over HTTP ([`http_refusal`]) before rmcp's
//! HTTP transport sees it (it would answer wrong-typed params -32601 and a batch or a bad id
//! with HTTP 415 and a text).
//!
//! **Answers for broken lines.** rmcp ignores lines that are not valid JSON, and answers
//! well-formed JSON of the wrong shape with an id-less "Invalid Request". A client whose request
//! is lost that way waits until its timeout. Here, when a broken line still shows a request id
//! (and a method) before its `params`, the client gets an error with that id: `-32700` for a
//! line that does not parse (invalid UTF-8, JSON nested past serde's limit, truncated JSON),
//! `-32600` for a request of the wrong shape or one longer than [`MAX_LINE_BYTES`], `-32602` for
//! a known method whose params have the wrong type (rmcp would take it for an unknown method).
//! A request whose id is null, a boolean, an object or an array gets `-32600` with a null id, as
//! JSON-RPC answers invalid requests, and so does every request of a batch (MCP has no batches
//! since 2025-06-18): each with its id, in one array. Lines without a method are never answered,
//! so that two peers can never echo errors at each other forever.
//!
//! **Request ids.** rmcp holds an id as an `i64` or a string, and one request per id. JSON-RPC
//! allows any number, and a client may reuse an id once its request is answered. So rmcp never
//! sees the client's ids: each request gets an internal number, and its answer goes out with the
//! id exactly as the client wrote it (a 60-digit integer, `1.5`, `"\u0041"`). A second request
//! with the id of one still in flight is answered with an error at once, and the first keeps its
//! answer. A `notifications/cancelled` is translated the same way.
//!
//! **Backpressure.** While [`MAX_IN_FLIGHT`] requests are being worked on or answered, further
//! requests wait in the transport (as many again at most; cancelling one drops it) while input
//! is still read for the client's answers and cancellations; once that many wait, no more input
//! is read. A client that pipelines 100,000 requests waits in its pipe instead of making the
//! server hold them all. Requests whose handler waits for the client (an approval question) and
//! long-lived `subscriptions/listen` requests do not count.

mod decode;
mod encode;
mod framing;
mod ids;
mod params;

use std::collections::VecDeque;
use std::io;
use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::JsonRpcMessage;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

use decode::{Decoded, Wire, decode, decode_from};
use encode::{Outgoing, encode};
pub use framing::MAX_LINE_BYTES;
use ids::Ids;
pub use ids::MAX_IN_FLIGHT;

/// The error a message posted over HTTP must be answered with instead of reaching rmcp, when
/// it must: the same decisions as for a line of stdio (malformed JSON `-32700`; a batch, an
/// empty array, an id that is null, an object or past 64 bits `-32600`; a known method's params
/// of the wrong type `-32602`), as the JSON to send. `None`: rmcp takes the message.
pub fn http_refusal(body: &[u8]) -> Option<Vec<u8>> {
    match decode_from(body, 0, &Ids::default(), Wire::Http) {
        Decoded::Answer(answer) => Some(answer),
        Decoded::Message(_) | Decoded::Skip => None,
    }
}

/// Newline-delimited JSON-RPC over any reader and writer (stdio pipes in the binary).
pub struct LineTransport<R, W> {
    reader: BufReader<R>,
    writer: Arc<tokio::sync::Mutex<W>>,
    /// The line being read; kept across cancelled reads, so no byte is lost.
    line: Vec<u8>,
    /// Bytes of the current line dropped past [`MAX_LINE_BYTES`].
    dropped: usize,
    /// Answers to broken lines still being written (see [`LineTransport::answer`]).
    answering: Vec<tokio::task::JoinHandle<()>>,
    /// The client's requests in flight, by the ids rmcp knows them by.
    ids: Arc<Ids>,
    /// Requests read while [`MAX_IN_FLIGHT`] were busy, waiting for room (at most as many
    /// again). Reading goes on meanwhile, so that the client's answers and cancellations are
    /// still seen; a request cancelled while parked is dropped.
    parked: VecDeque<RxJsonRpcMessage<RoleServer>>,
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    pub fn new(reader: R, writer: W) -> Self {
        Self {
            reader: BufReader::with_capacity(64 * 1024, reader),
            writer: Arc::new(tokio::sync::Mutex::new(writer)),
            line: Vec::new(),
            dropped: 0,
            answering: Vec::new(),
            ids: Arc::new(Ids::default()),
            parked: VecDeque::new(),
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
        // The id is restored now, not when the write starts: once this answer is on its way the
        // client may reuse the id, and a request read meanwhile must not count as a duplicate.
        let outgoing = encode(&item, &self.ids);
        async move {
            match outgoing? {
                Outgoing::Line(bytes) => write_line(&writer, &bytes).await,
                Outgoing::Answer(bytes, slot) => {
                    let written = write_line(&writer, &bytes).await;
                    drop(slot);
                    written
                }
                Outgoing::Nothing => Ok(()),
            }
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            // Requests read while the session was full go first, as soon as there is room.
            if !self.parked.is_empty() && self.ids.has_room() {
                if let Some(request) = self
                    .parked
                    .pop_front()
                    .and_then(|request| self.ids.start(request))
                {
                    return Some(request);
                }
                continue;
            }
            let ids = Arc::clone(&self.ids);
            let read = if self.parked.len() >= MAX_IN_FLIGHT {
                ids.room().await;
                continue;
            } else if self.parked.is_empty() {
                self.read_line().await
            } else {
                // Both cancel-safe: whichever comes first, room for a parked request or a line.
                tokio::select! {
                    () = ids.room() => continue,
                    read = self.read_line() => read,
                }
            };
            match read {
                Ok(true) => {}
                Ok(false) => return None,
                Err(error) => {
                    tracing::error!(%error, "cannot read stdin");
                    return None;
                }
            }
            let decoded = decode(&self.line, self.dropped, &self.ids);
            self.line.clear();
            self.dropped = 0;
            match decoded {
                Decoded::Message(message) if matches!(*message, JsonRpcMessage::Request(_)) => {
                    if self.parked.is_empty() && self.ids.has_room() {
                        if let Some(request) = self.ids.start(*message) {
                            return Some(request);
                        }
                    } else {
                        self.parked.push_back(*message);
                    }
                }
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

async fn write_line<W: AsyncWrite + Unpin>(
    writer: &tokio::sync::Mutex<W>,
    bytes: &[u8],
) -> io::Result<()> {
    let mut writer = writer.lock().await;
    writer.write_all(bytes).await?;
    writer.flush().await
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_part_logs_as_the_transport() {
        assert_eq!(
            super::framing::LOG_TARGET,
            module_path!().trim_end_matches("::tests")
        );
    }
}
