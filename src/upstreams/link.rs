//! One upstream server as the rest of synapse-mcp sees it, across its restarts: whether it is
//! up (and how to reach it) or why not, and the calls of its tools in flight. The client side
//! of the connection ([`Handler`], rmcp's `ClientHandler`) routes what the server sends on its
//! own: an elicitation or sampling request goes to the newest call in flight, whose client is
//! asked (over stdio nothing ties such a request to the call that caused it; one synapse-mcp
//! process serves one client, so any call in flight reaches the right one); progress goes to the
//! call whose request carries the token; `tools/list_changed` wakes the supervisor to list
//! again. Sampling and logging are deprecated by SEP-2577, but servers still use them.
#![expect(
    deprecated,
    reason = "sampling and logging are deprecated by SEP-2577 but servers still use them"
)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use rmcp::model::{
    CancelledNotificationParam, ClientCapabilities, ClientConfig, CreateMessageRequestParams,
    CreateMessageResult, ElicitRequestParams, ElicitResult, Implementation, LoggingLevel,
    LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken, RequestId,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ClientHandler, ErrorData, Peer, RoleClient};
use serde_json::Value;
use tokio::sync::{Notify, mpsc, oneshot};

use crate::tools::{RelayError, Relayed};

/// Where an upstream stands.
pub(super) enum State {
    /// Its first start is under way.
    Starting,
    Up(Peer<RoleClient>),
    /// It exited or could not start; the next try is at `retry_at`.
    Down {
        reason: String,
        attempt: u32,
        retry_at: Instant,
    },
    /// Taken out of the configuration, or being restarted with a new one.
    Stopped,
}

/// One upstream, shared by its supervisor, its tools and its connection's handler.
pub(super) struct Link {
    pub(super) name: String,
    state: Mutex<State>,
    calls: Mutex<Vec<Flight>>,
    next_call: AtomicU64,
    /// Woken by the server's `tools/list_changed`.
    pub(super) relist: Notify,
}

/// A call in flight: where its progress and the server's questions go.
struct Flight {
    id: u64,
    token: Option<ProgressToken>,
    progress: Option<Arc<ProgressSlot>>,
    questions: Option<mpsc::UnboundedSender<Question>>,
}

/// The newest progress of a call not passed on yet: a server reporting faster than the client
/// reads replaces what waits (and the replaced ones are counted), so a slow client costs one
/// update per call, not a queue.
#[derive(Default)]
pub(super) struct ProgressSlot {
    waiting: Mutex<Option<ProgressNotificationParam>>,
    replaced: AtomicU64,
    arrived: Notify,
}

impl ProgressSlot {
    fn put(&self, params: ProgressNotificationParam) {
        let earlier = self
            .waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .replace(params);
        if earlier.is_some() {
            self.replaced.fetch_add(1, Ordering::Relaxed);
        }
        self.arrived.notify_one();
    }

    /// The update waiting, if one is.
    pub(super) fn take(&self) -> Option<ProgressNotificationParam> {
        self.waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    /// The next update.
    pub(super) async fn next(&self) -> ProgressNotificationParam {
        loop {
            if let Some(update) = self.take() {
                return update;
            }
            self.arrived.notified().await;
        }
    }

    /// How many updates were replaced by newer ones before they were passed on.
    pub(super) fn replaced(&self) -> u64 {
        self.replaced.load(Ordering::Relaxed)
    }
}

/// A request of the server for the call's client, and where its answer goes.
pub(super) struct Question {
    pub(super) request: Relayed,
    pub(super) answer: oneshot::Sender<Result<Value, RelayError>>,
}

impl Link {
    pub(super) fn new(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            state: Mutex::new(State::Starting),
            calls: Mutex::default(),
            next_call: AtomicU64::new(0),
            relist: Notify::new(),
        }
    }

    pub(super) fn set(&self, state: State) {
        *self.state.lock().unwrap_or_else(PoisonError::into_inner) = state;
    }

    /// How to reach the server now, or why it cannot be reached, in words for the model.
    pub(super) fn peer(&self) -> Result<Peer<RoleClient>, String> {
        let name = &self.name;
        match &*self.state.lock().unwrap_or_else(PoisonError::into_inner) {
            State::Up(peer) => Ok(peer.clone()),
            State::Starting => Err(format!(
                "the MCP server `{name}` is still starting; call again in a moment"
            )),
            State::Down {
                reason,
                attempt,
                retry_at,
            } => {
                let wait = retry_at.saturating_duration_since(Instant::now());
                Err(format!(
                    "the MCP server `{name}` is not running ({reason}); synapse-mcp restarts it \
                     (attempt {attempt}, the next in {:.1} s): call again after that",
                    wait.as_secs_f64()
                ))
            }
            State::Stopped => Err(format!(
                "the MCP server `{name}` was stopped: its configuration changed or was removed; \
                 tools/list shows what is served now"
            )),
        }
    }

    /// Registers a call about to be sent; what its request brings back arrives on the
    /// receivers of the [`Flight`] handle, for the parts the call can pass on.
    pub(super) fn begin(self: &Arc<Self>, progress: bool, questions: bool) -> InFlight {
        let id = self.next_call.fetch_add(1, Ordering::Relaxed);
        let progress = progress.then(Arc::<ProgressSlot>::default);
        let (question_sender, questions) = channel_if(questions);
        self.calls().push(Flight {
            id,
            token: None,
            progress: progress.clone(),
            questions: question_sender,
        });
        InFlight {
            link: Arc::clone(self),
            id,
            progress,
            questions,
            sent: None,
        }
    }

    /// Sends a progress notification to the call whose request carried its token.
    fn progress(&self, params: ProgressNotificationParam) {
        let calls = self.calls();
        let flight = calls
            .iter()
            .find(|flight| flight.token.as_ref() == Some(&params.progress_token));
        if let Some(slot) = flight.and_then(|flight| flight.progress.as_ref()) {
            slot.put(params);
        }
    }

    /// Asks the client of the newest call in flight, and waits for its answer.
    async fn ask(&self, request: Relayed) -> Result<Value, RelayError> {
        let sender = {
            let calls = self.calls();
            let Some(newest) = calls.last() else {
                return Err(RelayError(format!(
                    "no call of a tool of `{}` is running through synapse-mcp, so there is no \
                     client to ask",
                    self.name
                )));
            };
            newest.questions.clone().ok_or_else(|| {
                RelayError(
                    "the client connected to synapse-mcp cannot be asked while a call runs (it \
                     declared neither elicitation nor sampling, or its protocol version forbids \
                     requests from the server)"
                        .to_owned(),
                )
            })?
        };
        let (answer, answered) = oneshot::channel();
        sender
            .send(Question { request, answer })
            .map_err(|_| RelayError("the call ended before the client was asked".to_owned()))?;
        answered
            .await
            .map_err(|_| RelayError("the call ended before the client answered".to_owned()))?
    }

    fn calls(&self) -> MutexGuard<'_, Vec<Flight>> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

type Channel<T> = (
    Option<mpsc::UnboundedSender<T>>,
    Option<mpsc::UnboundedReceiver<T>>,
);

fn channel_if<T>(wanted: bool) -> Channel<T> {
    if wanted {
        let (sender, receiver) = mpsc::unbounded_channel();
        (Some(sender), Some(receiver))
    } else {
        (None, None)
    }
}

/// A call in flight, from before its request is sent until it is dropped: it then leaves the
/// link, and a request still unanswered (the call was cancelled) is cancelled on the server too.
pub(super) struct InFlight {
    link: Arc<Link>,
    id: u64,
    pub(super) progress: Option<Arc<ProgressSlot>>,
    pub(super) questions: Option<mpsc::UnboundedReceiver<Question>>,
    /// The request's id and the peer it went to, until its answer arrives.
    sent: Option<(RequestId, Peer<RoleClient>)>,
}

impl InFlight {
    /// The request went out with this id and progress token.
    pub(super) fn sent(&mut self, peer: &Peer<RoleClient>, id: RequestId, token: ProgressToken) {
        if let Some(flight) = self
            .link
            .calls()
            .iter_mut()
            .find(|flight| flight.id == self.id)
        {
            flight.token = Some(token);
        }
        self.sent = Some((id, peer.clone()));
    }

    /// The answer arrived: nothing to cancel any more.
    pub(super) fn answered(&mut self) {
        self.sent = None;
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.link.calls().retain(|flight| flight.id != self.id);
        let Some((request_id, peer)) = self.sent.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let params = CancelledNotificationParam::new(
            Some(request_id),
            Some("the call was cancelled by synapse-mcp's client".to_owned()),
        );
        runtime.spawn(async move {
            if let Err(error) = peer.notify_cancelled(params).await {
                tracing::debug!(%error, "cannot cancel a call on an upstream server");
            }
        });
    }
}

/// Whether the server is reachable, for `ToolGroups` and a call of a tool it has not listed.
impl crate::tools::GroupState for Link {
    fn unavailable(&self) -> Option<String> {
        self.peer().err()
    }
}

/// The client side of one connection to an upstream server.
pub(super) struct Handler {
    pub(super) link: Arc<Link>,
}

impl Handler {
    async fn relay(&self, request: Relayed) -> Result<Value, ErrorData> {
        self.link.ask(request).await.map_err(|error| {
            tracing::info!(upstream = %self.link.name, %error, "a request of the server was not relayed");
            ErrorData::invalid_request(error.to_string(), None)
        })
    }
}

fn decoded<T: serde::de::DeserializeOwned>(answer: Value) -> Result<T, ErrorData> {
    serde_json::from_value(answer).map_err(|error| {
        ErrorData::internal_error(
            format!("the client's answer is not valid MCP: {error}"),
            None,
        )
    })
}

fn encoded(params: &impl serde::Serialize) -> Result<Value, ErrorData> {
    serde_json::to_value(params).map_err(|error| ErrorData::internal_error(error.to_string(), None))
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::builder().enable_elicitation().build();
        capabilities.sampling = Some(rmcp::model::SamplingCapability::default());
        // The newest version with an `initialize` handshake, which is how the session starts
        // (rmcp's default is 2026-07-28, which has none, and servers would answer it with
        // `input_required`, which synapse-mcp does not pass on).
        ClientConfig::new(
            capabilities,
            Implementation::new(env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(rmcp::model::ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn create_elicitation(
        &self,
        mut request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        // The user is told who asks: the question is the other server's, not synapse-mcp's.
        if let ElicitRequestParams::FormElicitationParams { message, .. }
        | ElicitRequestParams::UrlElicitationParams { message, .. } = &mut request
        {
            *message = format!("The MCP server `{}` asks: {message}", self.link.name);
        }
        let answer = self.relay(Relayed::Elicitation(encoded(&request)?)).await?;
        decoded(answer)
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let answer = self.relay(Relayed::Sampling(encoded(&params)?)).await?;
        decoded(answer)
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.link.progress(params);
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.link.relist.notify_one();
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        // The server's own log, kept below our warnings: its errors are not synapse-mcp's.
        let upstream = &self.link.name;
        let (level, data) = (params.level, &params.data);
        match level {
            LoggingLevel::Debug | LoggingLevel::Info | LoggingLevel::Notice => {
                tracing::debug!(%upstream, ?level, %data, "upstream log");
            }
            _ => tracing::info!(%upstream, ?level, %data, "upstream log"),
        }
    }
}
