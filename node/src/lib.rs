//! The statestore Node addon.
