//! Plans (`docs/state-and-plans.md`): the state document, dot paths into JSON, `_outputPath` targets, and
//! declarative multi-step plans whose edges are `†` references to earlier steps' outputs.

pub mod plan;
pub mod run;
pub mod whole;
