//! Bearer tokens for `serve --http` (`docs/http.md`): the tokens file, a TOML list of entries,
//! each a principal, the workspaces it may use (the first is its default), whether it may only
//! read, and whether it may change the skills every workspace shares. The file keeps the SHA-256
//! digest of each token, never the token: `token add` prints a new one once. A token is 32 random bytes from the operating system, so its digest
//! cannot be searched back to it, and a fast digest lets each request be checked in
//! microseconds (a slow password hash protects guessable secrets, which these are not).
//!
//! The serving process reads the file again when it changes, so `token revoke` takes effect at
//! the next request without a restart.
//!
//! [`jwt`] checks the other kind of bearer token: JWT access tokens from an OAuth 2.1
//! authorization server.

pub mod jwt;

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::SystemTime;

use base64::Engine as _;
use serde::{Deserialize, Serialize};

/// What is written before the tokens begin.
pub const PREFIX: &str = "syn_";

/// Why the tokens file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot read the tokens file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the tokens file {path} is not valid: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("cannot write the tokens file {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot draw random bytes for a token: {0}")]
    Random(String),
    #[error("{0}")]
    Invalid(String),
}

/// One token, as the file keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// A short name for the token (the start of its digest), for `token revoke`.
    pub id: String,
    pub principal: String,
    /// The workspaces this token may use; the first is the one used when a request names none.
    pub workspaces: Vec<String>,
    #[serde(default)]
    pub read_only: bool,
    /// May change what every workspace of the process shares: the skills shelf (`SkillSave`,
    /// `SkillRunScript`). Off unless `token add --write-skills` set it.
    #[serde(default)]
    pub write_skills: bool,
    /// Tool groups the token's sessions turn on in a workspace that has no switch of its own
    /// for them (`token add --groups`): a front end's tools, whatever the server's default.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    /// The SHA-256 digest of the token, in lowercase hex.
    pub sha256: String,
}

impl Entry {
    /// What the token grants.
    pub fn grant(self) -> Grant {
        Grant {
            principal: self.principal,
            workspaces: self.workspaces,
            read_only: self.read_only,
            write_skills: self.write_skills && !self.read_only,
            groups: self.groups,
        }
    }
}

/// What a valid bearer token grants, whichever kind it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub principal: String,
    /// The workspaces it may use; the first is the one used when a request names none.
    pub workspaces: Vec<String>,
    pub read_only: bool,
    /// May change the skills every workspace shares.
    pub write_skills: bool,
    /// Tool groups its sessions turn on where the workspace has not switched them.
    pub groups: Vec<String>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    token: Vec<Entry>,
}

/// The SHA-256 digest of a token, in lowercase hex.
fn digest(token: &str) -> String {
    crate::digest::sha256_hex(token.as_bytes())
}

fn read(path: &Path) -> Result<File, Error> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(File::default()),
        Err(source) => {
            return Err(Error::Read {
                path: path.to_owned(),
                source,
            });
        }
    };
    toml::from_str(&text).map_err(|error| Error::Parse {
        path: path.to_owned(),
        message: error.to_string(),
    })
}

/// Writes the file whole (to a temporary file renamed over it), readable by its owner only.
fn write(path: &Path, file: &File) -> Result<(), Error> {
    let failed = |source| Error::Write {
        path: path.to_owned(),
        source,
    };
    let text = toml::to_string(file).map_err(|error| failed(std::io::Error::other(error)))?;
    let text = format!(
        "# synapse-mcp bearer tokens: SHA-256 digests only; edit with `synapse-mcp token`.\n{text}"
    );
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".new");
    let temporary = PathBuf::from(temporary);
    std::fs::write(&temporary, text).map_err(failed)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&temporary, std::fs::Permissions::from_mode(0o600))
            .map_err(failed)?;
    }
    std::fs::rename(&temporary, path).map_err(failed)
}

/// What a new token may do: only read, or change the shared skills too; and the tool groups
/// its sessions turn on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rights {
    pub read_only: bool,
    pub write_skills: bool,
    pub groups: Vec<String>,
}

/// Adds a token for `principal` and returns it: the only time it is seen.
pub fn add(
    path: &Path,
    principal: &str,
    workspaces: &[String],
    rights: Rights,
) -> Result<(String, Entry), Error> {
    if rights.read_only && rights.write_skills {
        return Err(Error::Invalid(
            "a read-only token cannot change the skills: give --read-only or --write-skills, not both"
                .to_owned(),
        ));
    }
    if principal.trim().is_empty() {
        return Err(Error::Invalid(
            "the principal is empty; give a name with --principal".to_owned(),
        ));
    }
    if let Some(empty) = workspaces.iter().find(|name| name.trim().is_empty()) {
        return Err(Error::Invalid(format!(
            "workspace `{empty}` is empty; give a name with --workspace"
        )));
    }
    let mut file = read(path)?;
    let mut random = [0u8; 32];
    getrandom::fill(&mut random).map_err(|error| Error::Random(error.to_string()))?;
    let token = format!(
        "{PREFIX}{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(random)
    );
    let sha256 = digest(&token);
    let entry = Entry {
        id: sha256[..12].to_owned(),
        principal: principal.to_owned(),
        workspaces: workspaces.to_vec(),
        read_only: rights.read_only,
        write_skills: rights.write_skills,
        groups: rights.groups,
        sha256,
    };
    file.token.push(entry.clone());
    write(path, &file)?;
    Ok((token, entry))
}

/// Every token in the file.
pub fn list(path: &Path) -> Result<Vec<Entry>, Error> {
    Ok(read(path)?.token)
}

/// Removes the token with this id, or every token of `principal`; returns those removed.
pub fn revoke(path: &Path, id: Option<&str>, principal: Option<&str>) -> Result<Vec<Entry>, Error> {
    let mut file = read(path)?;
    let (revoked, kept): (Vec<Entry>, Vec<Entry>) = file.token.into_iter().partition(|entry| {
        id.is_some_and(|id| entry.id == id) || principal.is_some_and(|name| entry.principal == name)
    });
    if revoked.is_empty() {
        let what = match (id, principal) {
            (Some(id), _) => format!("no token has the id `{id}`"),
            (None, Some(name)) => format!("principal `{name}` has no token"),
            (None, None) => "name a token id or a --principal".to_owned(),
        };
        return Err(Error::Invalid(format!(
            "{what} in {}; `synapse-mcp token list --tokens {}` shows them",
            path.display(),
            path.display()
        )));
    }
    file.token = kept;
    write(path, &file)?;
    Ok(revoked)
}

/// The tokens a server accepts, read again whenever the file changes.
pub struct Tokens {
    path: PathBuf,
    loaded: Mutex<Loaded>,
}

struct Loaded {
    /// The file's modification time and length when it was read.
    stamp: Option<(SystemTime, u64)>,
    entries: Vec<Entry>,
}

impl Tokens {
    /// Reads the file; it must exist (a server with no tokens would refuse everyone).
    pub fn open(path: &Path) -> Result<Self, Error> {
        let stamp = stamp(path).ok_or_else(|| Error::Read {
            path: path.to_owned(),
            source: std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "no such file; make one with `synapse-mcp token add --tokens FILE …`",
            ),
        })?;
        refuse_writable_by_others(path)?;
        let entries = read(path)?.token;
        Ok(Self {
            path: path.to_owned(),
            loaded: Mutex::new(Loaded {
                stamp: Some(stamp),
                entries,
            }),
        })
    }

    /// The entry of a presented token, if it is one of the file's (as the file is now).
    pub fn find(&self, token: &str) -> Option<Entry> {
        let sha256 = digest(token);
        self.current()
            .entries
            .iter()
            .find(|entry| entry.sha256 == sha256)
            .cloned()
    }

    /// Whether the token with this digest is still in the file (as the file is now): an open
    /// stream of a revoked token is ended.
    pub fn holds(&self, sha256: &str) -> bool {
        self.current()
            .entries
            .iter()
            .any(|entry| entry.sha256 == sha256)
    }

    /// The entries, read again first when the file changed.
    fn current(&self) -> std::sync::MutexGuard<'_, Loaded> {
        let mut loaded = self.loaded.lock().unwrap_or_else(PoisonError::into_inner);
        let now = stamp(&self.path);
        if now != loaded.stamp {
            // Read once per change, valid or not: a broken file is not read (and logged) again
            // at every request, only when it changes again.
            loaded.stamp = now;
            match refuse_writable_by_others(&self.path).and_then(|()| read(&self.path)) {
                Ok(file) => loaded.entries = file.token,
                // A file being rewritten, or broken by hand: keep serving what was read last.
                Err(error) => tracing::warn!(%error, "keeping the tokens read before"),
            }
        }
        loaded
    }
}

/// A tokens file that group or others may write is refused: whoever can write it can grant
/// themselves any workspace.
fn refuse_writable_by_others(path: &Path) -> Result<(), Error> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = match std::fs::metadata(path) {
            Ok(metadata) => metadata.permissions().mode(),
            // No file: no tokens (`read` says so), and nothing anyone could write into.
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(source) => {
                return Err(Error::Read {
                    path: path.to_owned(),
                    source,
                });
            }
        };
        if mode & 0o022 != 0 {
            return Err(Error::Invalid(format!(
                "the tokens file {} may be written by its group or by others (mode {:o}), so \
                 anyone who can write it could grant themselves any workspace; make it writable \
                 by its owner only: chmod 600 {}",
                path.display(),
                mode & 0o777,
                path.display()
            )));
        }
    }
    Ok(())
}

fn stamp(path: &Path) -> Option<(SystemTime, u64)> {
    let metadata = std::fs::metadata(path).ok()?;
    Some((metadata.modified().ok()?, metadata.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_found_by_its_digest_until_it_is_revoked() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("tokens.toml");
        let (token, entry) = add(
            &path,
            "alice",
            &["research".to_owned()],
            Rights {
                read_only: true,
                ..Rights::default()
            },
        )
        .unwrap();
        assert!(token.starts_with(PREFIX));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains(&token), "{text}");
        let tokens = Tokens::open(&path).unwrap();
        assert_eq!(tokens.find(&token), Some(entry.clone()));
        assert_eq!(tokens.find("syn_wrong"), None);
        assert_eq!(revoke(&path, Some(&entry.id), None).unwrap(), [entry]);
        assert_eq!(tokens.find(&token), None);
        let error = revoke(&path, Some("nope"), None).unwrap_err();
        assert!(error.to_string().contains("`nope`"), "{error}");
    }

    #[test]
    fn a_token_of_a_file_written_before_the_skills_grant_may_not_change_skills() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("tokens.toml");
        std::fs::write(
            &path,
            "[[token]]\nid = \"abc\"\nprincipal = \"alice\"\nworkspaces = [\"w\"]\n\
             sha256 = \"00\"\n",
        )
        .unwrap();
        let [entry] = list(&path).unwrap().try_into().unwrap();
        assert_eq!(
            entry.grant(),
            Grant {
                principal: "alice".to_owned(),
                workspaces: vec!["w".to_owned()],
                read_only: false,
                write_skills: false,
                groups: Vec::new(),
            }
        );
        let both = Rights {
            read_only: true,
            write_skills: true,
            ..Rights::default()
        };
        let error = add(&path, "bob", &["w".to_owned()], both).unwrap_err();
        assert!(error.to_string().contains("not both"), "{error}");
    }
}
