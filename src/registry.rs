//! Things both programs keep about their connected clients: a registry by id, a poison-proof
//! lock, and random 40-hex ids (run ids, node ids).

use std::collections::BTreeMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// Locks a mutex, ignoring poisoning: a panic in one connection must not wedge the others.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Connected clients by id (ids start at 1 and are never reused, as in Redis).
pub struct Registry<T> {
    next_id: AtomicU64,
    items: Mutex<BTreeMap<u64, Arc<T>>>,
}

impl<T> Default for Registry<T> {
    fn default() -> Self {
        Registry {
            next_id: AtomicU64::new(0),
            items: Mutex::new(BTreeMap::new()),
        }
    }
}

impl<T> Registry<T> {
    /// Adds a client built from its new id.
    pub fn register(&self, make: impl FnOnce(u64) -> T) -> Arc<T> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let item = Arc::new(make(id));
        lock(&self.items).insert(id, item.clone());
        item
    }

    pub fn unregister(&self, id: u64) {
        lock(&self.items).remove(&id);
    }

    pub fn count(&self) -> usize {
        lock(&self.items).len()
    }

    /// The connected clients, by id.
    pub fn snapshot(&self) -> Vec<Arc<T>> {
        lock(&self.items).values().cloned().collect()
    }

    pub fn get(&self, id: u64) -> Option<Arc<T>> {
        lock(&self.items).get(&id).cloned()
    }
}

/// 40 random hex digits, as Redis run ids and cluster node ids. The randomness comes from
/// the standard library's per-process random hasher keys, so the core needs no RNG crate.
pub fn random_hex_id() -> String {
    let state = std::collections::hash_map::RandomState::new();
    let mut id = String::with_capacity(40);
    let mut counter: u64 = 0;
    while id.len() < 40 {
        let mut hasher = state.build_hasher();
        hasher.write_u64(counter);
        hasher.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        id.push_str(&format!("{:016x}", hasher.finish()));
        counter += 1;
    }
    id.truncate(40);
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_40_hex_and_distinct() {
        let a = random_hex_id();
        let b = random_hex_id();
        assert_eq!(a.len(), 40);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }

    #[test]
    fn registry_assigns_increasing_ids() {
        let registry: Registry<u64> = Registry::default();
        let a = registry.register(|id| id);
        let b = registry.register(|id| id);
        assert_eq!((*a, *b), (1, 2));
        registry.unregister(1);
        assert_eq!(registry.count(), 1);
        assert_eq!(registry.get(2).map(|x| *x), Some(2));
    }
}
