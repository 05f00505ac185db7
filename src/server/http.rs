//! `serve --http ADDR` (`docs/http.md`): rmcp's Streamable HTTP service mounted in axum at
//! `/mcp` and `/mcp/{workspace}`, behind the bearer-token check, beside `/healthz`, `/readyz`
//! and, in OAuth mode, the protected-resource metadata (RFC 9728) under
//! `/.well-known/oauth-protected-resource`.
//!
//! Each request is authorized here, before rmcp sees it: its token — one of the tokens file's,
//! else a JWT access token from the configured authorization server — names a principal and the
//! workspaces it may use; the workspace is the one the path names (percent-decoded), else the
//! token's first. The decision travels to the handlers as an [`Access`] in the request's
//! extensions, so that the workspace comes from the principal and never from a session id
//! (2026-07-28 requests have none), and an initialize-era session stays with the principal and
//! workspace that opened it for as long as rmcp keeps the session (`Sessions`).
//!
//! Shutting down (SIGTERM, ctrl-c): new requests get 503, the requests in flight (their
//! response streams included) finish, then the sessions' streams close and the process exits.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures::{Stream, StreamExt as _};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::common::server_side_http::{ServerSseMessage, SessionId};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{
    EventStore, RestoreOutcome, SessionManager,
};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::{Error, Server};
use crate::app::App;
use crate::config::{HttpSettings, OAuthSettings};
use crate::tokens::jwt::{self, Rejection, Verifier};
use crate::tokens::{Grant, Tokens};
use crate::tools::Caller;

/// How often an open stream of a tokens-file token checks that the token was not revoked.
const REVOCATION_CHECK: std::time::Duration = std::time::Duration::from_millis(250);

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
    if tokens.is_none() && jwt.is_none() {
        if !settings.no_auth {
            return Err(Error::Start(
                "serving HTTP needs authentication: give --tokens FILE (made by `synapse-mcp \
                 token add --tokens FILE --principal NAME --workspace W`), or OAuth \
                 (--oauth-issuer, --oauth-audience, --oauth-jwks), or --no-auth on a loopback \
                 address for local development"
                    .to_owned(),
            ));
        }
        if !settings.listen.ip().is_loopback() {
            return Err(Error::Start(format!(
                "--no-auth serves without authentication, which is allowed on a loopback \
                 address only, and {} is not one; give --tokens FILE (see `synapse-mcp token \
                 add`) or OAuth (--oauth-issuer)",
                settings.listen
            )));
        }
    }
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
    let mut busy = None;
    if let Some(id) = &session {
        let mut owners = gate.sessions.owners();
        if let Some(owner) = owners.get_mut(id.as_str()) {
            if owner.access != access {
                // Not found rather than forbidden: a client told 404 starts a new session.
                return refusal(
                    StatusCode::NOT_FOUND,
                    "no such session for this token and workspace; initialize a new one",
                );
            }
            owner.last = Instant::now();
            if calls {
                owner.calls += 1;
                busy = Some(Busy {
                    sessions: Arc::clone(&gate.sessions),
                    id: id.clone(),
                });
            }
        }
    }
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

impl Gate {
    /// Resolves once the tokens-file token with this digest is no longer in the file, checked
    /// every [`REVOCATION_CHECK`].
    async fn revoked(self: Arc<Self>, digest: String) {
        let Some(tokens) = &self.tokens else {
            return std::future::pending().await;
        };
        loop {
            tokio::time::sleep(REVOCATION_CHECK).await;
            if !tokens.holds(&digest) {
                tracing::info!("a token was revoked: its open stream ends");
                return;
            }
        }
    }

    /// Who is asking, and for which workspace, with the digest of its token when it is one of
    /// the tokens file's: 400 for a path that does not decode, 401 without a valid token, 403
    /// for a workspace the token does not allow.
    async fn access(
        &self,
        path: &str,
        headers: &HeaderMap,
    ) -> Result<(Access, Option<String>), Box<Response>> {
        let named = workspace_in(path)?;
        if self.tokens.is_none() && self.jwt.is_none() {
            let access = Access {
                workspace: named.unwrap_or_else(|| self.default_workspace.clone()),
                caller: Caller::default(),
            };
            return Ok((access, None));
        }
        let presented = headers
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.split_once(' '))
            // The scheme is case-insensitive (RFC 7235): `Bearer`, `bearer`, `BEARER`.
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim());
        let Some(presented) = presented else {
            return Err(Box::new(self.unauthorized(
                path,
                headers,
                None,
                "a bearer token is required: send `Authorization: Bearer <token>`",
            )));
        };
        let (grant, digest) = self.grant(path, headers, presented).await?;
        let workspace = match named {
            Some(name) => name,
            None => grant.workspaces.first().cloned().unwrap_or_default(),
        };
        if !grant.workspaces.contains(&workspace) {
            let message = format!(
                "principal `{}` may not use workspace `{workspace}`; its token allows: {}",
                grant.principal,
                grant.workspaces.join(", ")
            );
            let scope = format!("{}{workspace}", jwt::WORKSPACE_SCOPE_PREFIX);
            return Err(Box::new(self.forbidden(path, headers, &scope, &message)));
        }
        let access = Access {
            workspace,
            caller: Caller {
                principal: Some(grant.principal),
                read_only: grant.read_only,
                shared_read_only: !grant.write_skills,
            },
        };
        Ok((access, digest))
    }

    /// What a presented token grants: the tokens file's entry for it (with its digest), else
    /// what it grants as a JWT access token.
    async fn grant(
        &self,
        path: &str,
        headers: &HeaderMap,
        presented: &str,
    ) -> Result<(Grant, Option<String>), Box<Response>> {
        if let Some(entry) = self
            .tokens
            .as_ref()
            .and_then(|tokens| tokens.find(presented))
        {
            let digest = entry.sha256.clone();
            return Ok((entry.grant(), Some(digest)));
        }
        let from_file = self.tokens.is_some() && presented.starts_with(crate::tokens::PREFIX);
        let refused = match &self.jwt {
            Some(verifier) if !from_file => match verifier.verify(presented).await {
                Ok(grant) => return Ok((grant, None)),
                Err(Rejection::InsufficientScope { scope, message }) => {
                    return Err(Box::new(self.forbidden(path, headers, &scope, &message)));
                }
                Err(Rejection::Invalid(message)) => message,
            },
            _ => "this bearer token is not known (or was revoked)".to_owned(),
        };
        Err(Box::new(self.unauthorized(
            path,
            headers,
            Some("invalid_token"),
            &refused,
        )))
    }

    /// 401 with a `Bearer` challenge: the metadata's URL in OAuth mode, and the error when a
    /// token was given.
    fn unauthorized(
        &self,
        path: &str,
        headers: &HeaderMap,
        error: Option<&str>,
        message: &str,
    ) -> Response {
        let mut challenge = self.challenge(path, headers);
        if let Some(error) = error {
            challenge.push(format!("error=\"{error}\""));
            challenge.push(format!("error_description={}", quoted(message)));
        }
        with_challenge(refusal(StatusCode::UNAUTHORIZED, message), &challenge)
    }

    /// 403 `insufficient_scope`, naming the scope that would do in OAuth mode.
    fn forbidden(&self, path: &str, headers: &HeaderMap, scope: &str, message: &str) -> Response {
        let mut challenge = self.challenge(path, headers);
        challenge.push("error=\"insufficient_scope\"".to_owned());
        if self.issuer.is_some() && is_scope(scope) {
            challenge.push(format!("scope=\"{scope}\""));
        }
        challenge.push(format!("error_description={}", quoted(message)));
        with_challenge(refusal(StatusCode::FORBIDDEN, message), &challenge)
    }

    /// The parameters of a `Bearer` challenge: the realm, and `resource_metadata` in OAuth
    /// mode.
    fn challenge(&self, path: &str, headers: &HeaderMap) -> Vec<String> {
        let mut challenge = vec!["realm=\"synapse-mcp\"".to_owned()];
        if self.issuer.is_some() {
            let url = format!("{}{METADATA_PATH}{path}", self.base_url(headers));
            challenge.push(format!("resource_metadata={}", quoted(&url)));
        }
        challenge
    }

    /// The resource at `path` as the protected-resource metadata names it (RFC 9728): under the
    /// configured public URL, else under the configured audience when it is the URL of `/mcp`
    /// (what tokens are issued for), else under [`Gate::base_url`].
    fn resource(&self, path: &str, headers: &HeaderMap) -> String {
        if self.public_url.is_none()
            && let Some(base) = self
                .audiences
                .first()
                .and_then(|audience| audience.trim_end_matches('/').strip_suffix("/mcp"))
        {
            return format!("{base}{path}");
        }
        format!("{}{path}", self.base_url(headers))
    }

    /// The URL clients reach the server at: the configured one, else `http://` and the
    /// request's `Host` when it is one answered, else the address listened on.
    fn base_url(&self, headers: &HeaderMap) -> String {
        if let Some(url) = &self.public_url {
            return url.clone();
        }
        let host = headers
            .get(header::HOST)
            .and_then(|value| value.to_str().ok())
            .filter(|host| self.answers(host));
        match host {
            Some(host) => format!("http://{host}"),
            None => format!("http://{}", self.listen),
        }
    }

    /// Whether `host` (`name` or `name:port`) is one of the allowed hosts.
    fn answers(&self, host: &str) -> bool {
        let name = match host.rsplit_once(':') {
            Some((name, port)) if port.bytes().all(|byte| byte.is_ascii_digit()) => name,
            _ => host,
        };
        let name = name.trim_start_matches('[').trim_end_matches(']');
        self.allowed_hosts
            .iter()
            .any(|allowed| allowed.eq_ignore_ascii_case(host) || allowed.eq_ignore_ascii_case(name))
    }
}

/// The workspace a path names, percent-decoded: `/mcp/a%20b` is `a b`; `None` for `/mcp`.
fn workspace_in(path: &str) -> Result<Option<String>, Box<Response>> {
    let Some(raw) = path.strip_prefix("/mcp/").filter(|name| !name.is_empty()) else {
        return Ok(None);
    };
    let bad = |why: &str| {
        Box::new(refusal(
            StatusCode::BAD_REQUEST,
            &format!(
                "the workspace in the path, `{raw}`, {why}; percent-encode its UTF-8 bytes, \
                 as in /mcp/a%20b for `a b` or /mcp/%C3%BC for `ü`"
            ),
        ))
    };
    let bytes = raw.as_bytes();
    let escapes_are_whole = bytes.iter().enumerate().all(|(index, byte)| {
        *byte != b'%'
            || bytes
                .get(index + 1..index + 3)
                .is_some_and(|digits| digits.iter().all(u8::is_ascii_hexdigit))
    });
    if !escapes_are_whole {
        return Err(bad("has a `%` not followed by two hex digits"));
    }
    match percent_encoding::percent_decode_str(raw).decode_utf8() {
        Ok(name) if name.trim().is_empty() => Err(bad("is empty once decoded")),
        Ok(name) => Ok(Some(name.into_owned())),
        Err(_) => Err(bad("does not decode to UTF-8")),
    }
}

/// `/.well-known/oauth-protected-resource[/mcp[/{workspace}]]`: the protected-resource
/// metadata (RFC 9728) of the resource whose path follows the well-known prefix.
async fn metadata(State(gate): State<Arc<Gate>>, request: Request) -> Response {
    let resource_path = request
        .uri()
        .path()
        .strip_prefix(METADATA_PATH)
        .unwrap_or_default();
    let mut scopes = vec![
        jwt::READ_SCOPE.to_owned(),
        jwt::WRITE_SCOPE.to_owned(),
        jwt::SKILLS_SCOPE.to_owned(),
    ];
    match workspace_in(resource_path) {
        Ok(Some(workspace)) => {
            let scope = format!("{}{workspace}", jwt::WORKSPACE_SCOPE_PREFIX);
            if is_scope(&scope) {
                scopes.push(scope);
            }
        }
        Ok(None) => {}
        Err(response) => return *response,
    }
    let document = serde_json::json!({
        "resource": gate.resource(resource_path, request.headers()),
        "authorization_servers": gate.issuer.iter().collect::<Vec<_>>(),
        "bearer_methods_supported": ["header"],
        "scopes_supported": scopes,
        "resource_name": "synapse-mcp",
    });
    (
        [(header::CONTENT_TYPE, "application/json")],
        document.to_string(),
    )
        .into_response()
}

/// Whether `scope` is one scope token: printable ASCII without spaces, quotes or backslashes
/// (RFC 6749). A workspace whose name is not one can be granted by the workspaces claim only.
fn is_scope(scope: &str) -> bool {
    !scope.is_empty()
        && scope
            .chars()
            .all(|character| character.is_ascii_graphic() && !"\"\\".contains(character))
}

/// A quoted-string of an auth-param: quotes and backslashes escaped, anything but printable
/// ASCII replaced, so that it is a valid header value.
fn quoted(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('"');
    for character in text.chars() {
        match character {
            '"' | '\\' => {
                quoted.push('\\');
                quoted.push(character);
            }
            ' '..='~' => quoted.push(character),
            _ => quoted.push('?'),
        }
    }
    quoted.push('"');
    quoted
}

/// `response` with a `WWW-Authenticate: Bearer` header of these parameters.
fn with_challenge(mut response: Response, parameters: &[String]) -> Response {
    let challenge = format!("Bearer {}", parameters.join(", "));
    match HeaderValue::from_str(&challenge) {
        Ok(value) => {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, value);
        }
        Err(error) => tracing::warn!(%error, "cannot send the challenge {challenge}"),
    }
    response
}

/// A refusal, sent before the request's body was read: the connection is closed after it, so
/// that a client does not send its next request on a connection the server drops.
fn refusal(status: StatusCode, message: &str) -> Response {
    (
        status,
        [(header::CONNECTION, "close")],
        format!("{message}\n"),
    )
        .into_response()
}

/// rmcp's local sessions, and the principal and workspace of each: an entry is made when a
/// session is opened, and leaves when the session is closed — by `DELETE`, when it has been
/// idle too long ([`Sessions::close_idle`]), or when its service ends.
struct Sessions {
    inner: LocalSessionManager,
    owners: Mutex<HashMap<String, Owner>>,
}

/// Who opened a session, and how busy it is.
struct Owner {
    access: Access,
    /// When a request of the session last began or ended.
    last: Instant,
    /// Its calls in flight: a call waiting for the client's answer to an approval or a
    /// sampling request keeps the session open however long the user takes.
    calls: usize,
}

/// One call of a session in flight; dropped when its response has been sent (or abandoned).
struct Busy {
    sessions: Arc<Sessions>,
    id: String,
}

impl Drop for Busy {
    fn drop(&mut self) {
        if let Some(owner) = self.sessions.owners().get_mut(&self.id) {
            owner.calls = owner.calls.saturating_sub(1);
            owner.last = Instant::now();
        }
    }
}

impl Sessions {
    fn owners(&self) -> std::sync::MutexGuard<'_, HashMap<String, Owner>> {
        self.owners.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Closes, for as long as the server runs, every session with no call in flight and no
    /// request for `idle`.
    async fn close_idle(self: Arc<Self>, idle: std::time::Duration, stop: CancellationToken) {
        let every = (idle / 4).clamp(
            std::time::Duration::from_millis(10),
            std::time::Duration::from_secs(5),
        );
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(every) => {}
            }
            let idle_ones: Vec<String> = self
                .owners()
                .iter()
                .filter(|(_, owner)| owner.calls == 0 && owner.last.elapsed() >= idle)
                .map(|(id, _)| id.clone())
                .collect();
            for id in idle_ones {
                tracing::debug!(session = %id, "closing a session idle for {} s", idle.as_secs());
                if let Err(error) = self.close_session(&SessionId::from(id.as_str())).await {
                    tracing::debug!(%error, "the idle session had closed already");
                }
            }
        }
    }

    /// Records who opened session `id`, unless it has closed already.
    async fn own(&self, id: &str, access: Access) {
        let owner = Owner {
            access,
            last: Instant::now(),
            calls: 0,
        };
        self.owners().insert(id.to_owned(), owner);
        // A session that ended before it was recorded would stay: check after recording it
        // (`close_session` removes the entry after rmcp's).
        let id: SessionId = id.into();
        if !self.inner.has_session(&id).await.unwrap_or(false) {
            self.owners().remove(&*id);
        }
    }
}

impl SessionManager for Sessions {
    type Error = LocalSessionManagerError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        self.inner.create_session().await
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        let closed = self.inner.close_session(id).await;
        self.owners().remove(&**id);
        closed
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_stream(id, message).await
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.resume(id, last_event_id).await
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        self.inner.restore_session(id).await
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.inner.event_store()
    }
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
