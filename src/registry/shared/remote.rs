//! The registry in Redis: atomic, versioned writes that announce themselves, and the reads followers sync from.

use crate::cluster::{ClusterError, Redis};
use crate::registry::ToolSpec;
use redis::Script;
use std::collections::HashMap;
use std::time::Duration;

/// Writes the spec and bumps its version and the registry's generation, then announces the change.
const PUT: &str = r"
local version = redis.call('HINCRBY', KEYS[2], ARGV[1], 1)
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
local gen = redis.call('INCR', KEYS[3])
redis.call('PUBLISH', ARGV[3], gen .. '\n' .. ARGV[1])
return {version, gen}
";

/// Deletes the spec and its version; 0 when there was none.
const DELETE: &str = r"
if redis.call('HDEL', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('HDEL', KEYS[2], ARGV[1])
local gen = redis.call('INCR', KEYS[3])
redis.call('PUBLISH', ARGV[2], gen .. '\n' .. ARGV[1])
return gen
";

/// Merges a gateway's snapshot into a Redis that was reset (no epoch, or another than the gateway knew): only
/// fields still missing are written, so gateways merging at once agree, and nothing another gateway wrote since
/// is overwritten. Creates the epoch if there is none, and returns it.
const MERGE: &str = r"
local epoch = redis.call('GET', KEYS[4])
if not epoch then
  epoch = ARGV[1]
  redis.call('SET', KEYS[4], epoch)
end
local written = 0
for i = 2, #ARGV, 3 do
  if redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i + 1]) == 1 then
    redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 2])
    written = written + 1
  end
end
if written > 0 or redis.call('EXISTS', KEYS[3]) == 0 then
  local gen = redis.call('INCR', KEYS[3])
  redis.call('PUBLISH', KEYS[5], gen .. '\n')
end
return epoch
";

/// A full read may carry every spec: it gets longer than one call-path command.
const FULL_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// What Redis holds of the registry at one generation.
#[derive(Debug)]
pub struct Snapshot {
    /// `None` when Redis holds no registry at all: it was emptied or lost its data.
    pub generation: Option<u64>,
    /// Set when the registry is first created in a Redis; a new one means Redis was reset.
    pub epoch: Option<String>,
    pub specs: Vec<ToolSpec>,
}

/// The registry's keys and scripts on the shared Redis.
pub struct SharedRegistry {
    redis: Redis,
    put: Script,
    delete: Script,
    merge: Script,
}

/// The field of a tool in the `tools` and `tool_versions` hashes.
pub fn field(tenant: &str, name: &str) -> String {
    format!("{tenant}\0{name}")
}

impl SharedRegistry {
    pub fn new(redis: Redis) -> Self {
        Self { redis, put: Script::new(PUT), delete: Script::new(DELETE), merge: Script::new(MERGE) }
    }

    pub fn redis(&self) -> &Redis {
        &self.redis
    }

    /// The channel every change is announced on.
    pub fn channel(&self) -> String {
        self.redis.key("registry", &[])
    }

    fn keys(&self) -> [String; 3] {
        [self.redis.key("tools", &[]), self.redis.key("tool_versions", &[]), self.redis.key("registry_gen", &[])]
    }

    /// Stores `spec` (its `version` is ignored) and returns the version Redis gave it: 1 for a new tool.
    pub async fn put(&self, spec: &ToolSpec) -> Result<u64, ClusterError> {
        let [tools, versions, generation] = self.keys();
        let json = serde_json::to_string(spec).expect("a ToolSpec always serializes");
        let mut call = self.put.prepare_invoke();
        call.key(&tools)
            .key(versions)
            .key(generation)
            .arg(field(&spec.tenant, &spec.name))
            .arg(json)
            .arg(self.channel());
        let (version, _generation): (u64, u64) =
            self.redis.run(|mut conn| async move { call.invoke_async(&mut conn).await }).await?;
        self.redis.replicated(&tools).await?;
        Ok(version)
    }

    /// Deletes a tool; `false` when Redis had none by that name.
    pub async fn delete(&self, tenant: &str, name: &str) -> Result<bool, ClusterError> {
        let [tools, versions, generation] = self.keys();
        let mut call = self.delete.prepare_invoke();
        call.key(&tools).key(versions).key(generation).arg(field(tenant, name)).arg(self.channel());
        let generation: u64 = self.redis.run(|mut conn| async move { call.invoke_async(&mut conn).await }).await?;
        self.redis.replicated(&tools).await?;
        Ok(generation > 0)
    }

    /// The registry's generation; `None` when Redis holds no registry.
    pub async fn generation(&self) -> Result<Option<u64>, ClusterError> {
        let key = self.redis.key("registry_gen", &[]);
        self.redis.run(|mut conn| async move { redis::cmd("GET").arg(key).query_async(&mut conn).await }).await
    }

    /// One tool as Redis holds it now, with its version.
    pub async fn fetch(&self, tenant: &str, name: &str) -> Result<Option<ToolSpec>, ClusterError> {
        let [tools, versions, _] = self.keys();
        let field = field(tenant, name);
        let mut pipe = redis::pipe();
        pipe.atomic().hget(tools, &field).hget(versions, &field);
        let (json, version): (Option<String>, Option<u64>) =
            self.redis.run(|mut conn| async move { pipe.query_async(&mut conn).await }).await?;
        let Some(json) = json else { return Ok(None) };
        self.parse(&field, &json, version.unwrap_or(1)).map(Some)
    }

    /// Every tool, read atomically with the generation they are at.
    pub async fn fetch_all(&self) -> Result<Snapshot, ClusterError> {
        let [tools, versions, generation] = self.keys();
        let mut pipe = redis::pipe();
        pipe.atomic().get(generation).get(self.redis.key("registry_epoch", &[])).hgetall(tools).hgetall(versions);
        type Reply = (Option<u64>, Option<String>, HashMap<String, String>, HashMap<String, u64>);
        let (generation, epoch, jsons, versions): Reply = self
            .redis
            .run_within(FULL_READ_TIMEOUT, |mut conn| async move { pipe.query_async(&mut conn).await })
            .await?;
        let specs = jsons
            .iter()
            .map(|(field, json)| self.parse(field, json, versions.get(field).copied().unwrap_or(1)))
            .collect::<Result<_, _>>()?;
        Ok(Snapshot { generation, epoch, specs })
    }

    /// Merges `specs` into a Redis that was reset (see `MERGE`), and returns its epoch.
    pub async fn merge(&self, specs: &[&ToolSpec]) -> Result<String, ClusterError> {
        let [tools, versions, generation] = self.keys();
        let mut call = self.merge.prepare_invoke();
        call.key(tools).key(versions).key(generation).key(self.redis.key("registry_epoch", &[])).key(self.channel());
        call.arg(new_epoch());
        for spec in specs {
            let json = serde_json::to_string(spec).expect("a ToolSpec always serializes");
            call.arg(field(&spec.tenant, &spec.name)).arg(json).arg(spec.version);
        }
        self.redis.run_within(FULL_READ_TIMEOUT, |mut conn| async move { call.invoke_async(&mut conn).await }).await
    }

    fn parse(&self, field: &str, json: &str, version: u64) -> Result<ToolSpec, ClusterError> {
        let mut spec: ToolSpec = serde_json::from_str(json)
            .map_err(|e| self.redis.corrupt(format!("tool {:?}", field.replace('\0', "/")), e))?;
        spec.version = version;
        Ok(spec)
    }
}

/// An epoch no other registry creation shares: the time and this process.
fn new_epoch() -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
    format!("{nanos:x}-{:x}", std::process::id())
}
