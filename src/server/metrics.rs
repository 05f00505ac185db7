//! Observing requests (docs/operations.md): `Observed` is the MCP handler of every
//! connection, stdio or HTTP, gives each request a tracing span (method, request id, tool,
//! workspace, principal) that every log line emitted while it is handled carries, and — once
//! [`start`] installed the Prometheus recorder — counts and times it. [`start`] serves the text
//! at `GET /metrics` on an address of its own.
//!
//! Labels carry method names and the names of tools the server has, nothing a client chose:
//! a custom method counts as `custom`, an unknown tool as `unknown`, and no workspace, principal
//! or variable name is ever a label, so what a scrape shows is bounded by the tool list.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use rmcp::model::{
    CallToolRequestMethod, CallToolRequestParams, CallToolResponse, CancelledNotificationParam,
    CompleteRequestMethod, CompleteRequestParams, CompleteResult, ConstString,
    DiscoverRequestMethod, DiscoverResult, GetPromptRequestMethod, GetPromptRequestParams,
    GetPromptResponse, GetSkillRequestMethod, GetSkillRequestParams, GetSkillResult,
    InitializeRequestParams, InitializeResult, InitializeResultMethod, ListPromptsRequestMethod,
    ListPromptsResult, ListResourceTemplatesRequestMethod, ListResourceTemplatesResult,
    ListResourcesRequestMethod, ListResourcesResult, ListSkillsRequestMethod, ListSkillsResult,
    ListToolsRequestMethod, ListToolsResult, PaginatedRequestParams, PingRequestMethod,
    ProgressNotificationParam, ProtocolVersion, ReadResourceDirectoryRequestMethod,
    ReadResourceDirectoryRequestParams, ReadResourceDirectoryResult, ReadResourceRequestMethod,
    ReadResourceRequestParams, ReadResourceResponse, ServerConfig, SetLevelRequestMethod,
    SubscribeRequestMethod, SubscribeRequestParams, SubscriptionFilter, Tool as WireTool,
    UnsubscribeRequestMethod, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use tracing::Instrument as _;

mod scrape;

pub use scrape::start;

use super::Server;

/// Whether the recorder is installed: without it, requests are not measured at all.
static ENABLED: AtomicBool = AtomicBool::new(false);

/// Latency buckets, in seconds: from a cached read to a long plan or a slow upstream.
const BUCKETS: [f64; 14] = [
    0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0, 30.0,
];

/// How often histogram samples are folded in when nobody scrapes.
const UPKEEP: Duration = Duration::from_secs(5);

const REQUESTS: &str = "synapse_mcp_requests_total";
const REQUEST_SECONDS: &str = "synapse_mcp_request_duration_seconds";
const IN_FLIGHT: &str = "synapse_mcp_requests_in_flight";
const TOOL_CALLS: &str = "synapse_mcp_tool_calls_total";
const TOOL_SECONDS: &str = "synapse_mcp_tool_call_duration_seconds";
const SESSIONS: &str = "synapse_mcp_sessions_active";
const STORE_CONNECTIONS: &str = "synapse_mcp_store_connections";
const STORE_CONNECTIONS_MAX: &str = "synapse_mcp_store_connections_max";
const STORE_UP: &str = "synapse_mcp_store_up";
const BUILD_INFO: &str = "synapse_mcp_build_info";

/// The MCP server of one connection, its requests traced, and measured when metrics are on.
/// It is the server rmcp is given, stdio or HTTP (rmcp's HTTP service takes a `ServerHandler`,
/// not any service, hence a handler that passes every method on): each request method goes
/// through [`Observed::observe`], and the methods `Server` leaves to rmcp's defaults
/// (`ping`, `initialize`) are observed over those same defaults.
pub(super) struct Observed {
    server: Server,
    /// Counted in [`SESSIONS`] from the client's `notifications/initialized` until this
    /// connection's server is dropped.
    session: Mutex<Option<OpenSession>>,
}

/// What a request is, for its span and its labels.
struct Handling {
    method: &'static str,
    /// The tool of a `tools/call` for the metrics' labels (`unknown` unless the server has it),
    /// when metrics are on.
    tool: Option<String>,
    span: tracing::Span,
}

/// The target of the request span: `synapse_mcp::request=info` in a log filter turns it on.
/// It is on by default for `serve --http`, off over stdio, where its cost (about 10,000
/// instructions a request, more than a `ping` costs without it) would be paid by every call
/// for context on log lines few users read (`Cli::log_filter`).
pub const REQUEST_SPAN_TARGET: &str = "synapse_mcp::request";

impl Observed {
    pub(super) fn new(server: Server) -> Self {
        Self {
            server,
            session: Mutex::new(None),
        }
    }

    /// The span and labels of a request; each field is computed only when its span or the
    /// metrics are on.
    fn handling<M: ConstString>(
        &self,
        tool: Option<&str>,
        context: &RequestContext<RoleServer>,
    ) -> Handling {
        let label = || {
            tool.map(|name| {
                let known = self.server.executor().registry().group_of(name).is_some();
                if known { name } else { "unknown" }.to_owned()
            })
        };
        let access = || super::access::of(&context.extensions);
        let span = tracing::info_span!(
            target: REQUEST_SPAN_TARGET,
            "request",
            method = M::VALUE,
            id = %context.id,
            tool = label().as_deref(),
            workspace = access().map_or_else(
                || self.server.executor().workspace().name(),
                |access| access.workspace.as_str(),
            ),
            principal = access().and_then(|access| access.caller.principal.as_deref()),
        );
        Handling {
            method: M::VALUE,
            tool: if ENABLED.load(Ordering::Relaxed) {
                label()
            } else {
                None
            },
            span,
        }
    }

    /// Runs a request's handler inside its span, times it and counts it by its outcome
    /// (`classify` tells a tool error or an `input_required` answer from a plain success).
    ///
    /// The handler comes boxed, made inside `Box::pin(…)` and never held in a local: rmcp spawns
    /// one task per request whose future is as large as the largest handler's state (a tool
    /// call's), and moving that into the task was most of the cost of a `ping` (about 58,000
    /// of its 103,000 instructions). A local that holds the handler's future before it is
    /// boxed keeps its whole size in this future's state too.
    async fn observe<T>(
        &self,
        handling: Handling,
        answering: BoxFuture<'_, Result<T, ErrorData>>,
        classify: fn(&T) -> Option<&'static str>,
    ) -> Result<T, ErrorData> {
        let measuring = ENABLED.load(Ordering::Relaxed);
        let _in_flight = measuring.then(InFlight::enter);
        let started = Instant::now();
        let answer = answering.instrument(handling.span.clone()).await;
        let elapsed = started.elapsed();
        let outcome = match &answer {
            Err(_) => Some("error"),
            Ok(result) => classify(result),
        };
        handling.span.in_scope(|| {
            tracing::debug!(
                outcome = outcome.unwrap_or("ok"),
                elapsed_us = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX),
                "request handled"
            );
        });
        if measuring {
            record(handling.method, handling.tool, outcome, elapsed);
        }
        answer
    }
}

/// Every answer but a tool call's is a plain success.
fn plain<T>(_: &T) -> Option<&'static str> {
    None
}

fn tool_outcome(response: &CallToolResponse) -> Option<&'static str> {
    match response {
        CallToolResponse::Complete(result) if result.is_error == Some(true) => Some("tool_error"),
        CallToolResponse::Complete(_) => None,
        CallToolResponse::InputRequired(_) => Some("input_required"),
        _ => Some("task"),
    }
}

/// The request methods of `Server`, each passed on through [`Observed::observe`]: one line per
/// method gives its parameters, its answer and the method whose name the span and the labels
/// carry. The handler's future is made inside `Box::pin(…)`, as `observe` requires.
macro_rules! observed {
    ($(
        $(#[$attribute:meta])*
        fn $method:ident($($parameter:ident: $type:ty),*) -> $answer:ty = $name:ty;
    )*) => {
        $(
            $(#[$attribute])*
            async fn $method(
                &self,
                $($parameter: $type,)*
                context: RequestContext<RoleServer>,
            ) -> Result<$answer, ErrorData> {
                let handling = self.handling::<$name>(None, &context);
                self.observe(
                    handling,
                    Box::pin(self.server.$method($($parameter,)* context)),
                    plain,
                )
                .await
            }
        )*
    };
}

impl ServerHandler for Observed {
    fn get_info(&self) -> ServerConfig {
        self.server.get_info()
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        ServerHandler::supported_protocol_versions(&self.server)
    }

    fn get_tool(&self, name: &str) -> Option<WireTool> {
        self.server.get_tool(name)
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        self.server.accepted_subscription_filter(requested)
    }

    observed! {
        fn ping() -> () = PingRequestMethod;
        fn initialize(request: InitializeRequestParams) -> InitializeResult = InitializeResultMethod;
        fn discover() -> DiscoverResult = DiscoverRequestMethod;
        #[expect(
            deprecated,
            reason = "logging is deprecated by SEP-2577 but initialize-era clients use it"
        )]
        fn set_level(request: rmcp::model::SetLevelRequestParams) -> () = SetLevelRequestMethod;
        fn complete(request: CompleteRequestParams) -> CompleteResult = CompleteRequestMethod;
        fn list_tools(request: Option<PaginatedRequestParams>) -> ListToolsResult
            = ListToolsRequestMethod;
        fn list_resources(request: Option<PaginatedRequestParams>) -> ListResourcesResult
            = ListResourcesRequestMethod;
        fn list_resource_templates(request: Option<PaginatedRequestParams>)
            -> ListResourceTemplatesResult = ListResourceTemplatesRequestMethod;
        fn read_resource(request: ReadResourceRequestParams) -> ReadResourceResponse
            = ReadResourceRequestMethod;
        #[expect(
            deprecated,
            reason = "resource subscriptions are deprecated by 2026-07-28 but initialize-era clients use them"
        )]
        fn subscribe(request: SubscribeRequestParams) -> () = SubscribeRequestMethod;
        #[expect(
            deprecated,
            reason = "resource subscriptions are deprecated by 2026-07-28 but initialize-era clients use them"
        )]
        fn unsubscribe(request: UnsubscribeRequestParams) -> () = UnsubscribeRequestMethod;
        fn list_prompts(request: Option<PaginatedRequestParams>) -> ListPromptsResult
            = ListPromptsRequestMethod;
        fn get_prompt(request: GetPromptRequestParams) -> GetPromptResponse
            = GetPromptRequestMethod;
        fn list_skills(request: Option<PaginatedRequestParams>) -> ListSkillsResult
            = ListSkillsRequestMethod;
        fn get_skill(request: GetSkillRequestParams) -> GetSkillResult = GetSkillRequestMethod;
        fn read_resource_directory(request: ReadResourceDirectoryRequestParams)
            -> ReadResourceDirectoryResult = ReadResourceDirectoryRequestMethod;
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let handling = self.handling::<CallToolRequestMethod>(Some(&request.name), &context);
        self.observe(
            handling,
            Box::pin(self.server.call_tool(request, context)),
            tool_outcome,
        )
        .await
    }

    /// A stream that lasts as long as the client listens: passed on, neither timed nor counted.
    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        // Boxed like every handler (see `observe`): a listening stream's state is large.
        Box::pin(self.server.listen(context)).await
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        if ENABLED.load(Ordering::Relaxed) {
            let mut session = self.session.lock().unwrap_or_else(PoisonError::into_inner);
            session.get_or_insert_with(OpenSession::open);
        }
        self.server.on_initialized(context).await;
    }

    async fn on_cancelled(
        &self,
        notification: CancelledNotificationParam,
        context: NotificationContext<RoleServer>,
    ) {
        self.server.on_cancelled(notification, context).await;
    }

    async fn on_progress(
        &self,
        notification: ProgressNotificationParam,
        context: NotificationContext<RoleServer>,
    ) {
        self.server.on_progress(notification, context).await;
    }

    async fn on_roots_list_changed(&self, context: NotificationContext<RoleServer>) {
        self.server.on_roots_list_changed(context).await;
    }
}

fn record(
    method: &'static str,
    tool: Option<String>,
    outcome: Option<&'static str>,
    elapsed: Duration,
) {
    let seconds = elapsed.as_secs_f64();
    let request_outcome = if outcome == Some("error") {
        "error"
    } else {
        "ok"
    };
    metrics::counter!(REQUESTS, "method" => method, "outcome" => request_outcome).increment(1);
    metrics::histogram!(REQUEST_SECONDS, "method" => method).record(seconds);
    if let Some(tool) = tool {
        let tool_outcome = match outcome {
            None => "ok",
            Some("error") => "protocol_error",
            Some(other) => other,
        };
        metrics::counter!(TOOL_CALLS, "tool" => tool.clone(), "outcome" => tool_outcome)
            .increment(1);
        metrics::histogram!(TOOL_SECONDS, "tool" => tool).record(seconds);
    }
}

/// One request in [`IN_FLIGHT`] until dropped (answered, or abandoned on cancellation).
struct InFlight;

impl InFlight {
    fn enter() -> Self {
        metrics::gauge!(IN_FLIGHT).increment(1.0);
        Self
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        metrics::gauge!(IN_FLIGHT).decrement(1.0);
    }
}

/// One session in [`SESSIONS`] until dropped.
struct OpenSession;

impl OpenSession {
    fn open() -> Self {
        metrics::gauge!(SESSIONS).increment(1.0);
        Self
    }
}

impl Drop for OpenSession {
    fn drop(&mut self) {
        metrics::gauge!(SESSIONS).decrement(1.0);
    }
}
