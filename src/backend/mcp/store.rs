//! Where MCP server definitions persist: the `McpStore` trait and its table in the registry's redb file.

use super::spec::McpServerSpec;
use crate::registry::StoreError;
use crate::registry::store::{JsonTable, load_json, write_table};
use redb::{Database, TableDefinition};
use std::sync::Arc;

/// Key: the server's name; value: its definition as JSON.
pub(crate) const MCP_SERVERS_TABLE: JsonTable = TableDefinition::new("mcp_servers");

/// Durable MCP server definitions. Every write is atomic.
pub trait McpStore: Send + Sync + 'static {
    fn load(&self) -> Result<Vec<McpServerSpec>, StoreError>;
    fn put(&self, spec: &McpServerSpec) -> Result<(), StoreError>;
    fn delete(&self, name: &str) -> Result<(), StoreError>;
}

pub struct RedbMcpStore {
    db: Arc<Database>,
}

impl RedbMcpStore {
    pub(crate) fn new(db: Arc<Database>) -> Self {
        Self { db }
    }
}

impl McpStore for RedbMcpStore {
    fn load(&self) -> Result<Vec<McpServerSpec>, StoreError> {
        load_json(&self.db, MCP_SERVERS_TABLE)
    }

    fn put(&self, spec: &McpServerSpec) -> Result<(), StoreError> {
        let bytes = serde_json::to_vec(spec).expect("an McpServerSpec always serializes");
        write_table(&self.db, MCP_SERVERS_TABLE, |t| {
            t.insert(spec.name.as_str(), bytes.as_slice())?;
            Ok(())
        })
    }

    fn delete(&self, name: &str) -> Result<(), StoreError> {
        write_table(&self.db, MCP_SERVERS_TABLE, |t| {
            t.remove(name)?;
            Ok(())
        })
    }
}
