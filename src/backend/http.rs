//! The HTTP backend: the arguments are the JSON body; 2xx is success, 4xx is the model's to fix, 5xx transient.

use super::{BackendError, Invocation, Output, structured_of};
use crate::pipeline::FailureClass;
use crate::registry::HttpBackend;
use reqwest::{Method, StatusCode};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::RwLock;
use std::time::Duration;

/// How much of an error body the message quotes.
const ERROR_BODY_CHARS: usize = 500;

pub struct HttpClient {
    client: reqwest::Client,
    /// One pool per Unix socket a tool is served on (`unix:` URLs), made at the first call.
    sockets: RwLock<HashMap<PathBuf, reqwest::Client>>,
    connect_timeout: Duration,
    max_result_bytes: usize,
}

impl HttpClient {
    pub fn new(connect_timeout: Duration, max_result_bytes: usize) -> Self {
        super::install_tls_provider();
        let client = builder(connect_timeout).build().expect("the HTTP client configuration is static and valid");
        Self { client, sockets: RwLock::default(), connect_timeout, max_result_bytes }
    }

    /// The client and URL a call to `spec` goes out with: a `unix:` URL's socket's pool, and its request path.
    fn route(&self, spec: &HttpBackend) -> Result<(reqwest::Client, String), BackendError> {
        let Some((socket, path)) = spec.unix_socket() else { return Ok((self.client.clone(), spec.url.clone())) };
        let url = format!("http://localhost{path}");
        if let Some(client) = self.sockets.read().unwrap_or_else(|p| p.into_inner()).get(&socket) {
            return Ok((client.clone(), url));
        }
        let client = builder(self.connect_timeout)
            .unix_socket(socket.clone())
            .build()
            .map_err(|e| BackendError::Unavailable(format!("no HTTP client for {}: {e}", socket.display())))?;
        let mut sockets = self.sockets.write().unwrap_or_else(|p| p.into_inner());
        Ok((sockets.entry(socket).or_insert(client).clone(), url))
    }

    pub async fn invoke(&self, spec: &HttpBackend, call: Invocation<'_>) -> Result<Output, BackendError> {
        let method = if spec.method.is_empty() {
            Method::POST
        } else {
            spec.method.to_ascii_uppercase().parse().unwrap_or(Method::POST)
        };
        let (client, url) = self.route(spec)?;
        let mut request = client
            .request(method, url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header("x-toolgate-call-id", call.call_id)
            .header("x-toolgate-tool", call.tool)
            .body(call.arguments.to_owned());
        for (name, value) in &spec.headers {
            request = request.header(name, value);
        }
        // Replacing, not adding to, any `traceparent` a spec's static headers set.
        let trace: reqwest::header::HeaderMap = call
            .trace
            .iter()
            .filter_map(|(name, value)| Some((reqwest::header::HeaderName::from_static(name), value.parse().ok()?)))
            .collect();
        request = request.headers(trace);
        let mut response = request.send().await.map_err(|e| BackendError::Unavailable(describe(&e)))?;
        let status = response.status();
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| BackendError::Unavailable(describe(&e)))? {
            if body.len() + chunk.len() > self.max_result_bytes {
                // The same call would answer the same: not worth a retry.
                let message = format!("the result is over the limit of {} bytes", self.max_result_bytes);
                return Err(BackendError::fatal(message));
            }
            body.extend_from_slice(&chunk);
        }
        let text = String::from_utf8_lossy(&body).into_owned();
        if status.is_success() {
            let structured = structured_of(&text);
            return Ok(Output { content: text, structured });
        }
        Err(status_error(status, &text))
    }
}

fn builder(connect_timeout: Duration) -> reqwest::ClientBuilder {
    reqwest::Client::builder().connect_timeout(connect_timeout).user_agent(concat!("toolgate/", env!("CARGO_PKG_VERSION")))
}

fn status_error(status: StatusCode, body: &str) -> BackendError {
    let quoted: String = body.chars().take(ERROR_BODY_CHARS).collect();
    let message =
        if quoted.trim().is_empty() { format!("HTTP {status}") } else { format!("HTTP {status}: {}", quoted.trim()) };
    let class = if status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS {
        FailureClass::Retryable
    } else if status.is_client_error() {
        FailureClass::ModelFixable
    } else {
        FailureClass::Fatal
    };
    BackendError::Tool { message, class }
}

/// reqwest's own text hides the cause; walk the chain so "connection refused" reaches the operator.
fn describe(err: &reqwest::Error) -> String {
    let mut text = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        text += &format!(": {cause}");
        source = cause.source();
    }
    text
}
