//! Asking the client's model over MCP sampling (`sampling/createMessage`), for tools that use it
//! as an optional extra (`SkillSearch {rerank: true}`). Offered only on sessions that began with
//! `initialize` and whose client declared the `sampling` capability: 2026-07-28 sessions may not
//! send server-to-client requests. Sampling is deprecated by SEP-2577, hence the `expect`.
#![expect(
    deprecated,
    reason = "sampling is deprecated by SEP-2577; used only as an optional extra when declared"
)]

use std::time::Duration;

use futures::future::BoxFuture;
use rmcp::model::{CreateMessageRequestParams, SamplingMessage};
use rmcp::service::RequestContext;
use rmcp::{Peer, RoleServer};

use super::approval::is_inline_session;
use crate::tools::{Sampled, Sampler, SamplingError, SamplingRequest};

/// How long the client's model may take: clients may show the request to the user first.
const TIMEOUT: Duration = Duration::from_mins(1);

/// Sends `sampling/createMessage` to the client of one session.
pub(super) struct ClientSampler {
    peer: Peer<RoleServer>,
}

impl ClientSampler {
    /// A sampler for this request's session, when its client can be asked.
    pub(super) fn for_request(context: &RequestContext<RoleServer>) -> Option<Self> {
        let declared = context
            .client_capabilities()
            .is_some_and(|capabilities| capabilities.sampling.is_some());
        (declared && !is_inline_session(context)).then(|| Self {
            peer: context.peer.clone(),
        })
    }
}

impl Sampler for ClientSampler {
    fn sample<'a>(
        &'a self,
        request: &'a SamplingRequest,
    ) -> BoxFuture<'a, Result<Sampled, SamplingError>> {
        Box::pin(async move {
            let params = CreateMessageRequestParams::new(
                vec![SamplingMessage::user_text(request.message.clone())],
                request.max_tokens,
            )
            .with_system_prompt(request.system.clone())
            .with_temperature(0.0);
            let asked = self.peer.create_message(params);
            let result = tokio::time::timeout(TIMEOUT, asked)
                .await
                .map_err(|_| {
                    SamplingError(format!(
                        "the client's model did not answer within {} s",
                        TIMEOUT.as_secs()
                    ))
                })?
                .map_err(|error| SamplingError(format!("the client's sampling failed: {error}")))?;
            let text: String = result
                .message
                .content
                .iter()
                .filter_map(|block| block.as_text().map(|text| text.text.as_str()))
                .collect();
            Ok(Sampled {
                text,
                model: result.model,
            })
        })
    }
}
