//! The registry of tool groups and what is enabled (tools, groups and
//! `enablingStore`). Changes to the enabled set bump a revision that the server turns into
//! `notifications/tools/list_changed`.

use std::collections::HashSet;
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
}

struct Entry {
    group: Arc<ToolGroup>,
    enabled: bool,
}

#[derive(Default)]
struct Inner {
    entries: Vec<Entry>,
    disabled_tools: HashSet<String>,
}

/// Tool groups in registration order, with their enabled state.
pub struct Registry {
    inner: RwLock<Inner>,
    revision: watch::Sender<u64>,
}

impl Default for Registry {
    fn default() -> Self {
        Self {
            inner: RwLock::default(),
            revision: watch::Sender::new(0),
        }
    }
}

impl Registry {
    /// Adds a group; its tools' names must be new.
    pub fn register(&self, group: ToolGroup, enabled: bool) -> Result<(), RegistryError> {
        let mut inner = self.write();
        for tool in &group.tools {
            let name = &tool.definition().name;
            if let Some(first) = inner.group_of(name) {
                return Err(RegistryError::DuplicateTool {
                    name: name.clone(),
                    first,
                    second: group.name.clone(),
                });
            }
        }
        inner.entries.push(Entry {
            group: Arc::new(group),
            enabled,
        });
        drop(inner);
        self.bump();
        Ok(())
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
            .filter(|entry| entry.enabled)
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
        let any_enabled = inner
            .entries
            .iter()
            .any(|entry| entry.enabled && !entry.group.tools.is_empty());
        let mut tools: Vec<Arc<dyn Tool>> = inner
            .entries
            .iter()
            .flat_map(|entry| {
                entry.group.tools.iter().filter(move |tool| {
                    entry.enabled || (any_enabled && tool.definition().always_listed)
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
        let any_enabled = inner
            .entries
            .iter()
            .any(|entry| entry.enabled && !entry.group.tools.is_empty());
        inner.entries.iter().find_map(|entry| {
            let tool = entry
                .group
                .tools
                .iter()
                .find(|t| t.definition().name == name)?;
            (entry.enabled || (any_enabled && tool.definition().always_listed))
                .then(|| Arc::clone(tool))
        })
    }

    /// A receiver that sees the revision change whenever the enabled tool set may have changed.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.revision.subscribe()
    }

    fn bump(&self) {
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
