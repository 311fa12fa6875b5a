//! What the App's long-running parts share and inject: the clock (tests fix it), the
//! shutdown signal, and the background runtime the job worker runs on. A leaf: it imports
//! nothing of the crate.

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

/// How much lower than the server's the background runtime's threads run (Linux nice; capped
/// at 19, the lowest). The lowest: with +10, two evaluations on two cores still put `/healthz`
/// p99 at 5–6 ms in `scripts/app-load.sh` on a quiet machine; at +19 it was 3–5 ms
/// (docs/performance.md, "The App under load"). The evaluations lose nothing on an idle machine.
pub(crate) const BACKGROUND_NICE: i32 = 19;

/// A runtime for the job worker, apart from the one answering HTTP. An evaluation reads
/// gigabytes on its runtime's blocking pool (inflating, parsing, hashing on a second thread)
/// and two of them keep every core busy; on Linux each thread of this runtime — its async
/// workers, its blocking pool, and the threads those start, SQLite's connection threads
/// among them — runs at the caller's nice value plus [`BACKGROUND_NICE`], so the scheduler
/// gives `/healthz` and webhook acknowledgements the core as soon as they wake. Elsewhere the
/// runtime is only separate.
pub(crate) fn background_runtime(name: &str) -> std::io::Result<tokio::runtime::Runtime> {
    // Relative to the caller's, once: a blocking thread started by a worker thread already
    // has the lower priority it inherited.
    let nice = current_nice().map(|n| (n + BACKGROUND_NICE).min(19));
    tokio::runtime::Builder::new_multi_thread()
        .thread_name(name)
        .on_thread_start(move || {
            if let Some(n) = nice {
                lower_priority_to(n);
            }
        })
        .enable_all()
        .build()
}

/// `task` run on `handle` (another runtime's) instead of where it is spawned; a panic in it
/// is resumed, as if it had run in place.
pub(crate) fn on_runtime(handle: tokio::runtime::Handle, task: Task) -> Task {
    Box::new(move |shutdown| {
        Box::pin(async move {
            match handle.spawn(task(shutdown)).await {
                Ok(r) => r,
                Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                Err(e) => Err(anyhow::anyhow!("the background runtime stopped the task: {e}")),
            }
        })
    })
}

/// The calling thread's nice value (`None` where threads have none of their own).
#[cfg(target_os = "linux")]
fn current_nice() -> Option<i32> {
    // SAFETY: a system call on the calling thread's id; no memory is passed. An error reads
    // as -1, a nice value the process could have, which only makes the result one lower.
    Some(unsafe { libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t) })
}

#[cfg(not(target_os = "linux"))]
fn current_nice() -> Option<i32> {
    None
}

/// Set the calling thread's nice value to `nice` if that lowers its priority (best effort: at
/// worst it keeps the priority it has). On Linux the nice value is a thread's own; threads it
/// starts inherit it.
#[cfg(target_os = "linux")]
fn lower_priority_to(nice: i32) {
    if current_nice().is_some_and(|now| now < nice) {
        // SAFETY: as in `current_nice`.
        unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, nice) };
    }
}

#[cfg(not(target_os = "linux"))]
fn lower_priority_to(_nice: i32) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    fn nice_of_this_thread() -> i32 {
        current_nice().unwrap()
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_background_runtime_runs_below_the_callers_priority_threads_it_starts_too() {
        let here = nice_of_this_thread();
        let want = (here + BACKGROUND_NICE).min(19);
        let rt = background_runtime("test-background").unwrap();
        let (worker, blocking, started) = rt.block_on(async {
            let worker = tokio::spawn(async { nice_of_this_thread() }).await.unwrap();
            // Started from one of its worker threads, which has the lower priority already:
            // not lowered twice.
            let blocking = tokio::spawn(tokio::task::spawn_blocking(nice_of_this_thread))
                .await
                .unwrap()
                .unwrap();
            let started = tokio::task::spawn_blocking(|| std::thread::spawn(nice_of_this_thread).join().unwrap())
                .await
                .unwrap();
            (worker, blocking, started)
        });
        assert_eq!((worker, blocking, started), (want, want, want));
        assert_eq!(nice_of_this_thread(), here, "the caller's own thread is untouched");
    }

    #[test]
    fn a_task_on_another_runtime_returns_its_result_and_resumes_its_panic() {
        let background = background_runtime("test-background").unwrap();
        let main = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let (_trigger, shutdown) = Shutdown::channel();
        let ran_on = Arc::new(std::sync::Mutex::new(None));
        let seen = ran_on.clone();
        let ok: Task = Box::new(move |_| {
            Box::pin(async move {
                *seen.lock().unwrap() = std::thread::current().name().map(str::to_owned);
                let r: anyhow::Result<()> = Err(anyhow::anyhow!("the task's own error"));
                r
            })
        });
        let task = on_runtime(background.handle().clone(), ok);
        let err = main.block_on(task(shutdown.clone())).unwrap_err();
        assert_eq!(err.to_string(), "the task's own error");
        assert_eq!(ran_on.lock().unwrap().as_deref(), Some("test-background"));

        let panics: Task = Box::new(|_| {
            Box::pin(async {
                let boom = true;
                if boom {
                    panic!("boom");
                }
                Ok(())
            })
        });
        let task = on_runtime(background.handle().clone(), panics);
        let caught = main.block_on(async { tokio::spawn(task(shutdown)).await.unwrap_err() });
        assert!(caught.is_panic());
        assert_eq!(caught.into_panic().downcast_ref::<&str>(), Some(&"boom"));
    }
}
