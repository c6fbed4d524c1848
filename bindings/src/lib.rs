//! The C ABI of the statestore client: `libstatestore` and `include/statestore.h`.
