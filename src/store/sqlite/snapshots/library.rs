//! Moving functions between libraries and the enable switches, in SQLite
//! (`0005_switches.sql`). Each function here is one statement group inside the caller's
//! transaction.

use rusqlite::{OptionalExtension, Transaction, params};
use serde_json::Value;

use crate::store::sqlite::ensure_workspace;

/// Moves a function's row to another scope with its new definition. A function of that id
/// already in the destination is replaced.
pub(super) fn move_function(
    transaction: &Transaction<'_>,
    workspace: &str,
    scopes: (&str, &str),
    id: &str,
    definition: &Value,
) -> rusqlite::Result<bool> {
    let (from, to) = scopes;
    let exists = transaction
        .prepare_cached("SELECT 1 FROM functions WHERE workspace = ?1 AND scope = ?2 AND id = ?3")?
        .query_row(params![workspace, from, id], |_| Ok(()))
        .optional()?
        .is_some();
    if !exists {
        return Ok(false);
    }
    transaction.execute(
        "DELETE FROM functions WHERE workspace = ?1 AND scope = ?2 AND id = ?3",
        params![workspace, to, id],
    )?;
    transaction.execute(
        "UPDATE functions SET scope = ?3, definition = ?5 WHERE workspace = ?1 AND scope = ?2 AND id = ?4",
        params![workspace, from, to, id, definition.to_string()],
    )?;
    Ok(true)
}

pub(super) fn switch(
    transaction: &Transaction<'_>,
    workspace: &str,
    target: &str,
) -> rusqlite::Result<Option<bool>> {
    transaction
        .prepare_cached(
            "SELECT enabled FROM snapshot_switches WHERE workspace = ?1 AND target = ?2",
        )?
        .query_row(params![workspace, target], |row| row.get(0))
        .optional()
}

pub(super) fn set_switch(
    transaction: &Transaction<'_>,
    workspace: &str,
    target: &str,
    enabled: Option<bool>,
) -> rusqlite::Result<()> {
    match enabled {
        Some(enabled) => {
            ensure_workspace(transaction, workspace)?;
            transaction
                .prepare_cached(
                    "INSERT INTO snapshot_switches (workspace, target, enabled) VALUES (?1, ?2, ?3) \
                     ON CONFLICT (workspace, target) DO UPDATE SET enabled = excluded.enabled",
                )?
                .execute(params![workspace, target, enabled])?;
        }
        None => {
            transaction.execute(
                "DELETE FROM snapshot_switches WHERE workspace = ?1 AND target = ?2",
                params![workspace, target],
            )?;
        }
    }
    Ok(())
}

pub(super) fn switches(
    transaction: &Transaction<'_>,
    workspace: &str,
) -> rusqlite::Result<Vec<(String, bool)>> {
    let mut statement = transaction.prepare_cached(
        "SELECT target, enabled FROM snapshot_switches WHERE workspace = ?1 ORDER BY target",
    )?;
    let rows = statement.query_map(params![workspace], |row| Ok((row.get(0)?, row.get(1)?)))?;
    rows.collect()
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn a_moved_function_leaves_its_scope_whole_or_not_at_all() {
        for store in crate::store::every_store() {
            store
                .put_functions("w", "global", &[("f".to_owned(), json!({"name": "F"}))])
                .unwrap();
            let moved = json!({"name": "F", "order": 2});
            assert!(
                store
                    .move_function("w", "global", "character:elf", "f", &moved)
                    .unwrap()
            );
            assert_eq!(
                store.functions("w", "global").unwrap(),
                Vec::<serde_json::Value>::new()
            );
            assert_eq!(
                store.functions("w", "character:elf").unwrap(),
                vec![moved.clone()]
            );
            assert!(
                !store
                    .move_function("w", "global", "character:elf", "f", &json!({}))
                    .unwrap(),
                "nothing left to move"
            );
            assert_eq!(store.functions("w", "character:elf").unwrap(), vec![moved]);
        }
    }

    #[test]
    fn switches_are_set_listed_and_cleared() {
        for store in crate::store::every_store() {
            assert_eq!(store.switch("w", "chat:a").unwrap(), None);
            store.set_switch("w", "chat:a", Some(false)).unwrap();
            store.set_switch("w", "character:elf", Some(true)).unwrap();
            store.set_switch("w", "chat:a", Some(true)).unwrap();
            assert_eq!(store.switch("w", "chat:a").unwrap(), Some(true));
            store.set_switch("w", "character:elf", None).unwrap();
            assert_eq!(
                store.switches("w").unwrap(),
                vec![("chat:a".to_owned(), true)]
            );
        }
    }
}
