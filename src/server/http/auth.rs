//! The bearer-token check of `serve --http`: a tokens-file token or a JWT access token names a
//! principal and its workspaces; the path names the workspace (percent-decoded); a refusal
//! carries the `WWW-Authenticate` challenge, and in OAuth mode the protected-resource metadata
//! (RFC 9728) says where tokens come from.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::tokens::Grant;
use crate::tokens::jwt::{self, Rejection};
use crate::tools::Caller;

use super::{Gate, METADATA_PATH, REVOCATION_CHECK};
use crate::server::access::Access;

impl Gate {
    /// Resolves once the tokens-file token with this digest is no longer in the file, checked
    /// every [`REVOCATION_CHECK`].
    pub(super) async fn revoked(self: Arc<Self>, digest: String) {
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
    pub(super) async fn access(
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
                groups: grant.groups,
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
pub(super) async fn metadata(State(gate): State<Arc<Gate>>, request: Request) -> Response {
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
pub(super) fn refusal(status: StatusCode, message: &str) -> Response {
    (
        status,
        [(header::CONNECTION, "close")],
        format!("{message}\n"),
    )
        .into_response()
}
