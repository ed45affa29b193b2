//! The pool of kept-alive connections to one endpoint, and the opening of new ones.

use std::sync::{Arc, Mutex};

use super::{stream, Conn, Endpoint, Error};

/// Idle connections to one endpoint, reused most-recent first.
pub struct Pool {
    endpoint: Arc<Endpoint>,
    idle: Mutex<Vec<Conn>>,
    max_idle: usize,
}

impl Pool {
    /// A pool keeping at most `max_idle` idle connections.
    pub fn new(endpoint: Endpoint, max_idle: usize) -> Pool {
        Pool {
            endpoint: Arc::new(endpoint),
            idle: Mutex::new(Vec::new()),
            max_idle: max_idle.max(1),
        }
    }

    /// The endpoint.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// An idle connection (`true`: reused) or a new one.
    pub async fn checkout(&self) -> Result<(Conn, bool), Error> {
        if let Some(conn) = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop() {
            return Ok((conn, true));
        }
        self.connect().await.map(|c| (c, false))
    }

    /// An idle connection, if one is waiting (never connects).
    pub fn try_idle(&self) -> Option<Conn> {
        self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop()
    }

    /// A new connection.
    pub async fn connect(&self) -> Result<Conn, Error> {
        let e = &self.endpoint;
        let stream = stream::connect(
            &e.host,
            e.port,
            e.tls.as_ref(),
            e.connect_timeout,
            e.proxy.as_ref(),
        )
        .await
        .map_err(Error::Connect)?;
        Ok(Conn::new(stream.0, e.hooks, stream.1))
    }

    /// Returns a connection whose last response was read completely.
    pub fn checkin(&self, conn: Conn) {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < self.max_idle {
            idle.push(conn);
        }
    }
}
