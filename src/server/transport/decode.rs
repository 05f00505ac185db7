//! Incoming lines: what each one amounts to — a message for rmcp, with the request's id swapped
//! for an internal one; an error answered here for a broken request or a batch; or nothing.

use std::borrow::Cow;
use std::collections::HashMap;

use rmcp::RoleServer;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotificationMethod, ClientNotification,
    ClientRequest, ConstString, ErrorCode, ErrorData, JsonRpcMessage, JsonRpcRequest, RequestId,
};
use rmcp::service::RxJsonRpcMessage;
use serde_json::value::RawValue;

use super::framing::{Answer, LOG_TARGET, MAX_LINE_BYTES, find, line_of, splice};
use super::ids::{IdKey, Ids, kind_of};
use super::params::params_problem;

/// What one line amounts to.
pub(super) enum Decoded {
    Message(Box<RxJsonRpcMessage<RoleServer>>),
    /// Nothing to deliver and nobody to answer.
    Skip,
    /// An error response to write back.
    Answer(Vec<u8>),
}

/// The members of a JSON object, each value as written (hashed with foldhash, seeded per
/// process: `SipHash` was a tenth of a `ping`'s cost here).
type Members<'a> = HashMap<Cow<'a, str>, &'a RawValue, foldhash::fast::RandomState>;

/// Where a message came from: the stdio transport gives rmcp ids of its own, so any id a client
/// writes is carried; over HTTP rmcp sees the client's id, which must fit it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Wire {
    Stdio,
    Http,
}

/// What `line` amounts to; `dropped` bytes of it were cut past [`MAX_LINE_BYTES`].
pub(super) fn decode(line: &[u8], dropped: usize, ids: &Ids) -> Decoded {
    decode_from(line, dropped, ids, Wire::Stdio)
}

/// [`decode`] for a message that came over `wire`.
pub(super) fn decode_from(line: &[u8], dropped: usize, ids: &Ids, wire: Wire) -> Decoded {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Decoded::Skip;
    }
    if dropped > 0 {
        let size = line.len() + dropped;
        let message = format!(
            "request of {size} bytes exceeds the {MAX_LINE_BYTES}-byte line limit; store large values with several WriteVar calls or pass them by $VAR_REF"
        );
        return answer(
            request_id_in(line).as_deref(),
            ErrorCode::INVALID_REQUEST,
            &message,
        );
    }
    if line.trim_ascii_start().starts_with(b"[") {
        return batch(line);
    }
    let members = match serde_json::from_slice::<Members>(line) {
        Ok(members) => members,
        Err(error) if error.is_data() => {
            tracing::warn!(
                target: LOG_TARGET,
                "skipped an input line that is JSON but not a JSON-RPC message",
            );
            return Decoded::Skip;
        }
        Err(error) => {
            return answer(
                request_id_in(line).as_deref(),
                ErrorCode::PARSE_ERROR,
                &format!("parse error: {error}"),
            );
        }
    };
    if !members.contains_key("method") {
        return others(line, ids);
    }
    match members.get("id") {
        Some(id) => request(line, &members, id, ids, wire),
        None => notification(line, &members, ids),
    }
}

/// A request: checked, given an internal id, and delivered; or answered here.
fn request(line: &[u8], members: &Members, id: &RawValue, ids: &Ids, wire: Wire) -> Decoded {
    let Some(key) = IdKey::of(id) else {
        let message = format!(
            "invalid request: the id must be a number or a string, not {}",
            kind_of(id)
        );
        return answer(Some(RawValue::NULL), ErrorCode::INVALID_REQUEST, &message);
    };
    if wire == Wire::Http && !key.fits_rmcp() {
        let message = format!(
            "invalid request: over HTTP an id must be a string or an integer of 64 bits, not {}",
            id.get()
        );
        return answer(Some(RawValue::NULL), ErrorCode::INVALID_REQUEST, &message);
    }
    if ids.in_flight(&key) {
        let message = format!(
            "request id {} is already in flight: a request with this id is still being answered; give each request in flight an id of its own",
            id.get()
        );
        return answer(Some(id), ErrorCode::INVALID_REQUEST, &message);
    }
    let parsed = if let Some(call) = tool_call(members) {
        Ok(JsonRpcMessage::Request(JsonRpcRequest::new(
            RequestId::Number(0),
            call,
        )))
    } else if key.fits_rmcp() {
        serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(line)
    } else {
        // The id is replaced after parsing; rmcp only needs one it can hold meanwhile.
        serde_json::from_slice(&splice(line, id, b"0"))
    };
    match parsed {
        Ok(JsonRpcMessage::Request(mut request)) => {
            if let Some(problem) = params_problem(&request.request) {
                return answer(Some(id), ErrorCode::INVALID_PARAMS, &problem);
            }
            request.id = ids.register(key, id.to_owned());
            Decoded::Message(Box::new(JsonRpcMessage::Request(request)))
        }
        Ok(message) => Decoded::Message(Box::new(message)),
        Err(error) if error.is_data() => answer(
            Some(id),
            ErrorCode::INVALID_REQUEST,
            &format!("invalid request: {error}"),
        ),
        Err(error) => answer(
            Some(id),
            ErrorCode::PARSE_ERROR,
            &format!("parse error: {error}"),
        ),
    }
}

/// A notification; a cancellation names the request by the internal id.
fn notification(line: &[u8], members: &Members, ids: &Ids) -> Decoded {
    // Compared decoded: `"notifications/cancell\u0065d"` is the same method to rmcp.
    let cancelled = members.get("method").is_some_and(|method| {
        serde_json::from_str::<Cow<str>>(method.get())
            .is_ok_and(|method| method == CancelledNotificationMethod::VALUE)
    });
    let request_id = members
        .get("params")
        .filter(|_| cancelled)
        .and_then(|params| serde_json::from_str::<Members>(params.get()).ok())
        .and_then(|params| params.get("requestId").copied());
    let Some(request_id) = request_id else {
        return match serde_json::from_slice(line) {
            Ok(message) => Decoded::Message(Box::new(message)),
            Err(error) => {
                tracing::warn!(
                    target: LOG_TARGET,
                    %error,
                    "skipped a notification that does not parse",
                );
                Decoded::Skip
            }
        };
    };
    let Some(internal) = IdKey::of(request_id).and_then(|key| ids.cancelled(&key)) else {
        tracing::debug!(
            target: LOG_TARGET,
            id = request_id.get(),
            "ignored the cancellation of a request not in flight"
        );
        return Decoded::Skip;
    };
    match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(&splice(line, request_id, b"0")) {
        Ok(JsonRpcMessage::Notification(mut notification)) => {
            if let ClientNotification::CancelledNotification(cancellation) =
                &mut notification.notification
            {
                cancellation.params.request_id = Some(internal);
            }
            Decoded::Message(Box::new(JsonRpcMessage::Notification(notification)))
        }
        Ok(message) => Decoded::Message(Box::new(message)),
        Err(error) => {
            tracing::warn!(
                target: LOG_TARGET,
                %error,
                "skipped a cancellation that does not parse",
            );
            Decoded::Skip
        }
    }
}

/// A line without a method: the client's answer to something the server asked, or junk.
fn others(line: &[u8], ids: &Ids) -> Decoded {
    match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(line) {
        Ok(message) => {
            if matches!(
                message,
                JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_)
            ) {
                ids.replied();
            }
            Decoded::Message(Box::new(message))
        }
        Err(error) => {
            tracing::warn!(
                target: LOG_TARGET,
                %error,
                "skipped an input line that is neither a request nor an answer",
            );
            Decoded::Skip
        }
    }
}

/// A batch: every request in it answered with an error, in one array.
fn batch(line: &[u8]) -> Decoded {
    let elements = match serde_json::from_slice::<Vec<&RawValue>>(line) {
        Ok(elements) => elements,
        Err(error) => {
            return answer(
                request_id_in(line).as_deref(),
                ErrorCode::PARSE_ERROR,
                &format!("parse error: {error}"),
            );
        }
    };
    let requests: Vec<&RawValue> = elements
        .iter()
        .filter_map(|element| serde_json::from_str::<Members>(element.get()).ok())
        .filter(|members| members.contains_key("method"))
        .filter_map(|members| members.get("id").copied())
        .map(|id| {
            if IdKey::of(id).is_some() {
                id
            } else {
                RawValue::NULL
            }
        })
        .collect();
    if requests.is_empty() {
        return answer(
            Some(RawValue::NULL),
            ErrorCode::INVALID_REQUEST,
            "invalid request: JSON-RPC batches are not supported (MCP removed them in 2025-06-18); send each message on a line of its own",
        );
    }
    let message = format!(
        "invalid request: JSON-RPC batches are not supported (MCP removed them in 2025-06-18); send the {} of this batch one line each",
        match requests.len() {
            1 => "request".to_owned(),
            count => format!("{count} requests"),
        }
    );
    let error = ErrorData::new(ErrorCode::INVALID_REQUEST, message, None);
    let answers: Vec<Answer<'_, ()>> = requests
        .into_iter()
        .map(|id| Answer {
            jsonrpc: "2.0",
            id,
            result: None,
            error: Some(&error),
        })
        .collect();
    tracing::warn!(target: LOG_TARGET, requests = answers.len(), "answered a batch with errors");
    match line_of(&answers) {
        Ok(bytes) => Decoded::Answer(bytes),
        Err(error) => {
            tracing::error!(target: LOG_TARGET, %error, "cannot encode the answer to a batch");
            Decoded::Skip
        }
    }
}

fn answer(id: Option<&RawValue>, code: ErrorCode, message: &str) -> Decoded {
    let Some(id) = id else {
        tracing::warn!(
            target: LOG_TARGET,
            message,
            "skipped an input line that names no request id",
        );
        return Decoded::Skip;
    };
    tracing::warn!(target: LOG_TARGET, id = id.get(), message, "answered a broken request");
    let error = ErrorData::new(code, message.to_owned(), None);
    let answer = Answer::<()> {
        jsonrpc: "2.0",
        id,
        result: None,
        error: Some(&error),
    };
    match line_of(&answer) {
        Ok(bytes) => Decoded::Answer(bytes),
        Err(error) => {
            tracing::error!(target: LOG_TARGET, %error, "cannot encode an error answer");
            Decoded::Skip
        }
    }
}

/// The id of a request that does not parse, when its text shows `"id": <number or string>` and
/// a `"method"` before any `"params"` (so an `id` inside the arguments is never taken for it).
/// A `tools/call`, the request nearly every line is, read straight into its type. rmcp's
/// untagged `ClientRequest` tries its request types in turn (13 before `tools/call`), buffering
/// the message and building an error text for each that does not fit: about 20,000
/// instructions of every call. What this does not read (escapes in the method, another version,
/// params of another shape) takes the general path, whose answers stay as they were. The
/// `_meta` of the params goes where rmcp puts it, into the request's extensions.
fn tool_call(members: &Members) -> Option<ClientRequest> {
    if members.get("method")?.get() != "\"tools/call\""
        || members.get("jsonrpc")?.get() != "\"2.0\""
    {
        return None;
    }
    let mut params: CallToolRequestParams =
        serde_json::from_str(members.get("params")?.get()).ok()?;
    let meta = params.meta.take();
    let mut call = CallToolRequest::new(params);
    if let Some(meta) = meta {
        call.extensions.insert(meta);
    }
    Some(ClientRequest::CallToolRequest(call))
}

fn request_id_in(line: &[u8]) -> Option<Box<RawValue>> {
    let head = match find(line, b"\"params\"") {
        Some(end) => &line[..end],
        None => line,
    };
    find(head, b"\"method\"")?;
    let mut rest = head;
    while let Some(start) = find(rest, b"\"id\"") {
        rest = &rest[start + 4..];
        let after_colon = rest.trim_ascii_start().strip_prefix(b":")?;
        let mut values =
            serde_json::Deserializer::from_slice(after_colon).into_iter::<Box<RawValue>>();
        if let Some(Ok(id)) = values.next()
            && IdKey::of(&id).is_some()
        {
            return Some(id);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::{Value, json};

    fn id_text(id: Option<Box<RawValue>>) -> Option<String> {
        id.map(|id| id.get().to_owned())
    }

    #[test]
    fn finds_the_request_id_before_the_params_only() {
        let line = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"id":9,"x":[[[["#;
        assert_eq!(id_text(request_id_in(line)), Some("7".to_owned()));
        let text_id = br#"{"method":"x","id" : "abc","params":{"#;
        assert_eq!(id_text(request_id_in(text_id)), Some("\"abc\"".to_owned()));
        let inner_only = br#"{"method":"x","params":{"id":9}"#;
        assert_eq!(id_text(request_id_in(inner_only)), None);
        let no_method = br#"{"id":3,"result":{"#;
        assert_eq!(id_text(request_id_in(no_method)), None);
        let huge = br#"{"method":"x","id":123456789012345678901234567890,"params":{"#;
        assert_eq!(
            id_text(request_id_in(huge)),
            Some("123456789012345678901234567890".to_owned())
        );
    }

    fn answered(decoded: Decoded) -> Value {
        let Decoded::Answer(bytes) = decoded else {
            panic!("expected an answer")
        };
        serde_json::from_slice(&bytes).unwrap()
    }

    #[test]
    fn broken_requests_with_an_id_are_answered_and_the_rest_skipped() {
        let ids = Ids::default();
        let response = answered(decode(
            b"{\"id\":1,\"method\":\"x\",\"params\":{\"a\":\"\xff\"}}\n",
            0,
            &ids,
        ));
        assert_eq!(response["id"], json!(1));
        assert_eq!(response["error"]["code"], json!(-32700));
        assert!(matches!(
            decode(b"not json at all\n", 0, &ids),
            Decoded::Skip
        ));
        assert!(matches!(decode(b"\r\n", 0, &ids), Decoded::Skip));
        assert!(matches!(decode(b"5\n", 0, &ids), Decoded::Skip));
        let response = answered(decode(br#"{"id":2,"method":"x","params":{"#, 10, &ids));
        assert_eq!(response["error"]["code"], json!(-32600));
    }

    #[test]
    fn wrong_params_of_every_known_method_are_invalid_params_and_unknown_methods_pass() {
        let ids = Ids::default();
        for method in [
            "tools/call",
            "resources/read",
            "prompts/get",
            "completion/complete",
        ] {
            let line = format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{{"name":[1],"uri":[1],"ref":[1]}}}}"#
            );
            let response = answered(decode(line.as_bytes(), 0, &ids));
            assert_eq!(
                response["error"]["code"],
                json!(-32602),
                "{method}: {response}"
            );
        }
        for line in [
            r#"{"jsonrpc":"2.0","id":2,"method":"ping","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":4,"method":"no/such/method","params":{"x":[1]}}"#,
        ] {
            assert!(
                matches!(decode(line.as_bytes(), 0, &ids), Decoded::Message(_)),
                "{line}"
            );
        }
    }

    #[test]
    fn a_tool_call_read_straight_is_what_rmcp_reads() {
        let lines = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ReadVar","arguments":{"name":"doc"}}}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"X","_meta":{"progressToken":"p1","io.example/x":[1]}}}"#,
            r#"{"id":3,"params":{"requestState":"s","inputResponses":{},"name":"Y"},"method":"tools/call","jsonrpc":"2.0"}"#,
        ];
        for line in lines {
            let members: Members = serde_json::from_str(line).unwrap();
            let fast = tool_call(&members).unwrap();
            let Ok(JsonRpcMessage::Request(general)) =
                serde_json::from_str::<RxJsonRpcMessage<RoleServer>>(line)
            else {
                panic!("rmcp does not read {line} as a request");
            };
            assert_eq!(
                serde_json::to_value(&fast).unwrap(),
                serde_json::to_value(&general.request).unwrap(),
                "{line}"
            );
            // The meta is where rmcp's handlers look for it (a progress token, the protocol
            // version of a sessionless request), not left in the params.
            let (ClientRequest::CallToolRequest(fast), ClientRequest::CallToolRequest(general)) =
                (fast, general.request)
            else {
                panic!("not both tool calls: {line}");
            };
            assert_eq!(fast.params, general.params, "{line}");
            assert_eq!(
                fast.extensions.get::<rmcp::model::RequestMetaObject>(),
                general.extensions.get::<rmcp::model::RequestMetaObject>(),
                "{line}"
            );
        }
        for other in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"X"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
        ] {
            let members: Members = serde_json::from_str(other).unwrap();
            assert!(tool_call(&members).is_none(), "{other}");
        }
    }
}
