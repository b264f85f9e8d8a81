//! The registry in cluster mode: writes go to Redis first, and the follower brings this gateway's snapshot (and
//! its local cache) in step with what Redis holds, one tool or all of them.

use super::{
    Catalog, CompiledTool, Registry, RegistryError, SchemaDocuments, ToolSpec, ToolStore, compile_logged, run_blocking,
};
use crate::cluster::{ClusterError, Redis};
pub mod follow;
mod remote;

pub use remote::SharedRegistry;
use remote::field;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

impl Registry {
    /// The registry of a gateway in a cluster: Redis holds it, and `store` is this gateway's cache of it, loaded
    /// as [`Registry::local`] loads it. Writes go to Redis first, and `sync_*` follow it.
    pub fn shared(store: Arc<dyn ToolStore>, documents: SchemaDocuments, redis: Redis) -> Result<Self, RegistryError> {
        Ok(Self { shared: Some(SharedRegistry::new(redis)), ..Registry::local(store, documents)? })
    }

    fn remote(&self) -> Option<&SharedRegistry> {
        self.shared.as_ref()
    }

    /// Brings one tool in step with Redis: after a notification naming it.
    pub async fn sync_one(&self, tenant: &str, name: &str) -> Result<(), ClusterError> {
        let Some(shared) = &self.shared else { return Ok(()) };
        // Read and applied under the writer lock: a local write cannot slip between, so nothing older than
        // what this gateway itself wrote is ever applied over it.
        let _writer = self.writer.lock().await;
        let remote = shared.fetch(tenant, name).await?;
        let current = self.catalog.load_full();
        let local = current.get(tenant, name);
        match remote {
            Some(spec) if local.is_none_or(|l| l.spec != spec) => {
                let Some(tool) = compile_logged(spec, &self.documents) else { return Ok(()) };
                self.cache(vec![tool.spec.clone()], Vec::new()).await;
                self.publish(current.with(Arc::new(tool)));
            }
            None if local.is_some() => {
                self.cache(Vec::new(), vec![(tenant.to_owned(), name.to_owned())]).await;
                self.publish(current.without(tenant, name));
            }
            _ => {}
        }
        Ok(())
    }

    /// Brings every tool in step with Redis, and returns the generation Redis is at.
    ///
    /// A Redis that was reset (it holds no epoch, or not the one this gateway knew) lost registrations, not
    /// deleted them: this gateway's snapshot is merged back first, so a Redis restart never empties the fleet's
    /// registry. A gateway that has just started adopts the epoch it finds, trusting Redis over its cache.
    pub async fn sync_all(&self) -> Result<u64, ClusterError> {
        let Some(shared) = &self.shared else { return Ok(0) };
        let _writer = self.writer.lock().await;
        let mut snapshot = shared.fetch_all().await?;
        let known = self.epoch.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let reset = snapshot.epoch.is_none() || (known.is_some() && known != snapshot.epoch);
        if reset {
            let current = self.catalog.load_full();
            let specs: Vec<&ToolSpec> = current.all().iter().map(|t| &t.spec).collect();
            if !specs.is_empty() {
                tracing::warn!(tools = specs.len(), "Redis was reset: merging this gateway's snapshot back into it");
            }
            shared.merge(&specs).await?;
            snapshot = shared.fetch_all().await?;
        }
        *self.epoch.lock().unwrap_or_else(|p| p.into_inner()) = snapshot.epoch;
        self.replace_with(snapshot.specs).await;
        Ok(snapshot.generation.unwrap_or(0))
    }

    /// Makes the snapshot hold exactly `specs`, compiling only the tools that changed.
    async fn replace_with(&self, specs: Vec<ToolSpec>) {
        let current = self.catalog.load_full();
        let remote: HashSet<String> = specs.iter().map(|s| field(&s.tenant, &s.name)).collect();
        let removed: Vec<(String, String)> = current
            .all()
            .iter()
            .filter(|t| !remote.contains(&field(&t.spec.tenant, &t.spec.name)))
            .map(|t| (t.spec.tenant.clone(), t.spec.name.clone()))
            .collect();
        let mut kept: HashMap<String, Arc<CompiledTool>> =
            current.all().iter().map(|t| (field(&t.spec.tenant, &t.spec.name), Arc::clone(t))).collect();
        let mut changed = Vec::new();
        for spec in specs {
            let key = field(&spec.tenant, &spec.name);
            let same = kept.get(&key).is_some_and(|l| l.spec == spec);
            if !same && let Some(tool) = compile_logged(spec, &self.documents) {
                changed.push(tool.spec.clone());
                kept.insert(key, Arc::new(tool));
            }
        }
        if changed.is_empty() && removed.is_empty() {
            return;
        }
        for (tenant, name) in &removed {
            kept.remove(&field(tenant, name));
        }
        tracing::info!(changed = changed.len(), removed = removed.len(), "registry brought in step with Redis");
        self.cache(changed, removed).await;
        self.publish(Catalog::new(kept.into_values().collect()));
    }

    /// Writes changes to the local store, which in cluster mode is this gateway's cache of the last snapshot:
    /// what it serves from if it restarts while Redis is down. A failed write is logged; Redis stays the truth.
    async fn cache(&self, puts: Vec<ToolSpec>, deletes: Vec<(String, String)>) {
        let store = Arc::clone(&self.store);
        if let Err(err) = run_blocking(move || store.apply(&puts, &deletes)).await {
            tracing::error!(error = %err, "the local registry cache could not be written");
        }
    }
}

impl From<ClusterError> for RegistryError {
    fn from(err: ClusterError) -> Self {
        RegistryError::Unavailable(err)
    }
}
