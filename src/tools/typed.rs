//! Typed tools: a built-in tool is its argument type, implementing [`TypedTool`] — a
//! [`Declaration`] (what `tools/list` shows and how the executor treats the calls, as data), an
//! [`Reply`] type and one `run` that calls the domain. The one blanket implementation here,
//! [`Typed`], makes it a [`Tool`]: it decodes the arguments, runs the tool where its
//! [`Declaration::runs`] says (on the session, or on tokio's blocking pool) and builds the result.
//! Tools of other origins (another MCP server's, a script folder's) implement [`Tool`] directly.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{
    Annotations, Caching, Consent, Daggers, Permission, Policy, Progress, Schema, Tool, ToolCall,
    ToolDefinition, ToolError, ToolOutput, Truncation, Visibility, Writes, output_schema,
    parse_arguments,
};
use crate::workspace::Workspace;

/// Where a typed tool's calls run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runs {
    /// On the session's own thread: quick work, or work that waits without blocking (the
    /// client's model, a script's process, the steps of a plan).
    OnSession,
    /// On tokio's blocking pool, with the call's cancellation, for synchronous work that may
    /// take long (a rescan of every skill root, a whole chat): the stdio server's runtime is
    /// single-threaded (`main.rs` says why), and a long call on it would hold up every other
    /// request of the session (over HTTP, it would hold a worker of a few). The arguments are decoded there too, since a whole chat takes a
    /// while to decode.
    OnBlockingPool,
}

/// A tool's declaration as constant data; the schemas come from its argument and answer types.
/// [`Declaration::new`] gives the default handling (auto-approved, cached durably, cut to the configured
/// limit, `†` resolved, on the session); a tool changes what differs with the `const` builder
/// methods below (`Declaration::new(…).asks_once().pooled()`), or, in one line, with `declare!`.
#[derive(Debug, Clone, Copy)]
pub struct Declaration {
    pub name: &'static str,
    pub title: &'static str,
    /// What the model reads (trimmed).
    pub description: &'static str,
    pub annotations: Annotations,
    pub permission: Permission,
    pub caching: Caching,
    pub truncation: Truncation,
    pub daggers: Daggers,
    pub writes: Writes,
    pub always_listed: bool,
    pub view: Option<&'static str>,
    pub visibility: Visibility,
    pub changes_shared_state: bool,
    /// Where the calls run.
    pub runs: Runs,
}

/// A tool's [`Declaration`] in one line: name, title, annotations and description as
/// [`Declaration::new`] takes them, then the builder methods that change the default handling,
/// by name (with their arguments, if any): `declare! { "ReadVar", "Read variable", READ_ONLY, READ_VAR,
/// always_listed, whole, uncached }`. Braces keep it to a line or two under rustfmt.
macro_rules! declare {
    (
        $name:expr, $title:expr, $annotations:expr, $description:expr
        $(, $method:ident $(($($argument:expr),*))?)*
    ) => {
        $crate::tools::Declaration::new($name, $title, $annotations, $description)
            $(.$method($($($argument),*)?))*
    };
}
pub(crate) use declare;

impl Declaration {
    /// A tool's declaration with the default handling: see [`Declaration`].
    pub const fn new(
        name: &'static str,
        title: &'static str,
        annotations: Annotations,
        description: &'static str,
    ) -> Self {
        Self {
            name,
            title,
            description,
            annotations,
            permission: Permission {
                execution: Policy::Auto,
                result: Policy::Auto,
            },
            caching: Caching::Durable,
            truncation: Truncation::Configured,
            daggers: Daggers::Resolved,
            writes: Writes::Nothing,
            always_listed: false,
            view: None,
            visibility: Visibility::Everyone,
            changes_shared_state: false,
            runs: Runs::OnSession,
        }
    }

    /// Runs on tokio's blocking pool ([`Runs::OnBlockingPool`]).
    #[must_use]
    pub const fn pooled(self) -> Self {
        Self {
            runs: Runs::OnBlockingPool,
            ..self
        }
    }

    /// Asks the user once before it runs ([`Policy::AskOnce`]); its results are not asked about.
    #[must_use]
    pub const fn asks_once(self) -> Self {
        Self {
            permission: Permission {
                execution: Policy::AskOnce,
                result: Policy::Auto,
            },
            ..self
        }
    }

    /// Its results are never cached as variables.
    #[must_use]
    pub const fn uncached(self) -> Self {
        self.caching(Caching::Off)
    }

    #[must_use]
    pub const fn caching(self, caching: Caching) -> Self {
        Self { caching, ..self }
    }

    /// Its results are never cut to the output limit (it pages its own, or must come whole).
    #[must_use]
    pub const fn whole(self) -> Self {
        self.truncation(Truncation::Never)
    }

    #[must_use]
    pub const fn truncation(self, truncation: Truncation) -> Self {
        Self { truncation, ..self }
    }

    #[must_use]
    pub const fn daggers(self, daggers: Daggers) -> Self {
        Self { daggers, ..self }
    }

    /// Writes into the workspace where one of its arguments says ([`Writes`]).
    #[must_use]
    pub const fn writes(self, writes: Writes) -> Self {
        Self { writes, ..self }
    }

    /// Listed whenever any group is enabled.
    #[must_use]
    pub const fn always_listed(self) -> Self {
        Self {
            always_listed: true,
            ..self
        }
    }

    /// Shown in the MCP App `view`.
    #[must_use]
    pub const fn view(self, view: &'static str) -> Self {
        Self {
            view: Some(view),
            ..self
        }
    }

    /// For the views only ([`Visibility::App`]): hidden from the model, called by a person.
    #[must_use]
    pub const fn app_only(self) -> Self {
        Self {
            visibility: Visibility::App,
            ..self
        }
    }

    /// Changes what every workspace of the process shares (the skills shelf): only a caller with
    /// the skills grant may run it.
    #[must_use]
    pub const fn changes_shared_state(self) -> Self {
        Self {
            changes_shared_state: true,
            ..self
        }
    }

    /// The [`ToolDefinition`] of a tool taking `Arguments` and answering with `Output`.
    pub fn definition<Arguments: JsonSchema, Output: Reply>(&self) -> ToolDefinition {
        let mut definition =
            ToolDefinition::new::<Arguments>(self.name, self.description, self.annotations)
                .with_title(self.title)
                .with_permission(self.permission)
                .with_caching(self.caching)
                .with_truncation(self.truncation)
                .with_daggers(self.daggers)
                .with_writes(self.writes);
        definition.output_schema = Output::schema();
        definition.always_listed = self.always_listed;
        definition.view = self.view;
        definition.visibility = self.visibility;
        definition.changes_shared_state = self.changes_shared_state;
        definition
    }
}

/// What a typed tool answers with: text for the model ([`Text`]), or any serializable value,
/// sent as structured content under its generated output schema.
pub trait Reply: Send + 'static {
    /// The output schema `tools/list` shows; `None` for text.
    fn schema() -> Option<Schema>;

    fn into_output(self) -> Result<ToolOutput, ToolError>;
}

/// A text answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Text(pub String);

impl Reply for Text {
    fn schema() -> Option<Schema> {
        None
    }

    fn into_output(self) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::Text(self.0))
    }
}

impl Reply for super::Framed {
    fn schema() -> Option<Schema> {
        None
    }

    fn into_output(self) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::Framed(self))
    }
}

impl<Output: Serialize + JsonSchema + Send + 'static> Reply for Output {
    fn schema() -> Option<Schema> {
        Some(Schema::later(output_schema::<Output>))
    }

    fn into_output(self) -> Result<ToolOutput, ToolError> {
        structured(&self)
    }
}

/// Structured output from a serializable value.
pub fn structured(value: &impl Serialize) -> Result<ToolOutput, ToolError> {
    serde_json::to_value(value)
        .map(ToolOutput::Structured)
        .map_err(|error| ToolError::Internal(format!("cannot serialize a result: {error}")))
}

/// What a typed tool's `run` answers.
pub type Answered<Output> = Result<Output, ToolError>;

/// What a running typed tool may use.
pub struct Context<'a, Service = ()> {
    /// What the tool was built with (the snapshot service, the skills shelf); `()` for none.
    pub service: &'a Service,
    pub workspace: &'a Arc<Workspace>,
    /// The client cancelled, or left.
    pub cancellation: &'a CancellationToken,
    /// The output limit in force for this call (`None`: no truncation); tools that page their
    /// own output use it as their page size.
    pub output_limit: Option<usize>,
    /// The rest of the call (the executor, the client's model, …), on the session only.
    session: Option<&'a ToolCall<'a>>,
    /// Where a tool on the blocking pool reports how far it is, when the client asked for
    /// progress (on the session, see [`ToolCall::progress`]).
    pub steps: Option<&'a Steps>,
}

/// The least time between two progress reports of a tool on the blocking pool.
const STEP_INTERVAL: Duration = Duration::from_millis(100);

/// How far a tool on the blocking pool is, `done` of `total` things, sent on to the client by
/// the session as `notifications/progress`: at most one report per `STEP_INTERVAL` (100 ms), and
/// always the last. Only made when the client gave a `progressToken`, so a call without one pays
/// nothing.
pub struct Steps {
    sender: tokio::sync::mpsc::Sender<(usize, usize, &'static str)>,
    started: Instant,
    /// Milliseconds from `started` to the last report sent.
    last: AtomicU64,
}

impl Steps {
    /// Reports `done` of `total` `things` (`messages`), unless one was sent less than
    /// `STEP_INTERVAL` ago and this is not the last. Never waits for the session, except for
    /// the last report.
    pub fn report(&self, done: usize, total: usize, things: &'static str) {
        if done >= total {
            // The last report is never dropped: it says the work is over.
            if let Err(error) = self.sender.blocking_send((done, total, things)) {
                tracing::debug!(%error, "the last progress report was not sent");
            }
            return;
        }
        let now = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let interval = u64::try_from(STEP_INTERVAL.as_millis()).unwrap_or(u64::MAX);
        if now.saturating_sub(self.last.load(Ordering::Relaxed)) < interval {
            return;
        }
        self.last.store(now, Ordering::Relaxed);
        // A full queue drops this one: the session is behind, and a later report comes.
        self.sender.try_send((done, total, things)).ok();
    }
}

/// Runs `work` (a blocking-pool task that reports to the [`Steps`] it is given) and, beside it
/// on the session, sends its reports to `progress`; every report is sent before this returns,
/// so before the call's answer.
async fn with_steps<Output>(
    progress: Option<&dyn Progress>,
    work: impl FnOnce(Option<Steps>) -> tokio::task::JoinHandle<Output>,
) -> Result<Output, tokio::task::JoinError> {
    let Some(progress) = progress else {
        return work(None).await;
    };
    let (sender, mut receiver) = tokio::sync::mpsc::channel(8);
    let steps = Steps {
        sender,
        started: Instant::now(),
        last: AtomicU64::new(0),
    };
    let task = work(Some(steps));
    let forwarding = async {
        while let Some((done, total, things)) = receiver.recv().await {
            let message = format!("{done} of {total} {things}");
            #[expect(
                clippy::cast_precision_loss,
                reason = "a count far below 2^52; progress is a float on the wire"
            )]
            let (done, total) = (done as f64, total as f64);
            progress.report(done, Some(total), Some(message)).await;
        }
    };
    let (output, ()) = tokio::join!(task, forwarding);
    output
}

impl<'a, Service> Context<'a, Service> {
    /// The call as the session has it: the executor, the asker, the sampler, progress. A tool
    /// that runs [`Runs::OnBlockingPool`] has none.
    pub fn session(&self) -> Result<&'a ToolCall<'a>, ToolError> {
        self.session.ok_or_else(|| {
            ToolError::Internal("the tool runs on the blocking pool, away from the session".into())
        })
    }
}

/// A built-in tool: `Self` is its arguments (decoded from the call, `///` documented for the
/// input schema); `Service` is what it is built with (cloned into a call on the blocking pool),
/// nothing by default.
pub trait TypedTool<Service = ()>: DeserializeOwned + JsonSchema + Send + Sized + 'static
where
    Service: Clone + Send + Sync + 'static,
{
    type Output: Reply;
    const TOOL: Declaration;

    fn run(
        self,
        context: Context<'_, Service>,
    ) -> impl Future<Output = Result<Self::Output, ToolError>> + Send;

    /// As [`Tool::consent`].
    fn consent(_service: &Service, _arguments: &Value) -> Result<Consent, ToolError> {
        Ok(Consent::Asked { scope: None })
    }

    /// As [`Tool::question`].
    fn question(_service: &Service, _arguments: &Value) -> Option<String> {
        None
    }

    /// As [`Tool::format_for_llm`].
    fn format_for_llm(output: &ToolOutput, _arguments: &Value) -> String {
        super::plain_text(output)
    }
}

/// A [`TypedTool`] with its definition and service, as a [`Tool`].
pub struct Typed<T, Service> {
    definition: ToolDefinition,
    service: Service,
    arguments: std::marker::PhantomData<fn() -> T>,
}

impl<T: TypedTool<Service>, Service: Clone + Send + Sync + 'static> Typed<T, Service> {
    pub fn new(service: Service) -> Self {
        Self {
            definition: T::TOOL.definition::<T, T::Output>(),
            service,
            arguments: std::marker::PhantomData,
        }
    }
}

/// The tool `T`, built with `service`, ready for a group: `typed::<ReadVarArguments, _>(())`.
pub fn typed<T, Service>(service: Service) -> Arc<dyn Tool>
where
    T: TypedTool<Service>,
    Service: Clone + Send + Sync + 'static,
{
    Arc::new(Typed::<T, Service>::new(service))
}

impl<T, Service> Tool for Typed<T, Service>
where
    T: TypedTool<Service>,
    Service: Clone + Send + Sync + 'static,
{
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn execute<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        match T::TOOL.runs {
            Runs::OnSession => Box::pin(async move {
                let mut call = call;
                let arguments: T =
                    parse_arguments(T::TOOL.name, std::mem::take(&mut call.arguments))?;
                let context = Context {
                    service: &self.service,
                    workspace: call.workspace,
                    cancellation: &call.cancellation,
                    output_limit: call.output_limit,
                    session: Some(&call),
                    steps: None,
                };
                arguments.run(context).await?.into_output()
            }),
            Runs::OnBlockingPool => {
                let service = self.service.clone();
                let workspace = Arc::clone(call.workspace);
                let (arguments, cancellation) = (call.arguments, call.cancellation);
                let (output_limit, progress) = (call.output_limit, call.progress);
                Box::pin(async move {
                    let work = |steps: Option<Steps>| {
                        tokio::task::spawn_blocking(move || {
                            let arguments: T = parse_arguments(T::TOOL.name, arguments)?;
                            let context = Context {
                                service: &service,
                                workspace: &workspace,
                                cancellation: &cancellation,
                                output_limit,
                                session: None,
                                steps: steps.as_ref(),
                            };
                            finish(arguments.run(context))?.into_output()
                        })
                    };
                    with_steps(progress, work).await.map_err(|error| {
                        ToolError::Internal(format!("the tool's task failed: {error}"))
                    })?
                })
            }
        }
    }

    fn consent(&self, arguments: &Value) -> Result<Consent, ToolError> {
        T::consent(&self.service, arguments)
    }

    fn question(&self, arguments: &Value) -> Option<String> {
        T::question(&self.service, arguments)
    }

    fn format_for_llm(&self, output: &ToolOutput, arguments: &Value) -> String {
        T::format_for_llm(output, arguments)
    }
}

/// Drives a tool's `run` on a blocking-pool thread. The body of a tool that runs there is
/// synchronous, so one poll finishes it, and it may itself block on a future (the shelf's
/// library) without nesting executors; one that does wait is driven to its end here.
fn finish<Work: Future>(work: Work) -> Work::Output {
    let mut work = std::pin::pin!(work);
    let mut waker = std::task::Context::from_waker(std::task::Waker::noop());
    match work.as_mut().poll(&mut waker) {
        std::task::Poll::Ready(output) => output,
        std::task::Poll::Pending => futures::executor::block_on(work),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use pretty_assertions::assert_eq;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};
    use serde_json::json;
    use tokio_util::sync::CancellationToken;

    use super::{Context, Declaration, Text, TypedTool, typed};
    use crate::tools::{
        Annotations, Asking, Audience, Caching, CallRequest, ExecuteStatus, Executor,
        ExecutorSettings, Origin, Outcome, Registry, ToolDefinition, ToolError, ToolGroup,
        ToolOutput,
    };
    use crate::vars::ManualClock;
    use crate::workspace::Workspace;

    /// Echoes its word, with the service's prefix, where its declaration says it runs.
    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct EchoArguments {
        /// The word.
        word: String,
    }

    #[derive(Debug, Serialize, JsonSchema)]
    struct Echoed {
        echoed: String,
        on_session: bool,
    }

    impl TypedTool<String> for EchoArguments {
        type Output = Echoed;
        const TOOL: Declaration =
            Declaration::new("Echo", "Echo", Annotations::NONE, " Echoes. ").uncached();

        async fn run(self, context: Context<'_, String>) -> Result<Echoed, ToolError> {
            Ok(Echoed {
                echoed: format!("{}{}", context.service, self.word),
                on_session: context.session().is_ok(),
            })
        }
    }

    /// The same, on the blocking pool, answering text.
    #[derive(Debug, Deserialize, JsonSchema)]
    struct PooledArguments {
        word: String,
    }

    impl TypedTool for PooledArguments {
        type Output = Text;
        const TOOL: Declaration =
            Declaration::new("Pooled", "Pooled", Annotations::NONE, "Pooled.")
                .uncached()
                .whole()
                .pooled();

        async fn run(self, context: Context<'_>) -> Result<Text, ToolError> {
            let place = if context.session().is_ok() {
                "session"
            } else {
                "pool"
            };
            Ok(Text(format!("{} on the {place}", self.word)))
        }
    }

    #[test]
    fn a_declaration_makes_the_definition_a_hand_built_one_would() {
        let declared = super::Typed::<EchoArguments, String>::new("> ".to_owned());
        let built = ToolDefinition::new::<EchoArguments>("Echo", "Echoes.", Annotations::NONE)
            .with_title("Echo")
            .with_output::<Echoed>()
            .with_caching(Caching::Off);
        assert_eq!(crate::tools::Tool::definition(&declared), &built);
    }

    async fn call(executor: &Executor, tool: &str, arguments: serde_json::Value) -> Outcome {
        let serde_json::Value::Object(arguments) = arguments else {
            panic!("arguments are an object");
        };
        executor
            .execute(CallRequest {
                tool,
                arguments: Some(arguments),
                asking: Asking::Unavailable,
                resume: None,
                cancellation: CancellationToken::new(),
                plan: None,
                progress: None,
                sampler: None,
                relay: None,
                approved: None,
                audience: Audience::Model,
            })
            .await
    }

    #[tokio::test]
    async fn a_typed_tool_decodes_runs_where_declared_and_answers() {
        let workspace = Arc::new(Workspace::in_memory(
            "test",
            16,
            Arc::new(ManualClock::new(1)),
        ));
        let executor = Executor::new(
            Arc::new(Registry::default()),
            workspace,
            ExecutorSettings::default(),
        );
        let group = ToolGroup {
            name: "test".to_owned(),
            origin: Origin::BuiltIn,
            about: None,
            tools: vec![
                typed::<EchoArguments, _>("> ".to_owned()),
                typed::<PooledArguments, _>(()),
            ],
            rule_prompt: None,
            rules: Vec::new(),
        };
        executor.register_group(group, true).unwrap();
        let Outcome::Finished(echoed) = call(&executor, "Echo", json!({"word": "hi"})).await else {
            panic!("no question is asked");
        };
        assert_eq!(
            echoed.data,
            Some(ToolOutput::Structured(
                json!({"echoed": "> hi", "on_session": true})
            ))
        );
        let Outcome::Finished(pooled) = call(&executor, "Pooled", json!({"word": "hi"})).await
        else {
            panic!("no question is asked");
        };
        assert_eq!(
            pooled.data,
            Some(ToolOutput::Text("hi on the pool".to_owned()))
        );
        let Outcome::Finished(refused) = call(&executor, "Echo", json!({"wrod": "hi"})).await
        else {
            panic!("no question is asked");
        };
        assert_eq!(refused.status, ExecuteStatus::Error);
        assert_eq!(
            refused.final_text,
            "invalid arguments for Echo: unknown field `wrod`, expected `word`"
        );
    }
}
