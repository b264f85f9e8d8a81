//! The fleet under faults, with real parts: three `toolgate serve` processes behind Debian's HAProxy (gRPC over
//! HTTP/2, the consoles and the MCP front doors over HTTP), on a Redis Cluster of 3 primaries and 3 replicas, then
//! on a Sentinel set, with mixed load (`fleet_load`, `fleet_review`) while gateways and Redis nodes are killed,
//! failed over and paused. The tool counts what ran: no call id runs twice, and nothing acknowledged is lost.

use super::fleet_load::{Shared, Tally, caller, mcp_caller, mcp_session_caller, registrar};
use super::fleet_review::{Reviewer, Reviews, reviews};
use crate::support::cluster::cut::Cut;
use crate::support::cluster::redis_cluster::RedisCluster;
use crate::support::cluster::rig::Rig;
use crate::support::cluster::sentinel::{SentinelSet, ask_primary};
use crate::support::eventually;
use serde_json::json;
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;

const SECOND: Duration = Duration::from_secs(1);

/// `work` (a cluster-wide limit far above the load, so each call asks Redis, and a 2 s timeout) and `reviewed`
/// (review required), registered through gateway 0 and known to all. Both fail closed while Redis is unreachable:
/// a call is then refused rather than run without its limit or its call-id record, and its claim waits for a
/// replica, so that no failover lets an id run twice.
async fn register_tools(rig: &mut Rig) {
    let url = rig.tool_url.clone();
    let work = json!({"name": "work", "input_schema": {"type": "object"}, "backend": {"http": {"url": url}},
        "limits": {"rate": "100000/s", "timeout_ms": 2000, "when_redis_down": "FAIL_CLOSED"}});
    let reviewed = json!({"name": "reviewed", "input_schema": {"type": "object"}, "backend": {"http": {"url": url}},
        "review": {"required": true}, "limits": {"when_redis_down": "FAIL_CLOSED"}});
    let first = rig.members[0].node.as_mut().unwrap();
    // Refused (UNAVAILABLE, retryable) until every new replica has synced: as a client would, try again.
    for spec in [work, reviewed] {
        let mut registered = async || first.register(spec.clone()).await.is_ok();
        eventually(15 * SECOND, "registered once the replicas synced", async || registered().await).await;
    }
    for member in &mut rig.members {
        let node = member.node.as_mut().unwrap();
        eventually(15 * SECOND, "tools known", async || node.version("reviewed").await.is_some()).await;
    }
}

/// The load's tasks until `until`: four gRPC callers, a registrar, MCP calls, and reviews.
struct Load {
    tally: Shared,
    tasks: Vec<JoinHandle<()>>,
    reviews: JoinHandle<Reviews>,
}

async fn start_load(rig: &Rig, until: Instant) -> Load {
    let tally = Shared::default();
    let channel = crate::support::connect(rig.haproxy.grpc).await;
    let mut tasks = Vec::new();
    for who in 0..4 {
        // A connection to HAProxy per caller; HAProxy spreads each request over the gateways.
        let own = crate::support::connect(rig.haproxy.grpc).await;
        tasks.push(tokio::spawn(caller(own, format!("w{who}"), "work", until, tally.clone())));
    }
    tasks.push(tokio::spawn(registrar(channel.clone(), rig.tool_url.clone(), until, tally.clone())));
    tasks.push(tokio::spawn(mcp_caller(format!("{}/mcp", rig.http_url()), "work", until, tally.clone())));
    let on_session = mcp_session_caller(format!("{}/mcp", rig.http_url()), "work", until, tally.clone());
    tasks.push(tokio::spawn(on_session));
    let reviewer = Reviewer::login(rig.http_url()).await;
    let reviews = tokio::spawn(reviews(channel, reviewer, "reviewed", until, tally.clone()));
    Load { tally, tasks, reviews }
}

/// Polls each gateway's `toolgate.cluster` health every 100 ms until `until`: per gateway, the time it reported
/// NOT_SERVING (Redis unreachable: a tool that fails open runs without its global limit or call-id record; one
/// that fails closed is refused), in all and longest.
fn watch_degraded(rig: &Rig, until: Instant) -> JoinHandle<Vec<(u128, u128)>> {
    let addrs: Vec<_> = rig.members.iter().map(|m| m.listeners.grpc).collect();
    tokio::spawn(async move {
        let mut out = vec![(0, 0); addrs.len()];
        let mut since = vec![None::<Instant>; addrs.len()];
        let mut health = Vec::new();
        for addr in &addrs {
            let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}")).unwrap().connect_lazy();
            health.push(tonic_health::pb::health_client::HealthClient::new(channel));
        }
        while Instant::now() < until {
            for (i, client) in health.iter_mut().enumerate() {
                let request = tonic_health::pb::HealthCheckRequest { service: "toolgate.cluster".into() };
                let mut request = tonic::Request::new(request);
                request.set_timeout(Duration::from_millis(500));
                let status = client.check(request).await.map(|r| r.into_inner().status).unwrap_or(-1);
                match (status == 2, since[i]) {
                    (true, None) => since[i] = Some(Instant::now()),
                    (false, Some(start)) => {
                        let took: Duration = Instant::now() - start;
                        out[i].0 += took.as_millis();
                        out[i].1 = out[i].1.max(took.as_millis());
                        since[i] = None;
                    }
                    _ => {}
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        out
    })
}

/// Sleeps until `at` after `start`, and says what comes next.
async fn at(start: Instant, offset: u64, what: &str) {
    tokio::time::sleep_until((start + Duration::from_secs(offset)).into()).await;
    println!("fleet: t={:.1}s {what}", start.elapsed().as_secs_f64());
}

/// Waits for the load, checks what must hold, and prints the summary line.
async fn settle(shape: &str, rig: &mut Rig, load: Load, degraded: JoinHandle<Vec<(u128, u128)>>) {
    for task in load.tasks {
        task.await.expect("a load task");
    }
    let reviews = load.reviews.await.expect("the reviews");
    let degraded = degraded.await.unwrap();
    let tally = std::mem::take(&mut *load.tally.lock().unwrap());
    let duplicates = rig.ledger.duplicates();
    let lost = lost_acks(rig, &tally, &reviews).await;
    let fail_open = rig.fail_open_counts().await;
    let run = rig.ledger.total();
    let unrun: Vec<&String> = tally.answered.iter().filter(|id| rig.ledger.runs_of(id) == 0).collect();
    println!(
        "fleet: {shape} calls={} retried={} answered={} gave_up={} run={run} mcp={}/{} mcp_sessions={}/{} opened={} \
         reviews_acked={} reviews_ran={} \
         registrations_acked={} refused{} duplicates={} lost_acks={} longest_refusal_window_ms={} \
         redis_unreachable_ms(total,longest per gateway)={degraded:?} fail_open_calls(all,unrecorded)={fail_open:?}",
        tally.calls,
        tally.retried,
        tally.answered.len(),
        tally.gave_up,
        tally.mcp_ok,
        tally.mcp,
        tally.sessions.1,
        tally.sessions.0,
        tally.sessions.2,
        reviews.acked.len(),
        reviews.answered_ok,
        tally.registered.len(),
        tally.refused_text(),
        duplicates.len(),
        lost.len(),
        tally.longest_refusal_window_ms(),
    );
    // The tools fail closed: no call runs unrecorded, so no id may run twice, whatever failed.
    let unrecorded: u64 = fail_open.iter().map(|c| c[1]).sum();
    assert_eq!(unrecorded, 0, "calls ran without the call-id record though their tool fails closed");
    assert!(duplicates.is_empty(), "{} ids ran twice: {duplicates:?}", duplicates.len());
    assert!(lost.is_empty(), "acknowledged, then lost: {lost:?}");
    // Round robin sends a session's requests to every gateway in turn: they are served wherever they land.
    assert!(
        tally.sessions.1 * 2 > tally.sessions.0,
        "most calls on a 2025-11-25 session answered: {:?}",
        tally.sessions
    );
    assert!(unrun.is_empty(), "answered with a result the tool never produced: {unrun:?}");
    assert!(
        tally.answered.len() as u64 * 2 > tally.calls,
        "most calls are answered: {}/{}",
        tally.answered.len(),
        tally.calls
    );
    assert!(!tally.registered.is_empty() && !reviews.acked.is_empty(), "registrations and reviews were acknowledged");
}

/// Acknowledgements not honoured: a registration missing (or older) on a gateway, an approval neither run nor in
/// the shared record.
async fn lost_acks(rig: &mut Rig, tally: &Tally, reviews: &Reviews) -> Vec<String> {
    let mut lost = Vec::new();
    for member in &mut rig.members {
        let node = member.node.as_mut().expect("every gateway runs at the end");
        // 15 s for a gateway to catch up on all of them (a restarted one resyncs), not 15 s each.
        let until = Instant::now() + 15 * SECOND;
        for (name, version) in &tally.registered {
            let mut seen = async || node.version(name).await.is_some_and(|v| v >= *version);
            while !seen().await && Instant::now() < until {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            if !seen().await {
                lost.push(format!("registration {name} v{version} on {}", node.addr));
            }
        }
    }
    let reviewer = Reviewer::login(rig.http_url()).await;
    for id in &reviews.acked {
        if rig.ledger.runs_of(id) == 0 && !reviewer.recorded(id).await {
            lost.push(format!("approval of {id}"));
        }
    }
    lost
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server and haproxy; .ci/run runs it"]
async fn a_fleet_behind_haproxy_on_a_redis_cluster_runs_no_call_twice_and_loses_no_ack_through_faults() {
    let mut redis = RedisCluster::start().await;
    let url = redis.url();
    let mut rig = Rig::start([url.as_str(); 3]).await;
    register_tools(&mut rig).await;
    let start = Instant::now();
    let until = start + 34 * SECOND;
    let load = start_load(&rig, until).await;
    let degraded = watch_degraded(&rig, until);
    at(start, 4, "kill gateway 1").await;
    rig.kill(1).await;
    at(start, 7, "restart gateway 1").await;
    rig.restart(1).await;
    at(start, 10, "CLUSTER FAILOVER of the registry's primary").await;
    let promoted = redis.failover(redis.primary_of("{fleet:registry}"));
    println!("fleet: replica promoted in {:?}", redis.wait_primary(promoted, 15 * SECOND).await);
    at(start, 15, "kill the primary of the tenant's limits").await;
    let victim = redis.primary_of("{fleet:tenant:}");
    let heir = redis.replica_of(victim);
    redis.nodes[victim].kill();
    println!("fleet: replica took over in {:?}", redis.wait_primary(heir, 20 * SECOND).await);
    at(start, 21, "restart the killed node (it rejoins as a replica)").await;
    redis.nodes[victim].restart().await;
    println!("fleet: cluster ok again in {:?}", redis.wait_ok(20 * SECOND).await);
    at(start, 26, "CLIENT PAUSE 1500 ALL on the reviews' primary").await;
    redis.nodes[redis.primary_of("{fleet:reviews}")].pause(1500);
    settle("cluster", &mut rig, load, degraded).await;
    println!("fleet: cluster run took {:?}", start.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server and haproxy; .ci/run runs it"]
async fn a_fleet_on_a_sentinel_set_rides_out_failovers_and_one_gateway_cut_from_redis() {
    let mut set = SentinelSet::start().await;
    let ports = set.sentinel_ports();
    // Gateway 2 names one address, a proxy to whichever node the sentinels call primary: the cut is made there.
    let mut cut = Cut::start(move || {
        let port = ask_primary(&ports).unwrap_or(1);
        std::net::SocketAddr::from(([127, 0, 0, 1], port))
    })
    .await;
    let (sentinel_url, cut_url) = (set.url(), cut.url());
    let mut rig = Rig::start([sentinel_url.as_str(), sentinel_url.as_str(), cut_url.as_str()]).await;
    register_tools(&mut rig).await;
    let start = Instant::now();
    // Calm after 19 s: the writes refused while a primary had fewer replicas than before resume once they resynced.
    let until = start + 32 * SECOND;
    let load = start_load(&rig, until).await;
    let degraded = watch_degraded(&rig, until);
    at(start, 3, "cut gateway 2 from Redis").await;
    cut.cut();
    at(start, 6, "join gateway 2 again").await;
    cut.join().await;
    at(start, 9, "SENTINEL FAILOVER tg").await;
    let old = set.failover();
    println!("fleet: sentinels named a new primary in {:?}", set.wait_new_primary(old, 15 * SECOND).await);
    at(start, 14, "kill the primary").await;
    let old = set.primary_port();
    set.primary().kill();
    println!("fleet: sentinels named a new primary in {:?}", set.wait_new_primary(old, 20 * SECOND).await);
    at(start, 19, "restart the old primary (a replica now)").await;
    set.data.iter_mut().find(|n| n.port == old).unwrap().restart().await;
    settle("sentinel", &mut rig, load, degraded).await;
    println!("fleet: sentinel run took {:?}", start.elapsed());
}
