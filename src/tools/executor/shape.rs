//! Shaping a tool's output into what the call answers: formatted for the model, cut to the
//! output limit, cached as a variable when cut or cacheable, with the hint that says where the
//! rest is. A framed value is cut and cached without its frame, which goes around what is shown.

use std::fmt::Write as _;

use serde_json::Value;

use super::Executor;
use crate::tools::result::{ExecuteResult, ExecuteStatus};
use crate::tools::truncate::{cut_structure, structure_hint, truncate, truncation_hint};
use crate::tools::{Caching, Tool, ToolOutput, Truncation};

impl Executor {
    /// Format → truncate → cache → hint.
    pub(super) fn shape_result(
        &self,
        tool: &dyn Tool,
        output: ToolOutput,
        (arguments, as_written): (&Value, &Value),
        limit: Option<usize>,
    ) -> ExecuteResult {
        // A framed value is cut and cached without its frame, which goes around what is shown.
        let frame = match &output {
            ToolOutput::Framed(framed) => Some(framed),
            _ => None,
        };
        let formatted = match frame {
            Some(framed) => framed.text.clone(),
            None => tool.format_for_llm(&output, arguments),
        };
        let truncation = truncate(tool, &formatted, limit);
        let mut cache_failure = None;
        let cache_var_result = if tool.definition().caching == Caching::Off {
            None
        } else {
            let json = frame.is_some_and(|framed| framed.json);
            match self.cache(tool, (&formatted, json), as_written) {
                Ok(result) => Some(result),
                Err(error) => {
                    if matches!(error, crate::workspace::Error::NoRoom(_)) {
                        tracing::debug!(%error, "a read-only caller's result is not cached");
                    } else {
                        tracing::error!(%error, "cannot cache a tool result");
                    }
                    cache_failure = Some(error);
                    None
                }
            }
        };
        let is_truncated = truncation.is_some();
        let mut final_text = match truncation {
            None => formatted.clone(),
            Some(cut) => {
                let hint = truncation_hint(&cut, &formatted, cache_var_result.as_deref());
                format!("{}\n\n{hint}", cut.text)
            }
        };
        if let Some(error) = cache_failure {
            write!(
                final_text,
                "\n\n[This result could not be stored as a variable: {error}]"
            )
            .ok();
        }
        if let Some(framed) = frame {
            final_text = framed.around(&final_text);
        }
        let structured = tool.definition().output_schema.is_some()
            && matches!(output, ToolOutput::Structured(_));
        let structured_cut = if structured && tool.definition().truncation != Truncation::Never {
            cut_structure(tool, &output, limit, cache_var_result.as_deref())
        } else {
            None
        };
        if let Some(cut) = &structured_cut
            && !is_truncated
        {
            write!(
                final_text,
                "\n\n{}",
                structure_hint(cut, cache_var_result.as_deref())
            )
            .ok();
        }
        ExecuteResult {
            status: ExecuteStatus::Success,
            structured,
            structured_cut: structured_cut.map(|cut| cut.value),
            data: Some(output),
            error: None,
            formatted_text: Some(formatted),
            final_text,
            cache_var_result,
            written: Vec::new(),
            outcome: 0,
        }
    }
}
