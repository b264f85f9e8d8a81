//! CPU-heavy pipeline work off the async workers: a few threads of their own, so that a call with large
//! arguments cannot hold up health checks and other calls. Work whose caller has gone, or whose deadline has
//! passed, is dropped before it starts; a full queue refuses at once.

use crate::pipeline::CallError;
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;
use tokio::time::Instant;

/// Arguments at least this long are checked on the pool. Below it parsing, validating and repairing cost
/// microseconds (every stage is bounded by its own budget), less than the hand-off to another thread.
pub const HEAVY_ARGUMENT_BYTES: usize = 16 * 1024;

/// Jobs waiting per pool thread before the pool refuses more.
const QUEUED_PER_THREAD: usize = 64;

type Job = Box<dyn FnOnce() + Send>;

/// Why offloaded work did not run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Every thread is busy and the queue is full.
    Busy { queued: usize },
    /// The caller's deadline passed while the job waited.
    Expired,
}

impl Refused {
    /// The call's error for work the pool did not run: busy, UNAVAILABLE and retryable, saying with what
    /// (`busy_with` of the jobs queued); expired, TIMEOUT after the time since `started`.
    pub fn into_error(self, started: Instant, busy_with: impl FnOnce(usize) -> String) -> CallError {
        match self {
            Refused::Busy { queued } => CallError::Unavailable(busy_with(queued)),
            Refused::Expired => CallError::Timeout { after_ms: super::millis(started.elapsed()) },
        }
    }
}

/// The pool: its threads end once it is dropped and their queue drains.
pub struct CpuPool {
    jobs: SyncSender<Job>,
    capacity: usize,
}

impl CpuPool {
    /// A pool of `threads` threads (at least one), named `toolgate-cpu`.
    pub fn new(threads: usize) -> Self {
        let threads = threads.max(1);
        let capacity = threads * QUEUED_PER_THREAD;
        let (jobs, queue) = sync_channel::<Job>(capacity);
        let queue = Arc::new(Mutex::new(queue));
        for index in 0..threads {
            let queue = Arc::clone(&queue);
            let spawned = std::thread::Builder::new().name(format!("toolgate-cpu-{index}")).spawn(move || work(&queue));
            if let Err(err) = spawned {
                // With no thread at all, jobs wait in the queue until it fills, then are refused as busy.
                tracing::error!(error = %err, "starting a pipeline thread failed");
            }
        }
        Self { jobs, capacity }
    }

    /// One thread fewer than the machine has cores, and at least one: the async workers keep a core free.
    pub fn sized_for_machine() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        Self::new(cores.saturating_sub(1))
    }

    /// Runs `work` on the pool and answers its result, unless the caller stops waiting (this future is dropped)
    /// or `deadline` passes before a thread takes it up: then it never starts.
    pub async fn run<T, F>(&self, deadline: Option<Instant>, work: F) -> Result<T, Refused>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let (answer, answered) = oneshot::channel();
        let job: Job = Box::new(move || {
            let expired = deadline.is_some_and(|d| Instant::now() >= d);
            if answer.is_closed() {
                return;
            }
            let _ = answer.send(if expired { Err(Refused::Expired) } else { Ok(work()) });
        });
        match self.jobs.try_send(job) {
            Ok(()) => {}
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                return Err(Refused::Busy { queued: self.capacity });
            }
        }
        // The job always answers unless the pool is gone, which it is not while `self` is borrowed.
        answered.await.unwrap_or(Err(Refused::Busy { queued: self.capacity }))
    }
}

/// A pool thread: takes jobs until the pool is dropped.
fn work(queue: &Mutex<Receiver<Job>>) {
    loop {
        let job = match queue.lock() {
            Ok(receiver) => receiver.recv(),
            Err(poisoned) => poisoned.into_inner().recv(),
        };
        match job {
            Ok(job) => job(),
            Err(_) => return,
        }
    }
}

impl std::fmt::Debug for CpuPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CpuPool").field("capacity", &self.capacity).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test]
    async fn work_runs_on_a_pool_thread_and_answers() {
        let pool = CpuPool::new(1);
        let name = pool.run(None, || std::thread::current().name().map(str::to_owned)).await;
        assert_eq!(name, Ok(Some("toolgate-cpu-0".to_owned())));
    }

    type Blocker<'p> = Pin<Box<dyn Future<Output = Result<Option<()>, Refused>> + 'p>>;

    /// Occupies the pool's one thread until the returned sender sends: the running job's future, and the sender.
    async fn occupy(pool: &CpuPool) -> (Blocker<'_>, std::sync::mpsc::Sender<()>) {
        let (started, running) = std::sync::mpsc::channel::<()>();
        let (hold, held) = std::sync::mpsc::channel::<()>();
        let mut blocker: Blocker<'_> = Box::pin(pool.run(None, move || {
            started.send(()).unwrap();
            held.recv().ok()
        }));
        assert!(futures::poll!(blocker.as_mut()).is_pending(), "queued");
        running.recv().unwrap();
        (blocker, hold)
    }

    #[tokio::test]
    async fn a_job_whose_caller_left_or_whose_deadline_passed_never_starts() {
        let pool = CpuPool::new(1);
        let (blocker, hold) = occupy(&pool).await;
        let ran = Arc::new(AtomicUsize::new(0));
        let counted = |ran: &Arc<AtomicUsize>| {
            let ran = Arc::clone(ran);
            move || ran.fetch_add(1, Ordering::SeqCst)
        };
        // Queued behind the blocker: one caller gives up, the other's deadline passes while it waits.
        let mut abandoned = Box::pin(pool.run(None, counted(&ran)));
        assert!(futures::poll!(abandoned.as_mut()).is_pending());
        drop(abandoned);
        let expired = pool.run(Some(Instant::now()), counted(&ran));
        hold.send(()).unwrap();
        assert_eq!(expired.await, Err(Refused::Expired));
        assert_eq!(blocker.await, Ok(Some(())));
        assert_eq!(pool.run(None, counted(&ran)).await, Ok(0), "only the last job ran");
    }

    #[tokio::test]
    async fn a_full_queue_refuses_at_once() {
        let pool = CpuPool::new(1);
        let (blocker, hold) = occupy(&pool).await;
        let mut queued: Vec<_> = (0..QUEUED_PER_THREAD).map(|i| Box::pin(pool.run(None, move || i))).collect();
        for job in &mut queued {
            assert!(futures::poll!(job.as_mut()).is_pending(), "queued behind the blocker");
        }
        let refused = futures::poll!(Box::pin(pool.run(None, || usize::MAX)));
        assert_eq!(refused, std::task::Poll::Ready(Err(Refused::Busy { queued: QUEUED_PER_THREAD })));
        hold.send(()).unwrap();
        assert_eq!(blocker.await, Ok(Some(())));
        for (i, job) in queued.into_iter().enumerate() {
            assert_eq!(job.await, Ok(i), "every queued job still runs");
        }
    }
}
