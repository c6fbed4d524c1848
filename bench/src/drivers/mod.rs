//! What generates the load of each kind of scenario.

pub mod client;
pub mod engine;
pub mod memory;
pub mod raw;
