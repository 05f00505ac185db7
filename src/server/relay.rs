//! Relaying an upstream server's questions to our client while a call of one of its tools runs:
//! `elicitation/create` (a form for the user) and `sampling/createMessage` (a question for the
//! client's model), sent on as they came and answered with what the client answers. Offered
//! only on sessions that began with `initialize`, for what the client declared: 2026-07-28
//! sessions may not send server-to-client requests. Sampling is deprecated by SEP-2577 but
//! clients still offer it, hence the `expect`.
#![expect(
    deprecated,
    reason = "sampling is deprecated by SEP-2577; relayed only when the client declares it"
)]

use futures::future::BoxFuture;
use rmcp::model::{CreateMessageRequestParams, ElicitRequestParams};
use rmcp::service::RequestContext;
use rmcp::{Peer, RoleServer};
use serde_json::Value;

use super::approval::is_inline_session;
use crate::tools::{Relay, RelayError, Relayed};

/// Sends an upstream's requests to the client of one session.
pub(super) struct ClientRelay {
    peer: Peer<RoleServer>,
    elicitation: bool,
    sampling: bool,
}

impl ClientRelay {
    /// A relay for this request's session, when its client can be asked anything.
    pub(super) fn for_request(context: &RequestContext<RoleServer>) -> Option<Self> {
        let capabilities = context.client_capabilities();
        let elicitation = capabilities
            .as_ref()
            .is_some_and(|declared| declared.elicitation.is_some());
        let sampling = capabilities.is_some_and(|declared| declared.sampling.is_some());
        (!is_inline_session(context) && (elicitation || sampling)).then(|| Self {
            peer: context.peer.clone(),
            elicitation,
            sampling,
        })
    }
}

impl Relay for ClientRelay {
    fn relay(&self, request: Relayed) -> BoxFuture<'_, Result<Value, RelayError>> {
        Box::pin(async move {
            match request {
                Relayed::Elicitation(params) => {
                    if !self.elicitation {
                        return Err(unsupported("elicitation"));
                    }
                    let params: ElicitRequestParams = decode(params)?;
                    let result = self
                        .peer
                        .create_elicitation(params)
                        .await
                        .map_err(|error| failed(&error))?;
                    encode(&result)
                }
                Relayed::Sampling(params) => {
                    if !self.sampling {
                        return Err(unsupported("sampling"));
                    }
                    let params: CreateMessageRequestParams = decode(params)?;
                    let result = self
                        .peer
                        .create_message(params)
                        .await
                        .map_err(|error| failed(&error))?;
                    encode(&result)
                }
            }
        })
    }
}

fn unsupported(what: &str) -> RelayError {
    RelayError(format!(
        "the client connected to synapse-mcp does not support {what}"
    ))
}

fn failed(error: &rmcp::service::ServiceError) -> RelayError {
    RelayError(format!(
        "the client connected to synapse-mcp failed: {error}"
    ))
}

fn decode<T: serde::de::DeserializeOwned>(params: Value) -> Result<T, RelayError> {
    serde_json::from_value(params)
        .map_err(|error| RelayError(format!("the request is not valid MCP: {error}")))
}

fn encode(result: &impl serde::Serialize) -> Result<Value, RelayError> {
    serde_json::to_value(result)
        .map_err(|error| RelayError(format!("cannot write the client's answer: {error}")))
}
