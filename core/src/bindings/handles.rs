//! [`HandleTable`]: what the C ABI hands out instead of raw pointers.

use std::sync::{Arc, Mutex};

struct Entry<T> {
    generation: u32,
    value: Option<Arc<T>>,
}

struct Table<T> {
    entries: Vec<Entry<T>>,
    free: Vec<u32>,
    len: usize,
}

/// Objects handed to foreign code as ids of at most [`HandleTable::ID_BITS`] bits: the slot
/// index in the low 32 bits, the slot's generation in the 24 bits above. A freed id never
/// matches again (the generation moves on), so a stale or doubly freed handle is found out
/// instead of touching freed memory. A slot whose generation reaches the largest 24-bit value
/// is retired when freed (never reused) rather than wrapped: an id stays unique for the life of
/// the process, and the top byte of a 64-bit word stays free for a caller's type tag. Retiring
/// costs one empty slot per 2^24 frees of one slot; the 2^56 ids last more than a thousand
/// years at a million handles a second. Id 0 is never used, so it can stand for NULL.
pub struct HandleTable<T> {
    table: Mutex<Table<T>>,
}

impl<T> Default for HandleTable<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> std::fmt::Debug for HandleTable<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HandleTable")
            .field("len", &self.len())
            .finish()
    }
}

/// Bits of an id that hold the slot index.
const INDEX_BITS: u32 = 32;
/// The last generation of a slot: one more would not fit in [`HandleTable::ID_BITS`].
const LAST_GENERATION: u32 = (1 << (HandleTable::<()>::ID_BITS - INDEX_BITS)) - 1;

impl<T> HandleTable<T> {
    /// Every id is below `1 << ID_BITS`.
    pub const ID_BITS: u32 = 56;

    /// An empty table (usable in a `static`).
    pub const fn new() -> Self {
        Self {
            table: Mutex::new(Table {
                entries: Vec::new(),
                free: Vec::new(),
                len: 0,
            }),
        }
    }

    /// Puts the next new slot at `generation`, so that a test reaches the last generation
    /// without 2^24 create/free cycles.
    #[cfg(test)]
    fn start_next_slot_at(&self, generation: u32) {
        let mut table = self.lock();
        table.entries.push(Entry {
            generation,
            value: None,
        });
        let index = (table.entries.len() - 1) as u32;
        table.free.push(index);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table<T>> {
        // Each operation leaves the table consistent: a poisoned lock is usable.
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Stores `value` and returns its id (never 0).
    pub fn insert(&self, value: Arc<T>) -> u64 {
        let mut table = self.lock();
        table.len += 1;
        let index = match table.free.pop() {
            Some(index) => index,
            None => {
                table.entries.push(Entry {
                    generation: 0,
                    value: None,
                });
                u32::try_from(table.entries.len() - 1).expect("fewer than 2^32 slots")
            }
        };
        let entry = &mut table.entries[index as usize];
        // Generations start at 1, so that no id is 0; a slot at its last generation is never
        // on the free list.
        entry.generation += 1;
        entry.value = Some(value);
        (u64::from(entry.generation) << INDEX_BITS) | u64::from(index)
    }

    fn split(id: u64) -> (usize, u32) {
        if id >> Self::ID_BITS != 0 {
            // Never given out: no slot's generation reaches these bits.
            return (usize::MAX, 0);
        }
        (
            (id & ((1 << INDEX_BITS) - 1)) as usize,
            (id >> INDEX_BITS) as u32,
        )
    }

    /// The object with this id, if it is live.
    pub fn get(&self, id: u64) -> Option<Arc<T>> {
        let (index, generation) = Self::split(id);
        let table = self.lock();
        let entry = table.entries.get(index)?;
        (entry.generation == generation)
            .then(|| entry.value.clone())
            .flatten()
    }

    /// Removes the object with this id and returns it, if it was live.
    pub fn remove(&self, id: u64) -> Option<Arc<T>> {
        let (index, generation) = Self::split(id);
        let mut table = self.lock();
        let entry = table.entries.get_mut(index)?;
        if entry.generation != generation {
            return None;
        }
        let value = entry.value.take()?;
        if entry.generation < LAST_GENERATION {
            table.free.push(index as u32);
        }
        table.len -= 1;
        Some(value)
    }

    /// How many objects are live.
    pub fn len(&self) -> usize {
        self.lock().len
    }

    /// Whether no object is live.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_and_freed_ids_never_match() {
        let table = HandleTable::new();
        let a = table.insert(Arc::new("a"));
        assert_ne!(a, 0);
        assert_eq!(table.get(a).as_deref(), Some(&"a"));
        assert_eq!(table.remove(a).as_deref(), Some(&"a"));
        assert!(table.remove(a).is_none(), "double free is found out");
        let b = table.insert(Arc::new("b"));
        assert_ne!(a, b, "the slot is reused with a new generation");
        assert!(table.get(a).is_none());
        assert_eq!(table.get(b).as_deref(), Some(&"b"));
        assert!(table.get(0).is_none() && table.get(u64::MAX).is_none());
        assert_eq!(table.len(), 1);
    }

    #[test]
    fn a_slot_reused_past_its_last_generation_keeps_ids_unique_and_in_range() {
        let table = HandleTable::new();
        table.start_next_slot_at(LAST_GENERATION - 3);
        let mut seen = std::collections::HashSet::new();
        let mut previous = None;
        // Cycles the slot through its last generation and beyond, as a program that creates
        // and frees one handle per request does.
        for round in 0..8u32 {
            let id = table.insert(Arc::new(round));
            assert!(
                id >> HandleTable::<u32>::ID_BITS == 0,
                "id {id:#x} of round {round} uses the bits above ID_BITS"
            );
            assert!(seen.insert(id), "id {id:#x} given out twice");
            assert_eq!(table.get(id).as_deref(), Some(&round), "round {round}");
            if let Some(previous) = previous {
                assert!(table.get(previous).is_none(), "a freed id matched again");
            }
            assert_eq!(table.remove(id).as_deref(), Some(&round));
            previous = Some(id);
        }
        assert!(table.is_empty());
    }

    #[test]
    fn a_removed_value_lives_only_as_long_as_its_holders() {
        let table = HandleTable::new();
        let value = Arc::new(String::from("client"));
        let id = table.insert(value.clone());
        let held = table.get(id).expect("live");
        assert_eq!(
            Arc::strong_count(&value),
            3,
            "the caller, the table and a holder"
        );
        let removed = table.remove(id).expect("live");
        assert_eq!(
            Arc::strong_count(&value),
            3,
            "the table's share moved to the remover"
        );
        drop((held, removed));
        assert_eq!(
            Arc::strong_count(&value),
            1,
            "the table keeps nothing of a freed handle"
        );
        assert!(table.is_empty());
    }

    #[test]
    fn ids_stay_unique_while_threads_insert_and_remove_at_once() {
        let table = Arc::new(HandleTable::new());
        let threads: Vec<_> = (0..4u32)
            .map(|thread| {
                let table = table.clone();
                std::thread::spawn(move || {
                    let mut kept = Vec::new();
                    for round in 0..16u32 {
                        let value = thread * 100 + round;
                        let id = table.insert(Arc::new(value));
                        assert_eq!(table.get(id).as_deref(), Some(&value));
                        if round % 2 == 0 {
                            assert_eq!(table.remove(id).as_deref(), Some(&value));
                            assert!(table.get(id).is_none(), "a freed id matched again");
                        } else {
                            kept.push((id, value));
                        }
                    }
                    kept
                })
            })
            .collect();
        let kept: Vec<(u64, u32)> = threads
            .into_iter()
            .flat_map(|thread| thread.join().expect("no panic"))
            .collect();
        let ids: std::collections::HashSet<u64> = kept.iter().map(|(id, _)| *id).collect();
        assert_eq!(ids.len(), kept.len(), "an id given to two live values");
        assert_eq!(table.len(), kept.len());
        for (id, value) in kept {
            assert_eq!(table.remove(id).as_deref(), Some(&value));
        }
        assert!(table.is_empty());
    }
}
