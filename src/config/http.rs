//! How `serve --http` serves: the command line's `serve` options over the file's `[http]`
//! table, merged into plain settings.

use std::path::PathBuf;

use super::{HttpTable, OAuthTable, ServeArgs};

/// How `serve --http` serves: the command line over the file's `[http]` table.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpSettings {
    pub listen: std::net::SocketAddr,
    pub tokens: Option<PathBuf>,
    pub no_auth: bool,
    pub allowed_hosts: Vec<String>,
    pub allowed_origins: Vec<String>,
    pub max_body_bytes: usize,
    /// `None`: rmcp's default (5 minutes).
    pub session_idle: Option<std::time::Duration>,
    /// How long a client may take to send a request's headers, and again its body.
    pub read_timeout: std::time::Duration,
    pub public_url: Option<String>,
    /// Given when an issuer is.
    pub oauth: Option<OAuthSettings>,
}

/// OAuth 2.1 resource-server mode: which JWT access tokens are accepted.
#[derive(Debug, Clone, PartialEq)]
pub struct OAuthSettings {
    pub issuer: String,
    /// Empty: refused when serving (a token for any audience would do).
    pub audiences: Vec<String>,
    /// `None`: refused when serving.
    pub jwks: Option<String>,
    pub principal_claim: String,
    pub workspaces_claim: String,
}

/// The request body limit when none is configured.
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 << 20;
/// Seconds a client may take to send a request's headers, and again its body.
pub const DEFAULT_READ_TIMEOUT_SECONDS: u64 = 30;

/// The HTTP settings when an address is given, on the command line or in the file: each list
/// of the command line replaces the file's.
pub fn settings(serve: &ServeArgs, table: &HttpTable) -> Option<HttpSettings> {
    let listen = serve.http.or(table.listen)?;
    let or_file = |given: &Vec<String>, file: &Vec<String>| {
        if given.is_empty() {
            file.clone()
        } else {
            given.clone()
        }
    };
    Some(HttpSettings {
        listen,
        tokens: serve.tokens.clone().or_else(|| table.tokens.clone()),
        no_auth: serve.no_auth || table.no_auth,
        allowed_hosts: or_file(&serve.allowed_hosts, &table.allowed_hosts),
        allowed_origins: or_file(&serve.allowed_origins, &table.allowed_origins),
        max_body_bytes: serve
            .max_body_bytes
            .or(table.max_body_bytes)
            .unwrap_or(DEFAULT_MAX_BODY_BYTES),
        session_idle: serve
            .session_idle_seconds
            .or(table.session_idle_seconds)
            .map(std::time::Duration::from_secs),
        read_timeout: std::time::Duration::from_secs(
            serve
                .read_timeout_seconds
                .or(table.read_timeout_seconds)
                .unwrap_or(DEFAULT_READ_TIMEOUT_SECONDS),
        ),
        public_url: serve
            .public_url
            .clone()
            .or_else(|| table.public_url.clone()),
        oauth: oauth(serve, &table.oauth),
    })
}

/// The OAuth settings when an issuer is given, on the command line or in the file.
fn oauth(serve: &ServeArgs, table: &OAuthTable) -> Option<OAuthSettings> {
    let issuer = serve
        .oauth_issuer
        .clone()
        .or_else(|| table.issuer.clone())?;
    let audiences = if serve.oauth_audiences.is_empty() {
        table.audiences.clone()
    } else {
        serve.oauth_audiences.clone()
    };
    let claim = |given: &Option<String>, file: &Option<String>, default: &str| {
        given
            .clone()
            .or_else(|| file.clone())
            .unwrap_or_else(|| default.to_owned())
    };
    Some(OAuthSettings {
        issuer,
        audiences,
        jwks: serve.oauth_jwks.clone().or_else(|| table.jwks.clone()),
        principal_claim: claim(&serve.oauth_principal_claim, &table.principal_claim, "sub"),
        workspaces_claim: claim(
            &serve.oauth_workspaces_claim,
            &table.workspaces_claim,
            "workspaces",
        ),
    })
}
