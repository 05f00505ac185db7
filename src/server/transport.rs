//! The stdio transport: newline-delimited JSON-RPC over the process's pipes, with answers for
//! requests the SDK's own transport would drop or misanswer, request ids echoed exactly, and a
//! bound on the requests a session works on at once.
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

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::io;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rmcp::RoleServer;
use rmcp::model::{
    CallToolRequest, CallToolRequestMethod, CancelTaskMethod, CancelTaskRequest,
    CancelledNotificationMethod, ClientNotification, ClientRequest, CompleteRequest,
    CompleteRequestMethod, ConstString, DiscoverRequest, DiscoverRequestMethod, ErrorCode,
    ErrorData, GetPromptRequest, GetPromptRequestMethod, GetSkillRequest, GetSkillRequestMethod,
    GetTaskMethod, GetTaskRequest, InitializeRequest, InitializeResultMethod, JsonRpcMessage,
    ListPromptsRequest, ListPromptsRequestMethod, ListResourceTemplatesRequest,
    ListResourceTemplatesRequestMethod, ListResourcesRequest, ListResourcesRequestMethod,
    ListSkillsRequest, ListSkillsRequestMethod, ListToolsRequest, ListToolsRequestMethod,
    PingRequest, PingRequestMethod, ReadResourceDirectoryRequest,
    ReadResourceDirectoryRequestMethod, ReadResourceRequest, ReadResourceRequestMethod, RequestId,
    SetLevelRequestMethod, SubscribeRequestMethod, SubscriptionsListenRequest,
    SubscriptionsListenRequestMethod, UnsubscribeRequestMethod, UpdateTaskMethod,
    UpdateTaskRequest,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Notify;

/// The longest line accepted; longer requests are answered with an error and discarded.
pub const MAX_LINE_BYTES: usize = 64 << 20;

/// The most requests of one session worked on or answered at once; input waits beyond it.
pub const MAX_IN_FLIGHT: usize = 64;

/// How much of a request's params an "invalid params" answer quotes.
const QUOTED_PARAMS: usize = 200;

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

/// A request id as the client wrote it, for telling whether two requests share one: numbers
/// by their text (`1` and `1.0` are two ids, as each is echoed as written), strings by value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum IdKey {
    Number(String),
    Text(String),
}

impl IdKey {
    /// The key of a valid id (a number or a string); `None` for null, booleans, objects, arrays.
    fn of(id: &RawValue) -> Option<Self> {
        let text = id.get();
        match text.as_bytes().first()? {
            b'"' => serde_json::from_str(text).ok().map(Self::Text),
            b'-' | b'0'..=b'9' => Some(Self::Number(text.to_owned())),
            _ => None,
        }
    }

    /// Whether rmcp can hold this id (an `i64` or a string) to parse the rest of the request.
    fn fits_rmcp(&self) -> bool {
        match self {
            Self::Number(text) => text.parse::<i64>().is_ok(),
            Self::Text(_) => true,
        }
    }
}

/// What an invalid id is, for the error message.
fn kind_of(id: &RawValue) -> &'static str {
    match id.get().as_bytes().first() {
        Some(b'n') => "null",
        Some(b't' | b'f') => "a boolean",
        Some(b'{') => "an object",
        Some(b'[') => "an array",
        _ => "not a JSON value",
    }
}

/// The client's requests in flight, shared by `receive` (which registers them) and the futures
/// `send` returns (which answer them).
#[derive(Default)]
struct Ids {
    state: Mutex<IdState>,
    /// Signalled whenever room for another request may have appeared.
    released: Notify,
}

#[derive(Default)]
struct IdState {
    /// The last internal id given.
    last: i64,
    /// Requests not answered yet, by internal id.
    in_flight: HashMap<i64, InFlight>,
    /// The same requests by the id the client gave them.
    by_key: HashMap<IdKey, i64>,
    /// Requests that count against [`MAX_IN_FLIGHT`]: in flight or with an answer being written.
    busy: usize,
    /// Requests the server sent the client that are not answered yet: their handlers wait for
    /// the client, so as many requests more may be read.
    asked: usize,
}

struct InFlight {
    /// The id exactly as the client wrote it.
    written: Box<RawValue>,
    key: IdKey,
    /// Whether it counts against [`MAX_IN_FLIGHT`]: from when it is delivered to rmcp, except
    /// long-lived subscriptions.
    counted: bool,
}

/// A request counted against [`MAX_IN_FLIGHT`] until its answer is written (or abandoned).
struct Slot(Arc<Ids>);

impl Drop for Slot {
    fn drop(&mut self) {
        let mut state = self.0.lock();
        state.busy = state.busy.saturating_sub(1);
        drop(state);
        self.0.released.notify_one();
    }
}

impl Ids {
    fn lock(&self) -> MutexGuard<'_, IdState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits until fewer than [`MAX_IN_FLIGHT`] requests are busy (not counting those waiting
    /// for the client). Cancel-safe.
    async fn room(&self) {
        loop {
            let released = self.released.notified();
            if self.has_room() {
                return;
            }
            released.await;
        }
    }

    fn has_room(&self) -> bool {
        let state = self.lock();
        state.busy < MAX_IN_FLIGHT.saturating_add(state.asked)
    }

    fn in_flight(&self, key: &IdKey) -> bool {
        self.lock().by_key.contains_key(key)
    }

    /// Registers a request read and gives the id rmcp knows it by; it counts once started.
    fn register(&self, key: IdKey, written: Box<RawValue>) -> RequestId {
        let mut state = self.lock();
        state.last = state.last.wrapping_add(1);
        let internal = state.last;
        state.by_key.insert(key.clone(), internal);
        state.in_flight.insert(
            internal,
            InFlight {
                written,
                key,
                counted: false,
            },
        );
        RequestId::Number(internal)
    }

    /// A registered request about to be delivered: it counts from now on, unless it is a
    /// long-lived subscription. `None` when it was cancelled before it started.
    fn start(&self, message: RxJsonRpcMessage<RoleServer>) -> Option<RxJsonRpcMessage<RoleServer>> {
        let JsonRpcMessage::Request(request) = &message else {
            return Some(message);
        };
        let RequestId::Number(internal) = &request.id else {
            return Some(message);
        };
        let counts = !matches!(
            request.request,
            ClientRequest::SubscriptionsListenRequest(_)
        );
        let mut state = self.lock();
        let registered = state.in_flight.get_mut(internal)?;
        if counts && !registered.counted {
            registered.counted = true;
            state.busy += 1;
        }
        drop(state);
        Some(message)
    }

    /// Takes the request an answer is for: its id as the client wrote it, and its place in the
    /// count while the answer is written. `None` when the request is not in flight (cancelled).
    fn answered(self: &Arc<Self>, id: &RequestId) -> Option<(Box<RawValue>, Option<Slot>)> {
        let RequestId::Number(internal) = id else {
            return None;
        };
        let mut state = self.lock();
        let request = state.in_flight.remove(internal)?;
        state.by_key.remove(&request.key);
        // `busy` already counts it; the slot gives it back once the answer is out.
        let slot = request.counted.then(|| Slot(Arc::clone(self)));
        Some((request.written, slot))
    }

    /// Forgets a request the client cancelled (rmcp sends no answer for it) and gives the id
    /// rmcp knows it by.
    fn cancelled(&self, key: &IdKey) -> Option<RequestId> {
        let mut state = self.lock();
        let internal = state.by_key.remove(key)?;
        if state
            .in_flight
            .remove(&internal)
            .is_some_and(|request| request.counted)
        {
            state.busy = state.busy.saturating_sub(1);
        }
        drop(state);
        self.released.notify_one();
        Some(RequestId::Number(internal))
    }

    /// A notification of a `subscriptions/listen` stream names its subscription by the listen
    /// request's id: rmcp writes the internal one, the client must see the id it wrote.
    fn restore_subscription_id(&self, line: Vec<u8>) -> Vec<u8> {
        const KEY: &[u8] = b"\"io.modelcontextprotocol/subscriptionId\":";
        let Some(start) = find(&line, KEY).map(|at| at + KEY.len()) else {
            return line;
        };
        let digits = line[start..]
            .iter()
            .take_while(|byte| byte.is_ascii_digit())
            .count();
        let end = start + digits;
        let Some(internal) = std::str::from_utf8(&line[start..end])
            .ok()
            .and_then(|text| text.parse::<i64>().ok())
        else {
            return line;
        };
        let state = self.lock();
        let Some(request) = state.in_flight.get(&internal) else {
            return line;
        };
        let mut restored = Vec::with_capacity(line.len() + request.written.get().len());
        restored.extend_from_slice(&line[..start]);
        restored.extend_from_slice(request.written.get().as_bytes());
        restored.extend_from_slice(&line[end..]);
        restored
    }

    /// The server asked the client something.
    fn asked(&self) {
        self.lock().asked += 1;
        self.released.notify_one();
    }

    /// The client answered something the server asked.
    fn replied(&self) {
        let mut state = self.lock();
        state.asked = state.asked.saturating_sub(1);
    }
}

/// A message to write, as `send` prepared it.
enum Outgoing {
    Line(Vec<u8>),
    /// An answer to a client request, holding the request's place in the count until written.
    Answer(Vec<u8>, Option<Slot>),
    /// An answer to a request no longer in flight (cancelled): the client ignores it anyway.
    Nothing,
}

/// A JSON-RPC answer with the id as the client wrote it.
#[derive(Serialize)]
struct Answer<'a, T: Serialize> {
    jsonrpc: &'static str,
    id: &'a RawValue,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a T>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a ErrorData>,
}

fn encode(item: &TxJsonRpcMessage<RoleServer>, ids: &Arc<Ids>) -> io::Result<Outgoing> {
    let (id, result, error) = match item {
        JsonRpcMessage::Response(response) => (&response.id, Some(&response.result), None),
        JsonRpcMessage::Error(error) => match &error.id {
            Some(id) => (id, None, Some(&error.error)),
            None => return line_of(item).map(Outgoing::Line),
        },
        JsonRpcMessage::Request(_) => {
            ids.asked();
            return line_of(item).map(Outgoing::Line);
        }
        JsonRpcMessage::Notification(_) => {
            return line_of(item).map(|line| Outgoing::Line(ids.restore_subscription_id(line)));
        }
    };
    let Some((written, slot)) = ids.answered(id) else {
        tracing::debug!(%id, "dropped the answer to a request no longer in flight");
        return Ok(Outgoing::Nothing);
    };
    let answer = Answer {
        jsonrpc: "2.0",
        id: &written,
        result,
        error,
    };
    line_of(&answer).map(|bytes| Outgoing::Answer(bytes, slot))
}

fn line_of(message: &impl Serialize) -> io::Result<Vec<u8>> {
    let mut bytes = serde_json::to_vec(message).map_err(io::Error::other)?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// What one line amounts to.
enum Decoded {
    Message(Box<RxJsonRpcMessage<RoleServer>>),
    /// Nothing to deliver and nobody to answer.
    Skip,
    /// An error response to write back.
    Answer(Vec<u8>),
}

/// The members of a JSON object, each value as written.
type Members<'a> = HashMap<Cow<'a, str>, &'a RawValue>;

fn decode(line: &[u8], dropped: usize, ids: &Ids) -> Decoded {
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
        return answer(
            request_id_in(line).as_deref(),
            ErrorCode::INVALID_REQUEST,
            &message,
        );
    }
    if line.trim_ascii_start().starts_with(b"[") {
        return batch(line);
    }
    let members = match serde_json::from_slice::<Members>(line) {
        Ok(members) => members,
        Err(error) if error.is_data() => {
            tracing::warn!("skipped an input line that is JSON but not a JSON-RPC message");
            return Decoded::Skip;
        }
        Err(error) => {
            return answer(
                request_id_in(line).as_deref(),
                ErrorCode::PARSE_ERROR,
                &format!("parse error: {error}"),
            );
        }
    };
    if !members.contains_key("method") {
        return others(line, ids);
    }
    match members.get("id") {
        Some(id) => request(line, id, ids),
        None => notification(line, &members, ids),
    }
}

/// A request: checked, given an internal id, and delivered; or answered here.
fn request(line: &[u8], id: &RawValue, ids: &Ids) -> Decoded {
    let Some(key) = IdKey::of(id) else {
        let message = format!(
            "invalid request: the id must be a number or a string, not {}",
            kind_of(id)
        );
        return answer(Some(RawValue::NULL), ErrorCode::INVALID_REQUEST, &message);
    };
    if ids.in_flight(&key) {
        let message = format!(
            "request id {} is already in flight: a request with this id is still being answered; give each request in flight an id of its own",
            id.get()
        );
        return answer(Some(id), ErrorCode::INVALID_REQUEST, &message);
    }
    let parsed = if key.fits_rmcp() {
        serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(line)
    } else {
        // The id is replaced after parsing; rmcp only needs one it can hold meanwhile.
        serde_json::from_slice(&splice(line, id, b"0"))
    };
    match parsed {
        Ok(JsonRpcMessage::Request(mut request)) => {
            if let Some(problem) = params_problem(&request.request) {
                return answer(Some(id), ErrorCode::INVALID_PARAMS, &problem);
            }
            request.id = ids.register(key, id.to_owned());
            Decoded::Message(Box::new(JsonRpcMessage::Request(request)))
        }
        Ok(message) => Decoded::Message(Box::new(message)),
        Err(error) if error.is_data() => answer(
            Some(id),
            ErrorCode::INVALID_REQUEST,
            &format!("invalid request: {error}"),
        ),
        Err(error) => answer(
            Some(id),
            ErrorCode::PARSE_ERROR,
            &format!("parse error: {error}"),
        ),
    }
}

/// A notification; a cancellation names the request by the internal id.
fn notification(line: &[u8], members: &Members, ids: &Ids) -> Decoded {
    // Compared decoded: `"notifications/cancell\u0065d"` is the same method to rmcp.
    let cancelled = members.get("method").is_some_and(|method| {
        serde_json::from_str::<Cow<str>>(method.get())
            .is_ok_and(|method| method == CancelledNotificationMethod::VALUE)
    });
    let request_id = members
        .get("params")
        .filter(|_| cancelled)
        .and_then(|params| serde_json::from_str::<Members>(params.get()).ok())
        .and_then(|params| params.get("requestId").copied());
    let Some(request_id) = request_id else {
        return match serde_json::from_slice(line) {
            Ok(message) => Decoded::Message(Box::new(message)),
            Err(error) => {
                tracing::warn!(%error, "skipped a notification that does not parse");
                Decoded::Skip
            }
        };
    };
    let Some(internal) = IdKey::of(request_id).and_then(|key| ids.cancelled(&key)) else {
        tracing::debug!(
            id = request_id.get(),
            "ignored the cancellation of a request not in flight"
        );
        return Decoded::Skip;
    };
    match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(&splice(line, request_id, b"0")) {
        Ok(JsonRpcMessage::Notification(mut notification)) => {
            if let ClientNotification::CancelledNotification(cancellation) =
                &mut notification.notification
            {
                cancellation.params.request_id = Some(internal);
            }
            Decoded::Message(Box::new(JsonRpcMessage::Notification(notification)))
        }
        Ok(message) => Decoded::Message(Box::new(message)),
        Err(error) => {
            tracing::warn!(%error, "skipped a cancellation that does not parse");
            Decoded::Skip
        }
    }
}

/// A line without a method: the client's answer to something the server asked, or junk.
fn others(line: &[u8], ids: &Ids) -> Decoded {
    match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(line) {
        Ok(message) => {
            if matches!(
                message,
                JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_)
            ) {
                ids.replied();
            }
            Decoded::Message(Box::new(message))
        }
        Err(error) => {
            tracing::warn!(%error, "skipped an input line that is neither a request nor an answer");
            Decoded::Skip
        }
    }
}

/// A batch: every request in it answered with an error, in one array.
fn batch(line: &[u8]) -> Decoded {
    let elements = match serde_json::from_slice::<Vec<&RawValue>>(line) {
        Ok(elements) => elements,
        Err(error) => {
            return answer(
                request_id_in(line).as_deref(),
                ErrorCode::PARSE_ERROR,
                &format!("parse error: {error}"),
            );
        }
    };
    let requests: Vec<&RawValue> = elements
        .iter()
        .filter_map(|element| serde_json::from_str::<Members>(element.get()).ok())
        .filter(|members| members.contains_key("method"))
        .filter_map(|members| members.get("id").copied())
        .map(|id| {
            if IdKey::of(id).is_some() {
                id
            } else {
                RawValue::NULL
            }
        })
        .collect();
    if requests.is_empty() {
        return answer(
            Some(RawValue::NULL),
            ErrorCode::INVALID_REQUEST,
            "invalid request: JSON-RPC batches are not supported (MCP removed them in 2025-06-18); send each message on a line of its own",
        );
    }
    let message = format!(
        "invalid request: JSON-RPC batches are not supported (MCP removed them in 2025-06-18); send the {} of this batch one line each",
        match requests.len() {
            1 => "request".to_owned(),
            count => format!("{count} requests"),
        }
    );
    let error = ErrorData::new(ErrorCode::INVALID_REQUEST, message, None);
    let answers: Vec<Answer<'_, ()>> = requests
        .into_iter()
        .map(|id| Answer {
            jsonrpc: "2.0",
            id,
            result: None,
            error: Some(&error),
        })
        .collect();
    tracing::warn!(requests = answers.len(), "answered a batch with errors");
    match line_of(&answers) {
        Ok(bytes) => Decoded::Answer(bytes),
        Err(error) => {
            tracing::error!(%error, "cannot encode the answer to a batch");
            Decoded::Skip
        }
    }
}

fn answer(id: Option<&RawValue>, code: ErrorCode, message: &str) -> Decoded {
    let Some(id) = id else {
        tracing::warn!(message, "skipped an input line that names no request id");
        return Decoded::Skip;
    };
    tracing::warn!(id = id.get(), message, "answered a broken request");
    let error = ErrorData::new(code, message.to_owned(), None);
    let answer = Answer::<()> {
        jsonrpc: "2.0",
        id,
        result: None,
        error: Some(&error),
    };
    match line_of(&answer) {
        Ok(bytes) => Decoded::Answer(bytes),
        Err(error) => {
            tracing::error!(%error, "cannot encode an error answer");
            Decoded::Skip
        }
    }
}

/// `line` with the text of `value` (a part of it) replaced.
fn splice(line: &[u8], value: &RawValue, replacement: &[u8]) -> Vec<u8> {
    let text = value.get().as_bytes();
    let start = text.as_ptr().addr().wrapping_sub(line.as_ptr().addr());
    let end = start.wrapping_add(text.len());
    if line.get(start..end) != Some(text) {
        return line.to_vec();
    }
    let mut spliced = Vec::with_capacity(line.len() + replacement.len());
    spliced.extend_from_slice(&line[..start]);
    spliced.extend_from_slice(replacement);
    spliced.extend_from_slice(&line[end..]);
    spliced
}

/// Why the params of a request rmcp did not recognise are wrong, when its method is one rmcp
/// knows (rmcp takes a known method with params of the wrong shape for a custom method).
#[expect(
    deprecated,
    reason = "logging and legacy subscriptions are deprecated in rmcp but still served"
)]
fn params_problem(request: &ClientRequest) -> Option<String> {
    type Check = fn(Value) -> Option<String>;
    fn check<T: DeserializeOwned>(message: Value) -> Option<String> {
        serde_json::from_value::<T>(message)
            .err()
            .map(|error| error.to_string())
    }
    const KNOWN: [(&str, Check); 21] = [
        (PingRequestMethod::VALUE, check::<PingRequest>),
        (InitializeResultMethod::VALUE, check::<InitializeRequest>),
        (DiscoverRequestMethod::VALUE, check::<DiscoverRequest>),
        (CompleteRequestMethod::VALUE, check::<CompleteRequest>),
        (
            SetLevelRequestMethod::VALUE,
            check::<rmcp::model::SetLevelRequest>,
        ),
        (GetPromptRequestMethod::VALUE, check::<GetPromptRequest>),
        (ListPromptsRequestMethod::VALUE, check::<ListPromptsRequest>),
        (
            ListResourcesRequestMethod::VALUE,
            check::<ListResourcesRequest>,
        ),
        (
            ListResourceTemplatesRequestMethod::VALUE,
            check::<ListResourceTemplatesRequest>,
        ),
        (
            ReadResourceRequestMethod::VALUE,
            check::<ReadResourceRequest>,
        ),
        (
            SubscriptionsListenRequestMethod::VALUE,
            check::<SubscriptionsListenRequest>,
        ),
        (
            SubscribeRequestMethod::VALUE,
            check::<rmcp::model::SubscribeRequest>,
        ),
        (
            UnsubscribeRequestMethod::VALUE,
            check::<rmcp::model::UnsubscribeRequest>,
        ),
        (CallToolRequestMethod::VALUE, check::<CallToolRequest>),
        (ListToolsRequestMethod::VALUE, check::<ListToolsRequest>),
        (GetTaskMethod::VALUE, check::<GetTaskRequest>),
        (UpdateTaskMethod::VALUE, check::<UpdateTaskRequest>),
        (CancelTaskMethod::VALUE, check::<CancelTaskRequest>),
        (ListSkillsRequestMethod::VALUE, check::<ListSkillsRequest>),
        (GetSkillRequestMethod::VALUE, check::<GetSkillRequest>),
        (
            ReadResourceDirectoryRequestMethod::VALUE,
            check::<ReadResourceDirectoryRequest>,
        ),
    ];
    let ClientRequest::CustomRequest(custom) = request else {
        return None;
    };
    let (method, check) = KNOWN.iter().find(|(method, _)| *method == custom.method)?;
    let mut message = serde_json::Map::new();
    message.insert("method".to_owned(), Value::from(*method));
    if let Some(params) = &custom.params {
        message.insert("params".to_owned(), params.clone());
    }
    let problem = check(Value::Object(message))?;
    let quoted = match &custom.params {
        None => "no params".to_owned(),
        Some(params) => {
            let text = params.to_string();
            match text.char_indices().nth(QUOTED_PARAMS) {
                Some((end, _)) => format!("params {}…", &text[..end]),
                None => format!("params {text}"),
            }
        }
    };
    Some(format!(
        "invalid params for {method}: {problem} (got {quoted}); send the params the MCP schema gives for {method}"
    ))
}

/// The id of a request that does not parse, when its text shows `"id": <number or string>` and
/// a `"method"` before any `"params"` (so an `id` inside the arguments is never taken for it).
fn request_id_in(line: &[u8]) -> Option<Box<RawValue>> {
    let head = match find(line, b"\"params\"") {
        Some(end) => &line[..end],
        None => line,
    };
    find(head, b"\"method\"")?;
    let mut rest = head;
    while let Some(start) = find(rest, b"\"id\"") {
        rest = &rest[start + 4..];
        let after_colon = rest.trim_ascii_start().strip_prefix(b":")?;
        let mut values =
            serde_json::Deserializer::from_slice(after_colon).into_iter::<Box<RawValue>>();
        if let Some(Ok(id)) = values.next()
            && IdKey::of(&id).is_some()
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
    use proptest::prelude::*;
    use rmcp::model::{ServerJsonRpcMessage, ServerResult};
    use serde_json::json;

    fn id_text(id: Option<Box<RawValue>>) -> Option<String> {
        id.map(|id| id.get().to_owned())
    }

    #[test]
    fn finds_the_request_id_before_the_params_only() {
        let line = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"id":9,"x":[[[["#;
        assert_eq!(id_text(request_id_in(line)), Some("7".to_owned()));
        let text_id = br#"{"method":"x","id" : "abc","params":{"#;
        assert_eq!(id_text(request_id_in(text_id)), Some("\"abc\"".to_owned()));
        let inner_only = br#"{"method":"x","params":{"id":9}"#;
        assert_eq!(id_text(request_id_in(inner_only)), None);
        let no_method = br#"{"id":3,"result":{"#;
        assert_eq!(id_text(request_id_in(no_method)), None);
        let huge = br#"{"method":"x","id":123456789012345678901234567890,"params":{"#;
        assert_eq!(
            id_text(request_id_in(huge)),
            Some("123456789012345678901234567890".to_owned())
        );
    }

    fn answered(decoded: Decoded) -> Value {
        let Decoded::Answer(bytes) = decoded else {
            panic!("expected an answer")
        };
        serde_json::from_slice(&bytes).unwrap()
    }

    #[test]
    fn broken_requests_with_an_id_are_answered_and_the_rest_skipped() {
        let ids = Ids::default();
        let response = answered(decode(
            b"{\"id\":1,\"method\":\"x\",\"params\":{\"a\":\"\xff\"}}\n",
            0,
            &ids,
        ));
        assert_eq!(response["id"], json!(1));
        assert_eq!(response["error"]["code"], json!(-32700));
        assert!(matches!(
            decode(b"not json at all\n", 0, &ids),
            Decoded::Skip
        ));
        assert!(matches!(decode(b"\r\n", 0, &ids), Decoded::Skip));
        assert!(matches!(decode(b"5\n", 0, &ids), Decoded::Skip));
        let response = answered(decode(br#"{"id":2,"method":"x","params":{"#, 10, &ids));
        assert_eq!(response["error"]["code"], json!(-32600));
    }

    /// Decodes a request, answers it as the server would, and returns the line written.
    fn round_trip(ids: &Arc<Ids>, line: &str) -> String {
        let Decoded::Message(message) = decode(line.as_bytes(), 0, ids) else {
            panic!("not delivered: {line}")
        };
        let (_, id) = message.into_request().expect("a request");
        let response = ServerJsonRpcMessage::response(ServerResult::empty(()), id);
        let Ok(Outgoing::Answer(bytes, _)) = encode(&response, ids) else {
            panic!("no answer for {line}")
        };
        String::from_utf8(bytes).unwrap()
    }

    proptest! {
        #[test]
        fn every_number_id_is_echoed_exactly(
            sign in "-?",
            integer in "[1-9][0-9]{0,80}|0",
            fraction in "(\\.[0-9]{1,20})?",
            exponent in "([eE][+-]?[0-9]{1,3})?",
        ) {
            let id = format!("{sign}{integer}{fraction}{exponent}");
            let ids = Arc::new(Ids::default());
            let line = round_trip(&ids, &format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#));
            prop_assert_eq!(line, format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{}}}}\n"));
            prop_assert_eq!(ids.lock().in_flight.len(), 0);
        }

        #[test]
        fn every_string_id_is_echoed_exactly(text in any::<String>(), escaped in any::<bool>()) {
            let id = if escaped {
                text.chars().fold(String::new(), |mut escaped, character| {
                    use std::fmt::Write;
                    write!(escaped, "\\u{:04x}", u32::from(character).min(0xFFFF)).unwrap();
                    escaped
                })
            } else {
                serde_json::to_string(&text).unwrap().trim_matches('"').to_owned()
            };
            let id = format!("\"{id}\"");
            prop_assume!(serde_json::from_str::<String>(&id).is_ok());
            let ids = Arc::new(Ids::default());
            let line = round_trip(&ids, &format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#));
            prop_assert_eq!(line, format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{}}}}\n"));
        }
    }

    #[test]
    fn an_id_in_flight_is_refused_until_answered_and_then_free() {
        let ids = Arc::new(Ids::default());
        let ping = br#"{"jsonrpc":"2.0","id":"a","method":"ping"}"#;
        let Decoded::Message(first) = decode(ping, 0, &ids) else {
            panic!("the first is delivered")
        };
        // The same id written another way is the same id.
        let again = answered(decode(
            br#"{"jsonrpc":"2.0","id":"\u0061","method":"ping"}"#,
            0,
            &ids,
        ));
        assert_eq!(again["id"], json!("a"));
        assert_eq!(again["error"]["code"], json!(-32600));
        // A number is never the same id as a string.
        assert!(matches!(
            decode(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#, 0, &ids),
            Decoded::Message(_)
        ));
        let (_, id) = first.into_request().unwrap();
        let response = ServerJsonRpcMessage::response(ServerResult::empty(()), id);
        assert!(matches!(encode(&response, &ids), Ok(Outgoing::Answer(..))));
        assert!(matches!(decode(ping, 0, &ids), Decoded::Message(_)));
    }

    #[test]
    fn a_cancellation_names_the_internal_id_and_frees_the_client_id() {
        let ids = Arc::new(Ids::default());
        let huge = "9".repeat(40);
        let request = format!(r#"{{"jsonrpc":"2.0","id":{huge},"method":"ping"}}"#);
        let Decoded::Message(message) = decode(request.as_bytes(), 0, &ids) else {
            panic!("delivered")
        };
        let (_, internal) = message.into_request().unwrap();
        let cancel = format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{huge}}}}}"#
        );
        let Decoded::Message(message) = decode(cancel.as_bytes(), 0, &ids) else {
            panic!("delivered")
        };
        let Some(ClientNotification::CancelledNotification(cancellation)) =
            message.into_notification()
        else {
            panic!("a cancellation")
        };
        assert_eq!(cancellation.params.request_id, Some(internal.clone()));
        assert_eq!(ids.lock().busy, 0);
        // rmcp sends no answer for it; if one comes anyway it is not written.
        let late = ServerJsonRpcMessage::response(ServerResult::empty(()), internal);
        assert!(matches!(encode(&late, &ids), Ok(Outgoing::Nothing)));
        // Cancelling what is not in flight reaches nothing, however the method is spelled: a
        // client id passed through untranslated could name another request's internal id.
        assert!(matches!(decode(cancel.as_bytes(), 0, &ids), Decoded::Skip));
        let Decoded::Message(_) = decode(br#"{"jsonrpc":"2.0","id":"x","method":"ping"}"#, 0, &ids)
        else {
            panic!("delivered")
        };
        let escaped =
            br#"{"jsonrpc":"2.0","method":"notifications/cancell\u0065d","params":{"requestId":2}}"#;
        assert!(matches!(decode(escaped, 0, &ids), Decoded::Skip));
    }

    #[test]
    fn wrong_params_of_every_known_method_are_invalid_params_and_unknown_methods_pass() {
        let ids = Ids::default();
        for method in [
            "tools/call",
            "resources/read",
            "prompts/get",
            "completion/complete",
        ] {
            let line = format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{{"name":[1],"uri":[1],"ref":[1]}}}}"#
            );
            let response = answered(decode(line.as_bytes(), 0, &ids));
            assert_eq!(
                response["error"]["code"],
                json!(-32602),
                "{method}: {response}"
            );
        }
        for line in [
            r#"{"jsonrpc":"2.0","id":2,"method":"ping","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":4,"method":"no/such/method","params":{"x":[1]}}"#,
        ] {
            assert!(
                matches!(decode(line.as_bytes(), 0, &ids), Decoded::Message(_)),
                "{line}"
            );
        }
    }
}
