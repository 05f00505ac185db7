//! The test harness: the real binary over stdio with rmcp's client, the server in process over a
//! duplex pipe (for tool groups registered only by the tests), raw JSON-RPC lines for the
//! protocol's rough edges, and golden files.
#![expect(
    deprecated,
    reason = "the test client answers sampling, which SEP-2577 deprecates but clients still offer"
)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig,
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    ElicitationAction, Implementation, SamplingMessage,
};
use rmcp::service::{NotificationContext, RequestContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use synapse_mcp::app::App;
use synapse_mcp::app::Settings;
use synapse_mcp::server::Server;
use synapse_mcp::tools::{
    Annotations, Origin, Tool, ToolCall, ToolDefinition, ToolError, ToolGroup, ToolOutput,
};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

pub(crate) type Client = RunningService<RoleClient, TestClient>;

/// How the test client answers elicitation requests.
#[derive(Clone, Debug)]
pub(crate) enum Elicitation {
    /// The client does not declare elicitation.
    Unsupported,
    /// Accept with this form content.
    Accept(Value),
    Decline,
}

/// How the test client's "model" answers a sampling request: from the request's user message
/// to the answer's text, or an error.
pub(crate) type Model = Arc<dyn Fn(&str) -> Result<String, ErrorData> + Send + Sync>;

/// A client that records what it is asked and notified.
#[derive(Clone)]
pub(crate) struct TestClient {
    elicitation: Elicitation,
    /// Declares sampling and answers `sampling/createMessage` with it, when set.
    model: Option<Model>,
    /// Declares the MCP Apps extension (`io.modelcontextprotocol/ui`): a host that renders apps.
    apps: bool,
    asked: Arc<Mutex<Vec<String>>>,
    /// `(system prompt, user message)` of every sampling request.
    sampled: Arc<Mutex<Vec<(String, String)>>>,
    notifications: Arc<Mutex<Vec<String>>>,
    /// Runs while the user is being asked, before the answer is given.
    while_asking: Option<Arc<dyn Fn() + Send + Sync>>,
    /// This session's tool output schemas, compiled: see [`assert_valid_output`].
    output_schemas: OutputSchemas,
}

impl TestClient {
    pub(crate) fn new(elicitation: Elicitation) -> Self {
        Self {
            elicitation,
            model: None,
            apps: false,
            asked: Arc::default(),
            sampled: Arc::default(),
            notifications: Arc::default(),
            while_asking: None,
            output_schemas: Arc::default(),
        }
    }

    /// Declares sampling and answers each request with `model`.
    pub(crate) fn with_model(
        mut self,
        model: impl Fn(&str) -> Result<String, ErrorData> + Send + Sync + 'static,
    ) -> Self {
        self.model = Some(Arc::new(model));
        self
    }

    /// Declares the MCP Apps extension, as a host that renders apps does.
    pub(crate) fn with_apps(mut self) -> Self {
        self.apps = true;
        self
    }

    pub(crate) fn sampled(&self) -> Vec<(String, String)> {
        self.sampled.lock().unwrap().clone()
    }

    /// Runs `hook` each time the client is asked, before it answers.
    pub(crate) fn while_asking(mut self, hook: impl Fn() + Send + Sync + 'static) -> Self {
        self.while_asking = Some(Arc::new(hook));
        self
    }

    pub(crate) fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap().clone()
    }

    pub(crate) fn notifications(&self) -> Vec<String> {
        self.notifications.lock().unwrap().clone()
    }

    /// How many times the client has been sent `notification`.
    pub(crate) fn count(&self, notification: &str) -> usize {
        self.notifications
            .lock()
            .unwrap()
            .iter()
            .filter(|seen| *seen == notification)
            .count()
    }

    /// Waits until the client has been sent `notification` more than `before` times.
    pub(crate) async fn wait_for_more(&self, notification: &str, before: usize) {
        for _ in 0..400 {
            if self.count(notification) > before {
                return;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("no new {notification}: {:?}", self.notifications());
    }

    fn note(&self, what: String) {
        self.notifications.lock().unwrap().push(what);
    }
}

impl ClientHandler for TestClient {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = match self.elicitation {
            Elicitation::Unsupported => ClientCapabilities::default(),
            _ => ClientCapabilities::builder().enable_elicitation().build(),
        };
        if self.model.is_some() {
            capabilities.sampling = Some(rmcp::model::SamplingCapability::default());
        }
        if self.apps {
            let settings: rmcp::model::JsonObject =
                serde_json::from_value(json!({"mimeTypes": ["text/html;profile=mcp-app"]}))
                    .unwrap();
            capabilities.extensions =
                Some([("io.modelcontextprotocol/ui".to_owned(), settings)].into());
        }
        ClientConfig::new(capabilities, Implementation::new("synapse-tests", "1.0.0"))
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let message: String = params
            .messages
            .iter()
            .flat_map(|message| message.content.iter())
            .filter_map(|block| block.as_text().map(|text| text.text.clone()))
            .collect();
        self.sampled
            .lock()
            .unwrap()
            .push((params.system_prompt.unwrap_or_default(), message.clone()));
        let Some(model) = &self.model else {
            return Err(ErrorData::invalid_request(
                "sampling is not supported",
                None,
            ));
        };
        let answer = model(&message)?;
        Ok(CreateMessageResult::new(
            SamplingMessage::assistant_text(answer),
            "test-model".to_owned(),
        ))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        if let ElicitRequestParams::FormElicitationParams { message, .. } = request {
            self.asked.lock().unwrap().push(message);
        }
        if let Some(hook) = &self.while_asking {
            hook();
        }
        Ok(match &self.elicitation {
            Elicitation::Accept(content) => {
                ElicitResult::new(ElicitationAction::Accept).with_content(content.clone())
            }
            Elicitation::Decline | Elicitation::Unsupported => {
                ElicitResult::new(ElicitationAction::Decline)
            }
        })
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.note("tools/list_changed".to_owned());
    }

    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.note(format!(
            "progress {} {}",
            params.progress,
            params.message.unwrap_or_default()
        ));
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.note("resources/list_changed".to_owned());
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.note("prompts/list_changed".to_owned());
    }

    async fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.note(format!("resources/updated {}", params.uri));
    }
}

pub(crate) fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_synapse-mcp")
}

/// Runs the binary with `args` to its end, as a user at a shell without a terminal would (no
/// stdin): its stdout, its stderr, and whether it succeeded.
pub(crate) fn run_command(args: &[&str]) -> (String, String, bool) {
    let output = std::process::Command::new(binary())
        .env("HOME", quiet_home())
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    (
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
        output.status.success(),
    )
}

/// A home folder without skills, so that the default skill roots (the bundled skills, then
/// `~/.synapse/skills`, `~/.agents/skills`, `~/.claude/skills`) do not depend on the machine.
pub(crate) fn quiet_home() -> &'static str {
    env!("CARGO_TARGET_TMPDIR")
}

/// The real binary over stdio, with extra arguments, its stderr forwarded to the test's. Unless
/// the arguments name a store or a data folder, it keeps its workspace in memory.
pub(crate) async fn spawn_binary(args: &[&str], client: TestClient) -> Client {
    spawn_binary_at_home(Path::new(quiet_home()), args, client).await
}

/// [`spawn_binary`] with `home` as its home folder (`~/.synapse/skills` and the other default
/// skill roots, and `~/.synapse/tools`, are below it), for tests that let it write there.
pub(crate) async fn spawn_binary_at_home(home: &Path, args: &[&str], client: TestClient) -> Client {
    let mut command = Command::new(binary());
    command
        .env("HOME", home)
        .args(args)
        .arg("--log-level")
        .arg("warn")
        .kill_on_drop(true);
    if !args
        .iter()
        .any(|arg| *arg == "--store" || *arg == "--data-dir")
    {
        command.args(["--store", "memory"]);
    }
    command.args(every_group_unless_chosen(args));
    let transport = TokioChildProcess::new(command).expect("spawn synapse-mcp");
    client.serve(transport).await.expect("initialize")
}

/// `--groups all` unless the arguments choose the groups (`--groups`) or the config file does
/// (`[groups]`): the tests drive every built-in group, some of which a default start leaves off.
pub(crate) fn every_group_unless_chosen(args: &[&str]) -> &'static [&'static str] {
    let config_chooses = (args.windows(2))
        .filter(|pair| pair[0] == "--config")
        .any(|pair| std::fs::read_to_string(pair[1]).is_ok_and(|text| text.contains("[groups]")));
    if config_chooses || args.contains(&"--groups") {
        &[]
    } else {
        &["--groups", "all"]
    }
}

/// The server in process with the tests' own `test` group, configured by a TOML text.
pub(crate) async fn in_process(config_toml: &str, client: TestClient) -> (Server, Client) {
    let server = test_server(config_toml);
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    let (server_read, server_write) = tokio::io::split(server_io);
    // Served as the binary serves stdio: the same transport, inline answers included.
    tokio::spawn(server.clone().serve_lines(server_read, server_write));
    let client = client.serve(client_io).await.expect("initialize");
    (server, client)
}

/// A server with the `test` group registered and enabled.
pub(crate) fn test_server(config_toml: &str) -> Server {
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("config.toml");
    std::fs::write(&path, config_toml).unwrap();
    let mut args = vec![
        "synapse-mcp",
        "--store",
        "memory",
        "--config",
        path.to_str().unwrap(),
    ];
    if !config_toml.contains("[groups]") {
        args.extend(["--groups", "all"]);
    }
    let cli = <synapse_mcp::config::Cli as clap::Parser>::parse_from(args);
    let config = Settings::load(&cli).unwrap();
    let app = App::open(&config).unwrap();
    app.executor().register_group(test_group(), true).unwrap();
    Server::new(app)
}

/// Tools that exist only in the tests: `Echo` returns its text (`Pinned` too, into
/// `†state.pinned`), `Repeat` a long text, `Explode` panics, `Fail` fails with a tool error,
/// `Wait` waits.
pub(crate) fn test_group() -> ToolGroup {
    ToolGroup {
        name: "test".to_owned(),
        origin: Origin::BuiltIn,
        about: None,
        tools: vec![
            Double::named(
                "Echo",
                "Returns `text`.",
                |arguments: EchoArguments| async move {
                    Ok(match arguments.text {
                        Value::String(text) => ToolOutput::Text(text),
                        other => ToolOutput::Structured(other),
                    })
                },
            ),
            Double::named(
                "Repeat",
                "Returns `unit` repeated `times` times.",
                |arguments: RepeatArguments| async move {
                    Ok(ToolOutput::Text(arguments.unit.repeat(arguments.times)))
                },
            ),
            Double::named(
                "Explode",
                "Panics.",
                |_: Nothing| async move { panic!("boom") },
            ),
            Double::named(
                "Fail",
                "Fails with `message`.",
                |arguments: FailArguments| async move { Err(ToolError::Invalid(arguments.message)) },
            ),
            Double::named(
                "Wait",
                "Waits, then returns how long it waited.",
                |arguments: WaitArguments| async move {
                    tokio::time::sleep(Duration::from_millis(arguments.millis)).await;
                    Ok(ToolOutput::Structured(json!({"waited": arguments.millis})))
                },
            ),
            Double::with_definition(pinned(), |arguments: EchoArguments| async move {
                Ok(ToolOutput::Structured(arguments.text))
            }),
        ],
        rule_prompt: Some("Test tools: Echo, Repeat, Explode, Fail, Wait, Pinned.".to_owned()),
        rules: vec![synapse_mcp::rules::SkillRule::new(
            "Testing",
            "How the test tools behave",
            "# Testing\nEcho echoes.",
        )],
    }
}

/// What a test tool does with its decoded arguments.
type Run = Box<dyn Fn(Value) -> BoxFuture<'static, Result<ToolOutput, ToolError>> + Send + Sync>;

/// A tool that exists only in the tests, declared by its definition and what it does with its
/// arguments; the one way the tests declare a tool.
pub(crate) struct Double {
    definition: ToolDefinition,
    run: Run,
}

impl Double {
    /// A tool named `name` whose arguments are `Arguments`, with the default handling.
    pub(crate) fn named<Arguments, Answer>(
        name: &str,
        description: &str,
        run: impl Fn(Arguments) -> Answer + Send + Sync + 'static,
    ) -> Arc<dyn Tool>
    where
        Arguments: DeserializeOwned + JsonSchema + 'static,
        Answer: Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
    {
        let definition =
            ToolDefinition::new::<Arguments>(name, description, Annotations::default());
        Self::with_definition(definition, run)
    }

    /// A tool with a definition of its own (an output schema, a pinned argument); its arguments
    /// are decoded as `Arguments`.
    pub(crate) fn with_definition<Arguments, Answer>(
        definition: ToolDefinition,
        run: impl Fn(Arguments) -> Answer + Send + Sync + 'static,
    ) -> Arc<dyn Tool>
    where
        Arguments: DeserializeOwned + 'static,
        Answer: Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
    {
        let name = definition.name.clone();
        let run: Run = Box::new(move |arguments| {
            match synapse_mcp::tools::parse_arguments::<Arguments>(&name, arguments) {
                Ok(arguments) => Box::pin(run(arguments)),
                Err(error) => Box::pin(std::future::ready(Err(error))),
            }
        });
        Arc::new(Self { definition, run })
    }
}

impl Tool for Double {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn execute<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        (self.run)(call.arguments)
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoArguments {
    /// The text to return.
    text: Value,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct RepeatArguments {
    /// What to repeat.
    unit: String,
    /// How many times.
    times: usize,
}

/// No arguments.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub(crate) struct Nothing {}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct FailArguments {
    /// The error to fail with.
    message: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct WaitArguments {
    /// How long to wait, in milliseconds.
    millis: u64,
}

/// `Pinned`: Echo with its `_outputPath` pinned by `const` in its schema.
fn pinned() -> ToolDefinition {
    let mut definition = ToolDefinition::new::<EchoArguments>(
        "Pinned",
        "Echoes into †state.pinned.",
        Annotations::default(),
    );
    let mut schema = definition.input_schema.as_ref().clone();
    schema["properties"]["_outputPath"] = json!({"type": "string", "const": "†state.pinned"});
    definition.input_schema = Arc::new(schema).into();
    definition
}

/// Calls a tool and returns its result (tool errors included), after checking its structured
/// content against the tool's output schema.
pub(crate) async fn call(client: &Client, tool: &str, arguments: Value) -> CallToolResult {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object")
    };
    let result = client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments))
        .await
        .unwrap_or_else(|error| panic!("{tool} failed at the protocol level: {error}"));
    assert_valid_output(client, tool, &result).await;
    result
}

/// A `tools/call` the server answers with a JSON-RPC error: that error, as the client shows it.
pub(crate) async fn call_error(client: &Client, tool: &str, arguments: Value) -> String {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object")
    };
    client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments))
        .await
        .expect_err("a JSON-RPC error")
        .to_string()
}

/// A session's output schemas by tool name (`None`: the tool declares none), compiled once.
type OutputSchemas = Arc<Mutex<HashMap<String, Option<Arc<jsonschema::Validator>>>>>;

/// Fails the test when a result's `structuredContent` does not validate against the
/// `outputSchema` the session's `tools/list` gives for the tool, naming the tool, the path in the
/// content and the error, as a client that validates (the TypeScript and Python SDKs) would
/// reject it.
pub(crate) async fn assert_valid_output(client: &Client, tool: &str, result: &CallToolResult) {
    let Some(content) = &result.structured_content else {
        return;
    };
    let Some(validator) = output_validator(client, tool).await else {
        return;
    };
    let errors: Vec<String> = validator
        .iter_errors(content)
        .map(|error| format!("at `{}`: {error}", error.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{tool}'s structuredContent does not match its outputSchema:\n{}\ncontent: {content}",
        errors.join("\n")
    );
}

/// The tool's compiled output schema, from the session's cache or a fresh `tools/list`.
async fn output_validator(client: &Client, tool: &str) -> Option<Arc<jsonschema::Validator>> {
    let schemas = &client.service().output_schemas;
    if let Some(cached) = schemas.lock().unwrap().get(tool) {
        return cached.clone();
    }
    let listed = client
        .list_all_tools()
        .await
        .unwrap_or_else(|error| panic!("tools/list to check {tool}'s output: {error}"));
    let mut schemas = schemas.lock().unwrap();
    for listed in listed {
        let validator = listed.output_schema.map(|schema| {
            let schema = Value::Object(schema.as_ref().clone());
            let validator = jsonschema::draft202012::new(&schema).unwrap_or_else(|error| {
                panic!("{}'s outputSchema does not compile: {error}", listed.name)
            });
            Arc::new(validator)
        });
        schemas.insert(listed.name.to_string(), validator);
    }
    schemas.get(tool).cloned().flatten()
}

/// The names of the tools the client sees, in the server's order.
/// Whether `ToolGroups` lists the group `name` as on.
pub(crate) async fn group_is_on(client: &Client, name: &str) -> bool {
    let listed = call(client, "ToolGroups", serde_json::json!({}))
        .await
        .structured_content
        .unwrap();
    listed["groups"]
        .as_array()
        .unwrap()
        .iter()
        .any(|group| group["name"] == name && group["enabled"] == true)
}

pub(crate) async fn tool_names(client: &Client) -> Vec<String> {
    let tools = client.list_all_tools().await.unwrap();
    tools.iter().map(|tool| tool.name.to_string()).collect()
}

/// The text of a result's single text block.
pub(crate) fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|text| text.text.as_str()))
        .collect()
}

pub(crate) fn is_error(result: &CallToolResult) -> bool {
    result.is_error == Some(true)
}

/// Compares `actual` with a golden JSON file; `UPDATE_GOLDEN=1` rewrites the file instead.
pub(crate) fn assert_golden(relative: &str, actual: &Value) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(relative);
    compare_with_golden(&path, serde_json::to_string_pretty(actual).unwrap() + "\n");
}

/// Compares a whole text with a golden file (`tests/golden/<relative>`); `UPDATE_GOLDEN=1`
/// rewrites the file instead. What changes from run to run is replaced first (see [`redact`]),
/// so the file holds the text a client reads, whole, with placeholders where it must vary.
pub(crate) fn assert_golden_text(relative: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(relative);
    let mut rendered = redact(actual);
    if !rendered.ends_with('\n') {
        rendered.push('\n');
    }
    compare_with_golden(&path, rendered);
}

/// `rendered` against the golden file at `path`, or, with `UPDATE_GOLDEN=1`, written there.
fn compare_with_golden(path: &Path, rendered: String) {
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, rendered).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(path)
        .unwrap_or_else(|_| panic!("{} is missing: run with UPDATE_GOLDEN=1", path.display()));
    pretty_assertions::assert_eq!(
        expected,
        rendered,
        "{} drifted: run with UPDATE_GOLDEN=1 if intended",
        path.display()
    );
}

/// What a command that failed printed from its `Error:` line on, without the log lines around
/// it (whose order and timings vary: a thread may still log after the error) or a backtrace.
pub(crate) fn error_part(stderr: &str) -> String {
    let from_error = stderr
        .find("Error: ")
        .map_or(stderr, |start| &stderr[start..]);
    // Where `RUST_BACKTRACE` is set, the error's backtrace follows it.
    let from_error = from_error
        .find("\n\nStack backtrace:")
        .map_or(from_error, |end| &from_error[..=end]);
    let mut kept = String::new();
    for line in from_error.lines().filter(|line| !is_log_line(line)) {
        kept.push_str(line);
        kept.push('\n');
    }
    kept
}

/// Whether a line of stderr is one of the log's (`2026-11-27T18:00:00.000000Z  INFO …`).
fn is_log_line(line: &str) -> bool {
    let bytes = line.as_bytes();
    bytes.len() > 20
        && bytes[..4].iter().all(u8::is_ascii_digit)
        && bytes[4] == b'-'
        && bytes[10] == b'T'
}

/// The whole answers of one test, each under a heading, compared at once with one golden text
/// file (see [`assert_golden_text`]).
#[derive(Default)]
pub(crate) struct Transcript(String);

impl Transcript {
    /// Appends one answer under its heading.
    pub(crate) fn add(&mut self, heading: &str, answer: &str) {
        let entry = format!("## {heading}\n{answer}\n\n");
        self.0.push_str(&entry);
    }

    pub(crate) fn assert_golden(&self, relative: &str) {
        assert_golden_text(relative, self.0.trim_end());
    }
}

/// `text` with what differs between runs replaced by placeholders: this checkout's folder
/// (`<repository>`), temporary folders
/// (`<tmp>`), loopback ports (`127.0.0.1:<port>`), timestamps (`<time>`), git commit ids (`<commit>`), UUIDs (`<uuid>`), SHA-256 digests (`<sha256>`), the short ones in
/// folder names (`-<digest>`) and the node ids of cached results (`_<node>_result`); an error's backtrace is cut off.
pub(crate) fn redact(text: &str) -> String {
    use std::sync::LazyLock;

    use regex::Regex;

    static VOLATILE: LazyLock<[(Regex, &str); 11]> = LazyLock::new(|| {
        [
            (Regex::new(r"(?:/[A-Za-z0-9._-]+)*/\.tmp[A-Za-z0-9]{6}").unwrap(), "<tmp>"),
            (Regex::new(r"127\.0\.0\.1:[0-9]+").unwrap(), "127.0.0.1:<port>"),
            // `doctor`'s SQLite file size: the write-ahead log is checkpointed when it will be.
            (Regex::new(r"(file size: +)[0-9]+ bytes").unwrap(), "${1}<n> bytes"),
            // The tests' PostgreSQL databases (`postgres_server::database`).
            (Regex::new(r"synapse_test_[0-9]+_[0-9]+").unwrap(), "synapse_test_<n>"),
            (
                Regex::new(r"[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:?[0-9]{2})?( UTC)?")
                    .unwrap(),
                "<time>",
            ),
            (Regex::new(r"\b[0-9a-f]{64}\b").unwrap(), "<sha256>"),
            (Regex::new(r"\b[0-9a-f]{40}\b").unwrap(), "<commit>"),
            (
                Regex::new(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b").unwrap(),
                "<uuid>",
            ),
            (Regex::new(r"-[0-9a-f]{12}\b").unwrap(), "-<digest>"),
            // The call's node in the names of cached results (`SkillLoad_b3cacce4_result`).
            (
                Regex::new(r"_[0-9a-f]{8,16}_(result|args)\b").unwrap(),
                "_<node>_$1",
            ),
            // Where `RUST_BACKTRACE` is set, an error's backtrace follows it, indented.
            (
                Regex::new(r"\n\nStack backtrace:\n(?:[ \t]+[^\n]*(?:\n|$))*").unwrap(),
                "\n",
            ),
        ]
    });
    let text = text.replace(env!("CARGO_MANIFEST_DIR"), "<repository>");
    VOLATILE.iter().fold(text, |text, (pattern, placeholder)| {
        pattern.replace_all(&text, *placeholder).into_owned()
    })
}

/// `target/<profile>/examples/<name>`, next to this test binary's `deps/` folder.
pub(crate) fn example(name: &str) -> PathBuf {
    let test_binary = std::env::current_exe().unwrap();
    let profile = test_binary.parent().unwrap().parent().unwrap();
    let path = profile.join("examples").join(name);
    assert!(
        path.exists(),
        "{} is missing: `cargo test` builds the examples; run it without --test filters, or \
         `cargo build --examples` first",
        path.display()
    );
    path
}

/// A path inside the repository.
pub(crate) fn manifest(relative: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)
}

/// The binary driven by raw JSON-RPC lines, for inputs a well-behaved client never sends.
pub(crate) struct RawSession {
    /// Holds the process; it is killed when the session is dropped.
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl RawSession {
    pub(crate) fn start(args: &[&str]) -> Self {
        let mut command = Command::new(binary());
        if !args
            .iter()
            .any(|arg| *arg == "--store" || *arg == "--data-dir")
        {
            command.args(["--store", "memory"]);
        }
        command.args(every_group_unless_chosen(args));
        let mut child = command
            .env("HOME", quiet_home())
            .args(args)
            .arg("--log-level")
            .arg("error")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn synapse-mcp");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Self {
            child,
            stdin,
            stdout,
        }
    }

    /// Starts a session and completes the `initialize` handshake.
    pub(crate) async fn initialized(args: &[&str]) -> Self {
        let mut session = Self::start(args);
        session.initialize().await;
        session
    }

    /// The `initialize` handshake (request id 0, then `notifications/initialized`); gives the
    /// server's answer to `initialize`.
    pub(crate) async fn initialize(&mut self) -> Value {
        self.send(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}}),
        )
        .await;
        let answer = self.response(0).await;
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        answer
    }

    /// The server's process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id().unwrap()
    }

    /// The next line the server writes, as JSON.
    pub(crate) async fn next_message(&mut self) -> Value {
        let mut line = String::new();
        tokio::time::timeout(Duration::from_mins(1), self.stdout.read_line(&mut line))
            .await
            .expect("the server wrote nothing for a minute")
            .unwrap();
        serde_json::from_str(&line).unwrap_or_else(|_| panic!("not JSON: {line}"))
    }

    /// The process and its two pipes, for tests that write and read at the same time.
    pub(crate) fn split(self) -> (Child, ChildStdin, BufReader<ChildStdout>) {
        (self.child, self.stdin, self.stdout)
    }

    pub(crate) async fn send(&mut self, message: &Value) {
        self.send_bytes(format!("{message}\n").as_bytes()).await;
    }

    pub(crate) async fn send_bytes(&mut self, bytes: &[u8]) {
        self.stdin.write_all(bytes).await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    /// Reads lines until the response with this id; every line must be JSON-RPC.
    pub(crate) async fn response(&mut self, id: i64) -> Value {
        self.response_to(&json!(id)).await
    }

    /// Reads lines until the response with this id (a number or a string).
    pub(crate) async fn response_to(&mut self, id: &Value) -> Value {
        tokio::time::timeout(Duration::from_mins(1), async {
            loop {
                let mut line = String::new();
                let read = self.stdout.read_line(&mut line).await.unwrap();
                assert!(
                    read > 0,
                    "the server closed stdout while waiting for id {id}"
                );
                let message: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|_| panic!("stdout carried a non-JSON line: {line}"));
                assert_eq!(message["jsonrpc"], "2.0", "not JSON-RPC: {line}");
                if &message["id"] == id {
                    return message;
                }
            }
        })
        .await
        .unwrap_or_else(|_| panic!("no response for id {id}"))
    }

    /// The next message the server writes, whatever it is.
    pub(crate) async fn message(&mut self) -> Value {
        tokio::time::timeout(Duration::from_mins(1), async {
            let mut line = String::new();
            let read = self.stdout.read_line(&mut line).await.unwrap();
            assert!(read > 0, "the server closed stdout");
            serde_json::from_str(&line)
                .unwrap_or_else(|_| panic!("stdout carried a non-JSON line: {line}"))
        })
        .await
        .expect("no message from the server")
    }

    /// A `tools/call` and its response.
    pub(crate) async fn call(&mut self, id: i64, tool: &str, arguments: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}}))
            .await;
        self.response(id).await
    }
}

/// Waits (up to five seconds) until the client has been sent this notification.
pub(crate) async fn wait_for(client: &TestClient, notification: &str) {
    for _ in 0..200 {
        if client
            .notifications()
            .iter()
            .any(|seen| seen == notification)
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!(
        "never notified of {notification}; saw {:?}",
        client.notifications()
    );
}

/// Writes the skill folder `root/name` with a SKILL.md of this description and body (the
/// folder is made if need be); returns the folder.
pub(crate) fn write_skill(root: &Path, name: &str, description: &str, body: &str) -> PathBuf {
    let folder = root.join(name);
    std::fs::create_dir_all(&folder).unwrap();
    let text = format!("---\nname: {name}\ndescription: {description}\n---\n{body}\n");
    std::fs::write(folder.join("SKILL.md"), text).unwrap();
    folder
}

/// Copies a folder with everything in it (skills are copied so that `index.json` and saves
/// never land in the repository).
pub(crate) fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// The index the server keeps in the data folder `data` of a `library` (`skills`, `tools`)
/// root: its path (`indexes/LIBRARY/NAME-DIGEST.json`, the digest of the root's canonical path)
/// and its content.
pub(crate) fn index_of(data: &Path, library: &str, root: &Path) -> (PathBuf, Value) {
    use sha2::Digest as _;
    let canonical = std::fs::canonicalize(root).unwrap();
    let digest = sha2::Sha256::digest(canonical.as_os_str().as_encoded_bytes())
        .iter()
        .take(8)
        .fold(String::new(), |mut hex, byte| {
            std::fmt::Write::write_fmt(&mut hex, format_args!("{byte:02x}")).unwrap();
            hex
        });
    let name = canonical.file_name().unwrap().to_string_lossy();
    let file = data
        .join("indexes")
        .join(library)
        .join(format!("{name}-{digest}.json"));
    let text = std::fs::read_to_string(&file)
        .unwrap_or_else(|error| panic!("no index {}: {error}", file.display()));
    (file, serde_json::from_str(&text).unwrap())
}
