//! `serve --http ADDR` (`docs/http.md`): rmcp's Streamable HTTP service mounted in axum at
//! `/mcp` and `/mcp/{workspace}`, behind the bearer-token check, beside `/healthz`, `/readyz`
//! and, in OAuth mode, the protected-resource metadata (RFC 9728) under
//! `/.well-known/oauth-protected-resource`.
//!
//! Each request is authorized here, before rmcp sees it: its token — one of the tokens file's,
//! else a JWT access token from the configured authorization server — names a principal and the
//! workspaces it may use; the workspace is the one the path names (percent-decoded), else the
//! token's first. The decision travels to the handlers as an `Access` (`server/access.rs`) in the request's
//! extensions, so that the workspace comes from the principal and never from a session id
//! (2026-07-28 requests have none), and an initialize-era session stays with the principal and
//! workspace that opened it for as long as rmcp keeps the session (`Sessions`).
//!
//! Shutting down (SIGTERM, ctrl-c): new requests get 503, the requests in flight (their
//! response streams included) finish, then the sessions' streams close and the process exits.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures::{Stream, StreamExt as _};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

mod auth;
mod sessions;

use auth::{metadata, refusal};
use sessions::{Foreign, Sessions};

use super::{Error, Server};
use crate::app::App;
use crate::config::{HttpSettings, OAuthSettings};
use crate::tokens::Tokens;
use crate::tokens::jwt::{self, Verifier};

/// How often an open stream of a tokens-file token checks that the token was not revoked.
const REVOCATION_CHECK: std::time::Duration = std::time::Duration::from_millis(250);

/// How long a shutdown waits for the requests in flight.
const DRAIN_LIMIT: std::time::Duration = std::time::Duration::from_secs(30);

/// The session header of initialize-era sessions.
const SESSION_HEADER: &str = "mcp-session-id";

/// The path of the protected-resource metadata (RFC 9728); the resource's path follows it.
const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// What the middleware shares.
struct Gate {
    app: Arc<App>,
    /// Neither: `--no-auth` on a loopback address.
    tokens: Option<Tokens>,
    jwt: Option<Verifier>,
    /// Given in OAuth mode: the authorization server named in the metadata.
    issuer: Option<String>,
    /// Given in OAuth mode: the audiences tokens are issued for, the first naming the resource.
    audiences: Vec<String>,
    /// The URL clients reach the server at, when configured.
    public_url: Option<String>,
    /// The `Host` values answered (the loopback names and the configured ones), and the
    /// address listened on, for the URLs of the metadata.
    allowed_hosts: Vec<String>,
    listen: std::net::SocketAddr,
    /// The workspace of requests that name none, without tokens.
    default_workspace: String,
    /// rmcp's sessions, with each initialize-era session's principal and workspace.
    sessions: Arc<Sessions>,
    draining: AtomicBool,
    in_flight: AtomicUsize,
    idle: Notify,
    /// How long a request's body may take to arrive.
    read_timeout: std::time::Duration,
}

/// Serves `app` over Streamable HTTP until SIGTERM or ctrl-c.
pub async fn serve(app: Arc<App>, settings: &HttpSettings) -> Result<(), Error> {
    let tokens = match &settings.tokens {
        Some(path) => Some(Tokens::open(path).map_err(|error| Error::Start(error.to_string()))?),
        None => None,
    };
    let jwt = match &settings.oauth {
        Some(oauth) => Some(verifier(oauth).await?),
        None => None,
    };
    check_authentication(settings)?;
    // Sessions idle out here (`Sessions::close_idle`), not in rmcp: its timer knows nothing of
    // a call waiting for the client's answer to an approval or a sampling request.
    let mut sessions = LocalSessionManager::default();
    let idle = sessions
        .session_config
        .keep_alive
        .take()
        .map(|default| settings.session_idle.unwrap_or(default));
    let stop = CancellationToken::new();
    let gate = Arc::new(Gate {
        default_workspace: app.executor().workspace().name().to_owned(),
        app: Arc::clone(&app),
        tokens,
        jwt,
        issuer: settings.oauth.as_ref().map(|oauth| oauth.issuer.clone()),
        audiences: settings
            .oauth
            .as_ref()
            .map(|oauth| oauth.audiences.clone())
            .unwrap_or_default(),
        public_url: settings
            .public_url
            .as_ref()
            .map(|url| url.trim_end_matches('/').to_owned()),
        allowed_hosts: allowed_hosts(settings),
        listen: settings.listen,
        sessions: Arc::new(Sessions {
            inner: sessions,
            owners: Mutex::default(),
        }),
        draining: AtomicBool::new(false),
        in_flight: AtomicUsize::new(0),
        idle: Notify::new(),
        read_timeout: settings.read_timeout,
    });
    if let Some(idle) = idle {
        tokio::spawn(Arc::clone(&gate.sessions).close_idle(idle, stop.clone()));
    }
    let router = super::cors::layer(
        router(&gate, settings, stop.clone()),
        &settings.allowed_origins,
    );
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
        match (&gate.tokens, &gate.jwt) {
            (Some(_), Some(_)) => "bearer tokens or OAuth access tokens required",
            (Some(_), None) => "bearer tokens required",
            (None, Some(_)) => "OAuth access tokens required",
            (None, None) => "no authentication (loopback)",
        }
    );
    let shutdown = drain(Arc::clone(&gate), stop);
    serve_connections(listener, router, settings.read_timeout, shutdown).await;
    tracing::info!("HTTP server stopped");
    Ok(())
}

/// Serving without tokens or OAuth: allowed with `--no-auth` on a loopback address only.
/// Checked before anything else starts, so a server that cannot serve says so at once.
pub fn check_authentication(settings: &HttpSettings) -> Result<(), Error> {
    if settings.tokens.is_some() || settings.oauth.is_some() {
        return Ok(());
    }
    if !settings.no_auth {
        return Err(Error::Refused(
            "serving HTTP needs authentication: give --tokens FILE (made by `synapse-mcp \
             token add --tokens FILE --principal NAME --workspace W`), or OAuth \
             (--oauth-issuer, --oauth-audience, --oauth-jwks), or --no-auth on a loopback \
             address for local development"
                .to_owned(),
        ));
    }
    if !settings.listen.ip().is_loopback() {
        return Err(Error::Refused(format!(
            "--no-auth serves without authentication, which is allowed on a loopback \
             address only, and {} is not one; give --tokens FILE (see `synapse-mcp token \
             add`) or OAuth (--oauth-issuer)",
            settings.listen
        )));
    }
    Ok(())
}

/// Accepts connections and serves `router` on each until `shutdown` resolves, then lets each
/// connection finish the request it is in and waits for them all. A connection that takes longer
/// than `read_timeout` to send a request's headers is closed (hyper's header read timeout); the
/// body has as long again ([`authorize`]).
async fn serve_connections(
    listener: tokio::net::TcpListener,
    router: Router,
    read_timeout: std::time::Duration,
    shutdown: impl std::future::Future<Output = ()>,
) {
    let (closing, closed) = tokio::sync::watch::channel(false);
    let mut connections = tokio::task::JoinSet::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => accepted,
        };
        let mut stream = match accepted {
            Ok((stream, _)) => stream,
            Err(error) => {
                // Out of file descriptors, mostly: wait a little rather than spin.
                tracing::warn!(%error, "cannot accept a connection");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        send_at_once(&mut stream);
        let service = hyper_util::service::TowerToHyperService::new(router.clone());
        let mut closed = closed.clone();
        connections.spawn(async move {
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(read_timeout);
            let connection = builder
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .with_upgrades();
            let mut connection = std::pin::pin!(connection);
            tokio::select! {
                served = connection.as_mut() => {
                    if let Err(error) = served {
                        tracing::debug!(%error, "connection ended");
                    }
                    return;
                }
                _ = closed.wait_for(|closed| *closed) => connection.as_mut().graceful_shutdown(),
            }
            if let Err(error) = connection.await {
                tracing::debug!(%error, "connection ended");
            }
        });
        // Finished connections leave the set as new ones come.
        while connections.try_join_next().is_some() {}
    }
    drop(listener);
    closing.send_replace(true);
    while connections.join_next().await.is_some() {}
}

/// Sets `TCP_NODELAY` on each connection (axum leaves it off): an answer on an SSE stream goes
/// out in several writes, and without it the later ones wait for the client's delayed ACK, 40 ms
/// on Linux, on every request (`benches/http_load.sh` measured 47 ms median at 64 clients).
fn send_at_once(stream: &mut tokio::net::TcpStream) {
    if let Err(error) = stream.set_nodelay(true) {
        tracing::debug!(%error, "cannot set TCP_NODELAY on a connection");
    }
}

/// The JWT verifier of the OAuth settings.
async fn verifier(oauth: &OAuthSettings) -> Result<Verifier, Error> {
    let Some(jwks) = &oauth.jwks else {
        return Err(Error::Start(
            "OAuth needs the authorization server's signing keys: give --oauth-jwks FILE|URL \
             (or `jwks` in [http.oauth])"
                .to_owned(),
        ));
    };
    let expectations = jwt::Expectations {
        issuer: oauth.issuer.clone(),
        audiences: oauth.audiences.clone(),
        principal_claim: oauth.principal_claim.clone(),
        workspaces_claim: oauth.workspaces_claim.clone(),
    };
    Verifier::open(jwks, expectations)
        .await
        .map_err(|error| Error::Start(error.to_string()))
}

/// The `Host` values answered: the loopback names and the configured ones.
fn allowed_hosts(settings: &HttpSettings) -> Vec<String> {
    ["localhost", "127.0.0.1", "::1"]
        .map(str::to_owned)
        .into_iter()
        .chain(settings.allowed_hosts.iter().cloned())
        .collect()
}

fn router(gate: &Arc<Gate>, settings: &HttpSettings, stop: CancellationToken) -> Router {
    let hosts = gate.allowed_hosts.clone();
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
        Arc::clone(&gate.sessions),
        config,
    );
    let mcp = Router::new()
        .route_service("/mcp", service.clone())
        .route_service("/mcp/{workspace}", service)
        .route_layer(axum::middleware::from_fn_with_state(
            settings.max_body_bytes,
            wire_errors,
        ))
        .route_layer(axum::middleware::from_fn_with_state(
            Arc::clone(gate),
            authorize,
        ));
    let router = Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(ready).with_state(Arc::clone(gate)))
        .merge(mcp);
    if gate.issuer.is_none() {
        return router;
    }
    let metadata = get(metadata).with_state(Arc::clone(gate));
    router
        .route(METADATA_PATH, metadata.clone())
        .route(&format!("{METADATA_PATH}/mcp"), metadata.clone())
        .route(&format!("{METADATA_PATH}/mcp/{{workspace}}"), metadata)
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
    let (access, digest) = match gate.access(request.uri().path(), request.headers()).await {
        Ok(granted) => granted,
        Err(response) => return *response,
    };
    let session = request
        .headers()
        .get(SESSION_HEADER)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    // Only POSTs carry calls: a session's GET stream, or a `subscriptions/listen` stream (its
    // method is in the `Mcp-Method` header), waits for the server and is not waited for.
    let listens = request
        .headers()
        .get("mcp-method")
        .is_some_and(|method| method.as_bytes() == b"subscriptions/listen");
    let calls = request.method() == Method::POST && !listens;
    let busy = match &session {
        None => None,
        Some(id) => match gate.sessions.enter(id, &access, calls) {
            Ok(busy) => busy,
            // Not found rather than forbidden: a client told 404 starts a new session.
            Err(Foreign) => {
                return refusal(
                    StatusCode::NOT_FOUND,
                    "no such session for this token and workspace; initialize a new one",
                );
            }
        },
    };
    if request.method() == Method::POST {
        // The body has `read_timeout` to arrive, as the headers had.
        request = request.map(|body| {
            let timed = Deadline {
                inner: body.into_data_stream(),
                limit: gate.read_timeout,
                timer: None,
            };
            Body::from_stream(timed)
        });
    }
    let closing = request.method() == Method::DELETE;
    let first = session.is_none() && request.method() == Method::POST;
    let guard = calls.then(|| InFlight::enter(&gate));
    // A stream that stays open (a session's GET stream, a listen stream) ends when its
    // tokens-file token is revoked; a call's answer ends with the call.
    let revocable = digest.filter(|_| guard.is_none());
    request.extensions_mut().insert(access.clone());
    let mut response = next.run(request).await;
    if closing && response.status() == StatusCode::ACCEPTED {
        // A session closed by DELETE: 204, as the Python SDK expects (rmcp answers 202).
        *response.status_mut() = StatusCode::NO_CONTENT;
    }
    if first
        && let Some(id) = response.headers().get(SESSION_HEADER)
        && let Ok(id) = id.to_str()
    {
        gate.sessions.own(id, access).await;
    }
    // The call is in flight until its response body (an SSE stream, often) is sent whole.
    let (parts, body) = response.into_parts();
    let stream = body.into_data_stream().map(move |chunk| {
        let _in_flight = (&guard, &busy);
        chunk
    });
    match revocable {
        None => Response::from_parts(parts, Body::from_stream(stream)),
        Some(digest) => {
            let revoked = Arc::clone(&gate).revoked(digest);
            Response::from_parts(parts, Body::from_stream(stream.take_until(revoked)))
        }
    }
}

/// A POST whose message rmcp would misanswer gets the JSON-RPC error stdio gives
/// ([`super::transport::http_refusal`]): 200 with the error for a request it can name, 400 for
/// one it cannot (a null id, a batch, JSON that does not parse). Runs after `authorize`.
async fn wire_errors(State(limit): State<usize>, request: Request, next: Next) -> Response {
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, limit).await else {
        return refusal(
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!("the request body is over {limit} bytes (`max_body_bytes`)"),
        );
    };
    if let Some(answer) = super::transport::http_refusal(&bytes) {
        let named = serde_json::from_slice::<serde_json::Value>(&answer)
            .is_ok_and(|answer| answer.get("id").is_some_and(|id| !id.is_null()));
        let status = if named {
            StatusCode::OK
        } else {
            StatusCode::BAD_REQUEST
        };
        return (
            status,
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            answer,
        )
            .into_response();
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
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

/// A request body that fails when it has not arrived whole within `limit`. The clock starts at
/// the first wait: a body that came with its headers (most) costs no timer.
struct Deadline<S> {
    inner: S,
    limit: std::time::Duration,
    /// Set at the first wait.
    timer: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
}

impl<S> Stream for Deadline<S>
where
    S: Stream<Item = Result<axum::body::Bytes, axum::Error>> + Unpin,
{
    type Item = Result<axum::body::Bytes, axum::Error>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        context: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        use std::future::Future as _;
        use std::task::Poll;
        if let Poll::Ready(item) = std::pin::Pin::new(&mut self.inner).poll_next(context) {
            return Poll::Ready(item);
        }
        let limit = self.limit;
        let timer = self
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match timer.as_mut().poll(context) {
            Poll::Ready(()) => Poll::Ready(Some(Err(axum::Error::new(format!(
                "the request body did not arrive within {} s",
                limit.as_secs()
            ))))),
            Poll::Pending => Poll::Pending,
        }
    }
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
