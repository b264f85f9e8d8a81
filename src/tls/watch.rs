//! Reloading without a restart: a value made from files (a TLS configuration from its certificate, key and CA),
//! made again when any of them changes. Files are polled (their size, modification time and inode), which sees a
//! file rewritten in place, replaced by a rename, or swapped behind a symlink as Kubernetes updates a mounted
//! Secret. Connections already open keep the configuration they were made with; new ones get the current. A file
//! that fails to load keeps the old value, and the reason is logged, once per change.

use super::TlsError;
use arc_swap::ArcSwap;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

/// What one file looked like: its size, modification time and inode (`None` when it could not be read).
type Stamp = Option<(u64, i64, i64, u64)>;

fn stamp(path: &PathBuf) -> Stamp {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.len(), meta.mtime(), meta.mtime_nsec(), meta.ino()))
}

/// A value made from files, and made again when they change.
pub struct Watched<T> {
    current: ArcSwap<T>,
    /// Bumped each time the value is made again: a cheap test of whether something built from it is stale.
    generation: AtomicU64,
    files: Vec<PathBuf>,
    stamps: Mutex<Vec<Stamp>>,
    make: Box<dyn Fn() -> Result<T, TlsError> + Send + Sync>,
    /// What the value is, for the log.
    what: &'static str,
}

impl<T: Send + Sync + 'static> Watched<T> {
    /// Makes the value once; an error here is the caller's to report (the gateway does not start).
    pub fn load(
        what: &'static str,
        files: Vec<PathBuf>,
        make: impl Fn() -> Result<T, TlsError> + Send + Sync + 'static,
    ) -> Result<Arc<Self>, TlsError> {
        let stamps = files.iter().map(stamp).collect();
        let value = make()?;
        let (current, generation) = (ArcSwap::from_pointee(value), AtomicU64::new(0));
        Ok(Arc::new(Self { current, generation, files, stamps: Mutex::new(stamps), make: Box::new(make), what }))
    }

    /// The value now.
    pub fn current(&self) -> Arc<T> {
        self.current.load_full()
    }

    /// How many times the value has been made again.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Makes the value again if a file changed since the last look; whether it did.
    pub fn check(&self) -> bool {
        let now: Vec<Stamp> = self.files.iter().map(stamp).collect();
        {
            let mut seen = self.stamps.lock().unwrap_or_else(|p| p.into_inner());
            if *seen == now {
                return false;
            }
            *seen = now;
        }
        match (self.make)() {
            Ok(value) => {
                self.current.store(Arc::new(value));
                self.generation.fetch_add(1, Ordering::AcqRel);
                tracing::info!(what = self.what, "TLS files changed: new connections use the new ones");
                true
            }
            Err(err) => {
                tracing::error!(what = self.what, error = %err, "TLS files changed but do not load: the old ones stay in use");
                false
            }
        }
    }
}

/// Anything `Reloads` can look at.
pub trait Watchable: Send + Sync {
    fn check_now(&self) -> bool;
}

impl<T: Send + Sync + 'static> Watchable for Watched<T> {
    fn check_now(&self) -> bool {
        self.check()
    }
}

/// The watched values of one gateway, looked at every `every` by a task that ends when they are dropped.
#[derive(Default, Clone)]
pub struct Reloads {
    watched: Vec<Weak<dyn Watchable>>,
}

impl Reloads {
    pub fn add<T: Send + Sync + 'static>(&mut self, watched: &Arc<Watched<T>>) {
        let weak: Weak<Watched<T>> = Arc::downgrade(watched);
        self.watched.push(weak);
    }

    /// Looks at every watched value now; how many were made again.
    pub fn check(&self) -> usize {
        self.watched.iter().filter_map(Weak::upgrade).filter(|w| w.check_now()).count()
    }

    /// Looks every `every`, in a task of its own, until every watched value is gone.
    pub fn spawn(self, every: Duration) -> Option<tokio::task::JoinHandle<()>> {
        if self.watched.is_empty() {
            return None;
        }
        Some(tokio::spawn(async move {
            let mut ticks = tokio::time::interval(every);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                if self.watched.iter().all(|w| w.strong_count() == 0) {
                    return;
                }
                let reloads = self.clone();
                // Reading and parsing the files is blocking work.
                let _ = tokio::task::spawn_blocking(move || reloads.check()).await;
            }
        }))
    }
}
