//! How a value was last laid out: each value's fragment (inline JSON or a reference) and its
//! children's layouts, so that a value that changed in a few paths is laid out again only there;
//! and the JSON of a run of a container's children.

use std::collections::HashMap;
use std::ops::Range;

use super::node::{ESCAPED, is_reserved, scalar};

/// How one value was laid out: the text its parent writes for it (inline JSON or a reference),
/// and its children's layouts.
#[derive(Debug)]
pub(super) struct Mirror {
    pub(super) fragment: String,
    pub(super) shape: Shape,
}

/// A container's layout is boxed: most values are scalars, and a chat's long arrays hold many.
#[derive(Debug)]
pub(super) enum Shape {
    Scalar,
    Array(Box<ArrayLayout>),
    Object(Box<ObjectLayout>),
}

/// `spine[0]` holds the chunks' fragments, `spine[1]` the fragments of the spine nodes joining
/// them, and so on; empty when the container is small enough to be one node.
#[derive(Debug)]
pub(super) struct ArrayLayout {
    pub(super) items: Vec<Mirror>,
    pub(super) spine: Vec<Vec<String>>,
}

#[derive(Debug)]
pub(super) struct ObjectLayout {
    pub(super) members: Vec<(String, Mirror)>,
    pub(super) positions: HashMap<String, usize>,
    pub(super) spine: Vec<Vec<String>>,
}

/// A container's children, to write a run of them as JSON.
pub(super) enum Children<'a> {
    Items(&'a [Mirror]),
    Members(&'a [(String, Mirror)]),
}

impl Children<'_> {
    pub(super) fn len(&self) -> usize {
        match self {
            Self::Items(items) => items.len(),
            Self::Members(members) => members.len(),
        }
    }

    /// `[…]` or `{…}` of the children in `range`, escaped when it would read as a reference.
    pub(super) fn write(&self, range: Range<usize>) -> String {
        let mut out = String::new();
        match self {
            Self::Items(items) => {
                out.push('[');
                for (index, item) in items[range].iter().enumerate() {
                    if index > 0 {
                        out.push(',');
                    }
                    out.push_str(&item.fragment);
                }
                out.push(']');
            }
            Self::Members(members) => {
                let members = &members[range];
                let escaped = members.len() == 1 && is_reserved(&members[0].0);
                if escaped {
                    out.push_str("{\"");
                    out.push_str(ESCAPED);
                    out.push_str("\":");
                }
                out.push('{');
                for (index, (key, member)) in members.iter().enumerate() {
                    if index > 0 {
                        out.push(',');
                    }
                    out.push_str(&scalar(key.as_str()));
                    out.push(':');
                    out.push_str(&member.fragment);
                }
                out.push('}');
                if escaped {
                    out.push('}');
                }
            }
        }
        out
    }
}

/// Where each key stands among an object's members.
pub(super) fn positions(members: &[(String, Mirror)]) -> HashMap<String, usize> {
    members
        .iter()
        .enumerate()
        .map(|(index, (key, _))| (key.clone(), index))
        .collect()
}
