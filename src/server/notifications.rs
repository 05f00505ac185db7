//! Notifications the server sends on its own, in both protocol eras: to an initialize-era
//! session's peer (from `notifications/initialized` on), and on each 2026-07-28
//! `subscriptions/listen` stream, filtered by what the stream accepted.
//!
//! Each notification is worth its cost: `resources/list_changed` only when `resources/list`
//! would answer differently (a variable that is listed appears or goes; cached tool results are
//! not listed, so calls are silent), `resources/list_changed` and `prompts/list_changed` after a
//! rescan of the skills only when the listed skills or the prompts differ from what this client
//! was last told (a save rescans, then the watcher sees the same files again: one announcement
//! per kind), `tools/list_changed` when the enabled tool set changes, and `resources/updated`
//! for subscribed `var://` and `state://` URIs.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rmcp::model::{ResourceUpdatedNotificationParam, SubscriptionFilter};
use rmcp::service::SubscriptionSink;
use rmcp::{Peer, RoleServer};
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

use super::resources::is_listed;
use super::uri::var_uri;
use crate::app::Space;
use crate::skills::Library;
use crate::workspace::Change;

/// The URIs an initialize-era session subscribed to with `resources/subscribe`.
#[derive(Default)]
pub(super) struct Subscriptions(Mutex<HashSet<String>>);

impl Subscriptions {
    pub(super) fn insert(&self, uri: String) {
        self.lock().insert(uri);
    }

    pub(super) fn remove(&self, uri: &str) {
        self.lock().remove(uri);
    }

    fn lock(&self) -> MutexGuard<'_, HashSet<String>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Where one client's notifications go.
pub(super) enum Outlet {
    /// An initialize-era session: every kind, updates for `resources/subscribe`d URIs.
    Session(Peer<RoleServer>),
    /// A 2026-07-28 `subscriptions/listen` stream: only what it accepted.
    Stream {
        sink: SubscriptionSink,
        accepted: SubscriptionFilter,
    },
}

impl Outlet {
    fn wants(&self, kind: Kind) -> bool {
        let Self::Stream { accepted, .. } = self else {
            return true;
        };
        let flag = match kind {
            Kind::Tools => accepted.tools_list_changed,
            Kind::Resources => accepted.resources_list_changed,
            Kind::Prompts => accepted.prompts_list_changed,
        };
        flag == Some(true)
    }

    /// Whether `uri` is subscribed on this outlet.
    fn subscribed(&self, subscriptions: &Subscriptions, uri: &str) -> bool {
        match self {
            Self::Session(_) => subscriptions.lock().contains(uri),
            Self::Stream { accepted, .. } => accepted
                .resource_subscriptions
                .as_ref()
                .is_some_and(|uris| uris.iter().any(|accepted| accepted == uri)),
        }
    }

    fn state_subscriptions(&self, subscriptions: &Subscriptions) -> Vec<String> {
        let is_state = |uri: &&String| uri.starts_with("state://");
        match self {
            Self::Session(_) => subscriptions
                .lock()
                .iter()
                .filter(is_state)
                .cloned()
                .collect(),
            Self::Stream { accepted, .. } => accepted
                .resource_subscriptions
                .iter()
                .flatten()
                .filter(is_state)
                .cloned()
                .collect(),
        }
    }

    /// Sends a `list_changed` of this kind if the client wants it; `false` when it is gone.
    async fn list_changed(&self, kind: Kind) -> bool {
        if !self.wants(kind) {
            return true;
        }
        match (self, kind) {
            (Self::Session(peer), Kind::Tools) => peer.notify_tool_list_changed().await.is_ok(),
            (Self::Session(peer), Kind::Resources) => {
                peer.notify_resource_list_changed().await.is_ok()
            }
            (Self::Session(peer), Kind::Prompts) => peer.notify_prompt_list_changed().await.is_ok(),
            (Self::Stream { sink, .. }, Kind::Tools) => {
                sink.notify_tool_list_changed().await.is_ok()
            }
            (Self::Stream { sink, .. }, Kind::Resources) => {
                sink.notify_resource_list_changed().await.is_ok()
            }
            (Self::Stream { sink, .. }, Kind::Prompts) => {
                sink.notify_prompt_list_changed().await.is_ok()
            }
        }
    }

    async fn updated(&self, uri: String) -> bool {
        match self {
            Self::Session(peer) => peer
                .notify_resource_updated(ResourceUpdatedNotificationParam::new(uri))
                .await
                .is_ok(),
            Self::Stream { sink, .. } => sink.notify_resource_updated(uri).await.is_ok(),
        }
    }
}

#[derive(Clone, Copy)]
enum Kind {
    Tools,
    Resources,
    Prompts,
}

/// What this client was last told the lists hold, to leave out announcements of no change.
struct Told {
    /// Variables `resources/list` shows.
    listed: HashSet<Arc<str>>,
    /// The skills as `resources/list` shows them: name, description, size.
    skill_resources: Vec<(String, String, u64)>,
    /// The skill prompts: name and description (none unless they are listed).
    skill_prompts: Vec<(String, String)>,
    /// Whether `prompts/list` shows one prompt per skill: otherwise a rescan never changes it.
    per_skill_prompts: bool,
}

impl Told {
    fn skills(&mut self, library: &Library) -> (bool, bool) {
        let resources: Vec<(String, String, u64)> = library
            .skills()
            .iter()
            .map(|skill| (skill.name.clone(), skill.description.clone(), skill.size))
            .collect();
        let prompts: Vec<(String, String)> = resources
            .iter()
            .filter(|_| self.per_skill_prompts)
            .map(|(name, description, _)| (name.clone(), description.clone()))
            .collect();
        let resources_changed = resources != self.skill_resources;
        let prompts_changed = prompts != self.skill_prompts;
        self.skill_resources = resources;
        self.skill_prompts = prompts;
        (resources_changed, prompts_changed)
    }
}

/// Starts the task that forwards changes to an initialize-era session's client.
pub(super) fn spawn_forwarder(
    app: Arc<Space>,
    per_skill_prompts: bool,
    subscriptions: Arc<Subscriptions>,
    peer: Peer<RoleServer>,
) {
    tokio::spawn(async move {
        let outlet = Outlet::Session(peer);
        let stop = CancellationToken::new();
        forward(&app, &subscriptions, per_skill_prompts, &outlet, &stop).await;
    });
}

/// Forwards registry, workspace and library changes to `outlet` until it is gone or `stop` is
/// cancelled; `per_skill_prompts`: whether `prompts/list` follows the skills.
pub(super) async fn forward(
    app: &Space,
    subscriptions: &Subscriptions,
    per_skill_prompts: bool,
    outlet: &Outlet,
    stop: &CancellationToken,
) {
    // Subscribed before the baseline is taken, so that no change falls between the two.
    let mut revisions = app.executor().registry().subscribe();
    let mut switches = app.executor().workspace().switches().subscribe();
    let mut changes = app.executor().workspace().subscribe();
    let mut skills = app.shelf().subscribe();
    // The variables' baseline is taken before waiting for the skills scan: a write made while
    // the scan runs is already in `changes`, and must not be in the baseline too, or it would
    // never be announced.
    let listed = listed_variables(app);
    let library = app.library().await;
    let mut told = Told {
        listed,
        skill_resources: Vec::new(),
        skill_prompts: Vec::new(),
        per_skill_prompts,
    };
    told.skills(&library);
    drop(library);
    loop {
        let delivered = tokio::select! {
            () = stop.cancelled() => break,
            revision = revisions.changed() => match revision {
                Ok(()) => outlet.list_changed(Kind::Tools).await,
                Err(_) => break,
            },
            revision = switches.changed() => match revision {
                Ok(()) => outlet.list_changed(Kind::Tools).await,
                Err(_) => break,
            },
            revision = skills.changed() => match revision {
                Ok(()) => {
                    let library = app.library().await;
                    let (resources, prompts) = told.skills(&library);
                    (!resources || outlet.list_changed(Kind::Resources).await)
                        && (!prompts || outlet.list_changed(Kind::Prompts).await)
                }
                Err(_) => break,
            },
            change = changes.recv() => match change {
                Ok(change) => {
                    forward_burst(app, subscriptions, outlet, &mut told, change, &mut changes).await
                }
                Err(RecvError::Lagged(_)) => {
                    // Changes were missed: start again from what the workspace holds now.
                    told.listed = listed_variables(app);
                    outlet.list_changed(Kind::Resources).await
                }
                Err(RecvError::Closed) => break,
            },
        };
        if !delivered {
            // The client is gone; nothing more to say.
            break;
        }
    }
}

/// The variables `resources/list` shows now.
fn listed_variables(app: &Space) -> HashSet<Arc<str>> {
    app.executor()
        .workspace()
        .with_variables(|system| {
            system
                .iter()
                .filter(|variable| is_listed(variable))
                .map(|variable| variable.name.clone())
                .collect()
        })
        .unwrap_or_else(|error| {
            tracing::warn!(%error, "cannot list the variables for change notifications");
            HashSet::new()
        })
}

/// One `resources/list_changed` for a burst of variable changes (if the listing changed), and
/// `resources/updated` for each subscribed URI among them.
async fn forward_burst(
    app: &Space,
    subscriptions: &Subscriptions,
    outlet: &Outlet,
    told: &mut Told,
    first: Change,
    changes: &mut tokio::sync::broadcast::Receiver<Change>,
) -> bool {
    let mut burst = vec![first];
    while let Ok(change) = changes.try_recv() {
        burst.push(change);
    }
    let workspace = app.executor().workspace();
    let mut list_changed = false;
    let mut updated = Vec::new();
    for change in burst {
        match change {
            Change::Variable { name, .. } => {
                let now_listed = workspace
                    .peek(&name)
                    .is_some_and(|variable| is_listed(&variable));
                let was_listed = if now_listed {
                    !told.listed.insert(name.clone())
                } else {
                    told.listed.remove(&name)
                };
                list_changed |= now_listed != was_listed;
                let uri = var_uri(&name);
                if outlet.subscribed(subscriptions, &uri) && !updated.contains(&uri) {
                    updated.push(uri);
                }
            }
            // Every state:// subscription may have changed; readers see the new document.
            Change::State => {
                for uri in outlet.state_subscriptions(subscriptions) {
                    if !updated.contains(&uri) {
                        updated.push(uri);
                    }
                }
            }
        }
    }
    for uri in updated {
        if !outlet.updated(uri).await {
            return false;
        }
    }
    !list_changed || outlet.list_changed(Kind::Resources).await
}
