//! The script tool groups the registry serves, kept in step with the folders: each refresh
//! scans the roots (reusing their `index.json`), registers a group that appeared, replaces one
//! whose manifests or scripts changed, and removes one that is gone. A group that did not change
//! is left alone, so a change to one folder bumps the registry's revision once — one
//! `tools/list_changed` — and a refresh that finds nothing new sends none. A group is never
//! put in place of one that is not a script folder's (a built-in group, another MCP server):
//! that clash is reported and the folder left out.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Instant;

use super::group;
use crate::folders::Indexes;
use crate::groups::BUILT_IN;
use crate::script_tools::scan::{self, Scan};
use crate::script_tools::{self, Problem};
use crate::tools::{Origin, Registry};

/// The tool folders and the groups of theirs that the registry holds now.
pub struct ServedFolders {
    /// Not owned: the watcher's thread holds these folders and may outlive the application a
    /// moment, and the registry holds every group — the snapshot store's among them, which must
    /// close (and remove its side files) when the application ends.
    registry: Weak<Registry>,
    roots: Vec<PathBuf>,
    /// Where the folders' indexes are kept; `None`: no index is read or written.
    indexes: Option<Indexes>,
    /// `[groups]` of the configuration: it wins over a folder's `group.json`.
    defaults: BTreeMap<String, bool>,
    served: Mutex<BTreeMap<String, script_tools::Group>>,
}

impl ServedFolders {
    pub fn new(
        registry: &Arc<Registry>,
        roots: Vec<PathBuf>,
        indexes: Option<Indexes>,
        defaults: BTreeMap<String, bool>,
    ) -> Self {
        Self {
            registry: Arc::downgrade(registry),
            roots,
            indexes,
            defaults,
            served: Mutex::default(),
        }
    }

    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// Scans the folders and brings the registry in step; what is left out is logged. Once the
    /// application has ended, nothing.
    pub fn refresh(&self) {
        let Some(registry) = self.registry.upgrade() else {
            return;
        };
        let started = Instant::now();
        let Scan {
            groups,
            mut problems,
        } = scan::scan(&self.roots, &BUILT_IN, self.indexes.as_ref());
        let mut served = self.served.lock().unwrap_or_else(PoisonError::into_inner);
        let mut now = BTreeMap::new();
        for found in groups {
            let name = found.name.clone();
            if let Some(old) = served.remove(&name) {
                if old == found {
                    now.insert(name, old);
                    continue;
                }
                if old.enabled != found.enabled {
                    // The registry keeps a replaced group's default; a new default takes a new entry.
                    registry.remove(&name);
                }
                match install(&registry, &self.defaults, &found) {
                    Ok(()) => {
                        now.insert(name, found);
                    }
                    Err(problem) => {
                        problems.push(problem);
                        // The old version stays served (registered again if it was taken out).
                        if install(&registry, &self.defaults, &old).is_ok() {
                            now.insert(name, old);
                        }
                    }
                }
                continue;
            }
            match install(&registry, &self.defaults, &found) {
                Ok(()) => {
                    now.insert(name, found);
                }
                Err(problem) => problems.push(problem),
            }
        }
        for gone in served.keys() {
            registry.remove(gone);
        }
        *served = now;
        let tools: usize = served.values().map(|group| group.scripts.len()).sum();
        drop(served);
        for problem in &problems {
            tracing::warn!("{problem}");
        }
        tracing::info!(
            "{tools} script tools ready in {:.1} ms ({} skipped; `synapse-mcp tools check` explains)",
            started.elapsed().as_secs_f64() * 1000.0,
            problems.iter().filter(|problem| problem.skipped).count()
        );
    }
}

/// Registers or replaces a folder's group, unless its name is taken by a group of another origin
/// or its tools' names by another group; `defaults` are the configuration's `[groups]`.
fn install(
    registry: &Registry,
    defaults: &BTreeMap<String, bool>,
    found: &script_tools::Group,
) -> Result<(), Problem> {
    let taken = registry
        .groups()
        .into_iter()
        .find(|registered| registered.name == found.name)
        .map(|registered| registered.origin.clone())
        .filter(|origin| !matches!(origin, Origin::Scripts(_)));
    if let Some(origin) = taken {
        let message = format!(
            "a tool group named `{}` comes from {origin} already; rename the folder",
            found.name
        );
        return Err(Problem::skipped(&found.folder, None, message));
    }
    let enabled = defaults.get(&found.name).copied().unwrap_or(found.enabled);
    registry
        .replace(group(found), enabled)
        .map_err(|error| Problem::skipped(&found.folder, None, format!("{error}; rename the tool")))
}
