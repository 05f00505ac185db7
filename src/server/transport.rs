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
//!
//! **Inline answers.** Once the session is set up, `tools/call` and `ping` are answered by the
//! transport itself where they are read, without rmcp's serve loop (`transport/inline.rs`).

mod decode;
mod encode;
mod framing;
mod ids;
mod inline;
mod params;

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{ClientNotification, JsonRpcMessage};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio_util::sync::CancellationToken;

use decode::{Decoded, Wire, decode, decode_from};
use encode::{Outgoing, encode};
pub use framing::MAX_LINE_BYTES;
pub use ids::MAX_IN_FLIGHT;
use ids::{Ids, Slot};
pub use inline::Inline;
use inline::{Handling, Waiting};

/// How long the end of the input waits for requests still being answered, as rmcp waits for
/// its own.
const DRAIN: Duration = Duration::from_secs(5);

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
    /// What answers requests inline, once the session is set up (see [`Self::answering_inline`]).
    inline: Arc<OnceLock<Inline>>,
    /// Requests answered inline that had to wait, for the client's cancellations.
    waiting: Arc<Waiting>,
    /// The parent of every inline request's cancellation: cancelled when the session ends.
    session: CancellationToken,
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
            inline: Arc::default(),
            waiting: Arc::default(),
            session: CancellationToken::new(),
        }
    }

    /// Answers requests inline once `inline` is set (after `initialize`, by whoever serves the
    /// session: see [`Inline::for_session`]); until then, and for the requests it does not take,
    /// rmcp does.
    #[must_use]
    pub fn answering_inline(mut self, inline: Arc<OnceLock<Inline>>) -> Self {
        self.inline = inline;
        self
    }

    /// A request about to be delivered, answered inline when it can be; `Some` for rmcp.
    fn deliver(
        &mut self,
        request: RxJsonRpcMessage<RoleServer>,
    ) -> Option<RxJsonRpcMessage<RoleServer>> {
        let inline = Arc::clone(&self.inline);
        let Some(inline) = inline.get() else {
            return Some(request);
        };
        if !Inline::takes(&request) {
            return Some(request);
        }
        let JsonRpcMessage::Request(request) = request else {
            return Some(request);
        };
        let Handling {
            id,
            cancellation,
            mut future,
        } = inline.handling(request, &self.session);
        if let Poll::Ready(handled) = future
            .as_mut()
            .poll(&mut Context::from_waker(Waker::noop()))
        {
            self.send_now(&inline::answer(id, handled));
            return None;
        }
        // It waits: on a task of its own from here, polled again at once with a real waker.
        self.waiting.insert(id.clone(), cancellation);
        let writer = Arc::clone(&self.writer);
        let ids = Arc::clone(&self.ids);
        let waiting = Arc::clone(&self.waiting);
        self.answering.retain(|task| !task.is_finished());
        self.answering.push(tokio::spawn(async move {
            let handled = future.await;
            waiting.remove(&id);
            let sent = match encode(&inline::answer(id, handled), &ids) {
                Ok(outgoing) => write_outgoing(&writer, outgoing).await,
                Err(error) => Err(error),
            };
            if let Err(error) = sent {
                tracing::error!(%error, "cannot write stdout");
            }
        }));
        None
    }

    /// Writes an answer made inline, at once when the output takes it whole.
    fn send_now(&mut self, item: &TxJsonRpcMessage<RoleServer>) {
        match encode(item, &self.ids) {
            Ok(Outgoing::Line(bytes)) => self.write_now(bytes, None),
            Ok(Outgoing::Answer(bytes, slot)) => self.write_now(bytes, slot),
            Ok(Outgoing::Nothing) => {}
            Err(error) => tracing::error!(%error, "cannot encode an answer"),
        }
    }

    /// Writes `bytes` without waiting: as much as the output takes now, the rest (or all of it,
    /// when another message is being written) on a task of its own. `slot` is released once all
    /// is written. Nothing here waits, so `receive` being dropped never cuts a line.
    fn write_now(&mut self, bytes: Vec<u8>, slot: Option<Slot>) {
        self.answering.retain(|task| !task.is_finished());
        let mut held = Arc::clone(&self.writer).try_lock_owned().ok();
        let mut written = 0;
        if let Some(writer) = held.as_mut() {
            let mut context = Context::from_waker(Waker::noop());
            let written_now = loop {
                if written == bytes.len() {
                    break Pin::new(&mut **writer)
                        .poll_flush(&mut context)
                        .map_ok(|()| 0);
                }
                match Pin::new(&mut **writer).poll_write(&mut context, &bytes[written..]) {
                    Poll::Ready(Ok(0)) => break Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                    Poll::Ready(Ok(count)) => written += count,
                    other => break other,
                }
            };
            match written_now {
                Poll::Ready(Ok(_)) => return,
                Poll::Ready(Err(error)) => {
                    tracing::error!(%error, "cannot write stdout");
                    return;
                }
                Poll::Pending => {}
            }
        }
        let writer = Arc::clone(&self.writer);
        self.answering.push(tokio::spawn(async move {
            let mut writer = match held {
                Some(writer) => writer,
                None => writer.lock_owned().await,
            };
            let rest = async {
                writer.write_all(&bytes[written..]).await?;
                writer.flush().await
            };
            if let Err(error) = rest.await {
                tracing::error!(%error, "cannot write stdout");
            }
            drop(slot);
        }));
    }

    /// Writes the answer to a broken line. It must not wait inside `receive`: rmcp polls
    /// `receive` in a `select!` and drops it when another branch is ready first, and an answer
    /// waiting there for the writer was lost (found by the `jsonrpc_lines` fuzz target).
    fn answer(&mut self, bytes: Vec<u8>) {
        self.write_now(bytes, None);
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
        async move { write_outgoing(&writer, outgoing?).await }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            // Requests read while the session was full go first, as soon as there is room.
            if !self.parked.is_empty() && self.ids.has_room() {
                if let Some(request) = self
                    .parked
                    .pop_front()
                    .and_then(|request| self.ids.start(request))
                    .and_then(|request| self.deliver(request))
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
                        if let Some(request) = self
                            .ids
                            .start(*message)
                            .and_then(|request| self.deliver(request))
                        {
                            return Some(request);
                        }
                    } else {
                        self.parked.push_back(*message);
                    }
                }
                Decoded::Message(message) => {
                    if let JsonRpcMessage::Notification(notification) = &*message
                        && let ClientNotification::CancelledNotification(cancelled) =
                            &notification.notification
                        && let Some(id) = &cancelled.params.request_id
                    {
                        self.waiting.cancel(id);
                    }
                    return Some(*message);
                }
                Decoded::Skip => {}
                Decoded::Answer(bytes) => self.answer(bytes),
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // Answers to broken lines and to requests answered inline go out before the output
        // closes; requests still waiting after that are cancelled.
        let answering = futures::future::join_all(self.answering.drain(..));
        if tokio::time::timeout(DRAIN, answering).await.is_err() {
            tracing::warn!("requests still being answered when the input ended were cancelled");
        }
        self.session.cancel();
        self.writer.lock().await.shutdown().await
    }
}

/// Writes a message `send` or an inline answer prepared, releasing its request's place after.
async fn write_outgoing<W: AsyncWrite + Unpin>(
    writer: &tokio::sync::Mutex<W>,
    outgoing: Outgoing,
) -> io::Result<()> {
    match outgoing {
        Outgoing::Line(bytes) => write_line(writer, &bytes).await,
        Outgoing::Answer(bytes, slot) => {
            let written = write_line(writer, &bytes).await;
            drop(slot);
            written
        }
        Outgoing::Nothing => Ok(()),
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
