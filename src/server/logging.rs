//! MCP logging: the server's own tracing events, besides stderr, sent to every client that set
//! a level with `logging/setLevel` as `notifications/message` (the logger is the event's module,
//! the data its message and fields), at or above that client's level.
//!
//! [`layer`] is a tracing layer the binary installs beside the stderr writer. An event never
//! waits for a client: it is put on each interested client's bounded queue, and dropped when the
//! queue is full; a task per client empties the queue onto the wire. Only this crate's events
//! are forwarded (never rmcp's own, which sending a notification would multiply), and events
//! below every client's level are filtered at their call site for the cost of one atomic load.
#![expect(
    deprecated,
    reason = "logging is deprecated by SEP-2577 but initialize-era clients use it"
)]

use std::fmt::Debug;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use rmcp::{Peer, RoleServer};
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tracing::field::{Field, Visit};
use tracing::subscriber::Interest;
use tracing::{Event, Level, Metadata, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::{Context, Filter};

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

/// One client's level and queue.
pub(super) struct Outlet {
    severity: AtomicU8,
    queue: mpsc::Sender<LoggingMessageNotificationParam>,
}

impl Outlet {
    /// An outlet for `peer`, registered, with the task that sends its queue.
    pub(super) fn start(peer: Peer<RoleServer>, level: LoggingLevel) -> Arc<Self> {
        let (queue, mut receiver) = mpsc::channel(QUEUE);
        let outlet = Arc::new(Self {
            severity: AtomicU8::new(severity(level)),
            queue,
        });
        outlets().push(Arc::downgrade(&outlet));
        refresh();
        tokio::spawn(async move {
            while let Some(message) = receiver.recv().await {
                let sent = peer.notify_logging_message(message).await;
                if sent.is_err() {
                    break;
                }
            }
        });
        outlet
    }

    pub(super) fn set_level(&self, level: LoggingLevel) {
        self.severity.store(severity(level), Ordering::Relaxed);
        refresh();
    }
}

impl Drop for Outlet {
    fn drop(&mut self) {
        outlets().retain(|outlet| outlet.strong_count() > 0);
        refresh();
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
        let interested: Vec<Arc<Outlet>> = outlets()
            .iter()
            .filter_map(Weak::upgrade)
            .filter(|outlet| outlet.severity.load(Ordering::Relaxed) <= event_severity)
            .collect();
        if interested.is_empty() {
            return;
        }
        let mut fields = Fields(Map::new());
        event.record(&mut fields);
        let message = LoggingMessageNotificationParam::new(
            logging_level(*metadata.level()),
            Value::Object(fields.0),
        )
        .with_logger(metadata.target());
        for outlet in interested {
            // A full queue drops the message: a slow client never holds up the server.
            outlet.queue.try_send(message.clone()).ok();
        }
    }
}

/// Lets through this crate's events at or above the most verbose level any client wants.
struct Wanted;

impl<S> Filter<S> for Wanted {
    fn enabled(&self, metadata: &Metadata<'_>, _context: &Context<'_, S>) -> bool {
        tracing_severity(*metadata.level()) >= MOST_VERBOSE.load(Ordering::Relaxed)
    }

    fn callsite_enabled(&self, metadata: &'static Metadata<'static>) -> Interest {
        if metadata.is_event() && metadata.target().starts_with(OWN_TARGET) {
            Interest::sometimes()
        } else {
            Interest::never()
        }
    }
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

/// Recomputes [`MOST_VERBOSE`] and has call sites ask the filter again.
fn refresh() {
    let most_verbose = outlets()
        .iter()
        .filter_map(Weak::upgrade)
        .map(|outlet| outlet.severity.load(Ordering::Relaxed))
        .min()
        .unwrap_or(SILENT);
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
}
