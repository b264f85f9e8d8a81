//! The tool registry: specs, their compiled form, the catalog snapshot calls resolve against, and the store.

mod catalog;
mod inject;
mod schema;
mod spec;
pub(crate) mod store;
mod tool;

pub use catalog::{Catalog, normalize_name};
pub use inject::{Injected, Source, json_pointer};
pub use schema::{SchemaDocuments, SchemaError, compile_schema};
pub use spec::{Backend, Budget, HttpBackend, Injection, LimitKey, Limits, RepairPolicy, Review, ToolSpec};
pub use store::{RedbStore, StoreError, ToolStore};
pub use tool::{CompiledTool, SpecError};

use std::sync::{Arc, RwLock};

#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("invalid tool spec: {0}")]
    Spec(#[from] SpecError),
    #[error("tool {name:?} not found")]
    NotFound { name: String },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Registered tools: durable in the store, served from an immutable `Catalog` swapped on every change.
pub struct Registry {
    store: Arc<dyn ToolStore>,
    documents: SchemaDocuments,
    catalog: RwLock<Arc<Catalog>>,
    /// Serialises writers, so a version is read and bumped atomically.
    writer: tokio::sync::Mutex<()>,
}

impl Registry {
    /// Loads and compiles every stored tool. A stored spec that no longer compiles is kept in the store
    /// and skipped with an error log, so an upgrade never deletes a registration.
    pub fn open(store: Arc<dyn ToolStore>, documents: SchemaDocuments) -> Result<Self, RegistryError> {
        let mut tools = Vec::new();
        for spec in store.load()? {
            let (tenant, name) = (spec.tenant.clone(), spec.name.clone());
            match CompiledTool::compile(spec, &documents) {
                Ok(tool) => tools.push(Arc::new(tool)),
                Err(err) => tracing::error!(tool = %name, tenant = %tenant, error = %err, "stored tool skipped"),
            }
        }
        Ok(Self {
            store,
            documents,
            catalog: RwLock::new(Arc::new(Catalog::new(tools))),
            writer: tokio::sync::Mutex::new(()),
        })
    }

    /// The current snapshot. Cheap: one `Arc` clone.
    pub fn catalog(&self) -> Arc<Catalog> {
        Arc::clone(&self.catalog.read().unwrap_or_else(|p| p.into_inner()))
    }

    /// Creates or replaces a tool. Returns it with its new version, and whether it was created.
    pub async fn register(&self, mut spec: ToolSpec) -> Result<(Arc<CompiledTool>, bool), RegistryError> {
        let _writer = self.writer.lock().await;
        let previous = self.catalog().get(&spec.tenant, &spec.name).cloned();
        spec.version = previous.as_ref().map_or(1, |p| p.spec.version + 1);
        let tool = Arc::new(CompiledTool::compile(spec, &self.documents)?);
        if tool.spec.backend.is_none() {
            return Err(SpecError::Backend("is required: one of grpc, http".into()).into());
        }
        let store = Arc::clone(&self.store);
        let stored = tool.spec.clone();
        run_blocking(move || store.put(&stored)).await?;
        self.swap(|tools| {
            tools.retain(|t| !same_key(t, &tool.spec.tenant, &tool.spec.name));
            tools.push(Arc::clone(&tool));
        });
        Ok((tool, previous.is_none()))
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

    pub fn get(&self, tenant: &str, name: &str) -> Result<Arc<CompiledTool>, RegistryError> {
        self.catalog().get(tenant, name).cloned().ok_or_else(|| RegistryError::NotFound { name: name.to_owned() })
    }

    pub async fn delete(&self, tenant: &str, name: &str) -> Result<(), RegistryError> {
        let _writer = self.writer.lock().await;
        self.get(tenant, name)?;
        let store = Arc::clone(&self.store);
        let (t, n) = (tenant.to_owned(), name.to_owned());
        run_blocking(move || store.delete(&t, &n)).await?;
        self.swap(|tools| tools.retain(|t| !same_key(t, tenant, name)));
        Ok(())
    }

    fn swap(&self, change: impl FnOnce(&mut Vec<Arc<CompiledTool>>)) {
        let mut tools = self.catalog().all().to_vec();
        change(&mut tools);
        *self.catalog.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(Catalog::new(tools));
    }
}

fn same_key(tool: &CompiledTool, tenant: &str, name: &str) -> bool {
    tool.spec.tenant == tenant && tool.spec.name == name
}

async fn run_blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    tokio::task::spawn_blocking(f).await.expect("store task panicked")
}
