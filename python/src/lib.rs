//! The `statestore._native` Python extension module.
