//! The plans' state document as the SQLite store keeps it: one JSON text per workspace, read
//! with over-deep branches cut (a document written by an older build may nest deeper than the
//! limit), and the `doctor` check and repair of such documents.

use rusqlite::{OptionalExtension, Transaction, params};

use super::{Error, SqliteStore};
use crate::json::nesting;

impl SqliteStore {
    /// The workspaces whose stored state nests deeper than the limit; with `repair`, each is
    /// rewritten with its over-deep branches kept as their JSON text (see `parse_state`).
    pub fn deep_states(&self, repair: bool) -> Result<Vec<DeepState>, Error> {
        let work = |transaction: &Transaction<'_>| {
            let mut statement = transaction.prepare("SELECT workspace, document FROM state")?;
            let rows = statement
                .query_map([], |row| {
                    Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let mut found = Vec::new();
            for (workspace, text) in rows {
                let Some(flattened) = nesting::flatten_text(&text) else {
                    continue;
                };
                if repair {
                    transaction
                        .prepare_cached("UPDATE state SET document = ?2 WHERE workspace = ?1")?
                        .execute(params![workspace, flattened.text])?;
                }
                found.push(DeepState {
                    depth: nesting::text_depth(&text),
                    workspace,
                    cut: flattened.cut,
                });
            }
            Ok(found)
        };
        if repair {
            self.write(work)
        } else {
            self.read(work)
        }
    }
}

pub(super) fn read_state(
    transaction: &Transaction<'_>,
    workspace: &str,
) -> rusqlite::Result<serde_json::Value> {
    let text = state_text(transaction, workspace)?;
    match text {
        None => Ok(serde_json::Value::Object(serde_json::Map::new())),
        Some(text) => parse_state(workspace, &text),
    }
}

fn state_text(transaction: &Transaction<'_>, workspace: &str) -> rusqlite::Result<Option<String>> {
    transaction
        .prepare_cached("SELECT document FROM state WHERE workspace = ?1")?
        .query_row(params![workspace], |row| row.get(0))
        .optional()
}

/// Parses a stored state. A document nesting deeper than the limit (written by an older build)
/// is read with its over-deep branches cut and kept as their JSON text, so it stays readable
/// and writable; `doctor` reports it and `doctor --repair` stores the cut form.
fn parse_state(workspace: &str, text: &str) -> rusqlite::Result<serde_json::Value> {
    let invalid = |error: serde_json::Error| {
        rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, Box::new(error))
    };
    let Some(flattened) = nesting::flatten_text(text) else {
        return serde_json::from_str(text).map_err(invalid);
    };
    tracing::warn!(
        %workspace,
        cut = flattened.cut.len(),
        "the stored state nests deeper than the limit of {}; its deepest branches are read as text (run `synapse-mcp doctor --repair`)",
        nesting::MAX_DEPTH
    );
    serde_json::from_str(&flattened.text).map_err(invalid)
}

/// A workspace whose stored state nests deeper than the limit, as `doctor` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeepState {
    pub workspace: String,
    /// How deep the stored document nests.
    pub depth: usize,
    /// The dot paths of the branches cut (by a repair) or to cut.
    pub cut: Vec<String>,
}
