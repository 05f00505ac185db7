//! Global snapshots in SQLite: states saved under a unique label, outside any chat, stored as
//! trees of the same content-addressed nodes as chat snapshots (so saving a chat's floor as a
//! global snapshot costs one row).

use rusqlite::{OptionalExtension, Transaction, params};

use super::nodes::{self, corrupt};
use super::{decode_root, ensure_workspace, free_unreferenced};
use crate::store::tree::Encoded;
use crate::store::{GlobalSnapshot, GlobalSummary};

pub(super) fn put(
    transaction: &Transaction<'_>,
    workspace: &str,
    snapshot: &GlobalSnapshot,
) -> rusqlite::Result<()> {
    let mut laid_out = Encoded::new();
    let root = laid_out
        .root(&snapshot.value)
        .map_err(|error| corrupt(format!("the global snapshot {error}")))?;
    ensure_workspace(transaction, workspace)?;
    nodes::write(transaction, &laid_out, [root.as_str()])?;
    transaction
        .prepare_cached(
            // Not `OR REPLACE`: that would silently delete another snapshot holding the label.
            "INSERT INTO global_snapshots \
             (workspace, identifier, label, description, root, created_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6) \
             ON CONFLICT (workspace, identifier) DO UPDATE SET label = excluded.label, \
             description = excluded.description, root = excluded.root, created_at = excluded.created_at",
        )?
        .execute(params![
            workspace,
            snapshot.id,
            snapshot.label,
            snapshot.description,
            root,
            snapshot.created_at
        ])?;
    // A replaced state may leave nodes that nothing else reaches.
    free_unreferenced(transaction)
}

pub(super) fn get(
    transaction: &Transaction<'_>,
    workspace: &str,
    id_or_label: &str,
) -> rusqlite::Result<Option<GlobalSnapshot>> {
    let row = transaction
        .prepare_cached(
            "SELECT identifier, label, description, root, created_at FROM global_snapshots \
             WHERE workspace = ?1 AND (identifier = ?2 OR label = ?2) \
             ORDER BY identifier = ?2 DESC LIMIT 1",
        )?
        .query_row(params![workspace, id_or_label], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, String>(2)?,
                row.get::<_, String>(3)?,
                row.get::<_, i64>(4)?,
            ))
        })
        .optional()?;
    let Some((id, label, description, root, created_at)) = row else {
        return Ok(None);
    };
    Ok(Some(GlobalSnapshot {
        id,
        label,
        description,
        created_at,
        value: decode_root(transaction, &root)?,
    }))
}

pub(super) fn list(
    transaction: &Transaction<'_>,
    workspace: &str,
) -> rusqlite::Result<Vec<GlobalSummary>> {
    let mut statement = transaction.prepare_cached(
        "SELECT identifier, label, description, created_at FROM global_snapshots \
         WHERE workspace = ?1 ORDER BY label",
    )?;
    let rows = statement.query_map(params![workspace], |row| {
        Ok(GlobalSummary {
            id: row.get(0)?,
            label: row.get(1)?,
            description: row.get(2)?,
            created_at: row.get(3)?,
        })
    })?;
    rows.collect()
}

pub(super) fn delete(
    transaction: &Transaction<'_>,
    workspace: &str,
    id: &str,
) -> rusqlite::Result<bool> {
    let deleted = transaction.execute(
        "DELETE FROM global_snapshots WHERE workspace = ?1 AND identifier = ?2",
        params![workspace, id],
    )?;
    if deleted > 0 {
        free_unreferenced(transaction)?;
    }
    Ok(deleted > 0)
}
