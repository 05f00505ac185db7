//! MCP logging: the server's own tracing events, besides stderr, sent as `notifications/message`
//! (the logger is the event's module, the data its message and fields) at or above the level the
//! client asked for. An initialize-era client asks once with `logging/setLevel` and gets every
//! event from then on; a 2026-07-28 client asks per request with the `_meta` key
//! `io.modelcontextprotocol/logLevel` and gets the events emitted while that request is handled
//! (on its task), all sent before its answer; a request without the key gets none.
//!
//! [`layer`] is a tracing layer the binary installs beside the stderr writer. An event never
//! waits for a client: it is put on each interested outlet's bounded queue, and dropped when the
//! queue is full; a task per outlet empties the queue onto the wire. Only this crate's events
//! are forwarded (never rmcp's own, which sending a notification would multiply, nor the `log`
//! records of the crates below, such as the folder watcher's notify and mio), and events
//! below every outlet's level are filtered at their call site for the cost of one atomic load.
#![expect(
    deprecated,
    reason = "logging is deprecated by SEP-2577 but initialize-era clients use it"
)]

use std::borrow::Cow;
use std::fmt::Debug;
use std::future::Future;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use rmcp::model::{
    ClientNotification, ClientRequest, LoggingLevel, LoggingMessageNotificationParam,
    ProtocolVersion, ServerConfig, ServerResult,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData, Peer, RoleServer, Service};
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tracing::field::{Field, Visit};
use tracing::subscriber::Interest;
use tracing::{Event, Level, Metadata, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::{Context, Filter};

use crate::config::LogFormat;

/// Messages a client's queue holds before new ones are dropped.
const QUEUE: usize = 256;
/// The crate whose events are forwarded.
const OWN_TARGET: &str = "synapse_mcp";
/// No client wants anything.
const SILENT: u8 = u8::MAX;

/// The most verbose level any client wants (a severity; [`SILENT`] when none does).
static MOST_VERBOSE: AtomicU8 = AtomicU8::new(SILENT);
/// Every client that set a level.
static OUTLETS: Mutex<Vec<Weak<Outlet>>> = Mutex::new(Vec::new());
/// How many requests being handled asked for each severity.
static REQUESTS_AT: [AtomicUsize; 8] = [const { AtomicUsize::new(0) }; 8];

tokio::task_local! {
    /// The outlet of the request this task is handling, when it asked for log messages.
    static REQUEST: Outlet;
}

/// One client's (or one request's) level and queue.
pub(super) struct Outlet {
    severity: AtomicU8,
    queue: mpsc::Sender<LoggingMessageNotificationParam>,
    /// Counted in [`REQUESTS_AT`] rather than listed in [`OUTLETS`].
    per_request: bool,
}

impl Outlet {
    /// An outlet for `peer`, registered, with the task that sends its queue.
    pub(super) fn start(peer: Peer<RoleServer>, level: LoggingLevel) -> Arc<Self> {
        let (outlet, _sending) = Self::new(peer, level, false);
        let outlet = Arc::new(outlet);
        outlets().push(Arc::downgrade(&outlet));
        refresh();
        outlet
    }

    /// An outlet and the task that sends its queue to `peer` until the outlet is dropped.
    fn new(
        peer: Peer<RoleServer>,
        level: LoggingLevel,
        per_request: bool,
    ) -> (Self, tokio::task::JoinHandle<()>) {
        let (queue, mut receiver) = mpsc::channel(QUEUE);
        let outlet = Self {
            severity: AtomicU8::new(severity(level)),
            queue,
            per_request,
        };
        let sending = tokio::spawn(async move {
            while let Some(message) = receiver.recv().await {
                let sent = peer.notify_logging_message(message).await;
                if sent.is_err() {
                    break;
                }
            }
        });
        (outlet, sending)
    }

    pub(super) fn set_level(&self, level: LoggingLevel) {
        self.severity.store(severity(level), Ordering::Relaxed);
        refresh();
    }
}

impl Drop for Outlet {
    fn drop(&mut self) {
        if self.per_request {
            let counted = &REQUESTS_AT[usize::from(self.severity.load(Ordering::Relaxed))];
            counted.fetch_sub(1, Ordering::Relaxed);
        } else {
            outlets().retain(|outlet| outlet.strong_count() > 0);
        }
        refresh();
    }
}

/// Handles one 2026-07-28 request that asked for log messages at `level`: the events emitted on
/// its task while `handling` runs go to `peer`, and all that were queued are sent before this
/// returns, so they precede the answer. The queue is bounded as for a client: a burst beyond it
/// is dropped.
pub(super) async fn with_request_level<F: Future>(
    peer: Peer<RoleServer>,
    level: LoggingLevel,
    handling: F,
) -> F::Output {
    let (outlet, sending) = Outlet::new(peer, level, true);
    REQUESTS_AT[usize::from(severity(level))].fetch_add(1, Ordering::Relaxed);
    refresh();
    // The outlet is dropped with the scope, which closes its queue and ends the sending task.
    let output = REQUEST.scope(outlet, handling).await;
    if let Err(error) = sending.await {
        tracing::debug!(%error, "the log messages of a request were not all sent");
    }
    output
}

/// A service whose 2026-07-28 requests that carry `_meta` `io.modelcontextprotocol/logLevel` get
/// the events emitted while they are handled; everything else goes to the service unchanged.
///
/// The service is shared: the stdio transport answers some requests with it directly.
pub(super) struct PerRequestLogging<S>(pub(super) Arc<S>);

impl<S: Service<RoleServer>> Service<RoleServer> for PerRequestLogging<S> {
    async fn handle_request(
        &self,
        request: ClientRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<ServerResult, ErrorData> {
        let level = super::approval::is_inline_session(&context)
            .then(|| context.meta.log_level())
            .flatten();
        let peer = context.peer.clone();
        // Boxed: rmcp moves this future into a task of its own for every request, several times
        // over, and unboxed it carried the whole handler's state (11 KB, most of a `ping`'s cost).
        let handling = Box::pin(async move {
            tracing::debug!(method = request.method(), id = %context.id, "handling a request");
            self.0.handle_request(request, context).await
        });
        match level {
            Some(level) => with_request_level(peer, level, handling).await,
            None => handling.await,
        }
    }

    async fn handle_notification(
        &self,
        notification: ClientNotification,
        context: NotificationContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.0.handle_notification(notification, context).await
    }

    fn get_info(&self) -> ServerConfig {
        self.0.get_info()
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        self.0.supported_protocol_versions()
    }
}

/// The log on stderr, as `format` says, with the events `filter` lets through (a tracing
/// filter: `info`, `synapse_mcp=debug,warn`). JSON lines carry the event's `fields` and, inside
/// a request, its `span`: method, request id, tool, workspace and principal.
pub fn stderr_layer<S>(format: LogFormat, filter: &str) -> Box<dyn Layer<S> + Send + Sync>
where
    S: Subscriber + for<'lookup> tracing_subscriber::registry::LookupSpan<'lookup>,
{
    let filter = tracing_subscriber::filter::FilterExt::and(
        tracing_subscriber::EnvFilter::new(filter),
        NoUndeliverableAnswers,
    );
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(false);
    match format {
        LogFormat::Text => layer.with_filter(filter).boxed(),
        LogFormat::Json => layer
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .with_filter(filter)
            .boxed(),
    }
}

/// Leaves out rmcp's error for an answer whose client closed the stream it would have gone on
/// (`fail to response message error=channel closed`: an HTTP client that stopped listening
/// before the answer was ready): nobody is waiting for it, and the line would read as a fault.
struct NoUndeliverableAnswers;

impl<S> tracing_subscriber::layer::Filter<S> for NoUndeliverableAnswers {
    fn enabled(&self, _metadata: &tracing::Metadata<'_>, _context: &Context<'_, S>) -> bool {
        true
    }

    fn event_enabled(&self, event: &Event<'_>, _context: &Context<'_, S>) -> bool {
        let metadata = event.metadata();
        if *metadata.level() != tracing::Level::ERROR || metadata.target() != "rmcp::service" {
            return true;
        }
        let mut fields = Undeliverable::default();
        event.record(&mut fields);
        !(fields.message && fields.closed)
    }
}

/// What [`NoUndeliverableAnswers`] looks for in an event's fields.
#[derive(Default)]
struct Undeliverable {
    message: bool,
    closed: bool,
}

impl tracing::field::Visit for Undeliverable {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        let text = format!("{value:?}");
        match field.name() {
            "message" => self.message = text == "fail to response message",
            "error" => self.closed = text == "channel closed",
            _ => {}
        }
    }
}

/// The tracing layer that forwards events to the clients.
pub fn layer<S>() -> impl Layer<S>
where
    S: Subscriber + for<'lookup> tracing_subscriber::registry::LookupSpan<'lookup>,
{
    Forwarder.with_filter(Wanted)
}

struct Forwarder;

impl<S: Subscriber> Layer<S> for Forwarder {
    fn on_event(&self, event: &Event<'_>, _context: Context<'_, S>) {
        let metadata = event.metadata();
        let event_severity = tracing_severity(*metadata.level());
        let wants = |outlet: &Outlet| outlet.severity.load(Ordering::Relaxed) <= event_severity;
        let interested: Vec<Arc<Outlet>> = outlets()
            .iter()
            .filter_map(Weak::upgrade)
            .filter(|outlet| wants(outlet))
            .collect();
        let request_wants = REQUEST.try_with(|outlet| wants(outlet)).unwrap_or(false);
        if interested.is_empty() && !request_wants {
            return;
        }
        let mut fields = Fields(Map::new());
        event.record(&mut fields);
        let message = LoggingMessageNotificationParam::new(
            logging_level(*metadata.level()),
            Value::Object(fields.0),
        )
        .with_logger(metadata.target());
        // A full queue drops the message: a slow client never holds up the server.
        for outlet in interested {
            outlet.queue.try_send(message.clone()).ok();
        }
        if request_wants {
            REQUEST
                .try_with(|outlet| outlet.queue.try_send(message).ok())
                .ok();
        }
    }
}

/// Lets through this crate's events at or above the most verbose level any client wants.
struct Wanted;

impl<S> Filter<S> for Wanted {
    fn enabled(&self, metadata: &Metadata<'_>, _context: &Context<'_, S>) -> bool {
        // Records of the `log` crate (notify's, mio's) arrive through one shared callsite whose
        // interest says nothing of their target, so the target is checked here as well.
        tracing_severity(*metadata.level()) >= MOST_VERBOSE.load(Ordering::Relaxed)
            && own(metadata.target())
    }

    fn callsite_enabled(&self, metadata: &'static Metadata<'static>) -> Interest {
        if metadata.is_event() && own(metadata.target()) {
            Interest::sometimes()
        } else {
            Interest::never()
        }
    }
}

/// Whether an event's target is this crate or one of its modules (not a crate whose name
/// merely starts the same way).
fn own(target: &str) -> bool {
    target
        .strip_prefix(OWN_TARGET)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with("::"))
}

/// An event's message and fields as a JSON object.
struct Fields(Map<String, Value>);

impl Fields {
    fn insert(&mut self, field: &Field, value: Value) {
        let mut key = field.name().to_owned();
        while self.0.contains_key(&key) {
            key.push('_');
        }
        self.0.insert(key, value);
    }
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.insert(field, Value::from(value));
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.insert(field, Value::from(value));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.insert(field, Value::from(value));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.insert(field, Value::from(value));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        self.insert(field, Value::from(format!("{value:?}")));
    }
}

fn outlets() -> std::sync::MutexGuard<'static, Vec<Weak<Outlet>>> {
    OUTLETS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Recomputes [`MOST_VERBOSE`] from the clients' and the requests' levels.
fn refresh() {
    let clients = outlets();
    let requests = (0..)
        .zip(&REQUESTS_AT)
        .find(|(_, count)| count.load(Ordering::Relaxed) > 0)
        .map_or(SILENT, |(severity, _)| severity);
    let most_verbose = clients
        .iter()
        .filter_map(Weak::upgrade)
        .map(|outlet| outlet.severity.load(Ordering::Relaxed))
        .min()
        .unwrap_or(SILENT)
        .min(requests);
    MOST_VERBOSE.store(most_verbose, Ordering::Relaxed);
}

/// MCP levels, least severe first.
fn severity(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

fn logging_level(level: Level) -> LoggingLevel {
    match level {
        Level::ERROR => LoggingLevel::Error,
        Level::WARN => LoggingLevel::Warning,
        Level::INFO => LoggingLevel::Info,
        _ => LoggingLevel::Debug,
    }
}

fn tracing_severity(level: Level) -> u8 {
    severity(logging_level(level))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// Counts the events that reach it.
    struct Counted(Arc<AtomicUsize>);

    impl<S: Subscriber> Layer<S> for Counted {
        fn on_event(&self, _event: &Event<'_>, _context: Context<'_, S>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn an_answer_nobody_waits_for_is_not_logged_as_an_error_and_other_errors_are() {
        use tracing_subscriber::layer::SubscriberExt as _;
        let seen = Arc::new(AtomicUsize::new(0));
        let subscriber = tracing_subscriber::registry()
            .with(Counted(Arc::clone(&seen)).with_filter(NoUndeliverableAnswers));
        tracing::subscriber::with_default(subscriber, || {
            let error = "channel closed";
            tracing::error!(target: "rmcp::service", %error, "fail to response message");
            let error = "Broken pipe (os error 32)";
            tracing::error!(target: "rmcp::service", %error, "fail to response message");
            let error = "channel closed";
            tracing::error!(target: "rmcp::other", %error, "fail to response message");
            tracing::warn!(target: "rmcp::service", %error, "fail to response message");
        });
        assert_eq!(seen.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn tracing_levels_map_onto_mcp_severities() {
        assert_eq!(
            tracing_severity(Level::TRACE),
            severity(LoggingLevel::Debug)
        );
        assert_eq!(
            tracing_severity(Level::WARN),
            severity(LoggingLevel::Warning)
        );
        assert!(tracing_severity(Level::ERROR) >= severity(LoggingLevel::Warning));
        assert!(tracing_severity(Level::INFO) < severity(LoggingLevel::Notice));
    }

    #[test]
    fn only_this_crates_targets_are_its_own() {
        assert!(own("synapse_mcp"));
        assert!(own("synapse_mcp::skills::shelf"));
        assert!(!own("synapse_mcp_extra"));
        assert!(!own("notify::inotify"));
        assert!(!own("log"));
    }
}
