//! Hash maps with a fast, randomly seeded hasher: every request hashes its key at least twice
//! (store and observers), and SipHash was a measurable share of the engine's time.

/// A `HashMap` with foldhash.
pub type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// A `HashSet` with foldhash.
pub type HashSet<T> = std::collections::HashSet<T, foldhash::fast::RandomState>;
