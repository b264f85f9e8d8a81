//! The tool registry: specs, their compiled form, the catalog snapshot calls resolve against, and the store.

mod bounds;
mod catalog;
mod index;
mod inject;
mod names;
mod pattern;
mod schema;
mod shape;
pub mod shared;
mod spec;
mod store;
mod suggest;
mod tool;
mod validators;

pub use crate::policy::rules::{OnError, RuleAction, RuleError, compile_all as compile_rules};
pub use bounds::{DEFAULT_MAX_SCHEMA_BYTES, MAX_NAME_LEN, refused_header};
pub use catalog::Catalog;
pub use inject::{Injected, Source, json_pointer};
pub use names::{normalize_name, normalized_longer_than, provider_safe_name, same_name};
pub use pattern::{BoundedPattern, CALL_BACKTRACK_BUDGET, MAX_BACKTRACKING_SUBJECT, within_budget};
pub use schema::{LazyValidator, SchemaDocuments, SchemaError, compile_own, compile_schema};
pub use shape::{MAX_APPLIED, MAX_CHAIN};
pub use spec::{
    Backend, Budget, HttpBackend, Injection, LimitKey, Limits, PolicyRule, RateScope, RedisDown, RepairPolicy, Review,
    SpecError, ToolSpec,
};
pub use store::{RedbStore, ToolStore};
pub use tool::CompiledTool;
pub use validators::{DEFAULT_CAPACITY as DEFAULT_COMPILED_VALIDATORS, ValidatorCache};

use crate::store::{StoreError, StoredRecord};
use arc_swap::ArcSwap;
use std::sync::Arc;

#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("invalid tool spec: {0}")]
    Spec(#[from] SpecError),
    #[error("tool {name:?} not found")]
    NotFound { name: String },
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Cluster mode, and Redis did not answer: the change was not made.
    #[error(
        "the registry is shared through Redis, which is unavailable, so nothing was changed ({0}); calls are still served from each gateway's last snapshot: retry once Redis is back"
    )]
    Unavailable(crate::cluster::ClusterError),
}

/// Registered tools: durable in the store, served from an immutable `Catalog` replaced on every change.
pub struct Registry {
    store: Arc<dyn ToolStore>,
    documents: SchemaDocuments,
    /// Readers load it without a lock; writers store a new snapshot built from the current one.
    catalog: ArcSwap<Catalog>,
    /// Marked changed each time a new snapshot is stored, for those who tell others (MCP hosts) of changes.
    changed: tokio::sync::watch::Sender<()>,
    /// Serialises writers, so a version is read and bumped, and a snapshot built and stored, atomically.
    writer: tokio::sync::Mutex<()>,
    /// Cluster mode: Redis holds the registry, the store is this gateway's cache of it.
    shared: Option<crate::registry::shared::SharedRegistry>,
    /// Cluster mode: the epoch of the Redis registry this snapshot follows (see `sync_all`).
    epoch: std::sync::Mutex<Option<String>>,
}

impl Registry {
    /// The registry of one gateway, durable in `store`. Loads and checks every stored tool, on every core. A
    /// stored spec that no longer compiles is kept in the store and skipped with an error log, so an upgrade
    /// never deletes a registration.
    pub fn local(store: Arc<dyn ToolStore>, documents: SchemaDocuments) -> Result<Self, RegistryError> {
        let tools = compile_stored(store.load()?, &documents)?;
        Ok(Self {
            store,
            documents,
            catalog: ArcSwap::from_pointee(Catalog::new(tools)),
            changed: tokio::sync::watch::Sender::new(()),
            writer: tokio::sync::Mutex::new(()),
            shared: None,
            epoch: std::sync::Mutex::new(None),
        })
    }

    /// The current snapshot. Cheap and lock-free: one `Arc` clone.
    pub fn catalog(&self) -> Arc<Catalog> {
        self.catalog.load_full()
    }

    /// Marked changed at every new snapshot: a registration, a deletion, an MCP import, a worker joining or
    /// leaving, or a cluster update.
    pub fn changes(&self) -> tokio::sync::watch::Receiver<()> {
        self.changed.subscribe()
    }

    /// Makes `catalog` the snapshot every reader sees, and says so.
    fn publish(&self, catalog: Catalog) {
        self.catalog.store(Arc::new(catalog));
        self.changed.send_replace(());
    }

    /// Creates or replaces a tool. Returns it with its new version, and whether it was created.
    pub async fn register(&self, spec: ToolSpec) -> Result<(Arc<CompiledTool>, bool), RegistryError> {
        // Checked before taking the writer lock, so registrations compile in parallel with each other's commits.
        let mut tool = self.compile(spec)?;
        let _writer = self.writer.lock().await;
        let current = self.catalog.load_full();
        tool.spec.version = match &self.shared {
            Some(shared) => shared.put(&tool.spec).await?,
            None => current.get(&tool.spec.tenant, &tool.spec.name).map_or(1, |p| p.spec.version + 1),
        };
        let tool = Arc::new(tool);
        let store = Arc::clone(&self.store);
        let stored = Arc::clone(&tool);
        run_blocking(move || store.put(&stored.spec)).await?;
        self.publish(current.with(Arc::clone(&tool)));
        let created = tool.spec.version == 1;
        Ok((tool, created))
    }

    /// Registers a statically declared tool, unless it is already stored with the same definition,
    /// so restarting on an unchanged config keeps every version.
    pub async fn register_unless_unchanged(&self, spec: ToolSpec) -> Result<(), RegistryError> {
        let current = self.catalog().get(&spec.tenant, &spec.name).cloned();
        if !current.is_some_and(|c| spec.same_definition(&c.spec)) {
            self.register(spec).await?;
        }
        Ok(())
    }

    /// Checks a spec as `register` does, storing nothing: for callers that register several tools, all or none.
    pub fn check(&self, spec: &ToolSpec) -> Result<(), RegistryError> {
        self.compile(spec.clone()).map(drop)
    }

    /// Checks and compiles a new registration. The schema size bound applies here, not to stored tools, so
    /// lowering `limits.max_schema_bytes` never hides a tool registered before.
    fn compile(&self, spec: ToolSpec) -> Result<CompiledTool, RegistryError> {
        let max = self.documents.max_schema_bytes();
        bounds::check_schema_size("input_schema", &spec.input_schema, max)?;
        if let Some(output) = &spec.output_schema {
            bounds::check_schema_size("output_schema", output, max)?;
        }
        let tool = CompiledTool::compile(spec, &self.documents)?;
        if tool.spec.backend.is_none() {
            return Err(SpecError::Backend("is required: one of grpc, http, mcp, worker".into()).into());
        }
        Ok(tool)
    }

    pub fn get(&self, tenant: &str, name: &str) -> Result<Arc<CompiledTool>, RegistryError> {
        self.catalog.load().get(tenant, name).cloned().ok_or_else(|| RegistryError::NotFound { name: name.to_owned() })
    }

    pub async fn delete(&self, tenant: &str, name: &str) -> Result<(), RegistryError> {
        let _writer = self.writer.lock().await;
        match &self.shared {
            // Redis decides whether it exists: this snapshot may be behind.
            Some(shared) if !shared.delete(tenant, name).await? => {
                return Err(RegistryError::NotFound { name: name.to_owned() });
            }
            Some(_) => {}
            None => drop(self.get(tenant, name)?),
        }
        let store = Arc::clone(&self.store);
        let (t, n) = (tenant.to_owned(), name.to_owned());
        run_blocking(move || store.delete(&t, &n)).await?;
        let current = self.catalog.load_full();
        self.publish(current.without(tenant, name));
        Ok(())
    }
}

/// Parses and compiles stored specs on every core: a restart with 10,000 tools is bound by schema checks. A spec
/// that no longer compiles is logged and left out; one that does not parse fails the start.
fn compile_stored(
    records: Vec<StoredRecord>,
    documents: &SchemaDocuments,
) -> Result<Vec<Arc<CompiledTool>>, StoreError> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, records.len().max(1));
    let mut batches: Vec<Vec<StoredRecord>> = (0..threads).map(|_| Vec::new()).collect();
    for (i, record) in records.into_iter().enumerate() {
        batches[i % threads].push(record);
    }
    let compile_batch = |batch: Vec<StoredRecord>| -> Result<Vec<Arc<CompiledTool>>, StoreError> {
        let mut tools = Vec::with_capacity(batch.len());
        for record in batch {
            tools.extend(compile_logged(record.parse()?, documents).map(Arc::new));
        }
        Ok(tools)
    };
    std::thread::scope(|scope| {
        let workers: Vec<_> = batches.into_iter().map(|batch| scope.spawn(move || compile_batch(batch))).collect();
        let compiled = workers.into_iter().map(|w| w.join().expect("a compile thread panicked"));
        compiled.collect::<Result<Vec<_>, _>>().map(|batches| batches.concat())
    })
}

fn compile_logged(spec: ToolSpec, documents: &SchemaDocuments) -> Option<CompiledTool> {
    let (tenant, name) = (spec.tenant.clone(), spec.name.clone());
    CompiledTool::compile(spec, documents)
        .inspect_err(|err| tracing::error!(tool = %name, tenant = %tenant, error = %err, "stored tool skipped"))
        .ok()
}

/// Runs a store operation on the blocking pool: redb commits fsync.
pub(crate) async fn run_blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    tokio::task::spawn_blocking(f).await.expect("store task panicked")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Stored records as given, for what `Registry::local` makes of them.
    struct Records(Vec<StoredRecord>);

    impl ToolStore for Records {
        fn load(&self) -> Result<Vec<StoredRecord>, StoreError> {
            Ok(self.0.clone())
        }
        fn put(&self, _: &ToolSpec) -> Result<(), StoreError> {
            Ok(())
        }
        fn delete(&self, _: &str, _: &str) -> Result<(), StoreError> {
            Ok(())
        }
    }

    fn record(name: &str, schema: serde_json::Value) -> StoredRecord {
        let spec = json!({"name": name, "input_schema": schema, "backend": {"grpc": {"target": "http://127.0.0.1:1"}}});
        StoredRecord::new(format!("\0{name}"), spec.to_string())
    }

    #[test]
    fn open_checks_every_stored_spec_and_skips_one_that_no_longer_compiles() {
        let mut records: Vec<_> = (0..50).map(|i| record(&format!("t{i}"), json!({"type": "object"}))).collect();
        records.push(record("stale", json!({"type": "object", "properties": {"a": {"type": 5}}})));
        let registry = Registry::local(Arc::new(Records(records)), SchemaDocuments::default()).unwrap();
        assert_eq!(registry.catalog().len(), 50);
        assert!(registry.get("", "t49").is_ok() && registry.get("", "stale").is_err());
    }

    #[test]
    fn open_fails_on_a_record_that_does_not_parse() {
        let records = vec![record("t", json!({"type": "object"})), StoredRecord::new("acme\0broken", "{nope")];
        let err = Registry::local(Arc::new(Records(records)), SchemaDocuments::default()).err().unwrap();
        assert!(
            matches!(err, RegistryError::Store(StoreError::Corrupt { ref key, .. }) if key == "acme/broken"),
            "{err}"
        );
    }
}
