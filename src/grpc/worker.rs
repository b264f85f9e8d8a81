//! `toolgate.v1.ToolWorker`: one worker's stream. Its hello registers its tools and attaches it to the
//! `WorkerPool`; then invocations go out and results come in until either side ends, and the worker is detached.

use super::status::ServiceError;
use crate::backend::worker::{Job, WorkerLink, WorkerPool};
use crate::pb::v1::{self as pb, gateway_message, tool_worker_server::ToolWorker, worker_message};
use crate::registry::{Backend, Registry, RegistryError, ToolSpec};
use futures::{Stream, StreamExt};
use std::collections::HashSet;
use std::pin::Pin;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};
use tonic::{Request, Response, Status, Streaming};

/// How long a stream may stay open before its hello arrives.
const HELLO_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

pub struct WorkerService {
    registry: Arc<Registry>,
    pool: Arc<WorkerPool>,
    /// What one result may weigh, as for every other backend.
    max_result_bytes: usize,
}

impl WorkerService {
    pub fn new(registry: Arc<Registry>, pool: Arc<WorkerPool>, max_result_bytes: usize) -> Self {
        Self { registry, pool, max_result_bytes }
    }

    /// Registers the hello's tools and returns them as registered. All are checked before any is registered, so
    /// a refused hello registers nothing.
    async fn register(&self, hello_tools: Vec<pb::ToolSpec>) -> Result<Vec<ToolSpec>, ServiceError> {
        let specs = worker_specs(hello_tools)?;
        let catalog = self.registry.catalog();
        for spec in &specs {
            let name = &spec.name;
            let existing = catalog.get(&spec.tenant, name);
            if let Some(existing) = existing
                && existing.spec.backend != Some(Backend::Worker {})
            {
                let kind = existing.spec.backend.as_ref().map_or("no", Backend::kind);
                let reason =
                    format!("tool {name:?} is already registered with the {kind} backend; no worker may serve it");
                return Err(ServiceError::FailedPrecondition(reason));
            }
            if existing.is_some_and(|e| spec.same_definition(&e.spec)) {
                // A worker reconnecting: checked when it was registered, and left as it is.
                continue;
            }
            // Workers serving one tool share one definition: another would change the schema (or what is injected)
            // under the workers already connected. Once the last of them leaves, a new definition may replace it.
            let serving = self.pool.workers_of(&spec.tenant, name);
            if existing.is_some() && serving > 0 {
                let reason = format!(
                    "tool {name:?} is served by {serving} connected worker(s) with another definition; \
                     a worker must send the same definition, or wait until they leave"
                );
                return Err(ServiceError::FailedPrecondition(reason));
            }
            self.registry.check(spec).map_err(|e| match e {
                RegistryError::Spec(_) => ServiceError::BadRequest(format!("tool {name:?}: {e}")),
                other => other.into(),
            })?;
        }
        let mut registered = Vec::with_capacity(specs.len());
        for spec in specs {
            let (tenant, name) = (spec.tenant.clone(), spec.name.clone());
            // Unchanged tools keep their version, so a worker reconnecting does not bump it.
            self.registry.register_unless_unchanged(spec).await?;
            registered.push(self.registry.get(&tenant, &name)?.spec.clone());
        }
        Ok(registered)
    }
}

/// The hello's specs as the registry will hold them: each with the worker backend, each listed once.
fn worker_specs(tools: Vec<pb::ToolSpec>) -> Result<Vec<ToolSpec>, ServiceError> {
    if tools.is_empty() {
        return Err(ServiceError::BadRequest("a WorkerHello must list at least one tool".into()));
    }
    let mut seen = HashSet::new();
    let mut specs = Vec::with_capacity(tools.len());
    for tool in tools {
        let name = tool.name.clone();
        let bad = |reason: String| ServiceError::BadRequest(format!("tool {name:?}: {reason}"));
        let mut spec = ToolSpec::try_from(tool).map_err(|e| bad(format!("invalid tool spec: {e}")))?;
        match &spec.backend {
            None | Some(Backend::Worker {}) => spec.backend = Some(Backend::Worker {}),
            Some(other) => {
                let kind = other.kind();
                return Err(bad(format!(
                    "a worker serves its own tools, so the backend must be worker or unset, not {kind}"
                )));
            }
        }
        if !seen.insert((spec.tenant.clone(), spec.name.clone())) {
            return Err(bad("is listed twice in the hello".into()));
        }
        specs.push(spec);
    }
    Ok(specs)
}

type GatewayStream = Pin<Box<dyn Stream<Item = Result<pb::GatewayMessage, Status>> + Send>>;

#[tonic::async_trait]
impl ToolWorker for WorkerService {
    type ConnectStream = GatewayStream;

    async fn connect(
        &self,
        request: Request<Streaming<pb::WorkerMessage>>,
    ) -> Result<Response<Self::ConnectStream>, Status> {
        let mut inbound = request.into_inner();
        let first = tokio::time::timeout(HELLO_WAIT, inbound.message()).await.map_err(|_| {
            ServiceError::BadRequest(format!("no WorkerHello within {} s of opening the stream", HELLO_WAIT.as_secs()))
        })?;
        let Some(worker_message::Kind::Hello(hello)) = first?.and_then(|m| m.kind) else {
            let reason = "the first message on a worker stream must be a WorkerHello";
            return Err(ServiceError::BadRequest(reason.into()).into());
        };
        let registered = self.register(hello.tools).await?;
        let tools = registered.iter().map(|s| (s.tenant.clone(), s.name.clone())).collect();
        let (link, jobs) = self.pool.attach(hello.worker_name, tools);
        let welcome = pb::WorkerWelcome {
            worker_id: link.id.clone(),
            tools: registered.iter().map(pb::ToolSpec::from).collect(),
        };
        let (failed, failure) = oneshot::channel();
        let reader = Reader {
            inbound,
            link: Arc::clone(&link),
            pool: Arc::clone(&self.pool),
            max_result_bytes: self.max_result_bytes,
        };
        tokio::spawn(reader.run(failed));
        Ok(Response::new(Box::pin(outbound(welcome, jobs, link, failure))))
    }
}

/// The worker's half of the stream: results, read in a task of its own so that they never wait behind
/// invocations being written.
struct Reader {
    inbound: Streaming<pb::WorkerMessage>,
    link: Arc<WorkerLink>,
    pool: Arc<WorkerPool>,
    max_result_bytes: usize,
}

impl Reader {
    /// Completes calls until the stream ends, fails, breaks the protocol, or the link closes; then detaches the
    /// worker. A protocol error goes to the worker through `failed`, before the detach ends the outbound half.
    async fn run(mut self, mut failed: oneshot::Sender<Status>) {
        let reason = loop {
            let next = tokio::select! {
                next = self.inbound.message() => next,
                () = self.link.closed() => break "the link was closed".to_owned(),
                () = failed.closed() => break "the gateway's half of the stream was dropped".to_owned(),
            };
            let message = match next {
                Ok(Some(message)) => message,
                Ok(None) => break "the worker ended its stream".to_owned(),
                Err(status) => break format!("the worker's stream failed: {status}"),
            };
            if let Err(refused) = self.take(message) {
                let reason = refused.to_string();
                let _ = failed.send(refused.into());
                break reason;
            }
        };
        self.pool.detach(&self.link, &reason);
    }

    /// Hands a result to its call; anything but a result breaks the protocol.
    fn take(&self, message: pb::WorkerMessage) -> Result<(), ServiceError> {
        match message.kind {
            Some(worker_message::Kind::Result(result)) => {
                let (invocation_id, answer) = result.into();
                self.link.complete(&invocation_id, answer.into_result(self.max_result_bytes));
                Ok(())
            }
            Some(worker_message::Kind::Hello(_)) => Err(ServiceError::BadRequest(
                "a worker stream takes one WorkerHello, as its first message; this was a second".into(),
            )),
            None => Err(ServiceError::BadRequest("a WorkerMessage must hold a hello or a result".into())),
        }
    }
}

/// The gateway's half of the stream: the welcome, then each job as it is queued, until the link closes. It ends
/// with the reader's protocol error when there is one.
fn outbound(
    welcome: pb::WorkerWelcome,
    jobs: mpsc::Receiver<Job>,
    link: Arc<WorkerLink>,
    failure: oneshot::Receiver<Status>,
) -> impl Stream<Item = Result<pb::GatewayMessage, Status>> {
    let message = |kind| pb::GatewayMessage { kind: Some(kind) };
    let welcome = futures::stream::once(async move { Ok(message(gateway_message::Kind::Welcome(welcome))) });
    let invocations = futures::stream::unfold(Some((jobs, link, failure)), move |state| async move {
        let (mut jobs, link, mut failure) = state?;
        tokio::select! {
            // The reader reports a protocol error before it closes the link: it must win over the close.
            biased;
            failed = &mut failure => failed.ok().map(|status| (Err(status), None)),
            () = link.closed() => None,
            job = jobs.recv() => {
                let invocation = message(gateway_message::Kind::Invocation(job?.into()));
                Some((Ok(invocation), Some((jobs, link, failure))))
            }
        }
    });
    welcome.chain(invocations)
}
