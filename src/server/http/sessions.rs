//! The initialize-era sessions of `serve --http`: rmcp's local sessions, each kept with the
//! principal and workspace that opened it, closed when idle too long.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::common::server_side_http::{ServerSseMessage, SessionId};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{
    EventStore, RestoreOutcome, SessionManager,
};
use tokio_util::sync::CancellationToken;

use crate::server::access::Access;

/// rmcp's local sessions, and the principal and workspace of each: an entry is made when a
/// session is opened, and leaves when the session is closed — by `DELETE`, when it has been
/// idle too long ([`Sessions::close_idle`]), or when its service ends.
pub(super) struct Sessions {
    pub(super) inner: LocalSessionManager,
    pub(super) owners: Mutex<HashMap<String, Owner>>,
}

/// Who opened a session, and how busy it is.
pub(super) struct Owner {
    access: Access,
    /// When a request of the session last began or ended.
    last: Instant,
    /// Its calls in flight: a call waiting for the client's answer to an approval or a
    /// sampling request keeps the session open however long the user takes.
    calls: usize,
}

/// One call of a session in flight; dropped when its response has been sent (or abandoned).
pub(super) struct Busy {
    sessions: Arc<Sessions>,
    id: String,
}

impl Drop for Busy {
    fn drop(&mut self) {
        if let Some(owner) = self.sessions.owners().get_mut(&self.id) {
            owner.calls = owner.calls.saturating_sub(1);
            owner.last = Instant::now();
        }
    }
}

/// A session opened by another principal or for another workspace.
pub(super) struct Foreign;

impl Sessions {
    /// A request of session `id` (if this server knows it): refused when another principal or
    /// workspace opened it; else the session's idle clock restarts, and a call keeps it busy
    /// until the [`Busy`] given is dropped.
    pub(super) fn enter(
        self: &Arc<Self>,
        id: &str,
        access: &Access,
        calls: bool,
    ) -> Result<Option<Busy>, Foreign> {
        let mut owners = self.owners();
        let Some(owner) = owners.get_mut(id) else {
            return Ok(None);
        };
        if owner.access != *access {
            return Err(Foreign);
        }
        owner.last = Instant::now();
        if !calls {
            return Ok(None);
        }
        owner.calls += 1;
        Ok(Some(Busy {
            sessions: Arc::clone(self),
            id: id.to_owned(),
        }))
    }

    fn owners(&self) -> std::sync::MutexGuard<'_, HashMap<String, Owner>> {
        self.owners.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Closes, for as long as the server runs, every session with no call in flight and no
    /// request for `idle`.
    pub(super) async fn close_idle(
        self: Arc<Self>,
        idle: std::time::Duration,
        stop: CancellationToken,
    ) {
        let every = (idle / 4).clamp(
            std::time::Duration::from_millis(10),
            std::time::Duration::from_secs(5),
        );
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(every) => {}
            }
            let idle_ones: Vec<String> = self
                .owners()
                .iter()
                .filter(|(_, owner)| owner.calls == 0 && owner.last.elapsed() >= idle)
                .map(|(id, _)| id.clone())
                .collect();
            for id in idle_ones {
                tracing::debug!(session = %id, "closing a session idle for {} s", idle.as_secs());
                if let Err(error) = self.close_session(&SessionId::from(id.as_str())).await {
                    tracing::debug!(%error, "the idle session had closed already");
                }
            }
        }
    }

    /// Records who opened session `id`, unless it has closed already.
    pub(super) async fn own(&self, id: &str, access: Access) {
        let owner = Owner {
            access,
            last: Instant::now(),
            calls: 0,
        };
        self.owners().insert(id.to_owned(), owner);
        // A session that ended before it was recorded would stay: check after recording it
        // (`close_session` removes the entry after rmcp's).
        let id: SessionId = id.into();
        if !self.inner.has_session(&id).await.unwrap_or(false) {
            self.owners().remove(&*id);
        }
    }
}

impl SessionManager for Sessions {
    type Error = LocalSessionManagerError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        self.inner.create_session().await
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        let closed = self.inner.close_session(id).await;
        self.owners().remove(&**id);
        closed
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_stream(id, message).await
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.resume(id, last_event_id).await
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        self.inner.restore_session(id).await
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.inner.event_store()
    }
}
