//! Where registrations persist: the `ToolStore` trait and its embedded redb implementation.

use super::spec::ToolSpec;
use crate::backend::mcp::store::{MCP_SERVERS_TABLE, RedbMcpStore};
use crate::policy::review::{REVIEWS_TABLE, RedbReviewStore};
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use std::path::Path;
use std::sync::Arc;

/// Key: `tenant` + NUL + `name`; value: the spec as JSON, with its version.
const TOOLS: JsonTable = TableDefinition::new("tools");
const DB_FILE: &str = "registry.redb";
/// redb's page cache. Its default, 1 GiB, ends up holding every page of the file in memory (20 MB with 10,000
/// tools), although the registry reads its table once, at start, and review records are few and small.
const CACHE_BYTES: usize = 4 << 20;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("store: {0}")]
    Db(#[from] redb::Error),
    #[error("store: record {key:?} is unreadable: {source}")]
    Corrupt { key: String, source: serde_json::Error },
    #[error("store: cannot create data directory {path}: {source}")]
    Dir { path: String, source: std::io::Error },
}

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

/// redb: pure Rust, ACID with copy-on-write pages, so a killed process never leaves a torn write.
/// The database is shared with the review queue's store (`reviews`): one file, one lock.
pub struct RedbStore {
    db: Arc<Database>,
}

fn key(tenant: &str, name: &str) -> String {
    format!("{tenant}\0{name}")
}

impl RedbStore {
    /// Opens (or creates) the store in `dir`. Fails if another process holds it.
    pub fn open(dir: &Path) -> Result<Self, StoreError> {
        std::fs::create_dir_all(dir).map_err(|source| StoreError::Dir { path: dir.display().to_string(), source })?;
        let db =
            redb::Builder::new().set_cache_size(CACHE_BYTES).create(dir.join(DB_FILE)).map_err(redb::Error::from)?;
        let txn = db.begin_write().map_err(redb::Error::from)?;
        txn.open_table(TOOLS).map_err(redb::Error::from)?;
        txn.open_table(REVIEWS_TABLE).map_err(redb::Error::from)?;
        txn.open_table(MCP_SERVERS_TABLE).map_err(redb::Error::from)?;
        txn.commit().map_err(redb::Error::from)?;
        Ok(Self { db: Arc::new(db) })
    }

    /// The MCP server definitions' store, in the same database file.
    pub fn mcp_servers(&self) -> RedbMcpStore {
        RedbMcpStore::new(Arc::clone(&self.db))
    }

    /// The review queue's store, in the same database file.
    pub fn reviews(&self) -> RedbReviewStore {
        RedbReviewStore::new(Arc::clone(&self.db))
    }

    fn write(
        &self,
        apply: impl FnOnce(&mut redb::Table<&str, &[u8]>) -> Result<(), redb::Error>,
    ) -> Result<(), StoreError> {
        write_table(&self.db, TOOLS, apply)
    }
}

/// A table of JSON records under text keys (`tenant` + NUL + name or call id).
pub(crate) type JsonTable = TableDefinition<'static, &'static str, &'static [u8]>;

/// Applies `apply` to `table` in one write transaction: all of it is durable, or none.
pub(crate) fn write_table(
    db: &Database,
    table: JsonTable,
    apply: impl FnOnce(&mut redb::Table<&str, &[u8]>) -> Result<(), redb::Error>,
) -> Result<(), StoreError> {
    let txn = db.begin_write().map_err(redb::Error::from)?;
    {
        let mut table = txn.open_table(table).map_err(redb::Error::from)?;
        apply(&mut table)?;
    }
    txn.commit().map_err(redb::Error::from)?;
    Ok(())
}

/// Every record of `table`; one that does not parse is an error naming its key.
pub(crate) fn load_json<T: serde::de::DeserializeOwned>(db: &Database, table: JsonTable) -> Result<Vec<T>, StoreError> {
    load_raw(db, table)?.iter().map(StoredRecord::parse).collect()
}

/// Every record of `table`, unparsed.
fn load_raw(db: &Database, table: JsonTable) -> Result<Vec<StoredRecord>, StoreError> {
    let txn = db.begin_read().map_err(redb::Error::from)?;
    let table = txn.open_table(table).map_err(redb::Error::from)?;
    let mut records = Vec::new();
    for entry in table.iter().map_err(redb::Error::from)? {
        let (k, v) = entry.map_err(redb::Error::from)?;
        records.push(StoredRecord::new(k.value(), v.value()));
    }
    Ok(records)
}

/// A record as stored: parsed where it is used, so a restart with 10,000 tools parses each spec beside its
/// compilation instead of holding every parsed spec at once.
#[derive(Debug, Clone)]
pub struct StoredRecord {
    key: String,
    json: Vec<u8>,
}

impl StoredRecord {
    /// A record under `key` (`tenant` + NUL + name) holding `json`.
    pub fn new(key: impl Into<String>, json: impl Into<Vec<u8>>) -> Self {
        Self { key: key.into(), json: json.into() }
    }

    /// The record's value; one that does not parse is an error naming its key.
    pub fn parse<T: serde::de::DeserializeOwned>(&self) -> Result<T, StoreError> {
        serde_json::from_slice(&self.json)
            .map_err(|source| StoreError::Corrupt { key: self.key.replace('\0', "/"), source })
    }
}

impl ToolStore for RedbStore {
    fn load(&self) -> Result<Vec<StoredRecord>, StoreError> {
        load_raw(&self.db, TOOLS)
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
