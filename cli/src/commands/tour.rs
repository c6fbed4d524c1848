//! `tour`: a guided session on an in-process state store.

use crate::exit::Failure;

/// `statestore tour`.
pub async fn run() -> Result<(), Failure> {
    Ok(())
}
