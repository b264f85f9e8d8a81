//! Where MCP server definitions persist: the `McpStore` trait and its table in the embedded database.

use super::spec::McpServerSpec;
use crate::store::{Database, JsonTable, StoreError};
use redb::TableDefinition;

/// Key: the server's name; value: its definition as JSON.
const MCP_SERVERS_TABLE: JsonTable = TableDefinition::new("mcp_servers");

/// Durable MCP server definitions. Every write is atomic.
pub trait McpStore: Send + Sync + 'static {
    fn load(&self) -> Result<Vec<McpServerSpec>, StoreError>;
    fn put(&self, spec: &McpServerSpec) -> Result<(), StoreError>;
    fn delete(&self, name: &str) -> Result<(), StoreError>;
}

/// The `mcp_servers` table of the embedded database.
pub struct RedbMcpStore {
    db: Database,
}

impl RedbMcpStore {
    /// The `mcp_servers` table of `db`, created if it is not there yet.
    pub fn new(db: &Database) -> Result<Self, StoreError> {
        db.create_table(MCP_SERVERS_TABLE)?;
        Ok(Self { db: db.clone() })
    }
}

impl McpStore for RedbMcpStore {
    fn load(&self) -> Result<Vec<McpServerSpec>, StoreError> {
        self.db.load_json(MCP_SERVERS_TABLE)
    }

    fn put(&self, spec: &McpServerSpec) -> Result<(), StoreError> {
        let bytes = serde_json::to_vec(spec).expect("an McpServerSpec always serializes");
        self.db.write(MCP_SERVERS_TABLE, |t| {
            t.insert(spec.name.as_str(), bytes.as_slice())?;
            Ok(())
        })
    }

    fn delete(&self, name: &str) -> Result<(), StoreError> {
        self.db.write(MCP_SERVERS_TABLE, |t| {
            t.remove(name)?;
            Ok(())
        })
    }
}
