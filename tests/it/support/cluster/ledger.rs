//! A tool backend for the fleet tests that writes down every execution: a real HTTP server on loopback whose
//! `POST /run` records the call's `nonce` argument and the `x-toolgate-call-id` header the gateway sends, waits
//! `sleep_ms` if the arguments say so, and answers the arguments.

use axum::http::HeaderMap;
use axum::routing::post;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Executions by nonce: the call ids each ran under, in order.
#[derive(Clone, Default)]
pub struct Ledger {
    runs: Arc<Mutex<HashMap<String, Vec<String>>>>,
}

impl Ledger {
    /// Starts the server; returns the URL of `/run`.
    pub async fn serve(&self) -> String {
        let ledger = self.clone();
        let run = post(move |headers: HeaderMap, body: String| {
            let ledger = ledger.clone();
            async move {
                let args: Value = serde_json::from_str(&body).unwrap_or_default();
                let nonce = args["nonce"].as_str().unwrap_or("").to_owned();
                let id = headers.get("x-toolgate-call-id").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
                ledger.runs.lock().unwrap().entry(nonce).or_default().push(id);
                if let Some(ms) = args["sleep_ms"].as_u64() {
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                }
                ([("content-type", "application/json")], body)
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, axum::Router::new().route("/run", run)).await });
        format!("http://{addr}/run")
    }

    /// How many times the call with `nonce` ran.
    pub fn runs_of(&self, nonce: &str) -> usize {
        self.runs.lock().unwrap().get(nonce).map_or(0, Vec::len)
    }

    /// Executions in all.
    pub fn total(&self) -> usize {
        self.runs.lock().unwrap().values().map(Vec::len).sum()
    }

    /// Every nonce that ran more than once, with the call ids of its runs.
    pub fn duplicates(&self) -> Vec<(String, Vec<String>)> {
        let runs = self.runs.lock().unwrap();
        let mut twice: Vec<_> =
            runs.iter().filter(|(_, ids)| ids.len() > 1).map(|(n, i)| (n.clone(), i.clone())).collect();
        twice.sort();
        twice
    }
}
