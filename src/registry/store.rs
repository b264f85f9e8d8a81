//! Where registrations persist: the `ToolStore` trait and its table in the embedded database.

use super::spec::ToolSpec;
use crate::store::{Database, JsonTable, StoreError, StoredRecord};
use redb::TableDefinition;
use std::path::Path;

/// Key: `tenant` + NUL + `name`; value: the spec as JSON, with its version.
const TOOLS: JsonTable = TableDefinition::new("tools");

/// Durable storage of specs. Every write is atomic: a crash leaves the previous version intact.
pub trait ToolStore: Send + Sync + 'static {
    /// Every stored spec, each parsed with `StoredRecord::parse::<ToolSpec>`.
    fn load(&self) -> Result<Vec<StoredRecord>, StoreError>;
    fn put(&self, spec: &ToolSpec) -> Result<(), StoreError>;
    fn delete(&self, tenant: &str, name: &str) -> Result<(), StoreError>;

    /// Puts and deletes several specs. A store should do it in one transaction; by default it does one at a time.
    fn apply(&self, puts: &[ToolSpec], deletes: &[(String, String)]) -> Result<(), StoreError> {
        puts.iter().try_for_each(|spec| self.put(spec))?;
        deletes.iter().try_for_each(|(tenant, name)| self.delete(tenant, name))
    }
}

/// The `tools` table of the embedded database.
pub struct RedbStore {
    db: Database,
}

fn key(tenant: &str, name: &str) -> String {
    format!("{tenant}\0{name}")
}

impl RedbStore {
    /// The `tools` table of `db`, created if it is not there yet.
    pub fn new(db: &Database) -> Result<Self, StoreError> {
        db.create_table(TOOLS)?;
        Ok(Self { db: db.clone() })
    }

    /// Opens (or creates) the database in `dir` for this table only: while the store lives, nothing else can open
    /// the file. Fails if another process holds it.
    pub fn open(dir: &Path) -> Result<Self, StoreError> {
        Self::new(&Database::open(dir)?)
    }

    fn write(
        &self,
        apply: impl FnOnce(&mut redb::Table<&str, &[u8]>) -> Result<(), redb::Error>,
    ) -> Result<(), StoreError> {
        self.db.write(TOOLS, apply)
    }
}

impl ToolStore for RedbStore {
    fn load(&self) -> Result<Vec<StoredRecord>, StoreError> {
        self.db.load_raw(TOOLS)
    }

    fn put(&self, spec: &ToolSpec) -> Result<(), StoreError> {
        let bytes = serde_json::to_vec(spec).expect("a ToolSpec always serializes");
        self.write(|t| {
            t.insert(key(&spec.tenant, &spec.name).as_str(), bytes.as_slice())?;
            Ok(())
        })
    }

    fn delete(&self, tenant: &str, name: &str) -> Result<(), StoreError> {
        self.write(|t| {
            t.remove(key(tenant, name).as_str())?;
            Ok(())
        })
    }

    fn apply(&self, puts: &[ToolSpec], deletes: &[(String, String)]) -> Result<(), StoreError> {
        let puts: Vec<(String, Vec<u8>)> = puts
            .iter()
            .map(|spec| {
                (key(&spec.tenant, &spec.name), serde_json::to_vec(spec).expect("a ToolSpec always serializes"))
            })
            .collect();
        self.write(|t| {
            for (key, bytes) in &puts {
                t.insert(key.as_str(), bytes.as_slice())?;
            }
            for (tenant, name) in deletes {
                t.remove(key(tenant, name).as_str())?;
            }
            Ok(())
        })
    }
}
