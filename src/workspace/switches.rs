//! The tool groups and tools a workspace switched on or off at runtime (`ToolGroups`). A switch
//! wins over the configuration's default for this workspace only: one process serving several
//! workspaces keeps a set per workspace, stored with it and restored when it opens. A switch may
//! name a group that is not registered (yet): a script folder or an upstream server that appears
//! later finds it waiting.

use std::collections::HashMap;
use std::fmt;
use std::sync::{PoisonError, RwLock, RwLockReadGuard};

use tokio::sync::watch;

/// What one switch turns on or off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Group(String),
    Tool(String),
}

impl Target {
    /// A target as the store keeps it (`group:<name>` / `tool:<name>`); `None` for any other
    /// text.
    pub fn parse(stored: &str) -> Option<Self> {
        if let Some(group) = stored.strip_prefix("group:") {
            Some(Self::Group(group.to_owned()))
        } else {
            stored
                .strip_prefix("tool:")
                .map(|tool| Self::Tool(tool.to_owned()))
        }
    }
}

/// The stored form, which [`Target::parse`] reads back.
impl fmt::Display for Target {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Group(name) => write!(formatter, "group:{name}"),
            Self::Tool(name) => write!(formatter, "tool:{name}"),
        }
    }
}

/// One workspace's switches, with a revision that moves when they change what is enabled.
#[derive(Default)]
pub struct Switches {
    chosen: RwLock<Chosen>,
    revision: watch::Sender<u64>,
}

/// Switched groups and tools, by name.
#[derive(Default)]
struct Chosen {
    groups: HashMap<String, bool>,
    tools: HashMap<String, bool>,
}

impl Switches {
    /// The switches as stored, in any order; texts that are no target are skipped.
    pub fn restored(stored: Vec<(String, bool)>) -> Self {
        let switches = Self::default();
        switches.merge(stored);
        switches
    }

    /// Records the switches as stored (texts that are no target are skipped); whether any of
    /// them changed a choice held here.
    pub(super) fn merge(&self, stored: Vec<(String, bool)>) -> bool {
        let mut changed = false;
        for (target, enabled) in stored {
            if let Some(target) = Target::parse(&target) {
                changed |= self.set(target, enabled);
            }
        }
        changed
    }

    /// Whether the group is switched on (`Some(true)`), off, or left to its default (`None`).
    pub fn group(&self, name: &str) -> Option<bool> {
        self.read().groups.get(name).copied()
    }

    /// Whether the tool is switched on (`Some(true)`), off, or left to its default (`None`).
    pub fn tool(&self, name: &str) -> Option<bool> {
        self.read().tools.get(name).copied()
    }

    /// Records a switch, and says whether it changed the choice held here; the caller announces
    /// it when it changed what is enabled.
    pub(super) fn set(&self, target: Target, enabled: bool) -> bool {
        let mut chosen = self.chosen.write().unwrap_or_else(PoisonError::into_inner);
        let before = match target {
            Target::Group(name) => chosen.groups.insert(name, enabled),
            Target::Tool(name) => chosen.tools.insert(name, enabled),
        };
        before != Some(enabled)
    }

    fn read(&self) -> RwLockReadGuard<'_, Chosen> {
        self.chosen.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Tells every subscriber that the enabled tool set changed.
    pub fn announce(&self) {
        self.revision.send_modify(|revision| *revision += 1);
    }

    /// A receiver that sees the revision change whenever a switch changed the enabled tool set.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.revision.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_reads_back_what_it_stores_and_other_texts_are_skipped() {
        let targets = [
            Target::Group("vars".to_owned()),
            Target::Tool("a:b".to_owned()),
        ];
        for target in targets {
            assert_eq!(Target::parse(&target.to_string()), Some(target));
        }
        let switches = Switches::restored(vec![
            ("group:vars".to_owned(), false),
            ("something:else".to_owned(), true),
        ]);
        assert_eq!(switches.group("vars"), Some(false));
        assert_eq!(switches.group("something"), None);
        assert_eq!(switches.read().tools.len(), 0);
    }
}
