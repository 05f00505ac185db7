//! How processes sharing one PostgreSQL database hear of each other's changes: each committing
//! transaction that changes a workspace's variables, its state document or its tool switches
//! also sends a `NOTIFY` on one channel (delivered only if the transaction commits), and each
//! store `LISTEN`s on that channel on a connection of its own, outside the pool. What it hears
//! goes out as [`Heard`] to whoever called [`Store::listen`](crate::store::Store::listen).
//!
//! The payload names the sending process (so a process ignores its own changes), the workspace
//! and what kind of thing changed, never the changed rows: a listener reads those from the store
//! through the change sequence, which stays the authority (a notification lost with a connection
//! costs a catch-up, never a stale read), and a payload stays far below PostgreSQL's 8,000-byte
//! limit however many variables a commit wrote. When the listening connection drops, it is
//! opened again (a second later, then less often, up to every 30 seconds), and each time
//! listening begins a [`Heard::Missed`] goes out, so that listeners catch up on what was sent
//! meanwhile.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use serde_json::{Value, json};
use tokio::sync::broadcast;
use tokio_postgres::{AsyncMessage, NoTls};

use super::{Failure, PostgresStore, Session};
use crate::store::Heard;

/// The channel every process notifies and listens on.
pub(super) const CHANNEL: &str = "synapse_changes";

/// The listening connection's `application_name`, as `pg_stat_activity` shows it.
pub(crate) const APPLICATION_NAME: &str = "synapse-mcp listener";

/// Changes heard but not yet taken by a slow listener; past it, the listener is told it lagged.
const BACKLOG: usize = 1024;

/// The longest wait between two attempts to listen again.
const LONGEST_RETRY: Duration = Duration::from_secs(30);

/// What changed in a workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Variables,
    State,
    Switches,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Self::Variables => "variables",
            Self::State => "state",
            Self::Switches => "switches",
        }
    }
}

impl PostgresStore {
    /// What tells the other processes that `workspace` changed.
    pub(super) fn payload(&self, workspace: &str, kind: Kind) -> String {
        json!({
            "instance": self.instance,
            "workspace": workspace,
            "kind": kind.name(),
        })
        .to_string()
    }

    /// Tells the other processes, when the transaction commits, that `workspace` changed.
    /// (A commit of variables does it in the statement that takes the sequence.)
    pub(super) fn announce(
        &self,
        session: &mut Session<'_>,
        workspace: &str,
        kind: Kind,
    ) -> Result<(), Failure> {
        let payload = self.payload(workspace, kind);
        session
            .execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &payload])
            .map(drop)
    }

    /// The changes other processes commit; listening starts with the first call.
    pub(super) fn heard(&self) -> Option<broadcast::Receiver<Heard>> {
        let runtime = self.runtime.as_ref()?;
        let sender = self.heard.get_or_init(|| {
            let (sender, _) = broadcast::channel(BACKLOG);
            let config = self.config.clone();
            let instance = Arc::clone(&self.instance);
            runtime.spawn(listen(config, instance, sender.clone()));
            sender
        });
        Some(sender.subscribe())
    }
}

/// Listens for as long as the store's runtime runs, opening the connection again when it drops.
async fn listen(
    mut config: tokio_postgres::Config,
    instance: Arc<str>,
    sender: broadcast::Sender<Heard>,
) {
    config.application_name(APPLICATION_NAME);
    let mut retry = Duration::from_secs(1);
    loop {
        match listen_once(&config, &instance, &sender).await {
            Ok(()) => {
                tracing::warn!("the connection listening for other instances' changes ended");
                retry = Duration::from_secs(1);
            }
            Err(error) => {
                tracing::warn!(%error, "cannot listen for other instances' changes");
            }
        }
        tokio::time::sleep(retry).await;
        retry = (retry * 2).min(LONGEST_RETRY);
    }
}

/// One listening connection, from `LISTEN` until it ends.
async fn listen_once(
    config: &tokio_postgres::Config,
    instance: &str,
    sender: &broadcast::Sender<Heard>,
) -> Result<(), tokio_postgres::Error> {
    let (client, mut connection) = config.connect(NoTls).await?;
    let (notifications, mut received) = futures::channel::mpsc::unbounded();
    let driving = tokio::spawn(async move {
        let mut messages =
            futures::stream::poll_fn(move |context| connection.poll_message(context));
        while let Some(message) = messages.next().await {
            match message {
                Ok(AsyncMessage::Notification(notification)) => {
                    if notifications
                        .unbounded_send(notification.payload().to_owned())
                        .is_err()
                    {
                        break;
                    }
                }
                Ok(_) => {}
                Err(error) => {
                    tracing::warn!(%error, "the listening connection failed");
                    break;
                }
            }
        }
    });
    let listening = client.batch_execute(&format!("LISTEN {CHANNEL}")).await;
    if let Err(error) = listening {
        driving.abort();
        return Err(error);
    }
    tracing::debug!("listening for other instances' changes");
    // Whatever was sent before this point went unheard.
    sender.send(Heard::Missed).ok();
    while let Some(payload) = received.next().await {
        if let Some(heard) = parse(&payload, instance) {
            // Sending fails only when nobody listens, which is normal.
            sender.send(heard).ok();
        }
    }
    drop(client);
    Ok(())
}

/// What a payload says, unless it is this process's own change (or unreadable, which is logged).
fn parse(payload: &str, instance: &str) -> Option<Heard> {
    let value: Value = match serde_json::from_str(payload) {
        Ok(value) => value,
        Err(error) => {
            tracing::warn!(%error, payload, "an unreadable change notification");
            return None;
        }
    };
    if value["instance"].as_str() == Some(instance) {
        return None;
    }
    let workspace = value["workspace"].as_str()?.to_owned();
    match value["kind"].as_str()? {
        "variables" => Some(Heard::Variables(workspace)),
        "state" => Some(Heard::State(workspace)),
        "switches" => Some(Heard::Switches(workspace)),
        other => {
            tracing::warn!(kind = other, "a change notification of an unknown kind");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_payload_names_the_workspace_and_kind_and_own_changes_are_ignored() {
        let payload = json!({"instance": "b", "workspace": "team", "kind": "state"}).to_string();
        assert_eq!(parse(&payload, "a"), Some(Heard::State("team".to_owned())));
        assert_eq!(parse(&payload, "b"), None);
        let unknown = json!({"instance": "b", "workspace": "team", "kind": "?"}).to_string();
        assert_eq!(parse(&unknown, "a"), None);
        assert_eq!(parse("not json", "a"), None);
    }
}
