//! The library's internal tokio runtime: one per process, shared by the blocking API and the
//! language bindings.
//!
//! A forked child inherits the parent's runtime object but none of its worker threads, so the
//! runtime is keyed by process id: the first use in a new process builds a fresh runtime and
//! leaks the inherited one (dropping it would wait for threads that do not exist).

use std::future::Future;
use std::sync::{Arc, Mutex};

use once_cell::sync::Lazy;
use tokio::runtime::{Builder, Handle, Runtime};

use crate::{Error, Result};

/// A runtime and the process it was built in.
type Owned = (u32, Arc<Runtime>);

static RUNTIME: Lazy<Mutex<Option<Owned>>> = Lazy::new(|| Mutex::new(None));

/// Worker threads of the internal runtime: request handling is light, so two are enough and
/// leave the cores to the application.
const WORKER_THREADS: usize = 2;

/// The internal runtime of this process, built on first use (and again after `fork`).
pub fn runtime() -> Result<Arc<Runtime>> {
    let pid = std::process::id();
    // The guarded value is replaced whole, never left half-written: a poisoned lock is usable.
    let mut slot = RUNTIME.lock().unwrap_or_else(|e| e.into_inner());
    match slot.as_ref() {
        Some((owner, runtime)) if *owner == pid => return Ok(runtime.clone()),
        _ => {}
    }
    let runtime = Arc::new(
        Builder::new_multi_thread()
            .worker_threads(WORKER_THREADS)
            .thread_name("statestore-rt")
            .enable_all()
            .build()
            .map_err(|e| Error::Runtime(format!("cannot start the internal runtime: {e}")))?,
    );
    if let Some(inherited) = slot.replace((pid, runtime.clone())) {
        // Built by the parent before fork: its threads are gone, so it cannot be shut down.
        std::mem::forget(inherited);
    }
    Ok(runtime)
}

/// A handle to the internal runtime.
pub fn handle() -> Result<Handle> {
    Ok(runtime()?.handle().clone())
}

/// Runs `future` to completion on the internal runtime, blocking the calling thread.
///
/// Fails with [`Error::Runtime`] instead of panicking when called from inside an async runtime
/// (blocking there would stall that runtime's worker thread).
pub fn block_on<F: Future>(future: F) -> Result<F::Output> {
    ensure_not_async()?;
    Ok(runtime()?.block_on(future))
}

/// Fails if the calling thread is inside a tokio runtime.
pub(crate) fn ensure_not_async() -> Result<()> {
    if Handle::try_current().is_ok() {
        return Err(Error::Runtime(
            "a blocking call was made from inside an async runtime, where it would block a worker \
             thread: use the async `statestore::Client` there, or call from a plain thread \
             (e.g. tokio::task::spawn_blocking)"
                .into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_runtime_per_process() {
        let a = runtime().unwrap();
        let b = runtime().unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(block_on(async { 7 }).unwrap(), 7);
    }

    #[test]
    fn blocking_inside_a_runtime_is_an_error() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let result = rt.block_on(async { block_on(async { 1 }) });
        assert!(matches!(result, Err(Error::Runtime(_))), "{result:?}");
    }
}
