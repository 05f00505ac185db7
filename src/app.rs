//! The application, wired: the store, the workspace, the executor with every tool group (the
//! script tool folders' too, watched for changes), the skills shelf and its watcher, and the
//! snapshots service, built from the [`Settings`] (`app/settings.rs` makes them from the
//! command line and the file). It knows
//! nothing of MCP: the server adapter (`server.rs`) serves an [`App`] that is already built, and
//! the tests and benchmarks build theirs the same way, here.
//!
//! One process may serve several workspaces (`serve --http`, a workspace per principal): what
//! every workspace shares — the store, the registry with its tool groups, the upstream servers,
//! the skills shelf, the watchers, the JavaScript engine — is built once, here; a [`Space`] is
//! the rest, one workspace as one caller works in it: the workspace (shared by every caller of
//! that workspace), an executor (its pending MRTR questions, the caller's approvals and
//! read-only flag) and the snapshot service of that workspace.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use tokio::sync::broadcast::error::{RecvError, TryRecvError};

use crate::folders::Indexes;
use crate::folders::watch::{self, Watch};
use crate::groups;
use crate::groups::script_tools::ServedFolders;
use crate::skills::Library;
use crate::skills::shelf::Shelf;
use crate::skills::sources::{Checkout, Outcome};
use crate::snapshots::Snapshots;
use crate::store::{DurableStore, Heard, SnapshotStore, SqliteStore};
use crate::tools::{Caller, Executor, ExecutorSettings, RegisterError, Registry};
use crate::upstreams::Upstreams;
use crate::upstreams::reload::{self, Reload};
use crate::vars::{Clock, SystemClock};

pub mod names;
pub mod settings;

use crate::workspace::{self, Target, Workspace};
pub use settings::Settings;

/// Why the application could not be built.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot register tool groups: {0}")]
    Registry(#[from] RegisterError),
    #[error(transparent)]
    Store(#[from] crate::store::Error),
    #[error(transparent)]
    Workspace(#[from] workspace::Error),
    #[error("cannot serve the [[upstream]] servers: {0}")]
    Upstreams(String),
    /// A name under `[groups]` or `[tools]` that names nothing built in.
    #[error("{0}")]
    UnknownName(String),
}

/// One workspace as one caller works in it: the executor over it (with the shared registry) and
/// its snapshot service. Cheap to build; everything heavy is shared with the [`App`].
pub struct Space {
    executor: Executor,
    snapshots: Arc<Snapshots>,
    shelf: Arc<Shelf>,
}

impl Space {
    /// The pipeline every tool call passes, with the registry and the workspace it holds.
    pub fn executor(&self) -> &Executor {
        &self.executor
    }

    /// The chat state snapshots and the function library of this workspace.
    pub fn snapshots(&self) -> &Snapshots {
        &self.snapshots
    }

    /// The current skill library (shared by every workspace).
    pub fn shelf(&self) -> &Shelf {
        &self.shelf
    }

    /// The skill library as it is now, once the first scan is done.
    pub async fn library(&self) -> Arc<Library> {
        self.shelf.loaded().await
    }
}

/// What a new workspace is built from: the opened store and the configuration's limits.
struct Opener {
    /// `None` with `--store memory`: each workspace lives in memory.
    store: Option<Arc<dyn DurableStore>>,
    capacity: usize,
    clock: Arc<dyn Clock>,
    max_bytes: u64,
    settings: ExecutorSettings,
}

impl Opener {
    fn open(&self, name: &str) -> Result<Workspace, Error> {
        let workspace = match &self.store {
            None => Workspace::in_memory(name, self.capacity, Arc::clone(&self.clock)),
            Some(store) => Workspace::open(
                name,
                self.capacity,
                Arc::clone(&self.clock),
                Arc::clone(store) as Arc<dyn crate::store::Store>,
            )?,
        };
        Ok(workspace.with_max_bytes(Some(self.max_bytes)))
    }
}

/// Everything a session works with, owned: dropping it closes the store and stops the watcher.
pub struct App {
    /// The configured workspace, as the one user of a stdio server works in it.
    default: Arc<Space>,
    opener: Opener,
    /// Whether a workspace opened later keeps the snapshot tools on when it holds snapshots
    /// (the configuration does not say, and the group is off by default).
    keep_snapshot_tools: bool,
    /// Every workspace opened so far, by name (the default one too): one per process.
    workspaces: Arc<Mutex<HashMap<String, Arc<Workspace>>>>,
    /// Every space built so far besides the default, by workspace and caller.
    spaces: Mutex<HashMap<(String, Caller), Arc<Space>>>,
    shelf: Arc<Shelf>,
    /// Whether `prompts/list` shows one prompt per skill.
    skill_prompts: bool,
    /// The other MCP servers whose tools are served; dropping them stops them.
    upstreams: Arc<Upstreams>,
    /// Kept for its lifetime: dropping it stops watching the configuration file.
    _reload: Option<Reload>,
    /// Kept for its lifetime: dropping it stops watching the skill roots.
    _watch: Arc<Mutex<Option<Watch>>>,
    /// Kept for its lifetime: dropping it stops watching the tool folders.
    _tool_watch: Option<Watch>,
}

impl App {
    /// Opens the store and builds the workspace, the built-in tool groups and the skills shelf
    /// as `config` says. The skills load in the background (see [`App::library`]).
    pub fn open(config: &Settings) -> Result<Self, Error> {
        let clock: Arc<dyn Clock> = Arc::new(SystemClock::new());
        // Snapshots live in the workspace's store; with `--store memory`, in a private
        // in-memory SQLite database that ends with the process.
        let store = config.store.open(config.store_max_bytes)?;
        let snapshot_store: Arc<dyn SnapshotStore> = match &store {
            None => SqliteStore::open_in_memory()?,
            Some(store) => Arc::clone(store) as Arc<dyn SnapshotStore>,
        };
        let opener = Opener {
            store,
            capacity: config.capacity,
            clock,
            max_bytes: config.workspace_max_bytes,
            settings: config.executor.clone(),
        };
        let workspace = Arc::new(opener.open(&config.workspace)?);
        let snapshots = Arc::new(Snapshots::new(
            snapshot_store,
            config.workspace.clone(),
            config.script_limits,
        ));
        let executor = Executor::new(
            Arc::new(Registry::default()),
            Arc::clone(&workspace),
            config.executor.clone(),
        );
        // The catalog loads beside the session: `initialize` never waits for 10,000 SKILL.md
        // files; the first request that needs the skills does. Then, on the same thread, the
        // roots are watched so that skills added, edited or removed on disk are served without a
        // restart (the watch walks every folder: ≈170 ms at 10,000 skills).
        let skills_enabled = group_enabled(config, groups::skills::GROUP);
        let watch = Arc::new(Mutex::new(None));
        let slot = Arc::clone(&watch);
        let indexes = config.indexes();
        let roots = config.skill_roots();
        let fetching = first_fetches(config);
        let shelf = Shelf::load_in_background(roots, indexes.clone(), fetching, move |shelf| {
            if skills_enabled {
                start_watching(shelf, &slot);
            }
        });
        fetch_skill_sources(config, &shelf);
        let services = groups::Services {
            snapshots: &snapshots,
            shelf: &shelf,
            skill_body_limit: config.skill_body_limit,
        };
        executor.register_groups(groups::BUILT_IN_GROUPS.iter().map(|group| {
            let enabled = !group.configurable || config.group_enabled(group.name, group.enabled);
            ((group.build)(&services), enabled)
        }))?;
        let keep_snapshot_tools = !config.groups.contains_key(groups::snapshots::GROUP)
            && groups::enabled_by_default(groups::snapshots::GROUP) == Some(false);
        if keep_snapshot_tools {
            keep_snapshot_tools_on(&workspace, &snapshots);
        }
        let (upstreams, reload) = start_upstreams(config, &executor)?;
        let tool_watch = serve_tool_folders(&executor, config, indexes);
        for tool in &config.disabled_tools {
            executor.registry().disable_by_default(tool);
        }
        executor.store_registered_rules();
        let default = Arc::new(Space {
            executor,
            snapshots,
            shelf: Arc::clone(&shelf),
        });
        store_rules_of_later_groups(&default);
        let workspaces = HashMap::from([(config.workspace.clone(), workspace)]);
        let workspaces = Arc::new(Mutex::new(workspaces));
        if let Some(store) = &opener.store {
            follow_other_instances(store.as_ref(), Arc::downgrade(&workspaces));
        }
        Ok(Self {
            default,
            opener,
            keep_snapshot_tools,
            workspaces,
            spaces: Mutex::default(),
            shelf,
            skill_prompts: config.skill_prompts,
            upstreams,
            _reload: reload,
            _watch: watch,
            _tool_watch: tool_watch,
        })
    }

    /// Waits until the MCP servers started with synapse-mcp have listed their tools (or gave
    /// up, or took too long): `tools/list` waits for it, so a client's first listing has them.
    pub async fn upstreams_settled(&self) {
        self.upstreams.settled().await;
    }

    /// Whether [`App::upstreams_settled`] would answer at once.
    pub fn upstreams_are_settled(&self) -> bool {
        self.upstreams.is_settled()
    }

    /// The pipeline every tool call passes, with the registry and the workspace it holds.
    pub fn executor(&self) -> &Executor {
        self.default.executor()
    }

    /// Whether `prompts/list` shows one `skill-{name}` prompt per skill (`skill_prompts`).
    pub fn skill_prompts(&self) -> bool {
        self.skill_prompts
    }

    /// The configured workspace as the one user of a stdio server works in it.
    pub fn space(&self) -> &Arc<Space> {
        &self.default
    }

    /// `workspace` as `caller` works in it, built the first time it is asked for: the
    /// workspace is opened once for every caller, over the shared store, and its executor
    /// shares the registry (the default space, when that is what is asked for).
    pub fn space_for(&self, workspace: &str, caller: &Caller) -> Result<Arc<Space>, Error> {
        if workspace == self.default.executor.workspace().name() && *caller == Caller::default() {
            return Ok(Arc::clone(&self.default));
        }
        let key = (workspace.to_owned(), caller.clone());
        let mut spaces = self.spaces.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(space) = spaces.get(&key) {
            return Ok(Arc::clone(space));
        }
        let opened = self.workspace(workspace)?;
        let executor = Executor::new(
            Arc::clone(self.default.executor.registry()),
            opened,
            self.opener.settings.clone(),
        )
        .with_caller(caller.clone());
        turn_on_callers_groups(executor.workspace(), &caller.groups);
        executor.store_registered_rules();
        let space = Arc::new(Space {
            executor,
            snapshots: self.default.snapshots.of(workspace),
            shelf: Arc::clone(&self.shelf),
        });
        spaces.insert(key, Arc::clone(&space));
        Ok(space)
    }

    /// The workspace of this name, opened once per process.
    fn workspace(&self, name: &str) -> Result<Arc<Workspace>, Error> {
        let mut workspaces = self
            .workspaces
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(workspace) = workspaces.get(name) {
            return Ok(Arc::clone(workspace));
        }
        let workspace = Arc::new(self.opener.open(name)?);
        if self.keep_snapshot_tools {
            keep_snapshot_tools_on(&workspace, &self.default.snapshots.of(name));
        }
        workspaces.insert(name.to_owned(), Arc::clone(&workspace));
        Ok(workspace)
    }

    /// Whether the store answers (`/readyz`): the default workspace's sequence can be read.
    pub fn store_is_reachable(&self) -> bool {
        let workspace = self.default.executor.workspace();
        workspace
            .store()
            .is_none_or(|store| store.sequence(workspace.name()).is_ok())
    }

    /// The store's database connections now (`/metrics`); `None` for the memory store.
    pub fn store_connections(&self) -> Option<crate::store::Connections> {
        self.default.executor.workspace().store()?.connections()
    }

    /// The current skill library, reloaded after a save or a change on disk.
    pub fn shelf(&self) -> &Shelf {
        &self.shelf
    }

    /// The skill library as it is now (a saved skill replaces it), once the first scan is done.
    pub async fn library(&self) -> Arc<Library> {
        self.shelf.loaded().await
    }

    /// The chat state snapshots and the function library.
    pub fn snapshots(&self) -> &Snapshots {
        self.default.snapshots()
    }
}

/// Starts the configuration's upstream servers, and watches the configuration file for changes
/// to them when there is one (and a runtime to run the watch on).
fn start_upstreams(
    config: &Settings,
    executor: &Executor,
) -> Result<(Arc<Upstreams>, Option<Reload>), Error> {
    let runtime = tokio::runtime::Handle::try_current().is_ok();
    if !runtime && !config.upstreams.is_empty() {
        return Err(Error::Upstreams(
            "they need a tokio runtime, and App::open was called outside one".to_owned(),
        ));
    }
    let registry = Arc::clone(executor.registry());
    let upstreams = Upstreams::start(&config.upstreams, &registry)
        .map_err(|error| Error::Upstreams(error.to_string()))?;
    let upstreams = Arc::new(upstreams);
    let reload = match &config.file {
        Some(file) if runtime => match reload::watch(file, Arc::clone(&upstreams)) {
            Ok(reload) => Some(reload),
            Err(error) => {
                tracing::warn!("{error}; [[upstream]] changes take effect at the next start");
                None
            }
        },
        _ => None,
    };
    Ok((upstreams, reload))
}

/// Follows the changes other instances commit to the shared store, as the store hears of them
/// (`--store postgres://…`), on a thread of its own: a workspace open here catches up at once,
/// so its subscribers hear of the change through the same path as of a change made here
/// (`resources/updated`, `resources/list_changed`); the state document's subscribers hear it
/// changed; a tool switch applies here too (`tools/list_changed`).
/// Reads never rely on this: each catches up through the store's sequence first. The thread
/// ends with the store, or with the application.
fn follow_other_instances(
    store: &dyn DurableStore,
    workspaces: Weak<Mutex<HashMap<String, Arc<Workspace>>>>,
) {
    let Some(mut heard) = store.listen() else {
        return;
    };
    let following = move || {
        loop {
            let first = match heard.blocking_recv() {
                Ok(heard) => heard,
                Err(RecvError::Lagged(_)) => Heard::Missed,
                Err(RecvError::Closed) => return,
            };
            // What was heard meanwhile is caught up with once: a busy workspace's burst of
            // commits costs one catch-up, not one each.
            let mut changes = vec![first];
            loop {
                let more = match heard.try_recv() {
                    Ok(more) => more,
                    Err(TryRecvError::Lagged(_)) => Heard::Missed,
                    Err(TryRecvError::Empty | TryRecvError::Closed) => break,
                };
                if !changes.contains(&more) {
                    changes.push(more);
                }
            }
            if changes.contains(&Heard::Missed) {
                changes = vec![Heard::Missed];
            }
            let Some(workspaces) = workspaces.upgrade() else {
                return;
            };
            let mut open: Vec<(&Heard, Arc<Workspace>)> = Vec::new();
            {
                let workspaces = workspaces.lock().unwrap_or_else(PoisonError::into_inner);
                for heard in &changes {
                    match heard {
                        Heard::Missed => open.extend(
                            workspaces
                                .values()
                                .map(|workspace| (heard, Arc::clone(workspace))),
                        ),
                        Heard::Variables(name) | Heard::State(name) | Heard::Switches(name) => {
                            open.extend(
                                workspaces
                                    .get(name)
                                    .map(|workspace| (heard, Arc::clone(workspace))),
                            );
                        }
                    }
                }
            }
            drop(workspaces);
            for (heard, workspace) in open {
                if let Err(error) = changed_elsewhere(heard, &workspace) {
                    tracing::warn!(%error, workspace = workspace.name(), "cannot catch up with another instance's change");
                }
            }
        }
    };
    let spawned = std::thread::Builder::new()
        .name("other-instances".to_owned())
        .spawn(following);
    if let Err(error) = spawned {
        tracing::warn!(
            "cannot follow other instances' changes: {error}; each read still catches up"
        );
    }
}

/// Brings `workspace` up to what another instance committed, as `heard` says.
fn changed_elsewhere(heard: &Heard, workspace: &Workspace) -> Result<(), workspace::Error> {
    if matches!(heard, Heard::Variables(_) | Heard::Missed) {
        workspace.catch_up_now()?;
    }
    if matches!(heard, Heard::State(_) | Heard::Missed) {
        workspace.state_changed_elsewhere()?;
    }
    if matches!(heard, Heard::Switches(_) | Heard::Missed) {
        workspace.switches_changed_elsewhere()?;
    }
    Ok(())
}

/// Registers the groups of the script tool folders (`~/.synapse/tools` and the configured
/// ones), then watches the folders so that a tool added, edited or removed is served without a
/// restart. A folder that does not exist is not made (nor watched: one made later is served
/// from the next start).
fn serve_tool_folders(
    executor: &Executor,
    config: &Settings,
    indexes: Option<Indexes>,
) -> Option<Watch> {
    let folders = Arc::new(ServedFolders::new(
        executor.registry(),
        config.tool_roots(),
        indexes,
        config.groups.clone(),
    ));
    folders.refresh();
    let roots = folders.roots().to_vec();
    let refresh = move || folders.refresh();
    match watch::start("tools", &roots, refresh) {
        Ok(watch) => watch,
        Err(error) => {
            tracing::warn!("{error}; tools changed on disk are seen after a restart");
            None
        }
    }
}

/// Keeps the rule variables of groups that come or change while the server runs (a script
/// folder added, an upstream server reloaded) stored in the configured workspace, as the start
/// stores those of the groups it finds. Needs a tokio runtime; without one, nothing changes later.
fn store_rules_of_later_groups(space: &Arc<Space>) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let mut revisions = space.executor.registry().subscribe();
    let space = Arc::downgrade(space);
    runtime.spawn(async move {
        while revisions.changed().await.is_ok() {
            let Some(space) = space.upgrade() else {
                return;
            };
            space.executor.store_registered_rules();
        }
    });
}

/// Fetches the git skill sources that have no copy yet, on a thread of their own, and rescans
/// once they are in: the session starts and serves the other roots meanwhile, and never waits on
/// the network. With `skills_update_interval`, the thread then updates every source at that
/// interval for as long as the library is served. A failed fetch is logged and keeps the last
/// good copy.
fn fetch_skill_sources(config: &Settings, shelf: &Arc<Shelf>) {
    let sources = config.skill_sources();
    let interval = config.skills_update_interval;
    let missing: Vec<Checkout> = sources
        .iter()
        .filter(|checkout| !checkout.present())
        .cloned()
        .collect();
    if missing.is_empty() && (sources.is_empty() || interval.is_none()) {
        return;
    }
    let served = Arc::clone(shelf);
    let shelf = Arc::downgrade(shelf);
    let fetching = move || {
        if !missing.is_empty() {
            update_sources(&missing);
            if let Some(shelf) = shelf.upgrade() {
                // The first scan may still be running without the new copy: rescan after it,
                // also after a failure, so that searches stop saying the source is loading.
                drop(shelf.library());
                shelf.fetched().warm_up();
            }
        }
        let Some(interval) = interval else { return };
        loop {
            std::thread::sleep(interval);
            let Some(shelf) = shelf.upgrade() else { return };
            if update_sources(&sources) {
                shelf.reload().warm_up();
            }
        }
    };
    let spawned = std::thread::Builder::new()
        .name("skill-sources".to_owned())
        .spawn(fetching);
    if let Err(error) = spawned {
        tracing::warn!("cannot start fetching the git skill sources: {error}");
        // Nothing is on its way: searches must not say the sources are loading. (After the
        // first scan, which would otherwise install its list over this rescan.)
        drop(served.library());
        served.fetched();
    }
}

/// The git sources that have no copy yet, as written: their first fetch starts with the server.
fn first_fetches(config: &Settings) -> Vec<String> {
    config
        .skill_sources()
        .into_iter()
        .filter(|checkout| !checkout.present())
        .map(|checkout| checkout.source.spec)
        .collect()
}

/// Updates each source and logs what happened; whether any copy changed.
fn update_sources(sources: &[Checkout]) -> bool {
    let mut changed = false;
    for checkout in sources {
        let outcome = checkout.update();
        let spec = &checkout.source.spec;
        match &outcome {
            Outcome::Failed { .. } => tracing::warn!("skill source {spec}: {outcome}"),
            Outcome::Unchanged { .. } => tracing::debug!("skill source {spec}: {outcome}"),
            Outcome::Fetched { .. } | Outcome::Updated { .. } => {
                changed = true;
                tracing::info!("skill source {spec}: {outcome}");
            }
        }
    }
    changed
}

/// The chat snapshot tools were on by default before; a workspace that holds snapshots,
/// templates or functions, and has no switch of its own for them, keeps them on: the switch is
/// stored (`ToolGroups` shows it, and turns it off), and the log says so once.
fn keep_snapshot_tools_on(workspace: &Workspace, snapshots: &Snapshots) {
    let group = groups::snapshots::GROUP;
    if workspace.switches().group(group).is_some() {
        return;
    }
    match snapshots.hold_anything() {
        Ok(false) => {}
        Ok(true) => {
            let kept = workspace.set_tool_switch(Target::Group(group.to_owned()), true);
            match kept {
                Ok(()) => tracing::info!(
                    "workspace {}: the `{group}` tools stay on, as it holds chat snapshots, templates or functions (the group is off by default now; `ToolGroups` turns it off)",
                    workspace.name()
                ),
                Err(error) => tracing::warn!(%error, "cannot keep the `{group}` tools on"),
            }
        }
        Err(error) => tracing::warn!(%error, "cannot tell whether the workspace holds snapshots"),
    }
}

/// A front end's token names the groups it needs (`token add --groups`): each is switched on in
/// the workspace, without asking, unless the workspace has a switch of its own for it (a user who
/// turned it off keeps it off). Stored, so every session of the workspace sees the same tools.
fn turn_on_callers_groups(workspace: &Workspace, groups: &[String]) {
    let mut changed = false;
    for group in groups {
        if workspace.switches().group(group).is_some() {
            continue;
        }
        match workspace.set_tool_switch(Target::Group(group.clone()), true) {
            Ok(()) => changed = true,
            Err(error) => {
                tracing::warn!(%error, "cannot turn on the group `{group}` a token names");
            }
        }
    }
    if changed {
        workspace.switches().announce();
    }
}

/// Whether the built-in group `name` starts on: as the configuration's `[groups]` says, else
/// as the table of built-in groups does.
fn group_enabled(config: &Settings, name: &str) -> bool {
    config.group_enabled(name, groups::enabled_by_default(name).unwrap_or(false))
}

/// Starts watching the skill roots and keeps the watch in `slot`.
fn start_watching(shelf: Arc<Shelf>, slot: &Mutex<Option<Watch>>) {
    let roots: Vec<std::path::PathBuf> = shelf
        .roots()
        .iter()
        // Git copies change only by a fetch, which rescans by itself.
        .filter(|root| root.kind.writable())
        .map(|root| root.path.clone())
        .collect();
    let rescan = move || shelf.reload().warm_up();
    match watch::start("skills", &roots, rescan) {
        Ok(watch) => *slot.lock().unwrap_or_else(PoisonError::into_inner) = watch,
        Err(error) => {
            tracing::warn!("{error}; skills changed on disk are seen after a restart");
        }
    }
}
