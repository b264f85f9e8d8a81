//! Each gateway's follower: keeps its registry snapshot in step with Redis through pub/sub, and compares
//! generations on a timer, so a missed notification (or a Redis that lost its data) heals.

use crate::cluster::Redis;
use crate::registry::{Registry, ToolSpec};
use futures::StreamExt;
use std::sync::{Arc, Weak};
use std::time::Duration;

/// What start-up left the follower to do.
pub enum Start {
    /// The registry was synced to this generation, and the config's tools registered.
    Synced(u64),
    /// Redis did not answer: sync first, then register these tools from the config.
    Unsynced(Vec<ToolSpec>),
}

/// Where the follower is: the generation it has applied, and one it saw Redis ahead at.
struct Follower {
    registry: Weak<Registry>,
    redis: Redis,
    channel: String,
    /// The generation every change up to which this snapshot holds.
    seen: u64,
    /// A generation the timer found Redis at, ahead of `seen`: notifications get one period to bring it.
    suspect: Option<u64>,
    /// Static tools from the config still to register: a gateway that started while Redis was down registers
    /// them after its first sync.
    statics: Vec<ToolSpec>,
    /// The generation start-up synced to, if it did: the first subscription skips its full read when Redis is
    /// still there, so a start reads every tool once, not twice.
    synced_at_start: Option<u64>,
}

/// Follows Redis until the registry is dropped. Either start-up synced (`Synced`), or `statics` are registered
/// after the first successful sync.
pub fn spawn(registry: &Arc<Registry>, redis: Redis, start: Start) -> tokio::task::JoinHandle<()> {
    let channel = registry.remote().map(|s| s.channel()).unwrap_or_default();
    let (statics, synced_at_start) = match start {
        Start::Synced(generation) => (Vec::new(), Some(generation)),
        Start::Unsynced(statics) => (statics, None),
    };
    let registry = Arc::downgrade(registry);
    let follower = Follower { registry, redis, channel, seen: 0, suspect: None, statics, synced_at_start };
    tokio::spawn(follower.run())
}

impl Follower {
    async fn run(mut self) {
        let every = self.redis.settings().sync_interval;
        let mut retry = Duration::from_millis(100);
        while self.registry.strong_count() > 0 {
            match self.follow(every).await {
                Ok(()) => retry = Duration::from_millis(100),
                Err(reason) => {
                    tracing::debug!(%reason, "registry follower: retrying");
                    tokio::time::sleep(retry).await;
                    retry = (retry * 2).min(every);
                }
            }
        }
    }

    /// Subscribes, syncs everything, then applies notifications and checks the generation on each tick, until
    /// the subscription or Redis fails (`Err`) or the registry is dropped (`Ok`).
    async fn follow(&mut self, every: Duration) -> Result<(), String> {
        let mut pubsub = self.redis.pubsub().await.map_err(|e| e.to_string())?;
        pubsub.subscribe(&self.channel).await.map_err(|e| e.to_string())?;
        // Subscribed first: whatever changes after this sync is notified.
        self.catch_up().await?;
        let mut messages = pubsub.into_on_message();
        let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        loop {
            tokio::select! {
                message = messages.next() => {
                    let message = message.ok_or("the subscription ended")?;
                    let payload: String = message.get_payload().map_err(|e| e.to_string())?;
                    self.notified(&payload).await?;
                }
                _ = ticks.tick() => {
                    if self.registry.strong_count() == 0 {
                        return Ok(());
                    }
                    self.check_generation().await?;
                }
            }
        }
    }

    /// A change: `generation\ntenant\0name` (the name empty after a reseed).
    async fn notified(&mut self, payload: &str) -> Result<(), String> {
        let (generation, field) = payload.split_once('\n').unwrap_or((payload, ""));
        let Ok(generation) = generation.parse::<u64>() else {
            return self.sync_all().await;
        };
        if generation <= self.seen {
            return Ok(());
        }
        match field.split_once('\0') {
            Some((tenant, name)) if generation == self.seen + 1 => {
                let Some(registry) = self.registry.upgrade() else { return Ok(()) };
                registry.sync_one(tenant, name).await.map_err(|e| e.to_string())?;
                self.seen = generation;
                Ok(())
            }
            // A gap: a notification was missed.
            _ => self.sync_all().await,
        }
    }

    /// The timer's check: a generation ahead of `seen` for a whole period means a notification was lost, and
    /// one behind it, or none, that Redis lost its data; a full sync heals both.
    async fn check_generation(&mut self) -> Result<(), String> {
        let Some(registry) = self.registry.upgrade() else { return Ok(()) };
        let shared = registry.remote().ok_or("not in cluster mode")?;
        match shared.generation().await.map_err(|e| e.to_string())? {
            Some(generation) if generation == self.seen => self.suspect = None,
            Some(generation) if generation > self.seen && self.suspect.is_none_or(|s| s <= self.seen) => {
                self.suspect = Some(generation);
            }
            // Still behind a period later; no registry at all; or one behind `seen`, so Redis was reset.
            _ => {
                drop(registry);
                return self.sync_all().await;
            }
        }
        Ok(())
    }

    /// After subscribing: a full sync, unless start-up has just made one and Redis has not changed since.
    async fn catch_up(&mut self) -> Result<(), String> {
        if let Some(generation) = self.synced_at_start.take() {
            let registry = self.registry.upgrade().ok_or("the registry is gone")?;
            let shared = registry.remote().ok_or("not in cluster mode")?;
            if shared.generation().await.map_err(|e| e.to_string())? == Some(generation) {
                self.seen = generation;
                return Ok(());
            }
        }
        self.sync_all().await
    }

    async fn sync_all(&mut self) -> Result<(), String> {
        let Some(registry) = self.registry.upgrade() else { return Ok(()) };
        self.seen = registry.sync_all().await.map_err(|e| e.to_string())?;
        self.suspect = None;
        for spec in std::mem::take(&mut self.statics) {
            let name = spec.name.clone();
            if let Err(err) = registry.register_unless_unchanged(spec).await {
                tracing::error!(tool = %name, error = %err, "static tool from the config not registered");
            }
        }
        Ok(())
    }
}
