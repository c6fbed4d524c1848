//! The shared scenarios of `tests/scenarios`: their format and the Rust runners.
