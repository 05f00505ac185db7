//! Hot reload of the `[[upstream]]` tables: the configuration file's folder is watched (editors
//! save by writing a new file and renaming it over the old one), and once a change to the file
//! has been followed by 300 ms of quiet the file is read again and checked. Upstreams added,
//! removed or changed are started, stopped or restarted ([`Upstreams::apply`], one
//! `tools/list_changed` for the change); a file that no longer reads or checks is reported in the
//! log and changes nothing. Other settings are read at start only: a change to them is logged as
//! waiting for the next start.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::mpsc;

use super::Upstreams;
use super::settings;
use crate::config::FileConfig;

/// How long the file must be quiet before it is read again.
const QUIET: Duration = Duration::from_millis(300);

/// Why the configuration file cannot be watched.
#[derive(Debug, thiserror::Error)]
#[error("cannot watch the configuration file {path} for changes: {source}")]
pub struct Error {
    path: PathBuf,
    source: notify::Error,
}

/// The running watch; dropping it stops watching.
pub struct Reload {
    _watcher: RecommendedWatcher,
    task: tokio::task::AbortHandle,
}

impl Drop for Reload {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Watches `file` and applies its `[[upstream]]` tables to `upstreams` when it changes. Needs a
/// tokio runtime.
pub fn watch(file: &Path, upstreams: Arc<Upstreams>) -> Result<Reload, Error> {
    let folder = match file.parent() {
        Some(folder) if !folder.as_os_str().is_empty() => folder.to_owned(),
        _ => PathBuf::from("."),
    };
    let name = file.file_name().map(OsString::from).unwrap_or_default();
    let (events, mut changed) = mpsc::unbounded_channel();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<Event>| {
        let touches_file = event.is_ok_and(|event| {
            !matches!(event.kind, EventKind::Access(_))
                && event
                    .paths
                    .iter()
                    .any(|path| path.file_name() == Some(name.as_os_str()))
        });
        if touches_file {
            // The task is gone only when the watch is being dropped.
            events.send(()).ok();
        }
    })
    .map_err(|source| Error {
        path: file.to_owned(),
        source,
    })?;
    watcher
        .watch(&folder, RecursiveMode::NonRecursive)
        .map_err(|source| Error {
            path: file.to_owned(),
            source,
        })?;
    let file = file.to_owned();
    let mut started_with = settings::read(&file).ok().map(|(_, rest)| rest);
    let task = tokio::spawn(async move {
        while changed.recv().await.is_some() {
            // Gather the burst an editor's save makes.
            while let Ok(Some(())) = tokio::time::timeout(QUIET, changed.recv()).await {}
            reload(&file, &upstreams, &mut started_with).await;
        }
    });
    Ok(Reload {
        _watcher: watcher,
        task: task.abort_handle(),
    })
}

async fn reload(file: &Path, upstreams: &Upstreams, started_with: &mut Option<FileConfig>) {
    let (wanted, rest) = match settings::read(file) {
        Ok(read) => read,
        Err(error) => {
            tracing::warn!("{error}; the MCP servers keep running as they were");
            return;
        }
    };
    if started_with
        .as_ref()
        .is_some_and(|earlier| *earlier != rest)
    {
        tracing::warn!(
            file = %file.display(),
            "settings outside the [[upstream]] tables changed; they take effect at the next start"
        );
        *started_with = Some(rest);
    }
    upstreams.apply(wanted).await;
}
