//! How snapshot and template values are laid out in a store: as trees of content-addressed
//! nodes. Every object, array or string whose JSON is 64 bytes or longer becomes a node keyed by
//! the first 128 bits of its SHA-256 (hex), and its parent refers to it as `{"__vmRef": "<hash>"}`
//! — a value pool, applied at every level. Two snapshots that differ in one field share
//! every node off that field's path, so a long chat whose state barely changes stays small.
//!
//! A container with more than [`CHUNK`] children is cut into chunks of [`CHUNK`] children, and
//! the chunks are joined by a spine (`{"__vmJoin": [<chunk>, …]}`, itself cut the same way when
//! long), so no node grows with the container: appending an item to a long array, or a key to a
//! large object, rewrites its last chunk and one spine node per level, not the whole container.
//!
//! An [`Encoded`] batch remembers how it laid out the last value it was given (a mirror of
//! fragments), so a chat processed message by message re-encodes only the paths each message
//! [`Changed`]: the cost of a snapshot follows what changed, not the size of the state.
//!
//! An object the user wrote with the single key `__vmRef`, `__vmJoin` (or `__vmEscaped`) is
//! wrapped as `{"__vmEscaped": …}` so that it never reads back as a reference or a spine.
//! Depth is checked both ways: a value nesting deeper than
//! [`MAX_DEPTH`](crate::json::nesting::MAX_DEPTH) is refused on writing, and reading refuses
//! (with a message, never a crash) anything deeper than twice that.
//!
//! The parts: `tree/node.rs` (the text of a node), `tree/changed.rs` (what changed since the
//! last layout), `tree/mirror.rs` (the last layout), `tree/encode.rs` (laying out) and
//! `tree/decode.rs` (reading back).

mod changed;
mod decode;
mod encode;
mod mirror;
mod node;

pub use changed::Changed;
pub use decode::{decode, references};
pub use encode::{CHUNK, Encoded, SnapshotKey};
pub use node::REFERENCE;
