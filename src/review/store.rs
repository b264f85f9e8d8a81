//! Where reviews persist: the `ReviewStore` trait and its table in the embedded database.

use super::record::{ReviewKey, ReviewRecord};
use crate::store::{Database, JsonTable, StoreError};
use redb::TableDefinition;

/// Key: `tenant` + NUL + `call_id`; value: the record as JSON.
const REVIEWS_TABLE: JsonTable = TableDefinition::new("reviews");

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

/// The `reviews` table of the embedded database, so one file holds all state.
pub struct RedbReviewStore {
    db: Database,
}

fn db_key(key: &ReviewKey) -> String {
    format!("{}\0{}", key.tenant, key.call_id)
}

impl RedbReviewStore {
    /// The `reviews` table of `db`, created if it is not there yet.
    pub fn new(db: &Database) -> Result<Self, StoreError> {
        db.create_table(REVIEWS_TABLE)?;
        Ok(Self { db: db.clone() })
    }

    fn write(
        &self,
        apply: impl FnOnce(&mut redb::Table<&str, &[u8]>) -> Result<(), redb::Error>,
    ) -> Result<(), StoreError> {
        self.db.write(REVIEWS_TABLE, apply)
    }
}

impl ReviewStore for RedbReviewStore {
    fn load(&self) -> Result<Vec<ReviewRecord>, StoreError> {
        self.db.load_json(REVIEWS_TABLE)
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
