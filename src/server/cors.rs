//! CORS for the browser origins given with `--allowed-origin` (`allowed_origins` in `[http]`):
//! a page on such an origin (SillyTavern's extension, docs/sillytavern.md) may call `/mcp` with
//! a bearer token and read the answer. A preflight (`OPTIONS` with
//! `Access-Control-Request-Method`) from one is answered here, before authentication, since
//! browsers send it without the token; every answer to one (a `401` included, so the page can
//! tell a wrong token from a server that is down) carries `Access-Control-Allow-Origin` with that
//! origin and exposes `Mcp-Session-Id`. Other origins get no CORS header, and without explicit
//! origins the layer is not installed at all (the loopback defaults of the `Origin` check grant
//! no cross-origin reads).

use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The request headers a page may send: the token, the JSON body's type, and MCP's own.
const ALLOWED_HEADERS: &str =
    "Authorization, Content-Type, Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID";
/// The methods of Streamable HTTP.
const ALLOWED_METHODS: &str = "GET, POST, DELETE";
/// How long a browser may keep a preflight's answer, in seconds.
const MAX_AGE_SECONDS: &str = "600";

/// The configured origins, as the browser writes them.
struct Origins {
    /// Compared whole: `https://app.example`, `http://127.0.0.1:8000`.
    exact: Vec<String>,
    /// `scheme://host:` of the entries written with `:*` (any port).
    any_port: Vec<String>,
}

impl Origins {
    fn new(configured: &[String]) -> Self {
        let mut origins = Self {
            exact: Vec::new(),
            any_port: Vec::new(),
        };
        for origin in configured {
            let origin = origin.trim().trim_end_matches('/').to_ascii_lowercase();
            match origin.strip_suffix('*') {
                Some(prefix) if prefix.ends_with(':') => origins.any_port.push(prefix.to_owned()),
                _ => origins.exact.push(origin),
            }
        }
        origins
    }

    fn allows(&self, origin: &str) -> bool {
        let matches_ignoring_case = |allowed: &str| origin.eq_ignore_ascii_case(allowed);
        self.exact
            .iter()
            .any(|allowed| matches_ignoring_case(allowed))
            || self.any_port.iter().any(|prefix| {
                origin.len() > prefix.len()
                    && origin.is_char_boundary(prefix.len())
                    && origin[..prefix.len()].eq_ignore_ascii_case(prefix)
                    && origin[prefix.len()..]
                        .bytes()
                        .all(|byte| byte.is_ascii_digit())
            })
    }
}

/// `router` with CORS for `origins`; `router` unchanged when there are none.
pub(super) fn layer(router: Router, origins: &[String]) -> Router {
    if origins.is_empty() {
        return router;
    }
    router.layer(axum::middleware::from_fn_with_state(
        Arc::new(Origins::new(origins)),
        answer,
    ))
}

async fn answer(State(origins): State<Arc<Origins>>, request: Request, next: Next) -> Response {
    let allowed = request
        .headers()
        .get(header::ORIGIN)
        .filter(|origin| origin.to_str().is_ok_and(|origin| origins.allows(origin)))
        .cloned();
    let Some(origin) = allowed else {
        return next.run(request).await;
    };
    let preflight = request.method() == Method::OPTIONS
        && request
            .headers()
            .contains_key(header::ACCESS_CONTROL_REQUEST_METHOD);
    let mut response = if preflight {
        let mut response = StatusCode::NO_CONTENT.into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::ACCESS_CONTROL_ALLOW_METHODS,
            HeaderValue::from_static(ALLOWED_METHODS),
        );
        headers.insert(
            header::ACCESS_CONTROL_ALLOW_HEADERS,
            HeaderValue::from_static(ALLOWED_HEADERS),
        );
        headers.insert(
            header::ACCESS_CONTROL_MAX_AGE,
            HeaderValue::from_static(MAX_AGE_SECONDS),
        );
        response
    } else {
        next.run(request).await
    };
    let headers = response.headers_mut();
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    headers.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static("Mcp-Session-Id"),
    );
    headers.append(header::VARY, HeaderValue::from_static("Origin"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_match_whole_or_with_any_port() {
        let origins = Origins::new(&[
            "http://127.0.0.1:8000".to_owned(),
            "https://App.example/".to_owned(),
            "http://localhost:*".to_owned(),
        ]);
        for allowed in [
            "http://127.0.0.1:8000",
            "https://app.example",
            "http://localhost:8000",
            "HTTP://LOCALHOST:1",
        ] {
            assert!(origins.allows(allowed), "{allowed}");
        }
        for refused in [
            "http://127.0.0.1:8001",
            "http://127.0.0.1",
            "https://app.example:8443",
            "http://localhost:",
            "http://localhost:80x",
            "http://localhost.evil:80",
            "null",
        ] {
            assert!(!origins.allows(refused), "{refused}");
        }
    }
}
