//! The registry of tool groups and what is enabled. A group is registered with a default (from
//! the configuration); a switch set at runtime (`ToolGroups`), or restored from the workspace,
//! wins over it, also for a group that appears later (a script folder, an upstream server).
//! Groups may be replaced while the server runs (a tool folder edited, an upstream re-listing
//! its tools). Every change to the enabled tool set bumps a revision that the server turns into
//! `notifications/tools/list_changed`.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use tokio::sync::watch;

use super::{Tool, ToolGroup};

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

struct Entry {
    group: Arc<ToolGroup>,
    /// Whether the group is on when no switch says otherwise.
    default: bool,
}

#[derive(Default)]
struct Inner {
    entries: Vec<Entry>,
    /// Groups switched on or off at runtime, by name; they win over the defaults.
    group_switches: HashMap<String, bool>,
    disabled_tools: HashSet<String>,
}

/// A group as `ToolGroups` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupOverview {
    pub name: String,
    pub origin: super::Origin,
    pub enabled: bool,
    pub tools: Vec<ToolOverview>,
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

    /// Removes a group; returns whether there was one of that name.
    pub fn remove(&self, name: &str) -> bool {
        let mut inner = self.write();
        let Some(position) = inner.position(name) else {
            return false;
        };
        inner.entries.remove(position);
        drop(inner);
        self.bump();
        true
    }

    /// Switches a registered group on or off; returns whether the enabled tool set changed.
    pub fn set_group_enabled(&self, name: &str, enabled: bool) -> Option<bool> {
        let mut inner = self.write();
        let position = inner.position(name)?;
        let before = inner.is_enabled(&inner.entries[position]);
        inner.group_switches.insert(name.to_owned(), enabled);
        drop(inner);
        let changed = before != enabled;
        if changed {
            self.bump();
        }
        Some(changed)
    }

    /// Restores a switch chosen earlier, for a group that may not be registered yet.
    pub fn restore_group_switch(&self, name: &str, enabled: bool) {
        self.write().group_switches.insert(name.to_owned(), enabled);
        self.bump();
    }

    /// Every group with its tools and whether each is on, in registration order.
    pub fn overview(&self) -> Vec<GroupOverview> {
        let inner = self.read();
        inner
            .entries
            .iter()
            .map(|entry| GroupOverview {
                name: entry.group.name.clone(),
                origin: entry.group.origin.clone(),
                enabled: inner.is_enabled(entry),
                tools: entry
                    .group
                    .tools
                    .iter()
                    .map(|tool| {
                        let definition = tool.definition();
                        ToolOverview {
                            enabled: !inner.disabled_tools.contains(&definition.name),
                            name: definition.name.clone(),
                            origin_name: definition.origin_name.clone(),
                        }
                    })
                    .collect(),
            })
            .collect()
    }

    /// The group a registered tool belongs to.
    pub fn group_of(&self, tool: &str) -> Option<String> {
        self.read().group_of(tool)
    }

    /// Enables or disables one tool inside its group; returns whether anything changed.
    pub fn set_tool_enabled(&self, name: &str, enabled: bool) -> bool {
        let mut inner = self.write();
        let changed = if enabled {
            inner.disabled_tools.remove(name)
        } else {
            inner.disabled_tools.insert(name.to_owned())
        };
        drop(inner);
        if changed {
            self.bump();
        }
        changed
    }

    /// The groups that are enabled, in registration order.
    pub fn enabled_groups(&self) -> Vec<Arc<ToolGroup>> {
        let inner = self.read();
        inner
            .entries
            .iter()
            .filter(|entry| inner.is_enabled(entry))
            .map(|entry| Arc::clone(&entry.group))
            .collect()
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

    /// The tools a client may see and call: those of enabled groups, plus the always-listed
    /// tools (`ReadVar`, `ListVars`) whenever any group is enabled. Sorted by name.
    pub fn enabled_tools(&self) -> Vec<Arc<dyn Tool>> {
        let inner = self.read();
        // A group without tools (the built-in `Agent` rules) does not count as "a group is on".
        let any_enabled = inner.any_enabled();
        let mut tools: Vec<Arc<dyn Tool>> =
            inner
                .entries
                .iter()
                .flat_map(|entry| {
                    let enabled = inner.is_enabled(entry);
                    entry.group.tools.iter().filter(move |tool| {
                        enabled || (any_enabled && tool.definition().always_listed)
                    })
                })
                .filter(|tool| !inner.disabled_tools.contains(&tool.definition().name))
                .cloned()
                .collect();
        tools.sort_by(|a, b| a.definition().name.cmp(&b.definition().name));
        tools
    }

    /// The enabled tool of that name.
    pub fn find(&self, name: &str) -> Option<Arc<dyn Tool>> {
        let inner = self.read();
        if inner.disabled_tools.contains(name) {
            return None;
        }
        let any_enabled = inner.any_enabled();
        inner.entries.iter().find_map(|entry| {
            let tool = entry
                .group
                .tools
                .iter()
                .find(|t| t.definition().name == name)?;
            (inner.is_enabled(entry) || (any_enabled && tool.definition().always_listed))
                .then(|| Arc::clone(tool))
        })
    }

    /// A receiver that sees the revision change whenever the enabled tool set may have changed.
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

    /// Sets the default of a registered group (the configuration's `enabled` changed); a switch
    /// chosen at runtime still wins.
    pub fn set_default(&self, name: &str, enabled: bool) {
        let mut inner = self.write();
        let Some(position) = inner.position(name) else {
            return;
        };
        let before = inner.is_enabled(&inner.entries[position]);
        inner.entries[position].default = enabled;
        let after = inner.is_enabled(&inner.entries[position]);
        drop(inner);
        if before != after {
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

    fn is_enabled(&self, entry: &Entry) -> bool {
        self.group_switches
            .get(&entry.group.name)
            .copied()
            .unwrap_or(entry.default)
    }

    /// Whether a group with tools is on (a group without tools, the built-in `Agent` rules,
    /// does not count).
    fn any_enabled(&self) -> bool {
        self.entries
            .iter()
            .any(|entry| self.is_enabled(entry) && !entry.group.tools.is_empty())
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
        self.entries
            .iter()
            .find(|entry| {
                entry
                    .group
                    .tools
                    .iter()
                    .any(|t| t.definition().name == tool)
            })
            .map(|entry| entry.group.name.clone())
    }
}

#[cfg(test)]
mod tests {
    use futures::future::BoxFuture;
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::tools::{Annotations, Origin, ToolCall, ToolDefinition, ToolError, ToolOutput};

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

    fn listed(registry: &Registry) -> Vec<String> {
        registry
            .enabled_tools()
            .iter()
            .map(|tool| tool.definition().name.clone())
            .collect()
    }

    #[test]
    fn a_replaced_group_keeps_its_place_and_its_switch() {
        let registry = Registry::default();
        registry.register(group("a", &["A1"]), true).unwrap();
        registry.register(group("b", &["B1"]), true).unwrap();
        registry.set_group_enabled("a", false);

        registry.replace(group("a", &["A1", "A2"]), true).unwrap();

        let names: Vec<String> = registry.overview().into_iter().map(|g| g.name).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(listed(&registry), ["B1"]);
        registry.set_group_enabled("a", true);
        assert_eq!(listed(&registry), ["A1", "A2", "B1"]);
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
        assert_eq!(listed(&registry), ["A1", "B1"]);
    }

    #[test]
    fn a_restored_switch_waits_for_its_group() {
        let registry = Registry::default();
        registry.restore_group_switch("later", false);
        registry.register(group("now", &["N"]), true).unwrap();
        registry.register(group("later", &["L"]), true).unwrap();
        assert_eq!(listed(&registry), ["N"]);
        assert!(registry.remove("later"));
        assert!(!registry.remove("later"));
        assert_eq!(registry.set_group_enabled("later", true), None);
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
        assert_eq!(listed(&registry), ["A2"]);
    }

    #[test]
    fn only_a_real_change_bumps_the_revision() {
        let registry = Registry::default();
        registry.register(group("a", &["A1"]), true).unwrap();
        let revisions = registry.subscribe();
        let before = *revisions.borrow();
        assert_eq!(registry.set_group_enabled("a", true), Some(false));
        assert_eq!(*revisions.borrow(), before);
        assert_eq!(registry.set_group_enabled("a", false), Some(true));
        assert_eq!(*revisions.borrow(), before + 1);
    }
}
