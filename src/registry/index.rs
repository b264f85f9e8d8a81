//! A name index in shards, shared between catalog snapshots: a change copies only the shard it touches.

use super::CompiledTool;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// Shards per index. With 10,000 tools a shard holds about 40 keys, so a change copies 40 entries, not 10,000,
/// while a small catalog pays only a few kilobytes of empty maps.
const SHARDS: usize = 256;

type Shard = HashMap<String, Vec<Arc<CompiledTool>>>;

/// Tools by one key (name, provider-safe name or normalized name); several tools may share a key.
///
/// Cloning copies `SHARDS` pointers. A lookup hashes the key twice (shard, then entry) whatever the number of tools.
#[derive(Debug, Clone)]
pub(super) struct Index {
    shards: Box<[Arc<Shard>]>,
}

impl Default for Index {
    fn default() -> Self {
        Self { shards: (0..SHARDS).map(|_| Arc::default()).collect() }
    }
}

impl Index {
    /// The tools under exactly `key`, of every tenant.
    pub(super) fn get(&self, key: &str) -> &[Arc<CompiledTool>] {
        self.shards[shard_of(key)].get(key).map_or(&[], Vec::as_slice)
    }

    /// Files `tool` under `key`. Copies the shard first if an older snapshot still shares it.
    pub(super) fn insert(&mut self, key: String, tool: Arc<CompiledTool>) {
        let shard = Arc::make_mut(&mut self.shards[shard_of(&key)]);
        shard.entry(key).or_default().push(tool);
    }

    /// Removes the tool of `tenant` and `name` filed under `key`, if there is one.
    pub(super) fn remove(&mut self, key: &str, tenant: &str, name: &str) {
        let slot = &mut self.shards[shard_of(key)];
        let found = |tools: &[Arc<CompiledTool>]| tools.iter().position(|t| t.is(tenant, name));
        let Some(i) = slot.get(key).and_then(|tools| found(tools)) else { return };
        let shard = Arc::make_mut(slot);
        let tools = shard.get_mut(key).expect("the key was just found");
        tools.remove(i);
        if tools.is_empty() {
            shard.remove(key);
        }
    }

    /// Every filed tool, in no particular order.
    pub(super) fn iter(&self) -> impl Iterator<Item = &Arc<CompiledTool>> {
        self.shards.iter().flat_map(|shard| shard.values()).flatten()
    }
}

/// A fixed hash (SipHash with zero keys), so a key's shard does not depend on the process.
fn shard_of(key: &str) -> usize {
    let mut hasher = std::hash::DefaultHasher::new();
    key.hash(&mut hasher);
    (hasher.finish() % SHARDS as u64) as usize
}
