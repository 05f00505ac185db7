//! What the HTTP layer authorized a request for, as the handlers and the request span read it:
//! below both the MCP handler (`server.rs`, `server/metrics.rs`) and the HTTP transport
//! (`server/http.rs`), which puts it in each request's extensions.

use crate::tools::Caller;

/// What the HTTP layer authorized a request for: the workspace it works in, as whom.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Access {
    pub(super) workspace: String,
    pub(super) caller: Caller,
}

/// The [`Access`] of an HTTP request, from the HTTP parts rmcp puts in each message's
/// extensions; `None` on stdio.
pub(super) fn of(extensions: &rmcp::model::Extensions) -> Option<&Access> {
    extensions
        .get::<axum::http::request::Parts>()?
        .extensions
        .get::<Access>()
}
