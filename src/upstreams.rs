//! Other MCP servers as tool groups (`docs/upstreams.md`): synapse-mcp starts each
//! `[[upstream]]` of the configuration as its client and serves its tools as the group of that
//! name, `{name}__{tool}`, through the executor like any tool of ours. This module and `server`
//! are the two that know MCP: `server` is our server side, this is our client side.
//!
//! - `upstreams/supervisor.rs` keeps one server running: start, connect, list, restart;
//! - `upstreams/wire.rs` reads and writes the server's stdio, bounding what it sends (message
//!   size, requests per second and in flight);
//! - `upstreams/link.rs` is one server as its tools see it (up or why not, the calls in flight)
//!   and the client side of its connection, which routes what the server sends;
//! - `upstreams/tool.rs` turns a listing into a tool group and a call into a `tools/call`;
//! - `upstreams/names.rs` namespaces the tool names;
//! - `upstreams/reload.rs` watches the configuration file and applies its `[[upstream]]` tables.
//!
//! The registry's revision is held while the servers of one event start — at start, at a
//! reload — so that clients get one `tools/list_changed` for each event.

mod link;
mod names;
pub mod reload;
pub mod settings;
mod supervisor;
mod tool;
pub mod wire;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::{oneshot, watch};

use crate::tools::{GroupState, Origin, Registry, RegistryError, ToolGroup};
use settings::Upstream;
use supervisor::Supervised;

/// How long the first listings of starting servers are waited for, together: `tools/list`
/// waits for them at most this long, and a server that comes later announces its tools with a
/// `tools/list_changed` of its own.
const SETTLE: Duration = Duration::from_secs(10);

/// The upstream servers of the configuration, each supervised.
pub struct Upstreams {
    registry: Arc<Registry>,
    running: Mutex<BTreeMap<String, Supervised>>,
    /// `true` once the first listings are in the registry (or 10 s passed).
    settled: watch::Receiver<bool>,
}

impl Upstreams {
    /// Registers a group for each upstream (empty until it lists its tools, so that switches
    /// and `ToolGroups` see it from the start) and starts them; the changes of their first
    /// tries reach clients as one `tools/list_changed`. Needs a tokio runtime when there are
    /// any.
    pub fn start(upstreams: &[Upstream], registry: &Arc<Registry>) -> Result<Self, RegistryError> {
        let (done, settled) = watch::channel(upstreams.is_empty());
        let this = Self {
            registry: Arc::clone(registry),
            running: Mutex::default(),
            settled,
        };
        if upstreams.is_empty() {
            return Ok(this);
        }
        for upstream in upstreams {
            registry.register(empty_group(upstream), upstream.enabled)?;
        }
        let held = registry.hold();
        let firsts = this.supervise(upstreams.to_vec());
        tokio::spawn(async move {
            first_tries(firsts).await;
            drop(held);
            done.send(true).ok();
        });
        Ok(this)
    }

    /// Whether the servers started with synapse-mcp have listed their tools (or gave up, or
    /// 10 s passed).
    pub fn is_settled(&self) -> bool {
        *self.settled.borrow()
    }

    /// Waits until the servers started with synapse-mcp have listed their tools, or gave up,
    /// or 10 s passed; at once after that.
    pub async fn settled(&self) {
        if self.is_settled() {
            return;
        }
        let mut settled = self.settled.clone();
        if let Err(error) = settled.wait_for(|settled| *settled).await {
            tracing::debug!(%error, "the first listings were never published");
        }
    }

    /// Makes the running servers those of `upstreams`: the ones gone are stopped and their
    /// groups removed, new and changed ones (re)started; every group change reaches clients as
    /// one `tools/list_changed`, once the new servers listed their tools (or 10 s passed).
    pub async fn apply(&self, upstreams: Vec<Upstream>) {
        let held = self.registry.hold();
        let (gone, starting) = {
            let mut running = self.running();
            let gone: Vec<String> = running
                .keys()
                .filter(|name| !upstreams.iter().any(|upstream| &upstream.name == *name))
                .cloned()
                .collect();
            let starting: Vec<Upstream> = upstreams
                .into_iter()
                .filter(|upstream| {
                    running.get(&upstream.name).map(|running| &running.upstream) != Some(upstream)
                })
                .collect();
            for name in gone
                .iter()
                .chain(starting.iter().map(|upstream| &upstream.name))
            {
                // Dropping a supervisor stops it and kills its processes.
                running.remove(name);
            }
            (gone, starting)
        };
        if gone.is_empty() && starting.is_empty() {
            return;
        }
        let names: Vec<&str> = starting
            .iter()
            .map(|upstream| upstream.name.as_str())
            .collect();
        tracing::info!(stopped = ?gone, starting = ?names, "applying the changed [[upstream]] tables");
        for name in &gone {
            self.registry.remove(name);
        }
        for upstream in &starting {
            self.registry.set_default(&upstream.name, upstream.enabled);
        }
        first_tries(self.supervise(starting)).await;
        drop(held);
    }

    /// Starts a supervisor for each upstream; gives where each tells that its first try ended.
    fn supervise(&self, upstreams: Vec<Upstream>) -> Vec<oneshot::Receiver<()>> {
        let mut running = self.running();
        upstreams
            .into_iter()
            .map(|upstream| {
                let (first, tried) = oneshot::channel();
                let name = upstream.name.clone();
                let supervised = Supervised::start(upstream, Arc::clone(&self.registry), first);
                self.registry
                    .watch_state(&name, Arc::clone(&supervised.link) as Arc<dyn GroupState>);
                running.insert(name, supervised);
                tried
            })
            .collect()
    }

    fn running(&self) -> MutexGuard<'_, BTreeMap<String, Supervised>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Waits for the first tries to end, at most `SETTLE` in all.
async fn first_tries(tries: Vec<oneshot::Receiver<()>>) {
    let all = futures::future::join_all(tries);
    if tokio::time::timeout(SETTLE, all).await.is_err() {
        tracing::info!(
            "some MCP servers are still starting after {} s; their tools come when they are ready",
            SETTLE.as_secs()
        );
    }
}

/// The group of a server whose tools are not known yet, with the rules its table declares.
pub(super) fn empty_group(upstream: &Upstream) -> ToolGroup {
    ToolGroup {
        name: upstream.name.clone(),
        origin: Origin::Upstream(upstream.name.clone()),
        about: None,
        tools: Vec::new(),
        rule_prompt: None,
        rules: upstream.rules.clone(),
    }
}
