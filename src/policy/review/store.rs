//! Where reviews persist: the `ReviewStore` trait and its redb table, kept in the registry's database file.

use super::record::{ReviewKey, ReviewRecord};
use crate::registry::StoreError;
use crate::registry::store::{JsonTable, load_json, write_table};
use redb::{Database, TableDefinition};
use std::sync::Arc;

/// Key: `tenant` + NUL + `call_id`; value: the record as JSON. `RedbStore::open` creates it beside the tools.
pub(crate) const REVIEWS_TABLE: JsonTable = TableDefinition::new("reviews");

/// Durable storage of review records. Every write is atomic: a crash leaves the previous version intact.
pub trait ReviewStore: Send + Sync + 'static {
    fn load(&self) -> Result<Vec<ReviewRecord>, StoreError>;
    fn put(&self, r: &ReviewRecord) -> Result<(), StoreError>;
    fn delete(&self, key: &ReviewKey) -> Result<(), StoreError>;

    /// Deletes several records. A store should do it in one transaction; by default it deletes one at a time.
    fn delete_all(&self, keys: &[ReviewKey]) -> Result<(), StoreError> {
        keys.iter().try_for_each(|key| self.delete(key))
    }
}

/// The `reviews` table of the registry's redb database (see `RedbStore::reviews`), so one file holds all state.
pub struct RedbReviewStore {
    db: Arc<Database>,
}

fn db_key(key: &ReviewKey) -> String {
    format!("{}\0{}", key.tenant, key.call_id)
}

impl RedbReviewStore {
    /// Uses the `reviews` table of `db`, which `RedbStore::open` has created.
    pub(crate) fn new(db: Arc<Database>) -> Self {
        Self { db }
    }

    fn write(
        &self,
        apply: impl FnOnce(&mut redb::Table<&str, &[u8]>) -> Result<(), redb::Error>,
    ) -> Result<(), StoreError> {
        write_table(&self.db, REVIEWS_TABLE, apply)
    }
}

impl ReviewStore for RedbReviewStore {
    fn load(&self) -> Result<Vec<ReviewRecord>, StoreError> {
        load_json(&self.db, REVIEWS_TABLE)
    }

    fn put(&self, r: &ReviewRecord) -> Result<(), StoreError> {
        let bytes = serde_json::to_vec(r).expect("a ReviewRecord always serializes");
        self.write(|t| {
            t.insert(db_key(&r.key).as_str(), bytes.as_slice())?;
            Ok(())
        })
    }

    fn delete(&self, key: &ReviewKey) -> Result<(), StoreError> {
        self.delete_all(std::slice::from_ref(key))
    }

    fn delete_all(&self, keys: &[ReviewKey]) -> Result<(), StoreError> {
        self.write(|t| {
            for key in keys {
                t.remove(db_key(key).as_str())?;
            }
            Ok(())
        })
    }
}
