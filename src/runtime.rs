//! What the App's long-running parts share and inject: the clock (tests fix it) and the
//! shutdown signal. A leaf: it imports nothing of the crate.

use chrono::{DateTime, Utc};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use tokio::sync::watch;

/// The time source: `Utc::now` in production, a fixed or stepped clock in tests.
pub type Clock = Arc<dyn Fn() -> DateTime<Utc> + Send + Sync>;

/// Tells a worker to stop: it should finish or release the job in hand, then return.
#[derive(Debug, Clone)]
pub struct Shutdown(watch::Receiver<bool>);

impl Shutdown {
    /// A pair: the trigger and the signal (for tests and embedding).
    pub fn channel() -> (watch::Sender<bool>, Shutdown) {
        let (tx, rx) = watch::channel(false);
        (tx, Shutdown(rx))
    }

    pub fn is_triggered(&self) -> bool {
        *self.0.borrow()
    }

    /// Resolves once shutdown is triggered (or its trigger is gone).
    pub async fn triggered(mut self) {
        let _ = self.0.wait_for(|stop| *stop).await;
    }
}

/// A background task started beside the server (the job worker: the composition
/// root in `cli::serve` builds it, the server only runs it until shutdown).
pub type Task = Box<dyn FnOnce(Shutdown) -> Pin<Box<dyn Future<Output = anyhow::Result<()>> + Send>> + Send>;
