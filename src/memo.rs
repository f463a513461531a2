//! Per-process memos, each bounded in entries and in bytes whatever the
//! input: a memo is emptied when an entry would take it past either bound,
//! and an entry over a sixteenth of its bytes is never kept. Keyed by
//! content, hashed with `foldhash`, fast on long keys.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hash};

/// A map with at most `max_entries` entries and `max_bytes` bytes of them
/// (each entry's weight as its inserter counts it).
pub struct Bounded<K, V, S = foldhash::fast::RandomState> {
    entries: HashMap<K, V, S>,
    bytes: usize,
    max_entries: usize,
    max_bytes: usize,
}

impl<K: Hash + Eq, V, S: BuildHasher + Default> Bounded<K, V, S> {
    pub fn new(max_entries: usize, max_bytes: usize) -> Self {
        Bounded {
            entries: HashMap::default(),
            bytes: 0,
            max_entries,
            max_bytes,
        }
    }

    pub fn get<Q>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.entries.get(key)
    }

    /// The entry's own key too: for a key that is itself the shared value.
    pub fn get_key_value<Q>(&self, key: &Q) -> Option<(&K, &V)>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.entries.get_key_value(key)
    }

    /// Keeps `value` under `key`, unless its `bytes` are over a sixteenth of
    /// the bound; empties the memo first when it would pass a bound.
    pub fn insert(&mut self, key: K, value: V, bytes: usize) {
        if bytes > self.max_bytes / 16 {
            return;
        }
        let full = self.entries.len() >= self.max_entries;
        if full || self.bytes + bytes > self.max_bytes {
            self.entries.clear();
            self.bytes = 0;
        }
        if self.entries.insert(key, value).is_none() {
            self.bytes += bytes;
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.len()
    }

    /// The bytes the entries weigh, as their inserters counted them.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bounded_memo_never_passes_its_bounds_and_keeps_the_newest() {
        let mut memo: Bounded<u32, u32> = Bounded::new(4, 1000);
        for n in 0..50 {
            memo.insert(n, n * 2, 10);
            assert!(memo.len() <= 4 && memo.bytes() <= 1000);
            assert_eq!(memo.get(&n), Some(&(n * 2)), "the entry just kept");
        }
        let mut by_bytes: Bounded<u32, u32> = Bounded::new(1000, 100);
        for n in 0..50 {
            by_bytes.insert(n, n, 6);
            assert!(by_bytes.bytes() <= 100, "{}", by_bytes.bytes());
        }
    }

    #[test]
    fn an_entry_over_a_sixteenth_of_the_bytes_is_not_kept() {
        let mut memo: Bounded<&str, u32> = Bounded::new(10, 160);
        memo.insert("small", 1, 10);
        memo.insert("big", 2, 11);
        assert_eq!(memo.get("small"), Some(&1));
        assert_eq!(memo.get("big"), None);
        assert_eq!(memo.bytes(), 10);
    }
}
