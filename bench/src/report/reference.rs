//! Comparing a result with a reference measured in the same run (the floor, the raw
//! requester, a Rust client, a by-hand baseline): both reports state every comparison as a
//! throughput ratio and a median latency difference, and compute them here.

use crate::figures::Figures;

/// The throughput and median latency of the results that can serve as references, by key.
#[derive(Debug, Clone)]
pub struct References<K> {
    cells: Vec<(K, f64, f64)>,
}

/// A result against its reference.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Comparison {
    /// Throughput divided by the reference's.
    pub ratio: f64,
    /// Median latency minus the reference's, µs.
    pub p50_delta_us: f64,
}

impl<K: PartialEq> References<K> {
    /// The references among `candidates`. One that measured no throughput is left out: a
    /// ratio to it means nothing.
    pub fn new<'a>(candidates: impl Iterator<Item = (K, &'a Figures)>) -> Self {
        Self {
            cells: candidates
                .map(|(key, f)| (key, f.ops_per_sec, f.p50_us))
                .filter(|&(_, ops, _)| ops > 0.0)
                .collect(),
        }
    }

    /// `figures` against the reference at `key`, when there is one.
    pub fn compare(&self, key: Option<K>, figures: &Figures) -> Option<Comparison> {
        let key = key?;
        let &(_, ops, p50) = self.cells.iter().find(|(k, _, _)| *k == key)?;
        Some(Comparison {
            ratio: figures.ops_per_sec / ops,
            p50_delta_us: figures.p50_us - p50,
        })
    }
}
