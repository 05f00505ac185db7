//! The [`Store`] trait over PostgreSQL: the same rows as the SQLite store (variables, the value
//! pool, change sequences, removals, visits, approvals, tool switches, the state document). A
//! commit's first statement takes the workspace's next sequence (an upsert of its row, which
//! holds the row locked until the commit), so writers to one workspace take turns and each
//! stamps the next sequence; a state update locks the same row (`FOR UPDATE`).

use std::collections::HashSet;
use std::path::Path;

use tokio_postgres::Row;

use super::listen::{CHANNEL, Kind};
use super::{Failure, PostgresStore, Session, column, ensure_workspace, text_of};
use crate::json::nesting;
use crate::store::rows::{
    VariableRow, count, kind_name, micros, pool_key, removals_pruned_below, stored_count, tags_text,
};
use crate::store::{Batch, Changes, Commit, Error, Heard, Loaded, Store, Visit, WorkspaceSummary};
use crate::vars::{Record, wall_clock};

const SELECT_VARIABLE: &str = "SELECT v.name, coalesce(v.value, p.value), v.kind, v.var_type, \
     v.description, v.tags, v.keep, v.created, v.updated, v.last_visited, v.reference_count \
     FROM variables v LEFT JOIN value_pool p ON p.hash = v.value_hash";

fn variable_from(row: &Row) -> Result<Record, Failure> {
    let description: Option<Vec<u8>> = column(row, 4)?;
    VariableRow {
        name: column(row, 0)?,
        value: text_of(column(row, 1)?)?,
        kind: column(row, 2)?,
        var_type: column(row, 3)?,
        desc: description.map(text_of).transpose()?,
        tags: column(row, 5)?,
        keep: column(row, 6)?,
        created: column(row, 7)?,
        updated: column(row, 8)?,
        last_visited: column(row, 9)?,
        reference_count: column(row, 10)?,
    }
    .into_record()
    .map_err(Failure::Invalid)
}

/// Every variable of a workspace (`since` `None`), or those written after `since`.
fn variables(
    session: &mut Session<'_>,
    workspace: &str,
    since: Option<u64>,
) -> Result<Vec<Record>, Failure> {
    let rows = match since {
        None => session.query(
            &format!("{SELECT_VARIABLE} WHERE v.workspace = $1"),
            &[&workspace],
        )?,
        Some(since) => session.query(
            &format!("{SELECT_VARIABLE} WHERE v.workspace = $1 AND v.sequence > $2"),
            &[&workspace, &stored_count(since)],
        )?,
    };
    rows.iter().map(variable_from).collect()
}

/// The workspace's sequence and the sequence below which removals were pruned; `lock` holds
/// the row until the transaction ends.
fn sequence_of(
    session: &mut Session<'_>,
    workspace: &str,
    lock: bool,
) -> Result<(u64, u64), Failure> {
    let sql = if lock {
        "SELECT sequence, pruned_below FROM workspaces WHERE name = $1 FOR UPDATE"
    } else {
        "SELECT sequence, pruned_below FROM workspaces WHERE name = $1"
    };
    match session.query_opt(sql, &[&workspace])? {
        Some(row) => Ok((count(column(&row, 0)?), count(column(&row, 1)?))),
        None => Ok((0, 0)),
    }
}

/// Which sequence a commit may take.
#[derive(Debug, Clone, Copy)]
pub(super) enum Turn {
    /// The next, whatever was committed before.
    Any,
    /// The next only while the sequence is still this one.
    At(u64),
    /// The next after `expected`, or after later commits that touched nothing the batch was
    /// decided on ([`Store::commit_unaffected`]).
    Unaffected { expected: u64, capacity: usize },
}

/// Takes the workspace's next sequence (creating the workspace when it is new), locking its row
/// until the transaction ends, when `turn` allows it (`None` otherwise). Under READ COMMITTED
/// an update that waited for another writer's row lock re-reads the row, so a writer that came
/// first is always seen. The same statement queues `payload` for the other instances
/// (`NOTIFY`, sent if the transaction commits), only when it took a sequence.
fn next_sequence(
    session: &mut Session<'_>,
    workspace: &str,
    turn: Turn,
    batch: &Batch,
    payload: &str,
) -> Result<Option<i64>, Failure> {
    let created = micros(wall_clock());
    let row = match turn {
        Turn::Any => session.query_opt(
            "INSERT INTO workspaces (name, created, sequence) VALUES ($1, $2, 1) \
             ON CONFLICT (name) DO UPDATE SET sequence = workspaces.sequence + 1 \
             RETURNING sequence, pg_notify($3, $4)::text",
            &[&workspace, &created, &CHANNEL, &payload],
        )?,
        Turn::At(expected) => at_sequence(session, workspace, expected, created, payload)?,
        Turn::Unaffected { expected, capacity } => {
            match at_sequence(session, workspace, expected, created, payload)? {
                Some(row) => Some(row),
                None => {
                    unaffected_sequence(session, workspace, expected, capacity, batch, payload)?
                }
            }
        }
    };
    row.map(|row| column(&row, 0)).transpose()
}

/// The next sequence while the sequence is still `expected`.
fn at_sequence(
    session: &mut Session<'_>,
    workspace: &str,
    expected: u64,
    created: i64,
    payload: &str,
) -> Result<Option<Row>, Failure> {
    let updated = session.query_opt(
        "UPDATE workspaces SET sequence = sequence + 1 \
         WHERE name = $1 AND sequence = $2 RETURNING sequence, pg_notify($3, $4)::text",
        &[&workspace, &stored_count(expected), &CHANNEL, &payload],
    )?;
    match updated {
        None if expected == 0 => session.query_opt(
            "INSERT INTO workspaces (name, created, sequence) VALUES ($1, $2, 1) \
             ON CONFLICT (name) DO NOTHING RETURNING sequence, pg_notify($3, $4)::text",
            &[&workspace, &created, &CHANNEL, &payload],
        ),
        other => Ok(other),
    }
}

/// The next sequence for a batch decided at `expected` after others committed, when none of
/// them wrote or removed a variable the batch names and the workspace then holds at most
/// `capacity` variables: two instances writing different variables of one workspace do not
/// undo each other's decisions. The row is locked first, so the checks, a statement later, see
/// every commit before this one; a batch decided before the oldest removal still kept
/// (`pruned_below`) cannot be checked and waits its turn.
fn unaffected_sequence(
    session: &mut Session<'_>,
    workspace: &str,
    expected: u64,
    capacity: usize,
    batch: &Batch,
    payload: &str,
) -> Result<Option<Row>, Failure> {
    let locked = session.query_opt(
        "SELECT 1 FROM workspaces WHERE name = $1 FOR UPDATE",
        &[&workspace],
    )?;
    if locked.is_none() {
        return Ok(None);
    }
    let written: HashSet<&str> = batch.written.iter().map(|record| &*record.name).collect();
    let names: Vec<&str> = written
        .iter()
        .copied()
        .chain(batch.removed.iter().map(String::as_str))
        .collect();
    let room = stored_count(u64::try_from(capacity).unwrap_or(u64::MAX))
        .saturating_sub(stored_count(written.len() as u64));
    session.query_opt(
        "UPDATE workspaces SET sequence = sequence + 1 \
         WHERE name = $1 AND pruned_below <= $2 \
         AND NOT EXISTS (SELECT 1 FROM variables \
             WHERE workspace = $1 AND name = ANY($3) AND sequence > $2) \
         AND NOT EXISTS (SELECT 1 FROM removals \
             WHERE workspace = $1 AND name = ANY($3) AND sequence > $2) \
         AND (SELECT count(*) FROM variables WHERE workspace = $1 AND name <> ALL($3)) <= $4 \
         RETURNING sequence, pg_notify($5, $6)::text",
        &[
            &workspace,
            &stored_count(expected),
            &names,
            &room,
            &CHANNEL,
            &payload,
        ],
    )
}

fn pooled_hash(
    session: &mut Session<'_>,
    workspace: &str,
    name: &str,
) -> Result<Option<String>, Failure> {
    match session.query_opt(
        "SELECT value_hash FROM variables WHERE workspace = $1 AND name = $2",
        &[&workspace, &name],
    )? {
        Some(row) => column(&row, 0),
        None => Ok(None),
    }
}

/// Writes a variable stamped with `sequence`, in one statement: its long value into the pool,
/// its row, and no removal of its name; returns the pooled value it replaced, if any (to release).
fn write_variable(
    session: &mut Session<'_>,
    workspace: &str,
    variable: &Record,
    sequence: i64,
) -> Result<Option<String>, Failure> {
    let hash = pool_key(&variable.value);
    let value = variable.value.as_bytes();
    let inline = hash.is_none().then_some(value);
    let pooled = hash.is_some().then_some(value);
    let description = variable.desc.as_deref().map(str::as_bytes);
    // Every part reads the rows as they were before the statement: `replaced` is the old row's.
    let row = session.query_opt(
        "WITH pooled AS (INSERT INTO value_pool (hash, value) \
         SELECT $4::text, $15::bytea WHERE $4::text IS NOT NULL ON CONFLICT (hash) DO NOTHING), \
         replaced AS (SELECT value_hash FROM variables WHERE workspace = $1 AND name = $2), \
         unremoved AS (DELETE FROM removals WHERE workspace = $1 AND name = $2) \
         INSERT INTO variables (workspace, name, value, value_hash, kind, var_type, description, \
         tags, keep, created, updated, last_visited, reference_count, sequence) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) \
         ON CONFLICT (workspace, name) DO UPDATE SET value = excluded.value, \
         value_hash = excluded.value_hash, kind = excluded.kind, var_type = excluded.var_type, \
         description = excluded.description, tags = excluded.tags, keep = excluded.keep, \
         created = excluded.created, updated = excluded.updated, \
         last_visited = excluded.last_visited, reference_count = excluded.reference_count, \
         sequence = excluded.sequence \
         RETURNING (SELECT value_hash FROM replaced)",
        &[
            &workspace,
            &&*variable.name,
            &inline,
            &hash,
            &kind_name(variable.kind),
            &variable.var_type.as_str(),
            &description,
            &tags_text(&variable.tags),
            &variable.keep,
            &micros(variable.created),
            &micros(variable.updated),
            &micros(variable.last_visited),
            &stored_count(variable.reference_count),
            &sequence,
            &pooled,
        ],
    )?;
    match row {
        Some(row) => column(&row, 0),
        None => Ok(None),
    }
}

/// Drops pooled values nothing refers to any more.
fn release_pooled(session: &mut Session<'_>, hashes: &[String]) -> Result<(), Failure> {
    for hash in hashes {
        session.execute(
            "DELETE FROM value_pool WHERE hash = $1 \
             AND NOT EXISTS (SELECT 1 FROM variables WHERE value_hash = $1)",
            &[hash],
        )?;
    }
    Ok(())
}

fn prune_removals(
    session: &mut Session<'_>,
    workspace: &str,
    sequence: u64,
) -> Result<(), Failure> {
    let Some(below) = removals_pruned_below(sequence) else {
        return Ok(());
    };
    let below = stored_count(below);
    session.execute(
        "DELETE FROM removals WHERE workspace = $1 AND sequence < $2",
        &[&workspace, &below],
    )?;
    session
        .execute(
            "UPDATE workspaces SET pruned_below = $2 WHERE name = $1",
            &[&workspace, &below],
        )
        .map(drop)
}

pub(super) fn read_state(
    session: &mut Session<'_>,
    workspace: &str,
) -> Result<serde_json::Value, Failure> {
    match session.query_opt(
        "SELECT document FROM state WHERE workspace = $1",
        &[&workspace],
    )? {
        None => Ok(serde_json::Value::Object(serde_json::Map::new())),
        Some(row) => {
            let text: String = column(&row, 0)?;
            serde_json::from_str(&text)
                .map_err(|error| Failure::Invalid(format!("the stored state: {error}")))
        }
    }
}

impl Store for PostgresStore {
    fn location(&self) -> &Path {
        &self.display
    }

    fn load(&self, workspace: &str) -> Result<Loaded, Error> {
        self.write(|session| {
            ensure_workspace(session, workspace)?;
            let (sequence, _) = sequence_of(session, workspace, false)?;
            let variables = variables(session, workspace, None)?;
            Ok(Loaded {
                variables,
                sequence,
            })
        })
    }

    fn sequence(&self, workspace: &str) -> Result<u64, Error> {
        self.run(|session| Ok(sequence_of(session, workspace, false)?.0))
    }

    fn changes(&self, workspace: &str, since: u64) -> Result<Changes, Error> {
        self.read(|session| {
            let (sequence, pruned_below) = sequence_of(session, workspace, false)?;
            if since < pruned_below {
                return Ok(Changes {
                    written: variables(session, workspace, None)?,
                    removed: Vec::new(),
                    sequence,
                    complete: true,
                });
            }
            let written = variables(session, workspace, Some(since))?;
            let removed = session
                .query(
                    "SELECT name FROM removals WHERE workspace = $1 AND sequence > $2",
                    &[&workspace, &stored_count(since)],
                )?
                .iter()
                .map(|row| column(row, 0))
                .collect::<Result<_, _>>()?;
            Ok(Changes {
                written,
                removed,
                sequence,
                complete: false,
            })
        })
    }

    fn commit_checked(
        &self,
        workspace: &str,
        expected: Option<u64>,
        batch: &Batch,
    ) -> Result<Option<Commit>, Error> {
        let turn = expected.map_or(Turn::Any, Turn::At);
        self.commit_in_turn(workspace, turn, batch)
    }

    fn commit_unaffected(
        &self,
        workspace: &str,
        expected: u64,
        capacity: usize,
        batch: &Batch,
    ) -> Result<Option<Commit>, Error> {
        self.commit_in_turn(workspace, Turn::Unaffected { expected, capacity }, batch)
    }

    fn record_visits(&self, workspace: &str, visits: &[Visit]) -> Result<(), Error> {
        self.write(|session| {
            for visit in visits {
                session.execute(
                    "UPDATE variables SET last_visited = greatest(last_visited, $3), \
                     reference_count = greatest(reference_count, $4) \
                     WHERE workspace = $1 AND name = $2",
                    &[
                        &workspace,
                        &visit.name,
                        &micros(visit.last_visited),
                        &stored_count(visit.reference_count),
                    ],
                )?;
            }
            Ok(())
        })
    }

    fn variable(&self, workspace: &str, name: &str) -> Result<Option<Record>, Error> {
        self.run(|session| {
            session
                .query_opt(
                    &format!("{SELECT_VARIABLE} WHERE v.workspace = $1 AND v.name = $2"),
                    &[&workspace, &name],
                )?
                .as_ref()
                .map(variable_from)
                .transpose()
        })
    }

    fn is_approved(&self, workspace: &str, key: &str) -> Result<bool, Error> {
        self.run(|session| {
            Ok(session
                .query_opt(
                    "SELECT 1 FROM approvals WHERE workspace = $1 AND key = $2",
                    &[&workspace, &key],
                )?
                .is_some())
        })
    }

    fn remember_approval(&self, workspace: &str, key: &str) -> Result<(), Error> {
        self.grow(|session| {
            ensure_workspace(session, workspace)?;
            session
                .execute(
                    "INSERT INTO approvals (workspace, key, created) VALUES ($1, $2, $3) \
                     ON CONFLICT (workspace, key) DO NOTHING",
                    &[&workspace, &key, &micros(wall_clock())],
                )
                .map(drop)
        })
    }

    fn approvals(&self, workspace: &str) -> Result<Vec<String>, Error> {
        self.run(|session| {
            session
                .query(
                    "SELECT key FROM approvals WHERE workspace = $1 ORDER BY key COLLATE \"C\"",
                    &[&workspace],
                )?
                .iter()
                .map(|row| column(row, 0))
                .collect()
        })
    }

    fn tool_switches(&self, workspace: &str) -> Result<Vec<(String, bool)>, Error> {
        self.run(|session| {
            session
                .query(
                    "SELECT target, enabled FROM tool_switches WHERE workspace = $1 ORDER BY target COLLATE \"C\"",
                    &[&workspace],
                )?
                .iter()
                .map(|row| Ok((column(row, 0)?, column(row, 1)?)))
                .collect()
        })
    }

    fn set_tool_switch(&self, workspace: &str, target: &str, enabled: bool) -> Result<(), Error> {
        self.write(|session| {
            ensure_workspace(session, workspace)?;
            session
                .execute(
                    "INSERT INTO tool_switches (workspace, target, enabled) VALUES ($1, $2, $3) \
                     ON CONFLICT (workspace, target) DO UPDATE SET enabled = excluded.enabled",
                    &[&workspace, &target, &enabled],
                )
                .map(drop)?;
            self.announce(session, workspace, Kind::Switches)
        })
    }

    fn state(&self, workspace: &str) -> Result<serde_json::Value, Error> {
        self.run(|session| read_state(session, workspace))
    }

    fn update_state(
        &self,
        workspace: &str,
        change: &mut dyn FnMut(&mut serde_json::Value) -> Result<(), String>,
    ) -> Result<Result<serde_json::Value, String>, Error> {
        self.grow(|session| {
            ensure_workspace(session, workspace)?;
            // The workspace's row is the lock two writers of the document take turns on.
            sequence_of(session, workspace, true)?;
            let mut document = read_state(session, workspace)?;
            if let Err(refusal) = change(&mut document) {
                return Ok(Err(refusal));
            }
            if let Err(too_deep) = nesting::check(&document, 0) {
                return Ok(Err(format!("the state document {too_deep}")));
            }
            session.execute(
                "INSERT INTO state (workspace, document) VALUES ($1, $2) \
                 ON CONFLICT (workspace) DO UPDATE SET document = excluded.document",
                &[&workspace, &document.to_string()],
            )?;
            self.announce(session, workspace, Kind::State)?;
            Ok(Ok(document))
        })
    }

    fn workspaces(&self) -> Result<Vec<WorkspaceSummary>, Error> {
        self.run(|session| {
            session
                .query(
                    "SELECT w.name, w.sequence, \
                     (SELECT count(*) FROM variables v WHERE v.workspace = w.name), \
                     (SELECT count(*) FROM approvals a WHERE a.workspace = w.name) \
                     FROM workspaces w ORDER BY w.name COLLATE \"C\"",
                    &[],
                )?
                .iter()
                .map(|row| {
                    Ok(WorkspaceSummary {
                        name: column(row, 0)?,
                        sequence: count(column(row, 1)?),
                        variables: count(column(row, 2)?),
                        approvals: count(column(row, 3)?),
                    })
                })
                .collect()
        })
    }

    fn listen(&self) -> Option<tokio::sync::broadcast::Receiver<Heard>> {
        self.heard()
    }

    fn shared_sequence(
        &self,
        workspace: &str,
    ) -> Option<futures::future::BoxFuture<'static, Result<u64, Error>>> {
        PostgresStore::shared_sequence(self, workspace)
    }

    fn round_trips(&self) -> bool {
        true
    }

    fn delete_workspace(&self, workspace: &str) -> Result<bool, Error> {
        self.write(|session| {
            let deleted =
                session.execute("DELETE FROM workspaces WHERE name = $1", &[&workspace])?;
            session.execute(
                "DELETE FROM value_pool WHERE NOT EXISTS \
                 (SELECT 1 FROM variables v WHERE v.value_hash = value_pool.hash)",
                &[],
            )?;
            super::snapshots::free_unreferenced(session)?;
            Ok(deleted > 0)
        })
    }

    fn connections(&self) -> Option<crate::store::Connections> {
        let pool = self.pool();
        Some(crate::store::Connections {
            in_use: pool.open.saturating_sub(pool.idle.len()),
            idle: pool.idle.len(),
            max: super::CONNECTIONS,
        })
    }
}

impl PostgresStore {
    /// Commits a batch as one transaction when `turn` allows it (`None`, and nothing written,
    /// otherwise).
    fn commit_in_turn(
        &self,
        workspace: &str,
        turn: Turn,
        batch: &Batch,
    ) -> Result<Option<Commit>, Error> {
        let payload = self.payload(workspace, Kind::Variables);
        let work = |session: &mut Session<'_>| {
            // Takes the next sequence and holds the workspace's row until commit.
            let Some(stamp) = next_sequence(session, workspace, turn, batch, &payload)? else {
                return Ok(None);
            };
            let after = count(stamp);
            let before = after.saturating_sub(1);
            let mut released = Vec::new();
            for variable in &batch.written {
                released.extend(write_variable(session, workspace, variable, stamp)?);
            }
            for name in &batch.removed {
                released.extend(pooled_hash(session, workspace, name)?);
                session.execute(
                    "DELETE FROM variables WHERE workspace = $1 AND name = $2",
                    &[&workspace, name],
                )?;
                session.execute(
                    "INSERT INTO removals (workspace, name, sequence) VALUES ($1, $2, $3) \
                     ON CONFLICT (workspace, name) DO UPDATE SET sequence = excluded.sequence",
                    &[&workspace, name, &stamp],
                )?;
            }
            release_pooled(session, &released)?;
            prune_removals(session, workspace, after)?;
            Ok(Some(Commit { before, after }))
        };
        if batch.written.is_empty() {
            self.write(work)
        } else {
            self.grow(work)
        }
    }
}
