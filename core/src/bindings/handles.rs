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

/// Objects handed to foreign code as 64-bit ids: the slot index in the low half, the slot's
/// generation in the high half. A freed id never matches again (the generation moves on), so a
/// stale or doubly freed handle is found out instead of touching freed memory. Id 0 is never
/// used, so it can stand for NULL.
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

impl<T> HandleTable<T> {
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
                u32::try_from(table.entries.len() - 1).expect("fewer than 2^32 live handles")
            }
        };
        let entry = &mut table.entries[index as usize];
        // Generations start at 1, so that no id is 0.
        entry.generation = entry.generation.wrapping_add(1).max(1);
        entry.value = Some(value);
        (u64::from(entry.generation) << 32) | u64::from(index)
    }

    fn split(id: u64) -> (usize, u32) {
        ((id & 0xffff_ffff) as usize, (id >> 32) as u32)
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
        table.free.push(index as u32);
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
}
