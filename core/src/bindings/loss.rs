//! [`lost_within`]: the one meaning of `lost(timeout)` in every language.

use std::future::Future;
use std::time::Duration;

use crate::lease::{Lease, Loss};
use crate::Result;

/// Waits until `lease` (or the lock guard or candidacy it backs) is not held, for at most
/// `timeout`: the loss if it was lost; `None` if it was released (or never held), or if it is
/// still held when the time is up.
///
/// `timeout`: `None` waits until it is lost or released; zero answers from the state now,
/// without waiting; anything else waits at most that long (a duration no clock can reach, such
/// as [`Duration::MAX`], is no limit). A host that needs to tell "still held" from "released"
/// reads the lease's state afterwards.
///
/// The future answers on its first poll when the lease is not held, so a blocking wait finds
/// a decided answer without a thread hand-off.
///
/// ```no_run
/// use std::time::Duration;
/// use statestore::bindings::{lost_within, Pending};
/// # fn demo(lease: statestore::lease::Lease) -> statestore::Result<()> {
/// let loss = Pending::spawn(lost_within(&lease, Some(Duration::from_secs(1)))).wait()?;
/// if let Some(loss) = loss {
///     eprintln!("lost: {loss}");
/// }
/// # Ok(()) }
/// ```
pub fn lost_within(
    lease: &Lease,
    timeout: Option<Duration>,
) -> impl Future<Output = Result<Option<Loss>>> + Send + 'static {
    let lease = lease.clone();
    async move {
        let state = lease.state();
        if !state.is_held() {
            return Ok(state.loss().cloned());
        }
        let deadline = match timeout {
            Some(limit) if limit.is_zero() => return Ok(None),
            Some(limit) => super::duration::deadline(limit),
            None => None,
        };
        Ok(match deadline {
            None => lease.lost().await,
            Some(deadline) => tokio::time::timeout_at(deadline.into(), lease.lost())
                .await
                .unwrap_or(None),
        })
    }
}
