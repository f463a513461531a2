//! Per-process memos of what many turns share (a claim's brief, a prompt
//! version's system text, a request's pre-encoded JSON), each bounded in
//! entries and in bytes whatever the input: a memo is emptied when an entry
//! would take it past either bound, and an entry over a sixteenth of its
//! bytes is never kept (`serve` builds each request's prompt afresh, and
//! would otherwise hold huge texts nobody asks for again).
//!
//! Two ways to key one: by the shared value itself (`ByAddress`, for an
//! `Arc` the callers pass around — no hashing of its bytes), or by content
//! (a plain `Bounded` keyed by the text, hashed with `foldhash`, fast on
//! long keys).

use parking_lot::Mutex;
use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hash};
use std::sync::{Arc, Weak};

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

/// A value derived from a shared `Arc<T>`, kept while the memo holds a
/// `Weak` of that `Arc`: the `Weak` keeps the allocation from being freed,
/// so no other value can come to have its address while the entry lives.
pub struct ByAddress<T: ?Sized, V> {
    memo: Mutex<Bounded<usize, (Weak<T>, V)>>,
}

impl<T: ?Sized, V: Clone> ByAddress<T, V> {
    pub fn new(max_entries: usize, max_bytes: usize) -> Self {
        ByAddress {
            memo: Mutex::new(Bounded::new(max_entries, max_bytes)),
        }
    }

    /// `make(shared)`, made at most once while the memo keeps it. `weight`
    /// counts what the entry holds: the value and, as the `Weak` keeps the
    /// allocation, the shared value's own bytes. An `Arc` nobody else
    /// holds is not shared, and cannot be asked about again once its
    /// holder lets go: its value is made and not kept (a judge's prompt,
    /// built afresh for each call).
    pub fn get_or_make<E>(
        &self,
        shared: &Arc<T>,
        make: impl FnOnce(&T) -> Result<V, E>,
        weight: impl FnOnce(&V) -> usize,
    ) -> Result<V, E> {
        if Arc::strong_count(shared) == 1 {
            return make(shared);
        }
        let key = Arc::as_ptr(shared).cast::<()>() as usize;
        if let Some((_, value)) = self.memo.lock().get(&key) {
            return Ok(value.clone());
        }
        // Made without the lock: other turns are not held up by it.
        let value = make(shared)?;
        let bytes = weight(&value);
        let entry = (Arc::downgrade(shared), value.clone());
        self.memo.lock().insert(key, entry, bytes);
        Ok(value)
    }

    #[cfg(test)]
    fn bytes(&self) -> usize {
        self.memo.lock().bytes()
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

    #[test]
    fn a_value_is_made_once_per_shared_arc_and_never_given_to_another() {
        let memo: ByAddress<str, String> = ByAddress::new(8, 1 << 20);
        let made = std::cell::Cell::new(0);
        let upper = |text: &str| {
            made.set(made.get() + 1);
            Ok::<_, ()>(text.to_uppercase())
        };
        let one: Arc<str> = "one".into();
        let _shared = Arc::clone(&one);
        for _ in 0..3 {
            assert_eq!(memo.get_or_make(&one, upper, String::len), Ok("ONE".into()));
        }
        assert_eq!(made.get(), 1);
        // Arcs dropped and made again: each gets its own value, even when
        // the allocator would hand the same address to the next.
        for n in 0..100 {
            let text: Arc<str> = format!("text {n}").into();
            let _shared = Arc::clone(&text);
            let value = memo.get_or_make(&text, upper, String::len).unwrap();
            assert_eq!(value, format!("TEXT {n}"));
        }
        assert!(memo.bytes() <= 1 << 20);
    }

    #[test]
    fn an_error_is_returned_and_nothing_kept() {
        let memo: ByAddress<str, String> = ByAddress::new(8, 1024);
        let text: Arc<str> = "x".into();
        let _shared = Arc::clone(&text);
        assert_eq!(
            memo.get_or_make(&text, |_| Err("no"), String::len),
            Err("no")
        );
        assert_eq!(
            memo.get_or_make(&text, |t| Ok::<_, &str>(t.into()), String::len),
            Ok("x".into())
        );
    }

    #[test]
    fn an_arc_nobody_else_holds_is_not_kept() {
        let memo: ByAddress<str, String> = ByAddress::new(8, 1 << 20);
        let made = std::cell::Cell::new(0);
        let text: Arc<str> = "alone".into();
        for _ in 0..2 {
            let make = |t: &str| {
                made.set(made.get() + 1);
                Ok::<_, ()>(t.to_string())
            };
            assert_eq!(
                memo.get_or_make(&text, make, String::len),
                Ok("alone".into())
            );
        }
        assert_eq!((made.get(), memo.bytes()), (2, 0));
    }
}
