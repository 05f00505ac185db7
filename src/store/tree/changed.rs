//! What changed in a value since it was last laid out, as the snapshot engine reports it, and
//! the same paths as a tree for the layout to walk.

use std::collections::HashMap;

/// What changed in a value since it was last laid out: the paths written, or everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changed {
    everything: bool,
    paths: Vec<Vec<String>>,
}

impl Changed {
    pub fn new() -> Self {
        Self::default()
    }

    /// The value at `segments` (and everything below it) may have changed. A new array item or
    /// object member is named by its own path; a removal names the container it was removed
    /// from (an array's later items move).
    pub fn path(&mut self, segments: &[String]) {
        if !self.everything {
            self.paths.push(segments.to_vec());
        }
    }

    /// Anything may have changed (a user function replaced the whole value).
    pub fn everything(&mut self) {
        self.everything = true;
        self.paths.clear();
    }

    /// Whether anything may have changed (no paths are known).
    pub fn is_everything(&self) -> bool {
        self.everything
    }

    /// The paths written, in the order they were; empty when [`Changed::is_everything`].
    pub fn paths(&self) -> &[Vec<String>] {
        &self.paths
    }
}

/// The changed paths as a tree: `whole` where a path ends.
#[derive(Debug, Default)]
pub(super) struct Dirty {
    pub(super) whole: bool,
    pub(super) below: HashMap<String, Dirty>,
}

impl Dirty {
    pub(super) fn of(changed: &Changed) -> Self {
        let mut root = Self {
            whole: changed.everything,
            below: HashMap::new(),
        };
        for path in &changed.paths {
            let mut node = &mut root;
            for segment in path {
                if node.whole {
                    break;
                }
                node = node.below.entry(segment.clone()).or_default();
            }
            node.whole = true;
            node.below.clear();
        }
        root
    }
}
