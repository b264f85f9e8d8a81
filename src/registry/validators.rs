//! The compiled validators held in memory: at most a set number, kept by a CLOCK sweep, so that a registry of
//! many tools costs the memory of the validators in use, not of every validator ever compiled.

use arc_swap::ArcSwapOption;
use jsonschema::Validator;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

/// Compiled validators kept when the configuration sets no number (`limits.max_compiled_validators`). One takes
/// about 6 KB for a tool of five properties, so the default costs at most about 12 MB, and a gateway calling
/// fewer distinct tools than this never compiles one twice.
pub const DEFAULT_CAPACITY: usize = 2_048;

/// Where one schema's validator lives while the cache keeps it compiled.
#[derive(Default)]
pub struct ValidatorSlot {
    compiled: ArcSwapOption<Validator>,
    /// Set by every use and cleared by the clock hand: a validator used since the hand last passed stays.
    used: AtomicBool,
    /// Whether the clock lists this slot; changed only under the clock's lock.
    listed: AtomicBool,
}

impl ValidatorSlot {
    /// The compiled validator, if the cache still keeps it; marks it used.
    pub fn get(&self) -> Option<Arc<Validator>> {
        let compiled = self.compiled.load_full()?;
        // Written only when it changes, so that calls on both cores do not keep bouncing the cache line.
        if !self.used.load(Ordering::Relaxed) {
            self.used.store(true, Ordering::Relaxed);
        }
        Some(compiled)
    }

    /// Whether a validator is compiled and kept here.
    pub fn is_compiled(&self) -> bool {
        self.compiled.load().is_some()
    }
}

/// The set of slots with a compiled validator, shared by every tool of a registry.
pub struct ValidatorCache {
    capacity: usize,
    clock: Mutex<Clock>,
}

/// The listed slots and the clock hand over them. A slot whose tool is gone is dropped as the hand reaches it.
#[derive(Default)]
struct Clock {
    slots: Vec<Weak<ValidatorSlot>>,
    hand: usize,
}

impl ValidatorCache {
    /// A cache keeping at most `capacity` compiled validators (at least one).
    pub fn new(capacity: usize) -> Self {
        Self { capacity: capacity.max(1), clock: Mutex::default() }
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Keeps `validator` in `slot`, first dropping validators not used since the hand last passed them until
    /// there is room. A validator a running call holds stays alive for that call.
    pub fn keep(&self, slot: &Arc<ValidatorSlot>, validator: Arc<Validator>) {
        let mut clock = self.clock.lock().unwrap_or_else(PoisonError::into_inner);
        slot.compiled.store(Some(validator));
        slot.used.store(true, Ordering::Relaxed);
        if !slot.listed.load(Ordering::Relaxed) {
            clock.make_room(self.capacity);
            clock.slots.push(Arc::downgrade(slot));
            slot.listed.store(true, Ordering::Relaxed);
        }
    }

    /// How many slots are listed, some perhaps of tools since removed: never more than the capacity.
    pub fn listed(&self) -> usize {
        self.clock.lock().unwrap_or_else(PoisonError::into_inner).slots.len()
    }
}

impl Default for ValidatorCache {
    fn default() -> Self {
        Self::new(DEFAULT_CAPACITY)
    }
}

impl std::fmt::Debug for ValidatorCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ValidatorCache").field("capacity", &self.capacity).finish_non_exhaustive()
    }
}

impl Clock {
    /// Drops listed slots until fewer than `capacity` remain: each used slot the hand passes is spared once.
    fn make_room(&mut self, capacity: usize) {
        while self.slots.len() >= capacity {
            if self.hand >= self.slots.len() {
                self.hand = 0;
            }
            let Some(slot) = self.slots[self.hand].upgrade() else {
                self.slots.swap_remove(self.hand);
                continue;
            };
            if slot.used.swap(false, Ordering::Relaxed) {
                self.hand += 1;
                continue;
            }
            slot.compiled.store(None);
            slot.listed.store(false, Ordering::Relaxed);
            self.slots.swap_remove(self.hand);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn validator() -> Arc<Validator> {
        Arc::new(jsonschema::validator_for(&serde_json::json!({"type": "object"})).unwrap())
    }

    fn compiled(slots: &[Arc<ValidatorSlot>]) -> Vec<bool> {
        slots.iter().map(|s| s.is_compiled()).collect()
    }

    #[test]
    fn keeps_at_most_its_capacity_and_spares_what_was_used_since_the_hand_passed() {
        let cache = ValidatorCache::new(3);
        let slots: Vec<Arc<ValidatorSlot>> = (0..4).map(|_| Arc::default()).collect();
        for slot in &slots[..3] {
            cache.keep(slot, validator());
        }
        assert_eq!(compiled(&slots), [true, true, true, false]);
        // A full sweep clears every use mark, then the hand is back at the first slot: it goes.
        cache.keep(&slots[3], validator());
        assert_eq!(compiled(&slots), [false, true, true, true]);
        assert_eq!(cache.listed(), 3);
        // Slot 1 is used again; slot 2 is not, so it is the next to go.
        assert!(slots[1].get().is_some());
        cache.keep(&slots[0], validator());
        assert_eq!(compiled(&slots), [true, true, false, true]);
        assert_eq!(cache.listed(), 3);
    }

    #[test]
    fn a_validator_in_use_outlives_its_eviction_and_a_dropped_tool_frees_its_place() {
        let cache = ValidatorCache::new(1);
        let (first, second) = (Arc::<ValidatorSlot>::default(), Arc::<ValidatorSlot>::default());
        cache.keep(&first, validator());
        let held = first.get().expect("compiled");
        cache.keep(&second, validator());
        assert!(!first.is_compiled() && second.is_compiled());
        assert!(held.is_valid(&serde_json::json!({})), "the running call keeps its validator");
        drop(second);
        let third = Arc::<ValidatorSlot>::default();
        cache.keep(&third, validator());
        assert_eq!(cache.listed(), 1, "the dropped tool's place was reused");
    }

    #[test]
    fn keeping_the_same_slot_twice_lists_it_once() {
        let cache = ValidatorCache::new(4);
        let slot = Arc::<ValidatorSlot>::default();
        cache.keep(&slot, validator());
        cache.keep(&slot, validator());
        assert_eq!(cache.listed(), 1);
    }
}
