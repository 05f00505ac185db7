//! Script tool groups (`docs/script-tools.md`): each group found in a tool folder
//! ([`script_tools::Group`]) becomes a tool group of origin `Scripts(folder)`, each of its tools
//! a `ScriptTool` named `{group}__{tool}`, a thin adapter over [`script_tools::call`].
//! `script_tools/served.rs` keeps the registry in step with the folders.
//!
//! A run asks the user as the manifest's `approval` says (`ask-once` by default), bound to the
//! digests of the script and of the manifest ([`Tool::consent`]): an edited script or manifest
//! asks again, and a file changed while the user was being asked is not run.

mod served;

use std::sync::{Arc, OnceLock};

use futures::future::BoxFuture;
use serde_json::Value;

use crate::script_tools::call::{self, Output, Schemas};
use crate::script_tools::{self, Approval, Script};
use crate::tools::{
    Annotations, Asked, Consent, Origin, Outcomes, Permission, Policy, Tool, ToolCall,
    ToolDefinition, ToolError, ToolGroup, ToolOutput, Truncation,
};

pub use served::ServedFolders;

/// The tool group of a folder.
pub fn group(found: &script_tools::Group) -> ToolGroup {
    ToolGroup {
        name: found.name.clone(),
        origin: Origin::Scripts(found.folder.clone()),
        about: None,
        tools: found
            .scripts
            .iter()
            .map(|script| Arc::new(ScriptTool::new(Arc::clone(script))) as Arc<dyn Tool>)
            .collect(),
        rule_prompt: found.instructions.clone(),
        rules: found.rules.iter().cloned().map(Into::into).collect(),
    }
}

/// One script of a folder, as a tool.
struct ScriptTool {
    definition: ToolDefinition,
    script: Arc<Script>,
    /// The schemas, compiled at the first call.
    schemas: OnceLock<Result<Arc<Schemas>, String>>,
    /// The digests each call was asked about.
    asked: Asked,
}

impl ScriptTool {
    fn new(script: Arc<Script>) -> Self {
        let manifest = &script.manifest;
        let hints = manifest.annotations;
        let annotations = Annotations {
            read_only: hints.read_only(),
            destructive: hints.destructive(),
            idempotent: hints.idempotent(),
            open_world: hints.open_world(),
        };
        let mut definition = ToolDefinition::from_schemas(
            &script.name,
            &manifest.description,
            annotations,
            manifest.input_schema.clone(),
            manifest.output_schema.clone(),
        )
        .with_permission(Permission {
            execution: match manifest.approval {
                Approval::Auto => Policy::Auto,
                Approval::AskOnce => Policy::AskOnce,
                Approval::AskAlways => Policy::AskAlways,
            },
            result: Policy::Auto,
        });
        if let Some(title) = &manifest.title {
            definition = definition.with_title(title);
        }
        if let Some(limit) = manifest.output_limit {
            definition = definition.with_truncation(Truncation::Default(limit));
        }
        if let Some(outcomes) = &manifest.outcomes {
            definition = definition.with_outcomes(Outcomes::declared(outcomes));
        }
        Self {
            definition,
            script,
            schemas: OnceLock::new(),
            asked: Asked::default(),
        }
    }

    /// The compiled schemas; the output schema is the one clients see.
    fn schemas(&self) -> Result<Arc<Schemas>, ToolError> {
        self.schemas
            .get_or_init(|| {
                let output = self.definition.output_schema.as_deref().map(AsRef::as_ref);
                Schemas::compile(&self.script, output).map(Arc::new)
            })
            .clone()
            .map_err(|problem| {
                ToolError::Internal(format!("the schemas of `{}` {problem}", self.script.name))
            })
    }
}

impl Tool for ScriptTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn execute<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move { Ok(self.execute_to_outcome(call).await?.0) })
    }

    /// The run's outcome: its exit code, or the member of its output the manifest names.
    fn execute_to_outcome<'a>(
        &'a self,
        call: ToolCall<'a>,
    ) -> BoxFuture<'a, Result<(ToolOutput, usize), ToolError>> {
        Box::pin(async move {
            if let Some(approved) = self.asked.take(&call.arguments.to_string())
                && bound(&self.script.digests_now()?) != approved
            {
                return Err(script_tools::Error::Changed {
                    tool: self.script.name.clone(),
                }
                .into());
            }
            let schemas = self.schemas()?;
            let (output, outcome) =
                call::run(&self.script, &schemas, &call.arguments, &call.cancellation).await?;
            let output = match output {
                Output::Text(text) => ToolOutput::Framed(text),
                Output::Json(value) => ToolOutput::Structured(value),
            };
            Ok((output, outcome))
        })
    }

    /// The script and the manifest as they are on disk now; a call whose arguments break the
    /// input schema, or of a manifest changed since it was read, is refused before anyone is
    /// asked.
    fn consent(&self, arguments: &Value) -> Result<Consent, ToolError> {
        call::check_arguments(&self.script, &*self.schemas()?, arguments)?;
        let digests = self.script.digests_now()?;
        if digests.manifest != self.script.digests.manifest {
            return Err(script_tools::Error::Reloading {
                tool: self.script.name.clone(),
            }
            .into());
        }
        let scope = format!(
            "`{}` only, while its script `{}` and its manifest stay as they are now ({})",
            self.script.name,
            self.script.manifest.script,
            bound(&digests)
        );
        self.asked.remember(arguments.to_string(), bound(&digests));
        Ok(Consent::Asked { scope: Some(scope) })
    }
}

/// What an approval is bound to: both digests.
fn bound(digests: &script_tools::Digests) -> String {
    format!("script {}, manifest {}", digests.script, digests.manifest)
}
