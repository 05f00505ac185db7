//! `serve --http ADDR` (`docs/http.md`): rmcp's Streamable HTTP service mounted in axum at
//! `/mcp` and `/mcp/{workspace}`, behind the bearer-token check, beside `/healthz` and
//! `/readyz`.
//!
//! Each request is authorized here, before rmcp sees it: its token names a principal and the
//! workspaces it may use; the workspace is the one the path names, else the token's first. The
//! decision travels to the handlers as an [`Access`] in the request's extensions, so that the
//! workspace comes from the principal and never from a session id (2026-07-28 requests have
//! none), and an initialize-era session stays with the principal and workspace that opened it.
//!
//! Shutting down (SIGTERM, ctrl-c): new requests get 503, the requests in flight (their
//! response streams included) finish, then the sessions' streams close and the process exits.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures::StreamExt as _;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::{Error, Server};
use crate::app::App;
use crate::config::HttpSettings;
use crate::tokens::Tokens;
use crate::tools::Caller;

/// How long a shutdown waits for the requests in flight.
const DRAIN_LIMIT: std::time::Duration = std::time::Duration::from_secs(30);

/// The session header of initialize-era sessions.
const SESSION_HEADER: &str = "mcp-session-id";

/// What the HTTP layer authorized a request for: the workspace it works in, as whom.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    pub workspace: String,
    pub caller: Caller,
}

/// The [`Access`] of an HTTP request, from the HTTP parts rmcp puts in each message's
/// extensions; `None` on stdio.
pub(super) fn access(extensions: &rmcp::model::Extensions) -> Option<&Access> {
    extensions
        .get::<axum::http::request::Parts>()?
        .extensions
        .get::<Access>()
}

/// What the middleware shares.
struct Gate {
    app: Arc<App>,
    /// `None`: `--no-auth` on a loopback address.
    tokens: Option<Tokens>,
    /// The workspace of requests that name none, without tokens.
    default_workspace: String,
    /// Each initialize-era session's principal and workspace: a session id presented with
    /// another token, or for another workspace, is not found.
    sessions: Mutex<HashMap<String, Access>>,
    draining: AtomicBool,
    in_flight: AtomicUsize,
    idle: Notify,
}

/// Serves `app` over Streamable HTTP until SIGTERM or ctrl-c.
pub async fn serve(app: Arc<App>, settings: &HttpSettings) -> Result<(), Error> {
    let tokens = match (&settings.tokens, settings.no_auth) {
        (Some(path), _) => {
            Some(Tokens::open(path).map_err(|error| Error::Start(error.to_string()))?)
        }
        (None, true) if settings.listen.ip().is_loopback() => None,
        (None, true) => {
            return Err(Error::Start(format!(
                "--no-auth serves without authentication, which is allowed on a loopback \
                 address only, and {} is not one; give --tokens FILE (see `synapse-mcp token \
                 add`)",
                settings.listen
            )));
        }
        (None, false) => {
            return Err(Error::Start(
                "serving HTTP needs bearer tokens: give --tokens FILE (made by `synapse-mcp \
                 token add --tokens FILE --principal NAME --workspace W`), or --no-auth on a \
                 loopback address for local development"
                    .to_owned(),
            ));
        }
    };
    let stop = CancellationToken::new();
    let gate = Arc::new(Gate {
        default_workspace: app.executor().workspace().name().to_owned(),
        app: Arc::clone(&app),
        tokens,
        sessions: Mutex::default(),
        draining: AtomicBool::new(false),
        in_flight: AtomicUsize::new(0),
        idle: Notify::new(),
    });
    let router = router(&gate, settings, stop.clone());
    let listener = tokio::net::TcpListener::bind(settings.listen)
        .await
        .map_err(|error| Error::Start(format!("cannot listen on {}: {error}", settings.listen)))?;
    let local = listener
        .local_addr()
        .map_err(|error| Error::Start(error.to_string()))?;
    tracing::info!(
        "synapse-mcp {} ready on http://{local}/mcp: workspace `{}`, {}",
        env!("CARGO_PKG_VERSION"),
        gate.default_workspace,
        if gate.tokens.is_some() {
            "bearer tokens required"
        } else {
            "no authentication (loopback)"
        }
    );
    let shutdown = drain(Arc::clone(&gate), stop);
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await
        .map_err(|error| Error::Session(error.to_string()))?;
    tracing::info!("HTTP server stopped");
    Ok(())
}

fn router(gate: &Arc<Gate>, settings: &HttpSettings, stop: CancellationToken) -> Router {
    let loopback = ["localhost", "127.0.0.1", "::1"].map(str::to_owned);
    let hosts: Vec<String> = loopback
        .into_iter()
        .chain(settings.allowed_hosts.iter().cloned())
        .collect();
    // Browsers send an Origin: only pages served from loopback may call, unless configured.
    let origins = if settings.allowed_origins.is_empty() {
        ["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"]
            .map(str::to_owned)
            .to_vec()
    } else {
        settings.allowed_origins.clone()
    };
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_allowed_origins(origins)
        .with_max_request_body_bytes(settings.max_body_bytes)
        .with_cancellation_token(stop);
    let app = Arc::clone(&gate.app);
    let service = StreamableHttpService::new(
        move || Ok(Server::observed(Arc::clone(&app))),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let mcp = Router::new()
        .route_service("/mcp", service.clone())
        .route_service("/mcp/{workspace}", service)
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(gate),
            authorize,
        ));
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(ready).with_state(Arc::clone(gate)))
        .merge(mcp)
}

/// `/readyz`: 200 when the store answers, 503 when it does not.
async fn ready(State(gate): State<Arc<Gate>>) -> Response {
    if gate.app.store_is_reachable() {
        (StatusCode::OK, "ready\n").into_response()
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "the store does not answer\n",
        )
            .into_response()
    }
}

/// Authorizes a request for `/mcp`: its token, its workspace, its session; counts a POST in
/// flight until its response has been sent whole.
async fn authorize(State(gate): State<Arc<Gate>>, mut request: Request, next: Next) -> Response {
    if gate.draining.load(Ordering::SeqCst) {
        match answers_only(request).await {
            Some(answer) => request = answer,
            None => {
                return refusal(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "the server is shutting down; retry on another instance or after it restarts",
                );
            }
        }
    }
    let access = match gate.access(&request) {
        Ok(access) => access,
        Err(response) => return *response,
    };
    let session = request
        .headers()
        .get(SESSION_HEADER)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    if let Some(id) = &session {
        let sessions = gate.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        if sessions.get(id).is_some_and(|owner| *owner != access) {
            // Not found rather than forbidden: a client told 404 starts a new session.
            return refusal(
                StatusCode::NOT_FOUND,
                "no such session for this token and workspace; initialize a new one",
            );
        }
    }
    let closing = request.method() == Method::DELETE;
    // Only POSTs carry calls: a session's GET stream, or a `subscriptions/listen` stream (its
    // method is in the `Mcp-Method` header), waits for the server and is not waited for.
    let listens = request
        .headers()
        .get("mcp-method")
        .is_some_and(|method| method.as_bytes() == b"subscriptions/listen");
    let guard = (request.method() == Method::POST && !listens).then(|| InFlight::enter(&gate));
    request.extensions_mut().insert(access.clone());
    let mut response = next.run(request).await;
    if closing && response.status() == StatusCode::ACCEPTED {
        // A session closed by DELETE: 204, as the Python SDK expects (rmcp answers 202).
        *response.status_mut() = StatusCode::NO_CONTENT;
    }
    let mut sessions = gate.sessions.lock().unwrap_or_else(PoisonError::into_inner);
    match (&session, response.headers().get(SESSION_HEADER)) {
        (Some(id), _) if closing && response.status().is_success() => {
            sessions.remove(id);
        }
        (None, Some(id)) => {
            if let Ok(id) = id.to_str() {
                sessions.insert(id.to_owned(), access);
            }
        }
        _ => {}
    }
    drop(sessions);
    // The call is in flight until its response body (an SSE stream, often) is sent whole.
    let (parts, body) = response.into_parts();
    let stream = body.into_data_stream().map(move |chunk| {
        let _in_flight = &guard;
        chunk
    });
    Response::from_parts(parts, Body::from_stream(stream))
}

/// While draining, a POST that only answers the server (a client's response to an elicitation
/// or sampling request of a call in flight, or a notification such as a cancellation) belongs to
/// a call in flight and passes; a POST carrying a request is new work, and `None` refuses it.
async fn answers_only(request: Request) -> Option<Request> {
    if request.method() != Method::POST {
        return None;
    }
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, crate::config::DEFAULT_MAX_BODY_BYTES)
        .await
        .ok()?;
    let message: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    let is_request = |message: &serde_json::Value| {
        message.get("method").is_some() && message.get("id").is_some()
    };
    let carries_request = match &message {
        serde_json::Value::Array(batch) => batch.iter().any(is_request),
        single => is_request(single),
    };
    (!carries_request).then(|| Request::from_parts(parts, Body::from(bytes)))
}

impl Gate {
    /// Who is asking, and for which workspace: 401 without a known token, 403 for a workspace
    /// the token does not allow.
    fn access(&self, request: &Request) -> Result<Access, Box<Response>> {
        let named = request
            .uri()
            .path()
            .strip_prefix("/mcp/")
            .filter(|name| !name.is_empty())
            .map(str::to_owned);
        let Some(tokens) = &self.tokens else {
            return Ok(Access {
                workspace: named.unwrap_or_else(|| self.default_workspace.clone()),
                caller: Caller::default(),
            });
        };
        let presented = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| {
                value
                    .strip_prefix("Bearer ")
                    .or_else(|| value.strip_prefix("bearer "))
            })
            .map(str::trim);
        let Some(presented) = presented else {
            return Err(Box::new(unauthorized(
                "Bearer realm=\"synapse-mcp\"",
                "a bearer token is required: send `Authorization: Bearer <token>`",
            )));
        };
        let Some(entry) = tokens.find(presented) else {
            return Err(Box::new(unauthorized(
                "Bearer realm=\"synapse-mcp\", error=\"invalid_token\"",
                "this bearer token is not known (or was revoked)",
            )));
        };
        let workspace = match named {
            Some(name) => name,
            None => entry.workspaces.first().cloned().unwrap_or_default(),
        };
        if !entry.workspaces.contains(&workspace) {
            return Err(Box::new(refusal(
                StatusCode::FORBIDDEN,
                &format!(
                    "principal `{}` may not use workspace `{workspace}`; its token allows: {}",
                    entry.principal,
                    entry.workspaces.join(", ")
                ),
            )));
        }
        Ok(Access {
            workspace,
            caller: Caller {
                principal: Some(entry.principal),
                read_only: entry.read_only,
            },
        })
    }
}

fn unauthorized(challenge: &'static str, message: &str) -> Response {
    let mut response = refusal(StatusCode::UNAUTHORIZED, message);
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static(challenge),
    );
    response
}

fn refusal(status: StatusCode, message: &str) -> Response {
    (status, format!("{message}\n")).into_response()
}

/// One request in flight; dropped when its response has been sent (or abandoned).
struct InFlight {
    gate: Arc<Gate>,
}

impl InFlight {
    fn enter(gate: &Arc<Gate>) -> Self {
        gate.in_flight.fetch_add(1, Ordering::SeqCst);
        Self {
            gate: Arc::clone(gate),
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.gate.in_flight.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.gate.idle.notify_waiters();
        }
    }
}

/// Resolves once the process was told to stop and the requests in flight are done: new
/// requests are refused from the signal on; then the sessions' streams are closed.
async fn drain(gate: Arc<Gate>, stop: CancellationToken) {
    stopped().await;
    tracing::info!("shutting down: finishing the requests in flight, refusing new ones");
    gate.draining.store(true, Ordering::SeqCst);
    let finished = async {
        loop {
            let idle = gate.idle.notified();
            if gate.in_flight.load(Ordering::SeqCst) == 0 {
                break;
            }
            idle.await;
        }
    };
    // A stream that never ends (a listen stream of a client that sends no `Mcp-Method`) must not
    // keep the process up for ever.
    if tokio::time::timeout(DRAIN_LIMIT, finished).await.is_err() {
        tracing::warn!(
            "requests still in flight after {} s; closing them",
            DRAIN_LIMIT.as_secs()
        );
    }
    stop.cancel();
}

/// SIGTERM or ctrl-c.
async fn stopped() {
    let interrupt = async {
        if let Err(error) = tokio::signal::ctrl_c().await {
            tracing::warn!(%error, "cannot listen for ctrl-c");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    {
        let mut terminate =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(signal) => signal,
                Err(error) => {
                    tracing::warn!(%error, "cannot listen for SIGTERM");
                    interrupt.await;
                    return;
                }
            };
        tokio::select! {
            () = interrupt => {}
            _ = terminate.recv() => {}
        }
    }
    #[cfg(not(unix))]
    interrupt.await;
}
