//! Windows of a variable's value and of the state document, as `ReadVar` and `ReadState` serve
//! them: the text framed by a line giving the window, the total, and how to read on (the frame
//! is for the model; the data is the window, or the whole value).

use serde_json::Value;

use super::{Error, Workspace};
use crate::json::path::Path;
use crate::text::{Chunk, Framed, window};
use crate::vars::ValueKind;

impl Workspace {
    /// A window of a variable's value (characters `start` on, `length` of them or to the end),
    /// under a line giving the window, the total and whether more remains. A whole value
    /// written as JSON is that JSON value as data.
    pub fn read_window(
        &self,
        name: &str,
        start: usize,
        length: Option<usize>,
    ) -> Result<Framed, Error> {
        let (chunk, kind) = self.read_chunk(name, start, length)?;
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
        let whole = chunk.start == 0 && !chunk.has_more;
        let mut framed = Framed::new(header, chunk.text);
        framed.json = whole && kind == ValueKind::Json;
        Ok(framed)
    }

    /// A window of the pretty JSON text of the state document's value at `path`, under a line
    /// giving the window and the total; `None` when the state has nothing there. The whole
    /// value is that JSON value as data, a window its characters.
    pub fn state_window(
        &self,
        path: &Path,
        start: usize,
        length: Option<usize>,
    ) -> Result<Option<Framed>, Error> {
        let Some(value) = self.state_at(path)? else {
            return Ok(None);
        };
        Ok(Some(state_window(path, &value, start, length)))
    }
}

fn state_window(path: &Path, value: &Value, start: usize, length: Option<usize>) -> Framed {
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
    let mut framed = Framed::new(header, window);
    framed.json = start == 0 && end == total;
    framed
}
