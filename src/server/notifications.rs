//! Notifications the server sends on its own: `tools/list_changed` when the enabled tool set
//! changes, `resources/updated` for subscribed variables, `resources/list_changed` when
//! variables appear or disappear (coalesced: one per burst of changes), and
//! `resources/list_changed` with `prompts/list_changed` when a saved skill changes the library.

use rmcp::model::ResourceUpdatedNotificationParam;
use rmcp::{Peer, RoleServer};
use tokio::sync::broadcast::error::RecvError;

use super::Server;
use super::resources::var_uri;
use crate::workspace::{Change, VariableEvent};

/// Starts the task that forwards registry and workspace changes to this session's client.
pub(super) fn spawn_forwarder(server: Server, peer: Peer<RoleServer>) {
    let mut revisions = server.executor().registry().subscribe();
    let mut changes = server.executor().workspace().subscribe();
    let mut skills = server.inner.shelf.subscribe();
    tokio::spawn(async move {
        loop {
            let delivered = tokio::select! {
                revision = revisions.changed() => match revision {
                    Ok(()) => peer.notify_tool_list_changed().await.is_ok(),
                    Err(_) => break,
                },
                revision = skills.changed() => match revision {
                    Ok(()) => {
                        peer.notify_resource_list_changed().await.is_ok()
                            && peer.notify_prompt_list_changed().await.is_ok()
                    }
                    Err(_) => break,
                },
                change = changes.recv() => match change {
                    Ok(change) => forward(&server, &peer, change, &mut changes).await,
                    Err(RecvError::Lagged(_)) => peer.notify_resource_list_changed().await.is_ok(),
                    Err(RecvError::Closed) => break,
                },
            };
            if !delivered {
                // The client is gone; nothing more to say.
                break;
            }
        }
    });
}

async fn forward(
    server: &Server,
    peer: &Peer<RoleServer>,
    first: Change,
    changes: &mut tokio::sync::broadcast::Receiver<Change>,
) -> bool {
    let mut burst = vec![first];
    while let Ok(change) = changes.try_recv() {
        burst.push(change);
    }
    let mut list_changed = false;
    let mut updated = Vec::new();
    for change in burst {
        match change {
            Change::Variable { name, event } => {
                list_changed |= event != VariableEvent::Updated;
                updated.push(var_uri(&name));
            }
            // Every state:// subscription may have changed; readers see the new document.
            Change::State => updated.extend(
                server
                    .subscriptions()
                    .iter()
                    .filter(|uri| uri.starts_with("state://"))
                    .cloned(),
            ),
        }
    }
    for uri in updated {
        let subscribed = server.subscriptions().contains(&uri);
        if subscribed
            && peer
                .notify_resource_updated(ResourceUpdatedNotificationParam::new(uri))
                .await
                .is_err()
        {
            return false;
        }
    }
    !list_changed || peer.notify_resource_list_changed().await.is_ok()
}
