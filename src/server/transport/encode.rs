//! Outgoing messages: an answer goes out with its request's id as the client wrote it, and holds
//! the request's place in the in-flight count until it is written.

use std::io;
use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::JsonRpcMessage;
use rmcp::service::TxJsonRpcMessage;

use super::framing::{Answer, LOG_TARGET, line_of};
use super::ids::{Ids, Slot};

/// A message to write, as `send` prepared it.
pub(super) enum Outgoing {
    Line(Vec<u8>),
    /// An answer to a client request, holding the request's place in the count until written.
    Answer(Vec<u8>, Option<Slot>),
    /// An answer to a request no longer in flight (cancelled): the client ignores it anyway.
    Nothing,
}

/// Prepares `item` for writing; the id of an answer is restored now (see `send`).
pub(super) fn encode(item: &TxJsonRpcMessage<RoleServer>, ids: &Arc<Ids>) -> io::Result<Outgoing> {
    let (id, result, error) = match item {
        JsonRpcMessage::Response(response) => (&response.id, Some(&response.result), None),
        JsonRpcMessage::Error(error) => match &error.id {
            Some(id) => (id, None, Some(&error.error)),
            None => return line_of(item).map(Outgoing::Line),
        },
        JsonRpcMessage::Request(_) => {
            ids.asked();
            return line_of(item).map(Outgoing::Line);
        }
        JsonRpcMessage::Notification(_) => {
            return line_of(item).map(|line| Outgoing::Line(ids.restore_subscription_id(line)));
        }
    };
    let Some((written, slot)) = ids.answered(id) else {
        tracing::debug!(
            target: LOG_TARGET,
            %id,
            "dropped the answer to a request no longer in flight",
        );
        return Ok(Outgoing::Nothing);
    };
    let answer = Answer {
        jsonrpc: "2.0",
        id: &written,
        result,
        error,
    };
    line_of(&answer).map(|bytes| Outgoing::Answer(bytes, slot))
}
