//! The embedded database every durable table lives in (redb: one file, one lock), its tables of JSON records, and
//! `StoreError`. Each store (tools, MCP servers, reviews) creates and owns its own table in it.

use redb::{ReadableDatabase, ReadableTable, TableDefinition};
use std::path::Path;
use std::sync::Arc;

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

/// A table of JSON records under text keys (`tenant` + NUL + name or call id).
pub type JsonTable = TableDefinition<'static, &'static str, &'static [u8]>;

/// The database file under a data directory, shared by every store that keeps a table in it. Cloning it shares
/// the one open file. redb is pure Rust and ACID with copy-on-write pages, so a killed process never leaves a torn
/// write.
#[derive(Clone)]
pub struct Database {
    db: Arc<redb::Database>,
}

impl Database {
    /// Opens (or creates) the database in `dir`. Fails if another process holds it.
    pub fn open(dir: &Path) -> Result<Self, StoreError> {
        std::fs::create_dir_all(dir).map_err(|source| StoreError::Dir { path: dir.display().to_string(), source })?;
        let db =
            redb::Builder::new().set_cache_size(CACHE_BYTES).create(dir.join(DB_FILE)).map_err(redb::Error::from)?;
        Ok(Self { db: Arc::new(db) })
    }

    /// Creates `table` if it does not exist yet, so that reading it before any write finds it empty.
    pub fn create_table(&self, table: JsonTable) -> Result<(), StoreError> {
        self.write(table, |_| Ok(()))
    }

    /// Applies `apply` to `table` in one write transaction: all of it is durable, or none.
    pub fn write(
        &self,
        table: JsonTable,
        apply: impl FnOnce(&mut redb::Table<&str, &[u8]>) -> Result<(), redb::Error>,
    ) -> Result<(), StoreError> {
        let txn = self.db.begin_write().map_err(redb::Error::from)?;
        {
            let mut table = txn.open_table(table).map_err(redb::Error::from)?;
            apply(&mut table)?;
        }
        txn.commit().map_err(redb::Error::from)?;
        Ok(())
    }

    /// Every record of `table`, parsed; one that does not parse is an error naming its key.
    pub fn load_json<T: serde::de::DeserializeOwned>(&self, table: JsonTable) -> Result<Vec<T>, StoreError> {
        self.load_raw(table)?.iter().map(StoredRecord::parse).collect()
    }

    /// Every record of `table`, unparsed.
    pub fn load_raw(&self, table: JsonTable) -> Result<Vec<StoredRecord>, StoreError> {
        let txn = self.db.begin_read().map_err(redb::Error::from)?;
        let table = txn.open_table(table).map_err(redb::Error::from)?;
        let mut records = Vec::new();
        for entry in table.iter().map_err(redb::Error::from)? {
            let (k, v) = entry.map_err(redb::Error::from)?;
            records.push(StoredRecord::new(k.value(), v.value()));
        }
        Ok(records)
    }
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
