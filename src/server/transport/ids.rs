//! Request ids and the in-flight bound. rmcp never sees the client's ids: each request gets an
//! internal number while it is in flight, and its answer goes out with the id exactly as the
//! client wrote it. The same table counts the requests being worked on or answered, so that a
//! session holds at most [`MAX_IN_FLIGHT`] of them (see `transport.rs`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rmcp::RoleServer;
use rmcp::model::{ClientRequest, JsonRpcMessage, RequestId};
use rmcp::service::RxJsonRpcMessage;
use serde_json::value::RawValue;
use tokio::sync::Notify;

use super::framing::find;

/// The most requests of one session worked on or answered at once; input waits beyond it.
pub const MAX_IN_FLIGHT: usize = 64;

/// A request id as the client wrote it, for telling whether two requests share one: numbers
/// by their text (`1` and `1.0` are two ids, as each is echoed as written), strings by value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) enum IdKey {
    Number(String),
    Text(String),
}

impl IdKey {
    /// The key of a valid id (a number or a string); `None` for null, booleans, objects, arrays.
    pub(super) fn of(id: &RawValue) -> Option<Self> {
        let text = id.get();
        match text.as_bytes().first()? {
            b'"' => serde_json::from_str(text).ok().map(Self::Text),
            b'-' | b'0'..=b'9' => Some(Self::Number(text.to_owned())),
            _ => None,
        }
    }

    /// Whether rmcp can hold this id (an `i64` or a string) to parse the rest of the request.
    pub(super) fn fits_rmcp(&self) -> bool {
        match self {
            Self::Number(text) => text.parse::<i64>().is_ok(),
            Self::Text(_) => true,
        }
    }
}

/// What an invalid id is, for the error message.
pub(super) fn kind_of(id: &RawValue) -> &'static str {
    match id.get().as_bytes().first() {
        Some(b'n') => "null",
        Some(b't' | b'f') => "a boolean",
        Some(b'{') => "an object",
        Some(b'[') => "an array",
        _ => "not a JSON value",
    }
}

/// The client's requests in flight, shared by `receive` (which registers them) and the futures
/// `send` returns (which answer them).
#[derive(Default)]
pub(super) struct Ids {
    state: Mutex<IdState>,
    /// Signalled whenever room for another request may have appeared.
    released: Notify,
}

#[derive(Default)]
struct IdState {
    /// The last internal id given.
    last: i64,
    /// Requests not answered yet, by internal id. (foldhash, seeded per process: `SipHash` was a
    /// few hundred instructions of every request.)
    in_flight: HashMap<i64, InFlight, foldhash::fast::RandomState>,
    /// The same requests by the id the client gave them.
    by_key: HashMap<IdKey, i64, foldhash::fast::RandomState>,
    /// Requests that count against [`MAX_IN_FLIGHT`]: in flight or with an answer being written.
    busy: usize,
    /// Requests the server sent the client that are not answered yet: their handlers wait for
    /// the client, so as many requests more may be read.
    asked: usize,
}

struct InFlight {
    /// The id exactly as the client wrote it.
    written: Box<RawValue>,
    key: IdKey,
    /// Whether it counts against [`MAX_IN_FLIGHT`]: from when it is delivered to rmcp, except
    /// long-lived subscriptions.
    counted: bool,
}

/// A request counted against [`MAX_IN_FLIGHT`] until its answer is written (or abandoned).
pub(super) struct Slot(Arc<Ids>);

impl Drop for Slot {
    fn drop(&mut self) {
        let mut state = self.0.lock();
        state.busy = state.busy.saturating_sub(1);
        drop(state);
        self.0.released.notify_one();
    }
}

impl Ids {
    fn lock(&self) -> MutexGuard<'_, IdState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits until fewer than [`MAX_IN_FLIGHT`] requests are busy (not counting those waiting
    /// for the client). Cancel-safe.
    pub(super) async fn room(&self) {
        loop {
            let released = self.released.notified();
            if self.has_room() {
                return;
            }
            released.await;
        }
    }

    pub(super) fn has_room(&self) -> bool {
        let state = self.lock();
        state.busy < MAX_IN_FLIGHT.saturating_add(state.asked)
    }

    pub(super) fn in_flight(&self, key: &IdKey) -> bool {
        self.lock().by_key.contains_key(key)
    }

    /// Registers a request read and gives the id rmcp knows it by; it counts once started.
    pub(super) fn register(&self, key: IdKey, written: Box<RawValue>) -> RequestId {
        let mut state = self.lock();
        state.last = state.last.wrapping_add(1);
        let internal = state.last;
        state.by_key.insert(key.clone(), internal);
        state.in_flight.insert(
            internal,
            InFlight {
                written,
                key,
                counted: false,
            },
        );
        RequestId::Number(internal)
    }

    /// A registered request about to be delivered: it counts from now on, unless it is a
    /// long-lived subscription. `None` when it was cancelled before it started.
    pub(super) fn start(
        &self,
        message: RxJsonRpcMessage<RoleServer>,
    ) -> Option<RxJsonRpcMessage<RoleServer>> {
        let JsonRpcMessage::Request(request) = &message else {
            return Some(message);
        };
        let RequestId::Number(internal) = &request.id else {
            return Some(message);
        };
        let counts = !matches!(
            request.request,
            ClientRequest::SubscriptionsListenRequest(_)
        );
        let mut state = self.lock();
        let registered = state.in_flight.get_mut(internal)?;
        if counts && !registered.counted {
            registered.counted = true;
            state.busy += 1;
        }
        drop(state);
        Some(message)
    }

    /// Takes the request an answer is for: its id as the client wrote it, and its place in the
    /// count while the answer is written. `None` when the request is not in flight (cancelled).
    pub(super) fn answered(
        self: &Arc<Self>,
        id: &RequestId,
    ) -> Option<(Box<RawValue>, Option<Slot>)> {
        let RequestId::Number(internal) = id else {
            return None;
        };
        let mut state = self.lock();
        let request = state.in_flight.remove(internal)?;
        state.by_key.remove(&request.key);
        // `busy` already counts it; the slot gives it back once the answer is out.
        let slot = request.counted.then(|| Slot(Arc::clone(self)));
        Some((request.written, slot))
    }

    /// Forgets a request the client cancelled (rmcp sends no answer for it) and gives the id
    /// rmcp knows it by.
    pub(super) fn cancelled(&self, key: &IdKey) -> Option<RequestId> {
        let mut state = self.lock();
        let internal = state.by_key.remove(key)?;
        if state
            .in_flight
            .remove(&internal)
            .is_some_and(|request| request.counted)
        {
            state.busy = state.busy.saturating_sub(1);
        }
        drop(state);
        self.released.notify_one();
        Some(RequestId::Number(internal))
    }

    /// A notification of a `subscriptions/listen` stream names its subscription by the listen
    /// request's id: rmcp writes the internal one, the client must see the id it wrote.
    pub(super) fn restore_subscription_id(&self, line: Vec<u8>) -> Vec<u8> {
        const KEY: &[u8] = b"\"io.modelcontextprotocol/subscriptionId\":";
        let Some(start) = find(&line, KEY).map(|at| at + KEY.len()) else {
            return line;
        };
        let digits = line[start..]
            .iter()
            .take_while(|byte| byte.is_ascii_digit())
            .count();
        let end = start + digits;
        let Some(internal) = std::str::from_utf8(&line[start..end])
            .ok()
            .and_then(|text| text.parse::<i64>().ok())
        else {
            return line;
        };
        let state = self.lock();
        let Some(request) = state.in_flight.get(&internal) else {
            return line;
        };
        let mut restored = Vec::with_capacity(line.len() + request.written.get().len());
        restored.extend_from_slice(&line[..start]);
        restored.extend_from_slice(request.written.get().as_bytes());
        restored.extend_from_slice(&line[end..]);
        restored
    }

    /// The server asked the client something.
    pub(super) fn asked(&self) {
        self.lock().asked += 1;
        self.released.notify_one();
    }

    /// The client answered something the server asked.
    pub(super) fn replied(&self) {
        let mut state = self.lock();
        state.asked = state.asked.saturating_sub(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::transport::decode::{Decoded, decode};
    use crate::server::transport::encode::{Outgoing, encode};
    use pretty_assertions::assert_eq;
    use proptest::prelude::*;
    use rmcp::model::{ClientNotification, ServerJsonRpcMessage, ServerResult};
    use serde_json::{Value, json};

    /// Decodes a request, answers it as the server would, and returns the line written.
    fn round_trip(ids: &Arc<Ids>, line: &str) -> String {
        let Decoded::Message(message) = decode(line.as_bytes(), 0, ids) else {
            panic!("not delivered: {line}")
        };
        let (_, id) = message.into_request().expect("a request");
        let response = ServerJsonRpcMessage::response(ServerResult::empty(()), id);
        let Ok(Outgoing::Answer(bytes, _)) = encode(&response, ids) else {
            panic!("no answer for {line}")
        };
        String::from_utf8(bytes).unwrap()
    }

    proptest! {
        #[test]
        fn every_number_id_is_echoed_exactly(
            sign in "-?",
            integer in "[1-9][0-9]{0,80}|0",
            fraction in "(\\.[0-9]{1,20})?",
            exponent in "([eE][+-]?[0-9]{1,3})?",
        ) {
            let id = format!("{sign}{integer}{fraction}{exponent}");
            let ids = Arc::new(Ids::default());
            let line = round_trip(&ids, &format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#));
            prop_assert_eq!(line, format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{}}}}\n"));
            prop_assert_eq!(ids.lock().in_flight.len(), 0);
        }

        #[test]
        fn every_string_id_is_echoed_exactly(text in any::<String>(), escaped in any::<bool>()) {
            let id = if escaped {
                text.chars().fold(String::new(), |mut escaped, character| {
                    use std::fmt::Write;
                    write!(escaped, "\\u{:04x}", u32::from(character).min(0xFFFF)).unwrap();
                    escaped
                })
            } else {
                serde_json::to_string(&text).unwrap().trim_matches('"').to_owned()
            };
            let id = format!("\"{id}\"");
            prop_assume!(serde_json::from_str::<String>(&id).is_ok());
            let ids = Arc::new(Ids::default());
            let line = round_trip(&ids, &format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#));
            prop_assert_eq!(line, format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{}}}}\n"));
        }
    }

    #[test]
    fn an_id_in_flight_is_refused_until_answered_and_then_free() {
        let ids = Arc::new(Ids::default());
        let ping = br#"{"jsonrpc":"2.0","id":"a","method":"ping"}"#;
        let Decoded::Message(first) = decode(ping, 0, &ids) else {
            panic!("the first is delivered")
        };
        // The same id written another way is the same id.
        let Decoded::Answer(again) = decode(
            br#"{"jsonrpc":"2.0","id":"\u0061","method":"ping"}"#,
            0,
            &ids,
        ) else {
            panic!("the second is answered")
        };
        let again: Value = serde_json::from_slice(&again).unwrap();
        assert_eq!(again["id"], json!("a"));
        assert_eq!(again["error"]["code"], json!(-32600));
        // A number is never the same id as a string.
        assert!(matches!(
            decode(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#, 0, &ids),
            Decoded::Message(_)
        ));
        let (_, id) = first.into_request().unwrap();
        let response = ServerJsonRpcMessage::response(ServerResult::empty(()), id);
        assert!(matches!(encode(&response, &ids), Ok(Outgoing::Answer(..))));
        assert!(matches!(decode(ping, 0, &ids), Decoded::Message(_)));
    }

    #[test]
    fn a_cancellation_names_the_internal_id_and_frees_the_client_id() {
        let ids = Arc::new(Ids::default());
        let huge = "9".repeat(40);
        let request = format!(r#"{{"jsonrpc":"2.0","id":{huge},"method":"ping"}}"#);
        let Decoded::Message(message) = decode(request.as_bytes(), 0, &ids) else {
            panic!("delivered")
        };
        let (_, internal) = message.into_request().unwrap();
        let cancel = format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{huge}}}}}"#
        );
        let Decoded::Message(message) = decode(cancel.as_bytes(), 0, &ids) else {
            panic!("delivered")
        };
        let Some(ClientNotification::CancelledNotification(cancellation)) =
            message.into_notification()
        else {
            panic!("a cancellation")
        };
        assert_eq!(cancellation.params.request_id, Some(internal.clone()));
        assert_eq!(ids.lock().busy, 0);
        // rmcp sends no answer for it; if one comes anyway it is not written.
        let late = ServerJsonRpcMessage::response(ServerResult::empty(()), internal);
        assert!(matches!(encode(&late, &ids), Ok(Outgoing::Nothing)));
        // Cancelling what is not in flight reaches nothing, however the method is spelled: a
        // client id passed through untranslated could name another request's internal id.
        assert!(matches!(decode(cancel.as_bytes(), 0, &ids), Decoded::Skip));
        let Decoded::Message(_) = decode(br#"{"jsonrpc":"2.0","id":"x","method":"ping"}"#, 0, &ids)
        else {
            panic!("delivered")
        };
        let escaped =
            br#"{"jsonrpc":"2.0","method":"notifications/cancell\u0065d","params":{"requestId":2}}"#;
        assert!(matches!(decode(escaped, 0, &ids), Decoded::Skip));
    }
}
