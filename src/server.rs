//! The MCP adapter: rmcp's `ServerHandler` over an [`App`] built beforehand (`app.rs` wires it
//! and knows nothing of MCP). Each handler only translates —
//! tools in `server/tools.rs`, resources in `server/resources.rs`, prompts in
//! `server/prompts.rs`, questions for the client's model in `server/sampling.rs` — and
//! `server/errors.rs` is the one place domain results become wire results or JSON-RPC errors.

mod access;
mod approval;
mod completion;
mod cors;
mod errors;
pub mod http;
mod logging;
pub mod metrics;
mod notifications;
mod pages;
mod prompts;
mod relay;
mod resources;
mod sampling;
mod skills;
mod tools;
pub mod transport;
mod uri;
mod view;

pub use logging::{layer as logging_layer, stderr_layer};

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult, DiscoverResult,
    GetPromptRequestParams, GetPromptResponse, GetSkillRequestParams, GetSkillResult,
    Implementation, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListSkillsResult, ListToolsResult, PaginatedRequestParams, ReadResourceDirectoryRequestParams,
    ReadResourceDirectoryResult, ReadResourceRequestParams, ReadResourceResponse,
    ServerCapabilities, ServerConfig, SetLevelRequestMethod, SubscribeRequestParams,
    SubscriptionFilter, Tool as WireTool, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};

use crate::app::{App, Space};
use crate::skills::Library;
use crate::tools::Executor;

/// Why the MCP session could not start or ended badly.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("MCP session failed to start: {0}")]
    Start(String),
    /// The settings cannot serve (`serve --http` without a way to authenticate).
    #[error("{0}")]
    Refused(String),
    #[error("MCP session ended with an error: {0}")]
    Session(String),
}

/// The MCP server over an [`App`]. Cheap to clone: every clone shares one app.
#[derive(Clone)]
pub struct Server {
    inner: Arc<Inner>,
}

struct Inner {
    app: Arc<App>,
    /// The URIs this connection's client subscribed to with `resources/subscribe`.
    subscriptions: Arc<notifications::Subscriptions>,
    notifications_started: AtomicBool,
    /// Where this connection's client gets log messages, once it set a level.
    log: Mutex<Option<Arc<logging::Outlet>>>,
}

impl Server {
    /// Serves `app`, already built (see [`App::open`]), over MCP.
    pub fn new(app: App) -> Self {
        Self::shared(Arc::new(app))
    }

    /// A server for one more connection to an app already served (each HTTP session, and each
    /// stateless HTTP request, has its own).
    pub fn shared(app: Arc<App>) -> Self {
        Self {
            inner: Arc::new(Inner {
                app,
                subscriptions: Arc::default(),
                notifications_started: AtomicBool::new(false),
                log: Mutex::default(),
            }),
        }
    }

    /// A server for one more connection to an app already served, observed (a span per request,
    /// and metrics when they are on; `server/metrics.rs`): what rmcp is given over HTTP.
    fn observed(app: Arc<App>) -> metrics::Observed {
        metrics::Observed::new(Self::shared(app))
    }

    /// The space a request works in: over HTTP, the workspace and caller the HTTP layer
    /// authorized for it (`server/http.rs` puts them in the request's extensions); on stdio,
    /// the configured workspace.
    fn space(&self, extensions: &rmcp::model::Extensions) -> Result<Arc<Space>, ErrorData> {
        match access::of(extensions) {
            None => Ok(Arc::clone(self.inner.app.space())),
            Some(access) => self
                .inner
                .app
                .space_for(&access.workspace, &access.caller)
                .map_err(|error| errors::app_failed(&error)),
        }
    }

    pub fn executor(&self) -> &Executor {
        self.inner.app.executor()
    }

    /// The skill library as it is now (a saved skill replaces it), once the first scan is done.
    pub async fn library(&self) -> Arc<Library> {
        self.inner.app.library().await
    }

    /// Serves one MCP session over stdin/stdout until the client closes it.
    pub async fn serve_stdio(self) -> Result<(), Error> {
        let (reader, writer) = rmcp::transport::io::stdio_pipes();
        self.serve_lines(reader, writer).await
    }

    /// Serves one MCP session of newline-delimited JSON-RPC read from `reader` and written to
    /// `writer`, until the input ends. Once `initialize` is done, the transport answers the
    /// session's tool calls itself (`transport/inline.rs`).
    pub async fn serve_lines<R, W>(self, reader: R, writer: W) -> Result<(), Error>
    where
        R: tokio::io::AsyncRead + Unpin + Send + 'static,
        W: tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let observed = Arc::new(metrics::Observed::new(self));
        let inline = Arc::new(std::sync::OnceLock::new());
        let lines =
            transport::LineTransport::new(reader, writer).answering_inline(Arc::clone(&inline));
        let serving = logging::PerRequestLogging(Arc::clone(&observed)).serve(lines);
        let running = Box::pin(serving)
            .await
            .map_err(|error| Error::Start(error.to_string()))?;
        if let Some(answering) = transport::Inline::for_session(running.peer(), observed) {
            inline.set(answering).ok();
        }
        let reason = running
            .waiting()
            .await
            .map_err(|error| Error::Session(error.to_string()))?;
        tracing::info!(?reason, "session ended");
        Ok(())
    }

    /// One line for the log: version, enabled groups, tool count.
    pub fn readiness_line(&self) -> String {
        let tools = self.executor().tools();
        let groups: Vec<String> = tools
            .enabled_groups()
            .iter()
            .filter(|group| !group.tools.is_empty())
            .map(|group| group.name.clone())
            .collect();
        format!(
            "synapse-mcp {} ready on stdio: workspace `{}`, groups [{}], {} tools",
            env!("CARGO_PKG_VERSION"),
            self.executor().workspace().name(),
            groups.join(", "),
            tools.enabled_tools().len(),
        )
    }
}

/// The cursor of a list request, if it gave one.
fn cursor(request: Option<&PaginatedRequestParams>) -> Option<&str> {
    request.and_then(|request| request.cursor.as_deref())
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        #[expect(
            deprecated,
            reason = "logging is deprecated by SEP-2577 but initialize-era clients use it"
        )]
        let capabilities = ServerCapabilities::builder()
            .enable_logging()
            .enable_completions()
            .enable_prompts()
            .enable_prompts_list_changed()
            .enable_resources()
            .enable_resources_subscribe()
            .enable_resources_list_changed()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_skills_with_directory_read()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new(
                env!("CARGO_PKG_NAME"),
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(self.executor().instructions())
    }

    /// The 2026-07-28 capabilities: those of `initialize`. Logging is asked per request there
    /// (`_meta` `io.modelcontextprotocol/logLevel`, served by `logging::PerRequestLogging`).
    async fn discover(
        &self,
        _context: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, ErrorData> {
        let info = self.get_info();
        let versions = ServerHandler::supported_protocol_versions(self).into_owned();
        Ok(DiscoverResult::from_server_info(versions, info))
    }

    #[expect(
        deprecated,
        reason = "logging is deprecated by SEP-2577 but initialize-era clients use it"
    )]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        // 2026-07-28 removed the method: each request carries its own level in `_meta`.
        if approval::is_inline_session(&context) {
            return Err(ErrorData::method_not_found::<SetLevelRequestMethod>());
        }
        let mut log = self
            .inner
            .log
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match log.as_ref() {
            Some(outlet) => outlet.set_level(request.level),
            None => *log = Some(logging::Outlet::start(context.peer, request.level)),
        }
        Ok(())
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        if !self
            .inner
            .notifications_started
            .swap(true, Ordering::SeqCst)
        {
            let space = match self.space(&context.extensions) {
                Ok(space) => space,
                Err(error) => {
                    tracing::warn!(?error, "no notifications for this session");
                    return;
                }
            };
            notifications::spawn_forwarder(
                space,
                self.inner.app.skill_prompts(),
                Arc::clone(&self.inner.subscriptions),
                context.peer,
            );
        }
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let space = self.space(&context.extensions)?;
        self.inner.app.upstreams_settled().await;
        let audience = view::audience(context.client_capabilities().as_ref());
        let listed = tools::list(space.executor(), audience);
        let (items, next) = pages::page(listed, cursor(request.as_ref()))?;
        let mut result = ListToolsResult::with_all_items(items);
        result.next_cursor = next;
        Ok(result)
    }

    fn get_tool(&self, name: &str) -> Option<WireTool> {
        let tool = self.executor().tools().find(name)?;
        Some(tools::wire_tool(tool.as_ref()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let space = self.space(&context.extensions)?;
        // A tool of a server still starting is not known yet: wait for it as tools/list does.
        if !self.inner.app.upstreams_are_settled()
            && (space.executor().tools())
                .for_audience(view::audience(context.client_capabilities().as_ref()))
                .find(&request.name)
                .is_none()
        {
            self.inner.app.upstreams_settled().await;
        }
        tools::call(space.executor(), request, context).await
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let space = self.space(&context.extensions)?;
        let all = resources::list(
            space.executor(),
            self.library().await.as_ref(),
            space.snapshots(),
        )?;
        let (items, next) = pages::page(all, cursor(request.as_ref()))?;
        let mut result = ListResourcesResult::with_all_items(items);
        result.next_cursor = next;
        Ok(result)
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let (items, next) = pages::page(resources::templates(), cursor(request.as_ref()))?;
        let mut result = ListResourceTemplatesResult::with_all_items(items);
        result.next_cursor = next;
        Ok(result)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let space = self.space(&context.extensions)?;
        resources::read(
            space.executor(),
            self.library().await.as_ref(),
            space.snapshots(),
            &request.uri,
        )
        .map(Into::into)
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let space = self.space(&context.extensions)?;
        resources::check_subscribable(space.executor(), &request.uri)?;
        self.inner.subscriptions.insert(request.uri);
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.inner.subscriptions.remove(&request.uri);
        Ok(())
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let mut accepted = SubscriptionFilter::builder()
            .tools_list_changed()
            .prompts_list_changed()
            .resources_list_changed()
            .build();
        accepted.resource_subscriptions = requested.resource_subscriptions.as_ref().map(|uris| {
            uris.iter()
                .filter(|uri| resources::check_subscribable(self.executor(), uri).is_ok())
                .cloned()
                .collect()
        });
        Some(accepted)
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let outlet = notifications::Outlet::Stream {
            sink: context.sink().clone(),
            accepted: context.accepted().clone(),
        };
        let stop = context.request_context().ct.clone();
        let space = self.space(&context.request_context().extensions)?;
        let (subscriptions, per_skill_prompts) =
            (&self.inner.subscriptions, self.inner.app.skill_prompts());
        notifications::forward(&space, subscriptions, per_skill_prompts, &outlet, &stop).await;
        Ok(())
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let all = prompts::list(
            self.library().await.as_ref(),
            self.inner.app.skill_prompts(),
        );
        let (items, next) = pages::page(all, cursor(request.as_ref()))?;
        let mut result = ListPromptsResult::with_all_items(items);
        result.next_cursor = next;
        Ok(result)
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let space = self.space(&context.extensions)?;
        prompts::get(
            space.executor(),
            self.library().await.as_ref(),
            space.snapshots(),
            &request.name,
            request.arguments.as_ref(),
        )
        .map(Into::into)
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let space = self.space(&context.extensions)?;
        let library = self.library().await;
        let sources = completion::Sources {
            executor: space.executor(),
            library: library.as_ref(),
            snapshots: space.snapshots(),
        };
        completion::complete(&sources, &request).map(CompleteResult::new)
    }

    async fn list_skills(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, ErrorData> {
        let cursor = request
            .as_ref()
            .and_then(|request| request.cursor.as_deref());
        skills::list_skills(self.library().await.as_ref(), cursor)
    }

    async fn get_skill(
        &self,
        request: GetSkillRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, ErrorData> {
        skills::get_skill(self.library().await.as_ref(), &request.uri).map(GetSkillResult::new)
    }

    async fn read_resource_directory(
        &self,
        request: ReadResourceDirectoryRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceDirectoryResult, ErrorData> {
        skills::read_directory(self.library().await.as_ref(), &request.uri)
            .map(ReadResourceDirectoryResult::with_all_items)
    }
}
