//! `toolgate.v1.ToolReview`: the reviewers' plane over the review queue: list, decide, watch.

use super::auth::{claims, claims_scope};
use super::status::ServiceError;
use crate::pb::v1::{self as pb, tool_review_server::ToolReview};
use crate::pipeline::ParseLimits;
use crate::registry::Registry;
use crate::review::{self, EventKind, ReviewKey, ReviewQueue, ReviewRecord, ReviewVerdict, VerdictError};
use crate::tls::PeerIdentity;
use futures::Stream;
use std::pin::Pin;
use std::sync::Arc;
use tokio::sync::broadcast::error::RecvError;
use tonic::{Request, Response, Status};

pub struct ReviewService {
    queue: Arc<ReviewQueue>,
    registry: Arc<Registry>,
    limits: ParseLimits,
}

impl ReviewService {
    pub fn new(queue: Arc<ReviewQueue>, registry: Arc<Registry>, limits: ParseLimits) -> Self {
        Self { queue, registry, limits }
    }

    /// The verdict a request asks for.
    fn verdict(req: pb::DecideRequest) -> Result<ReviewVerdict, ServiceError> {
        match pb::ReviewAction::try_from(req.action).unwrap_or_default() {
            pb::ReviewAction::Approve => Ok(ReviewVerdict::Approve),
            pb::ReviewAction::Reject => Ok(ReviewVerdict::Reject(req.feedback)),
            pb::ReviewAction::Edit => Ok(ReviewVerdict::Edit(req.arguments)),
            pb::ReviewAction::Unspecified => {
                Err(ServiceError::BadRequest("action is required: APPROVE, EDIT or REJECT".into()))
            }
        }
    }
}

type EventStream = Pin<Box<dyn Stream<Item = Result<pb::ReviewEvent, Status>> + Send>>;

#[tonic::async_trait]
impl ToolReview for ReviewService {
    async fn list_pending(
        &self,
        request: Request<pb::ListPendingRequest>,
    ) -> Result<Response<pb::ListPendingResponse>, Status> {
        let peer = request.extensions().get::<PeerIdentity>().cloned();
        let req = request.into_inner();
        let tenant = (!req.all_tenants).then_some(req.tenant.as_str());
        claims_scope(peer.as_ref(), tenant)?;
        let pending = self.queue.pending(tenant).await.iter().map(pb::PendingReview::from).collect();
        Ok(Response::new(pb::ListPendingResponse { pending }))
    }

    async fn decide(&self, request: Request<pb::DecideRequest>) -> Result<Response<pb::DecideResponse>, Status> {
        let peer = request.extensions().get::<PeerIdentity>().cloned();
        let mut req = request.into_inner();
        if req.call_id.is_empty() {
            return Err(ServiceError::BadRequest("call_id is required".into()).into());
        }
        claims(peer.as_ref(), &req.tenant)?;
        let key = ReviewKey { tenant: req.tenant.clone(), call_id: req.call_id.clone() };
        let reviewer = std::mem::take(&mut req.reviewer);
        let verdict = Self::verdict(req)?;
        let by = Some(reviewer.as_str()).filter(|r| !r.is_empty());
        let decided = match review::decide(&self.queue, &self.registry, self.limits, &key, verdict, by).await {
            Ok(decided) => decided,
            Err(VerdictError::Review(err)) => return Err(ServiceError::Review(err).into()),
            Err(refused) => return Err(ServiceError::BadRequest(refused.to_string()).into()),
        };
        tracing::info!(call_id = %key.call_id, tenant = %key.tenant, tool = %decided.tool, reviewer = decided.decided_by.as_deref().unwrap_or(""), "review decided");
        Ok(Response::new(pb::DecideResponse { decided: Some((&decided).into()) }))
    }

    type WatchPendingStream = EventStream;

    async fn watch_pending(
        &self,
        request: Request<pb::WatchPendingRequest>,
    ) -> Result<Response<Self::WatchPendingStream>, Status> {
        let peer = request.extensions().get::<PeerIdentity>().cloned();
        let req = request.into_inner();
        let tenant = (!req.all_tenants).then_some(req.tenant);
        claims_scope(peer.as_ref(), tenant.as_deref())?;
        let (pending, mut events) = self.queue.subscribe_with_pending(tenant.as_deref()).await;
        let mut closing = self.queue.closing();
        let wanted = move |r: &ReviewRecord| tenant.as_deref().is_none_or(|t| r.key.tenant == t);
        let stream = async_stream(move |tx| async move {
            for record in &pending {
                tx.send(Ok(event(EventKind::Pending, record))).await.map_err(drop)?;
            }
            loop {
                let next = tokio::select! {
                    next = events.recv() => next,
                    // The gateway is shutting down: end the stream, so the shutdown does not wait for it.
                    _ = closing.wait_for(|closed| *closed) => return Ok(()),
                };
                match next {
                    Ok(e) if wanted(&e.record) => tx.send(Ok(event(e.kind, &e.record))).await.map_err(drop)?,
                    Ok(_) => {}
                    Err(RecvError::Lagged(missed)) => {
                        let reason = format!("the watcher fell {missed} events behind; watch again to resync");
                        let _ = tx.send(Err(ServiceError::Aborted(reason).into())).await;
                        return Err(());
                    }
                    Err(RecvError::Closed) => {
                        // A shared queue lost its subscription to Redis meanwhile, so events may be missing.
                        let reason = "the feed of review changes was interrupted; watch again to resync".to_owned();
                        let _ = tx.send(Err(ServiceError::Aborted(reason).into())).await;
                        return Err(());
                    }
                }
            }
        });
        Ok(Response::new(Box::pin(stream)))
    }
}

fn event(kind: EventKind, record: &ReviewRecord) -> pb::ReviewEvent {
    let kind = match kind {
        EventKind::Pending => pb::review_event::Kind::Pending,
        EventKind::Decided => pb::review_event::Kind::Decided,
    };
    pb::ReviewEvent { kind: kind.into(), review: Some(record.into()) }
}

/// A stream fed by a task through a small channel; the task stops when the client goes away.
fn async_stream<F, Fut>(produce: F) -> impl Stream<Item = Result<pb::ReviewEvent, Status>>
where
    F: FnOnce(tokio::sync::mpsc::Sender<Result<pb::ReviewEvent, Status>>) -> Fut,
    Fut: Future<Output = Result<(), ()>> + Send + 'static,
{
    let (tx, mut rx) = tokio::sync::mpsc::channel(64);
    tokio::spawn(produce(tx));
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
}
