//! The registry of tool groups, shared by every workspace the process serves, and what is
//! enabled. A group is registered with a default (from the configuration); a workspace's
//! switches (`ToolGroups`, see [`crate::workspace::Switches`]) win over it in that workspace, also
//! for a group that appears later (a script folder, an upstream server): a [`View`] is the
//! registry as one workspace sees it. Groups may be replaced while the server runs (a tool
//! folder edited, an upstream re-listing its tools). Every change to the registered groups bumps
//! a revision, and every switch that changes a workspace's tool set bumps that workspace's; the
//! server turns both into `notifications/tools/list_changed`.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use tokio::sync::watch;

use super::{Audience, Tool, ToolError, ToolGroup};
use crate::text::nearest;
use crate::workspace::{self, Target, Workspace};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    #[error("tool `{name}` is registered twice (groups `{first}` and `{second}`)")]
    DuplicateTool {
        name: String,
        first: String,
        second: String,
    },
    #[error("a tool group named `{0}` is registered already")]
    DuplicateGroup(String),
}

/// Says whether the source of a group's tools can serve them now (an MCP server that is not
/// running): `None` when it can, else why not, in words for the model.
pub trait GroupState: Send + Sync {
    fn unavailable(&self) -> Option<String>;
}

struct Entry {
    group: Arc<ToolGroup>,
    /// Whether the group is on when no switch says otherwise.
    default: bool,
}

#[derive(Default)]
struct Inner {
    entries: Vec<Entry>,
    /// Tools off unless a workspace switches them on (the configuration's `disabled_tools`).
    disabled_tools: HashSet<String>,
    /// What says, for a group whose source may be down, whether it is.
    states: HashMap<String, Arc<dyn GroupState>>,
}

/// A group as `ToolGroups` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupOverview {
    pub name: String,
    pub origin: super::Origin,
    pub enabled: bool,
    /// What the group offers, in one line, when it says.
    pub about: Option<&'static str>,
    pub tools: Vec<ToolOverview>,
    /// Why its tools cannot be served now (its MCP server is not running), when so.
    pub unavailable: Option<String>,
}

/// A tool as `ToolGroups` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOverview {
    pub name: String,
    /// Its own name where it comes from, when it is served under another.
    pub origin_name: Option<String>,
    /// Whether it is switched on (it is listed when its group is on too).
    pub enabled: bool,
}

/// Holds the registry's revision while it lives ([`Registry::hold`]).
pub struct Held(Arc<Registry>);

impl Drop for Held {
    fn drop(&mut self) {
        self.0.release();
    }
}

/// Tool groups in registration order, with their enabled state.
pub struct Registry {
    inner: RwLock<Inner>,
    revision: watch::Sender<u64>,
    /// How many [`Registry::batch`]es are running; while one is, changes only mark `deferred`.
    batches: AtomicUsize,
    deferred: AtomicBool,
}

impl Default for Registry {
    fn default() -> Self {
        Self {
            inner: RwLock::default(),
            revision: watch::Sender::new(0),
            batches: AtomicUsize::new(0),
            deferred: AtomicBool::new(false),
        }
    }
}

impl Registry {
    /// Adds a group, on or off by default; its name and its tools' names must be new.
    pub fn register(&self, group: ToolGroup, enabled: bool) -> Result<(), RegistryError> {
        let mut inner = self.write();
        if inner.position(&group.name).is_some() {
            return Err(RegistryError::DuplicateGroup(group.name));
        }
        inner.insert(None, group, enabled)?;
        drop(inner);
        self.bump();
        Ok(())
    }

    /// Adds a group, or replaces the one of the same name (its tools re-read), keeping where it
    /// stands in the list and its default; its tools' names must not be another group's.
    pub fn replace(&self, group: ToolGroup, enabled: bool) -> Result<(), RegistryError> {
        let mut inner = self.write();
        if let Some(position) = inner.position(&group.name) {
            let old = inner.entries.remove(position);
            if let Err(error) = inner.insert(Some(position), group, old.default) {
                inner.entries.insert(position, old);
                return Err(error);
            }
        } else {
            inner.insert(None, group, enabled)?;
        }
        drop(inner);
        self.bump();
        Ok(())
    }

    /// Tells the registry what says whether group `name`'s source is up (see [`GroupState`]).
    pub fn watch_state(&self, name: &str, state: Arc<dyn GroupState>) {
        self.write().states.insert(name.to_owned(), state);
    }

    /// Why group `name`'s tools cannot be served now, when they cannot.
    pub fn unavailable(&self, name: &str) -> Option<String> {
        let state = self.read().states.get(name).cloned()?;
        state.unavailable()
    }

    /// Removes a group; returns whether there was one of that name.
    pub fn remove(&self, name: &str) -> bool {
        let mut inner = self.write();
        inner.states.remove(name);
        let Some(position) = inner.position(name) else {
            return false;
        };
        inner.entries.remove(position);
        drop(inner);
        self.bump();
        true
    }

    /// The group a registered tool belongs to.
    pub fn group_of(&self, tool: &str) -> Option<String> {
        self.read().group_of(tool)
    }

    /// Leaves a tool off unless a workspace switches it on (the configuration's
    /// `disabled_tools`).
    pub fn disable_by_default(&self, name: &str) {
        if self.write().disabled_tools.insert(name.to_owned()) {
            self.bump();
        }
    }

    /// The registry as `workspace` sees it, through its switches, for the model
    /// ([`View::for_audience`] widens it).
    pub fn view<'a>(&'a self, workspace: &'a Workspace) -> View<'a> {
        View {
            registry: self,
            workspace,
            audience: Audience::Model,
        }
    }

    /// Every registered group, enabled or not.
    pub fn groups(&self) -> Vec<Arc<ToolGroup>> {
        let inner = self.read();
        inner
            .entries
            .iter()
            .map(|entry| Arc::clone(&entry.group))
            .collect()
    }

    /// A receiver that sees the revision change whenever the registered groups, or their
    /// defaults, changed.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.revision.subscribe()
    }

    /// Runs `changes` and bumps the revision once at the end, if anything changed: a change made
    /// of several steps reaches each client as one `tools/list_changed`.
    pub fn batch<T>(&self, changes: impl FnOnce(&Self) -> T) -> T {
        self.batches.fetch_add(1, Ordering::SeqCst);
        let answer = changes(self);
        self.release();
        answer
    }

    /// Holds the revision until the guard is dropped, then bumps it once if anything changed
    /// meanwhile: for a change whose steps come from several tasks over a while (upstream
    /// servers listing their tools after a configuration reload).
    pub fn hold(self: &Arc<Self>) -> Held {
        self.batches.fetch_add(1, Ordering::SeqCst);
        Held(Arc::clone(self))
    }

    fn release(&self) {
        if self.batches.fetch_sub(1, Ordering::SeqCst) == 1
            && self.deferred.swap(false, Ordering::SeqCst)
        {
            self.bump();
        }
    }

    /// Sets the default of a registered group (the configuration's `enabled` changed); a
    /// workspace's switch still wins there.
    pub fn set_default(&self, name: &str, enabled: bool) {
        let mut inner = self.write();
        let Some(position) = inner.position(name) else {
            return;
        };
        let before = std::mem::replace(&mut inner.entries[position].default, enabled);
        drop(inner);
        if before != enabled {
            self.bump();
        }
    }

    fn bump(&self) {
        if self.batches.load(Ordering::SeqCst) > 0 {
            self.deferred.store(true, Ordering::SeqCst);
            return;
        }
        self.revision.send_modify(|revision| *revision += 1);
    }

    fn read(&self) -> RwLockReadGuard<'_, Inner> {
        self.inner
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, Inner> {
        self.inner
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Inner {
    /// Puts `group` at `position` (last when `None`) once its tools' names are checked.
    fn insert(
        &mut self,
        position: Option<usize>,
        group: ToolGroup,
        default: bool,
    ) -> Result<(), RegistryError> {
        self.check_tools(&group)?;
        let entry = Entry {
            group: Arc::new(group),
            default,
        };
        match position {
            Some(position) => self.entries.insert(position, entry),
            None => self.entries.push(entry),
        }
        Ok(())
    }

    fn position(&self, group: &str) -> Option<usize> {
        self.entries
            .iter()
            .position(|entry| entry.group.name == group)
    }

    /// Refuses a group with a tool name another group has.
    fn check_tools(&self, group: &ToolGroup) -> Result<(), RegistryError> {
        for tool in &group.tools {
            let name = &tool.definition().name;
            if let Some(first) = self.group_of(name) {
                return Err(RegistryError::DuplicateTool {
                    name: name.clone(),
                    first,
                    second: group.name.clone(),
                });
            }
        }
        Ok(())
    }

    fn group_of(&self, tool: &str) -> Option<String> {
        self.registered(tool)
            .map(|(entry, _)| entry.group.name.clone())
    }

    /// The registered tool of that name, on or off, with the entry of its group.
    fn registered(&self, tool: &str) -> Option<(&Entry, &Arc<dyn Tool>)> {
        self.entries.iter().find_map(|entry| {
            let found = entry
                .group
                .tools
                .iter()
                .find(|t| t.definition().name == tool)?;
            Some((entry, found))
        })
    }
}

/// The registry as one workspace sees it, for one audience: its switches win over the
/// defaults, and a tool its audience may not reach (a view's own, for the model) is not there.
pub struct View<'a> {
    registry: &'a Registry,
    workspace: &'a Workspace,
    audience: Audience,
}

impl View<'_> {
    /// This view for `audience`.
    #[must_use]
    pub fn for_audience(self, audience: Audience) -> Self {
        Self { audience, ..self }
    }

    /// Whether this view's audience may see and call `tool`.
    fn reaches(&self, tool: &Arc<dyn Tool>) -> bool {
        tool.definition().visibility.reaches(self.audience)
    }

    /// Every group with its tools and whether each is on, in registration order.
    pub fn overview(&self) -> Vec<GroupOverview> {
        let inner = self.registry.read();
        inner
            .entries
            .iter()
            .map(|entry| GroupOverview {
                name: entry.group.name.clone(),
                origin: entry.group.origin.clone(),
                enabled: self.group_is_on(entry),
                about: entry.group.about,
                tools: entry
                    .group
                    .tools
                    .iter()
                    .filter(|tool| self.reaches(tool))
                    .map(|tool| {
                        let definition = tool.definition();
                        ToolOverview {
                            enabled: self.tool_is_on(&inner, &definition.name),
                            name: definition.name.clone(),
                            origin_name: definition.origin_name.clone(),
                        }
                    })
                    .collect(),
                unavailable: inner
                    .states
                    .get(&entry.group.name)
                    .and_then(|state| state.unavailable()),
            })
            .collect()
    }

    /// Why the group a tool name points to (`{group}__{tool}`) cannot serve it now, when the
    /// tool is unknown because of that.
    pub fn unavailable_for(&self, tool: &str) -> Option<String> {
        let (group, _) = tool.split_once("__")?;
        self.registry.unavailable(group)
    }

    /// The groups that are enabled, in registration order.
    pub fn enabled_groups(&self) -> Vec<Arc<ToolGroup>> {
        self.groups_switched(true)
    }

    /// The groups that are off, in registration order.
    pub fn disabled_groups(&self) -> Vec<Arc<ToolGroup>> {
        self.groups_switched(false)
    }

    fn groups_switched(&self, on: bool) -> Vec<Arc<ToolGroup>> {
        let inner = self.registry.read();
        inner
            .entries
            .iter()
            .filter(|entry| self.group_is_on(entry) == on)
            .map(|entry| Arc::clone(&entry.group))
            .collect()
    }

    /// The tools a client may see and call: those of enabled groups, plus the always-listed
    /// tools (`ReadVar`, `ListVars`) whenever any group is enabled. Sorted by name.
    pub fn enabled_tools(&self) -> Vec<Arc<dyn Tool>> {
        let inner = self.registry.read();
        let any_enabled = self.any_group_is_on(&inner);
        let mut tools: Vec<Arc<dyn Tool>> =
            inner
                .entries
                .iter()
                .flat_map(|entry| {
                    let enabled = self.group_is_on(entry);
                    entry.group.tools.iter().filter(move |tool| {
                        enabled || (any_enabled && tool.definition().always_listed)
                    })
                })
                .filter(|tool| self.reaches(tool))
                .filter(|tool| self.tool_is_on(&inner, &tool.definition().name))
                .cloned()
                .collect();
        tools.sort_by(|a, b| a.definition().name.cmp(&b.definition().name));
        tools
    }

    /// The enabled tool of that name.
    pub fn find(&self, name: &str) -> Option<Arc<dyn Tool>> {
        let inner = self.registry.read();
        if !self.tool_is_on(&inner, name) {
            return None;
        }
        let (entry, tool) = inner.registered(name)?;
        let listed = self.group_is_on(entry)
            || (self.any_group_is_on(&inner) && tool.definition().always_listed);
        (listed && self.reaches(tool)).then(|| Arc::clone(tool))
    }

    /// The group a registered tool this view's audience may reach belongs to, on or off.
    pub fn group_of(&self, tool: &str) -> Option<String> {
        let inner = self.registry.read();
        let (entry, found) = inner.registered(tool)?;
        self.reaches(found).then(|| entry.group.name.clone())
    }

    /// The group `target` concerns: the group itself, or the group of the tool. A name that
    /// is not registered is refused, naming the nearest.
    pub fn group_of_target(&self, target: &Target) -> Result<String, ToolError> {
        match target {
            Target::Group(name) => {
                let groups: Vec<String> = (self.overview().into_iter())
                    .map(|overview| overview.name)
                    .collect();
                if groups.iter().any(|group| group == name) {
                    return Ok(name.clone());
                }
                Err(unknown("group", name, &groups))
            }
            Target::Tool(name) => self.group_of(name).ok_or_else(|| {
                let tools: Vec<String> = (self.overview().into_iter())
                    .flat_map(|overview| overview.tools.into_iter().map(|tool| tool.name))
                    .collect();
                unknown("tool", name, &tools)
            }),
        }
    }

    /// Switches a group or a tool on or off in this workspace, durably; announces it to the
    /// workspace's subscribers when the enabled tool set changed, and says whether it did.
    pub fn switch(&self, target: Target, enabled: bool) -> Result<bool, workspace::Error> {
        let before = self.enabled_names();
        self.workspace.set_tool_switch(target, enabled)?;
        let changed = self.enabled_names() != before;
        if changed {
            self.workspace.switches().announce();
        }
        Ok(changed)
    }

    fn enabled_names(&self) -> Vec<String> {
        self.enabled_tools()
            .iter()
            .map(|tool| tool.definition().name.clone())
            .collect()
    }

    fn group_is_on(&self, entry: &Entry) -> bool {
        self.workspace
            .switches()
            .group(&entry.group.name)
            .unwrap_or(entry.default)
    }

    fn tool_is_on(&self, inner: &Inner, name: &str) -> bool {
        self.workspace
            .switches()
            .tool(name)
            .unwrap_or_else(|| !inner.disabled_tools.contains(name))
    }

    /// Whether a group with tools is on (a group without tools, the built-in `Agent` rules,
    /// does not count).
    fn any_group_is_on(&self, inner: &Inner) -> bool {
        inner
            .entries
            .iter()
            .any(|entry| self.group_is_on(entry) && !entry.group.tools.is_empty())
    }
}

/// A name that is not registered, with the nearest one known.
fn unknown(kind: &str, name: &str, known: &[String]) -> ToolError {
    let suggestion = nearest(name, known.iter().map(String::as_str))
        .map(|near| format!("did you mean `{near}`? "))
        .unwrap_or_default();
    ToolError::invalid(format!(
        "there is no {kind} `{name}`; {suggestion}`action: \"list\"` shows every group and tool"
    ))
}

#[cfg(test)]
mod tests {
    use futures::future::BoxFuture;
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::tools::{Annotations, Origin, ToolCall, ToolDefinition, ToolError, ToolOutput};
    use crate::vars::SystemClock;

    /// A tool that is only a name.
    struct Named(ToolDefinition);

    impl Tool for Named {
        fn definition(&self) -> &ToolDefinition {
            &self.0
        }

        fn execute<'a>(&'a self, _: ToolCall<'a>) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
            Box::pin(async { Ok(ToolOutput::Text(String::new())) })
        }
    }

    fn group(name: &str, tools: &[&str]) -> ToolGroup {
        ToolGroup {
            name: name.to_owned(),
            origin: Origin::Upstream(name.to_owned()),
            about: None,
            tools: tools
                .iter()
                .map(|tool| {
                    let definition =
                        ToolDefinition::new::<serde_json::Value>(tool, "", Annotations::default());
                    Arc::new(Named(definition)) as Arc<dyn Tool>
                })
                .collect(),
            rule_prompt: None,
            rules: Vec::new(),
        }
    }

    fn workspace() -> Workspace {
        Workspace::in_memory("test", 10, Arc::new(SystemClock::new()))
    }

    fn listed(registry: &Registry, workspace: &Workspace) -> Vec<String> {
        registry
            .view(workspace)
            .enabled_tools()
            .iter()
            .map(|tool| tool.definition().name.clone())
            .collect()
    }

    fn group_switch(name: &str) -> Target {
        Target::Group(name.to_owned())
    }

    #[test]
    fn a_replaced_group_keeps_its_place_and_its_switch() {
        let registry = Registry::default();
        let workspace = workspace();
        registry.register(group("a", &["A1"]), true).unwrap();
        registry.register(group("b", &["B1"]), true).unwrap();
        let view = registry.view(&workspace);
        view.switch(group_switch("a"), false).unwrap();

        registry.replace(group("a", &["A1", "A2"]), true).unwrap();

        let names: Vec<String> = view.overview().into_iter().map(|g| g.name).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(listed(&registry, &workspace), ["B1"]);
        view.switch(group_switch("a"), true).unwrap();
        assert_eq!(listed(&registry, &workspace), ["A1", "A2", "B1"]);
    }

    #[test]
    fn a_replacement_that_clashes_keeps_the_old_group() {
        let registry = Registry::default();
        registry.register(group("a", &["A1"]), true).unwrap();
        registry.register(group("b", &["B1"]), true).unwrap();

        let clash = registry.replace(group("a", &["B1"]), true).unwrap_err();

        assert_eq!(
            clash.to_string(),
            "tool `B1` is registered twice (groups `b` and `a`)"
        );
        assert_eq!(listed(&registry, &workspace()), ["A1", "B1"]);
    }

    #[test]
    fn a_switch_waits_for_its_group() {
        let registry = Registry::default();
        let workspace = workspace();
        let view = registry.view(&workspace);
        assert!(!view.switch(group_switch("later"), false).unwrap());
        registry.register(group("now", &["N"]), true).unwrap();
        registry.register(group("later", &["L"]), true).unwrap();
        assert_eq!(listed(&registry, &workspace), ["N"]);
        assert!(registry.remove("later"));
        assert!(!registry.remove("later"));
    }

    #[test]
    fn a_switch_holds_in_its_own_workspace_only() {
        let registry = Registry::default();
        registry.register(group("a", &["A1"]), true).unwrap();
        registry.register(group("b", &["B1"]), true).unwrap();
        registry.disable_by_default("B1");
        let (one, other) = (workspace(), workspace());

        registry
            .view(&one)
            .switch(group_switch("a"), false)
            .unwrap();
        registry
            .view(&one)
            .switch(Target::Tool("B1".to_owned()), true)
            .unwrap();

        assert_eq!(listed(&registry, &one), ["B1"]);
        assert_eq!(listed(&registry, &other), ["A1"]);
    }

    #[test]
    fn a_batch_of_changes_bumps_the_revision_once() {
        let registry = Registry::default();
        registry.register(group("a", &["A1"]), true).unwrap();
        let revisions = registry.subscribe();
        let before = *revisions.borrow();
        registry.batch(|registry| {
            registry.replace(group("a", &["A2"]), true).unwrap();
            registry.register(group("b", &["B1"]), true).unwrap();
            assert!(registry.remove("b"));
            assert_eq!(*revisions.borrow(), before);
        });
        assert_eq!(*revisions.borrow(), before + 1);
        registry.batch(|_| {});
        assert_eq!(*revisions.borrow(), before + 1);
        assert_eq!(listed(&registry, &workspace()), ["A2"]);
    }

    #[test]
    fn only_a_switch_that_changes_the_tool_set_is_announced() {
        let registry = Registry::default();
        let workspace = workspace();
        registry.register(group("a", &["A1"]), true).unwrap();
        let revisions = workspace.switches().subscribe();
        let before = *revisions.borrow();
        let view = registry.view(&workspace);
        assert!(!view.switch(group_switch("a"), true).unwrap());
        assert_eq!(*revisions.borrow(), before);
        assert!(view.switch(group_switch("a"), false).unwrap());
        assert_eq!(*revisions.borrow(), before + 1);
    }
}
