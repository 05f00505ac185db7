//! Windows of a variable's value and of the state document, as `ReadVar` and `ReadState` serve
//! them: the text under a line giving the window, the total, and how to read on.

use serde_json::Value;

use super::{Error, Workspace};
use crate::json::path::Path;
use crate::text::{Chunk, window};

impl Workspace {
    /// A window of a variable's value (characters `start` on, `length` of them or to the end),
    /// under a line giving the window, the total and whether more remains.
    pub fn read_window(
        &self,
        name: &str,
        start: usize,
        length: Option<usize>,
    ) -> Result<String, Error> {
        let chunk = self.read_chunk(name, start, length)?;
        let header = if chunk.has_more {
            format!(
                "[Variable `{name}`: characters {}–{} of {}; more remains: ReadVar {{\"name\": \"{name}\", \"start\": {}}}]",
                chunk.start, chunk.end, chunk.total, chunk.end
            )
        } else if chunk.start == 0 {
            format!(
                "[Variable `{name}`: whole value, {} characters]",
                chunk.total
            )
        } else {
            format!(
                "[Variable `{name}`: characters {}–{} of {}; nothing more remains]",
                chunk.start, chunk.end, chunk.total
            )
        };
        Ok(format!("{header}\n{}", chunk.text))
    }

    /// A window of the pretty JSON text of the state document's value at `path`, under a line
    /// giving the window and the total; `None` when the state has nothing there.
    pub fn state_window(
        &self,
        path: &Path,
        start: usize,
        length: Option<usize>,
    ) -> Result<Option<String>, Error> {
        let Some(value) = self.state_at(path)? else {
            return Ok(None);
        };
        Ok(Some(state_window(path, &value, start, length)))
    }
}

fn state_window(path: &Path, value: &Value, start: usize, length: Option<usize>) -> String {
    let text = serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string());
    let Chunk {
        text: window,
        start,
        end,
        total,
        ..
    } = window(&text, start, length);
    let shown = if path.is_root() {
        "state".to_owned()
    } else {
        format!("state `{path}`")
    };
    let header = if end < total {
        format!(
            "[{shown}: characters {start}–{end} of {total}; more remains: ReadState {{\"path\": \"{path}\", \"start\": {end}}}]"
        )
    } else {
        format!("[{shown}: characters {start}–{end} of {total}]")
    };
    format!("{header}\n{window}")
}
