//! Known methods with params of the wrong shape. rmcp takes such a request for a custom method
//! and would answer "method not found"; the client gets `-32602` naming what is wrong instead.

use rmcp::model::{
    CallToolRequest, CallToolRequestMethod, CancelTaskMethod, CancelTaskRequest, ClientRequest,
    CompleteRequest, CompleteRequestMethod, ConstString, DiscoverRequest, DiscoverRequestMethod,
    GetPromptRequest, GetPromptRequestMethod, GetSkillRequest, GetSkillRequestMethod,
    GetTaskMethod, GetTaskRequest, InitializeRequest, InitializeResultMethod, ListPromptsRequest,
    ListPromptsRequestMethod, ListResourceTemplatesRequest, ListResourceTemplatesRequestMethod,
    ListResourcesRequest, ListResourcesRequestMethod, ListSkillsRequest, ListSkillsRequestMethod,
    ListToolsRequest, ListToolsRequestMethod, PingRequest, PingRequestMethod,
    ReadResourceDirectoryRequest, ReadResourceDirectoryRequestMethod, ReadResourceRequest,
    ReadResourceRequestMethod, SetLevelRequestMethod, SubscribeRequestMethod,
    SubscriptionsListenRequest, SubscriptionsListenRequestMethod, UnsubscribeRequestMethod,
    UpdateTaskMethod, UpdateTaskRequest,
};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// How much of a request's params an "invalid params" answer quotes.
const QUOTED_PARAMS: usize = 200;

/// Why the params of a request rmcp did not recognise are wrong, when its method is one rmcp
/// knows (rmcp takes a known method with params of the wrong shape for a custom method).
#[expect(
    deprecated,
    reason = "logging and legacy subscriptions are deprecated in rmcp but still served"
)]
pub(super) fn params_problem(request: &ClientRequest) -> Option<String> {
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
        Some(params) => format!(
            "params {}",
            crate::text::shorten(&params.to_string(), QUOTED_PARAMS)
        ),
    };
    Some(format!(
        "invalid params for {method}: {problem} (got {quoted}); send the params the MCP schema gives for {method}"
    ))
}
