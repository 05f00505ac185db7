//! Asking the user for approval over MCP: an elicitation form on sessions that began with
//! `initialize`, an MRTR `input_required` round trip on 2026-07-28 sessions.

use std::collections::HashMap;

use futures::future::BoxFuture;
use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema,
    InputRequest, InputRequests, InputResponses, ProtocolVersion,
};
use rmcp::service::RequestContext;
use rmcp::{Peer, RoleServer};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::tools::{Answer, ApprovalQuestion, Asker, Stage};

/// The form the user fills in.
#[derive(Debug, Deserialize, JsonSchema)]
struct ApprovalForm {
    /// Allow it? Leave unticked to reject.
    approve: bool,
    /// From now on: also allow, without asking again, the later calls the question says this
    /// approval covers. Leave unticked to allow just this call.
    #[serde(default)]
    remember: bool,
    /// Optional: why — passed on to the model, most useful when you reject.
    #[serde(default)]
    reason: Option<String>,
}

/// Whether this request belongs to a 2026-07-28 session, where the server may not send
/// requests of its own and asks through `input_required` instead.
pub(super) fn is_inline_session(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|version| version.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

/// Asks through `elicitation/create` and waits.
pub(super) struct Elicitor {
    peer: Peer<RoleServer>,
}

impl Elicitor {
    pub(super) fn new(peer: Peer<RoleServer>) -> Self {
        Self { peer }
    }
}

impl Asker for Elicitor {
    fn ask<'a>(&'a self, question: &'a ApprovalQuestion) -> BoxFuture<'a, Option<Answer>> {
        Box::pin(async move {
            let params = form_request(question)?;
            match self.peer.create_elicitation(params).await {
                Ok(result) => Some(answer_from(&result)),
                Err(error) => {
                    tracing::warn!(%error, tool = %question.tool, "elicitation failed; the fallback decides");
                    None
                }
            }
        })
    }
}

fn form_request(question: &ApprovalQuestion) -> Option<ElicitRequestParams> {
    let schema = ElicitationSchema::from_type::<ApprovalForm>()
        .map_err(|error| tracing::error!(%error, "approval form schema"))
        .ok()?;
    Some(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: question.message.clone(),
        requested_schema: schema,
    })
}

/// The `inputRequests` of an MRTR answer for one question.
pub(super) fn input_requests(question: &ApprovalQuestion) -> Option<InputRequests> {
    let params = form_request(question)?;
    let mut requests = InputRequests::new();
    requests.insert(
        question.stage.input_key().to_owned(),
        InputRequest::Elicitation(ElicitRequest::new(params)),
    );
    Some(requests)
}

/// The answers a retried MRTR request carries, by stage.
pub(super) fn answers_from_responses(responses: Option<&InputResponses>) -> HashMap<Stage, Answer> {
    let mut answers = HashMap::new();
    let Some(responses) = responses else {
        return answers;
    };
    for stage in [Stage::Execution, Stage::Result] {
        let Some(response) = responses.get(stage.input_key()) else {
            continue;
        };
        match serde_json::from_value::<ElicitResult>(response.clone()) {
            Ok(result) => {
                answers.insert(stage, answer_from(&result));
            }
            Err(error) => {
                tracing::warn!(%error, key = stage.input_key(), "unreadable input response");
            }
        }
    }
    answers
}

fn answer_from(result: &ElicitResult) -> Answer {
    match result.action {
        ElicitationAction::Accept => {
            let form = result
                .content
                .clone()
                .and_then(|content| serde_json::from_value::<ApprovalForm>(content).ok());
            match form {
                Some(ApprovalForm {
                    approve: true,
                    remember,
                    ..
                }) => Answer::Approved { remember },
                Some(ApprovalForm {
                    approve: false,
                    reason,
                    ..
                }) => Answer::Rejected {
                    reason: reason.filter(|text| !text.trim().is_empty()),
                },
                None => Answer::Rejected {
                    reason: Some("the approval form came back empty".to_owned()),
                },
            }
        }
        ElicitationAction::Decline => Answer::Rejected {
            reason: Some("the user declined".to_owned()),
        },
        _ => Answer::Rejected {
            reason: Some("the user cancelled".to_owned()),
        },
    }
}
