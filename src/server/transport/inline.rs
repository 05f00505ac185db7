//! Requests answered where they are read. rmcp's serve loop spends more on a request than most
//! tools do: a task to handle it and another to send its answer, two cancellation tokens, the
//! request and its context moved through several futures, the answer handed back over a channel
//! (about half of a `ping`'s instructions, BENCHMARKS). For the calls a session makes all the
//! time (`tools/call`, `ping`) the transport calls the service itself: the handler is polled once
//! where the line was read and, when it is done at once (a variable read, a search), its answer
//! is written at once, before the next line is read. A handler that waits (for the client's
//! answer to a question, a progress notification, a database round trip) goes on in a task of
//! its own and answers from there; its notifications reach the client first, since rmcp's
//! `Peer` resolves a notification only once it is written.
//!
//! Only sessions that negotiated an `initialize`-era protocol are answered here, and only
//! requests whose `_meta` asks nothing of the 2026-07-28 lifecycle (a progress token at most):
//! for those, rmcp's dispatch would call the handler's method and nothing else, and its serve
//! loop's scoping of a request's protocol version (for questions sent to the client) changes
//! nothing. Everything else (initialize, discover, listen streams, the client's answers and
//! notifications) goes through rmcp as before.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;
use rmcp::model::{
    CallToolResponse, ClientCapabilities, ClientRequest, ErrorData, GetExtensions, GetMeta,
    JsonRpcMessage, JsonRpcRequest, ProtocolVersion, RequestId, ServerResult,
};
use rmcp::service::{RequestContext, RxJsonRpcMessage, Service, TxJsonRpcMessage};
use rmcp::{Peer, RoleServer, ServerHandler};
use tokio_util::sync::CancellationToken;

/// What answers a request inline: the session's peer and the service rmcp serves.
pub struct Inline {
    peer: Peer<RoleServer>,
    handler: Handler,
}

type Handler = Box<
    dyn Fn(ClientRequest, RequestContext<RoleServer>) -> BoxFuture<'static, Handled> + Send + Sync,
>;

type Handled = Result<ServerResult, ErrorData>;

impl Inline {
    /// Requests of the session `peer` belongs to answered by `handler` (the one rmcp serves),
    /// when the session negotiated a protocol before 2026-07-28 with `initialize`; `None`
    /// otherwise, and every request goes through rmcp's loop.
    ///
    /// The handler's method is called directly. For such a session and such a request (see
    /// `Inline::takes`) rmcp's dispatch decides nothing more than `for_legacy_peer` does: no
    /// protocol version is named in the request to check, and the lifecycle is the
    /// `initialize` one (so `ping` is served). That dispatch moves the whole request, context
    /// and result through its futures (about 2,000 instructions of copying a call).
    pub fn for_session<H: ServerHandler>(peer: &Peer<RoleServer>, handler: Arc<H>) -> Option<Self> {
        let info = peer.peer_info()?;
        if info.protocol_version >= ProtocolVersion::V_2026_07_28 {
            return None;
        }
        let handler: Handler = Box::new(move |request, context| {
            let handler = Arc::clone(&handler);
            match request {
                ClientRequest::CallToolRequest(request) => Box::pin(async move {
                    let peer = context.peer.clone();
                    let response = handler.call_tool(request.params, context).await?;
                    // rmcp's guard: a task only for a client that declared tasks.
                    if matches!(response, CallToolResponse::Task(_))
                        && !peer
                            .peer_info()
                            .is_some_and(|info| info.capabilities.supports_tasks())
                    {
                        return Err(ErrorData::missing_required_client_capability(
                            ClientCapabilities::builder().enable_tasks().build(),
                        ));
                    }
                    for_legacy_peer(ServerResult::from(response))
                }),
                ClientRequest::PingRequest(_) => Box::pin(async move {
                    handler.ping(context).await?;
                    for_legacy_peer(ServerResult::empty(()))
                }),
                request => Box::pin(async move { handler.handle_request(request, context).await }),
            }
        });
        Some(Self {
            peer: peer.clone(),
            handler,
        })
    }

    /// Whether `message` is a request answered inline: a `tools/call` or a `ping` whose
    /// `_meta` holds a progress token at most.
    pub(super) fn takes(message: &RxJsonRpcMessage<RoleServer>) -> bool {
        let JsonRpcMessage::Request(JsonRpcRequest { request, .. }) = message else {
            return false;
        };
        matches!(
            request,
            ClientRequest::CallToolRequest(_) | ClientRequest::PingRequest(_)
        ) && request
            .get_meta()
            .0
            .0
            .keys()
            .all(|key| key == "progressToken")
    }

    /// The request (one it [takes](Self::takes)) as a handler to poll, with the context rmcp's
    /// loop would give it.
    pub(super) fn handling(
        &self,
        request: JsonRpcRequest<ClientRequest>,
        session: &CancellationToken,
    ) -> Handling {
        let JsonRpcRequest {
            id, mut request, ..
        } = request;
        let mut context = RequestContext::new(id.clone(), self.peer.clone());
        context.ct = session.child_token();
        std::mem::swap(&mut context.meta, request.get_meta_mut());
        std::mem::swap(&mut context.extensions, request.extensions_mut());
        let cancellation = context.ct.clone();
        Handling {
            id,
            cancellation,
            future: (self.handler)(request, context),
        }
    }
}

/// A request being answered inline.
pub(super) struct Handling {
    pub(super) id: RequestId,
    /// Cancelled when the client cancels the request or the session ends.
    pub(super) cancellation: CancellationToken,
    pub(super) future: BoxFuture<'static, Handled>,
}

/// A result as rmcp's dispatch gives it to a peer on a protocol before 2026-07-28: without
/// `resultType`, and never an `InputRequiredResult`.
fn for_legacy_peer(mut result: ServerResult) -> Handled {
    if matches!(result, ServerResult::InputRequiredResult(_)) {
        return Err(ErrorData::invalid_request(
            "InputRequiredResult requires negotiated protocol version 2026-07-28 or newer",
            None,
        ));
    }
    result.strip_result_type_for_legacy_peer();
    Ok(result)
}

/// The answer to a request, as rmcp's loop would send it.
pub(super) fn answer(id: RequestId, handled: Handled) -> TxJsonRpcMessage<RoleServer> {
    match handled {
        Ok(result) => JsonRpcMessage::response(result, id),
        Err(error) => JsonRpcMessage::error(error, Some(id)),
    }
}

/// The requests answered inline that had to wait, by the id rmcp would know them by, so that
/// the client's `notifications/cancelled` reaches them.
#[derive(Default)]
pub(super) struct Waiting(Mutex<HashMap<RequestId, CancellationToken>>);

impl Waiting {
    pub(super) fn insert(&self, id: RequestId, cancellation: CancellationToken) {
        self.lock().insert(id, cancellation);
    }

    pub(super) fn remove(&self, id: &RequestId) {
        self.lock().remove(id);
    }

    /// Cancels the request with `id`, if one is waiting.
    pub(super) fn cancel(&self, id: &RequestId) {
        if let Some(cancellation) = self.lock().remove(id) {
            cancellation.cancel();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<RequestId, CancellationToken>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
