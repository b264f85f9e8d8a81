//! The HTTP backend: the arguments are the JSON body; 2xx is success, 4xx is the model's to fix, 5xx transient.

use super::{BackendError, Invocation, Output, structured_of};
use crate::pipeline::{FailureClass, ResultBlock};
use crate::registry::HttpBackend;
use crate::tls::ClientTls;
use reqwest::{Method, StatusCode};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// How much of an error body the message quotes.
const ERROR_BODY_CHARS: usize = 500;

pub struct HttpClient {
    /// The pools calls go out on, made with the TLS files of one generation, and made again after they change.
    pools: RwLock<Pools>,
    tls: Arc<ClientTls>,
    connect_timeout: Duration,
    max_result_bytes: usize,
}

/// One pool for TCP, one per Unix socket a tool is served on (`unix:` URLs, made at their first call), and each
/// tool URL's route, read at its first call rather than at every call.
struct Pools {
    generation: u64,
    tcp: reqwest::Client,
    sockets: HashMap<PathBuf, reqwest::Client>,
    routes: HashMap<String, Route>,
}

/// Where a tool's calls go: the pool, and the URL as reqwest takes it (parsing it cost a call 5,900
/// instructions, 2.5% of a whole `Execute` call to an HTTP tool).
#[derive(Clone)]
struct Route {
    client: reqwest::Client,
    url: reqwest::Url,
}

/// Routes, and Unix sockets' pools, kept before their map is emptied: registered URLs only, but tools come and go.
const MAX_ROUTES: usize = 4096;

impl HttpClient {
    pub fn new(connect_timeout: Duration, max_result_bytes: usize, tls: Arc<ClientTls>) -> Self {
        super::install_tls_provider();
        let tcp = builder(connect_timeout, &tls).build().expect("the HTTP client configuration is static and valid");
        let pools = Pools { generation: tls.generation(), tcp, sockets: HashMap::new(), routes: HashMap::new() };
        Self { pools: RwLock::new(pools), tls, connect_timeout, max_result_bytes }
    }

    /// The route of a call to `spec`: a `unix:` URL's socket's pool, and its request path. After the TLS files
    /// changed, new pools: connections already open finish with the old files.
    fn route(&self, spec: &HttpBackend) -> Result<Route, BackendError> {
        let generation = self.tls.generation();
        {
            let pools = self.pools.read().unwrap_or_else(|p| p.into_inner());
            if pools.generation == generation
                && let Some(route) = pools.routes.get(&spec.url)
            {
                return Ok(route.clone());
            }
        }
        let unavailable = |e: reqwest::Error| BackendError::Unavailable(format!("no HTTP client: {e}"));
        let mut pools = self.pools.write().unwrap_or_else(|p| p.into_inner());
        if pools.generation != generation {
            *pools = Pools {
                generation,
                tcp: builder(self.connect_timeout, &self.tls).build().map_err(unavailable)?,
                sockets: HashMap::new(),
                routes: HashMap::new(),
            };
        }
        let (client, url) = match spec.unix_socket() {
            None => (pools.tcp.clone(), spec.url.clone()),
            Some((path, request)) => {
                let client = match pools.sockets.get(&path) {
                    Some(client) => client.clone(),
                    None => {
                        let client = builder(self.connect_timeout, &self.tls)
                            .unix_socket(path.clone())
                            .build()
                            .map_err(unavailable)?;
                        // Bounded as the routes are: a pool a kept route holds lives on in it.
                        if pools.sockets.len() >= MAX_ROUTES {
                            pools.sockets.clear();
                        }
                        pools.sockets.insert(path, client.clone());
                        client
                    }
                };
                (client, format!("http://localhost{request}"))
            }
        };
        let url = reqwest::Url::parse(&url)
            .map_err(|e| BackendError::fatal(format!("http.url {:?} is not a URL: {e}", spec.url)))?;
        let route = Route { client, url };
        if pools.routes.len() >= MAX_ROUTES {
            pools.routes.clear();
        }
        pools.routes.insert(spec.url.clone(), route.clone());
        Ok(route)
    }

    pub async fn invoke(&self, spec: &HttpBackend, call: Invocation<'_>) -> Result<Output, BackendError> {
        let method = if spec.method.is_empty() {
            Method::POST
        } else {
            spec.method.to_ascii_uppercase().parse().unwrap_or(Method::POST)
        };
        let Route { client, url } = self.route(spec)?;
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
        if status.is_success()
            && let Some(block) = media_block(response.headers(), &body)
        {
            // Carried as base64, a third larger: the limit is on what is carried.
            if block.size() > self.max_result_bytes {
                let message = format!("the result is over the limit of {} bytes", self.max_result_bytes);
                return Err(BackendError::fatal(message));
            }
            let (content, blocks) = crate::pipeline::text_and_blocks(vec![block]);
            return Ok(Output { content, structured: None, blocks });
        }
        let text = String::from_utf8_lossy(&body).into_owned();
        if status.is_success() {
            let structured = structured_of(&text);
            return Ok(Output::text(text, structured));
        }
        if status.is_redirection() {
            let to = response.headers().get(reqwest::header::LOCATION).and_then(|l| l.to_str().ok());
            tracing::warn!(tool = call.tool, %status, location = to.unwrap_or_default(), "an HTTP tool redirected");
            return Err(status_error(status, "the tool's URL redirects, and redirects are not followed"));
        }
        Err(status_error(status, &text))
    }
}

/// An image or audio body (by its `Content-Type`) as the content block it is, so that a model that sees images
/// gets the image rather than its bytes as text.
fn media_block(headers: &reqwest::header::HeaderMap, body: &[u8]) -> Option<ResultBlock> {
    use base64::Engine as _;
    let mime_type = headers.get(reqwest::header::CONTENT_TYPE)?.to_str().ok()?;
    let mime_type = mime_type.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    let data = || base64::engine::general_purpose::STANDARD.encode(body);
    match mime_type.split_once('/') {
        Some(("image", _)) => Some(ResultBlock::Image { data: data(), mime_type }),
        Some(("audio", _)) => Some(ResultBlock::Audio { data: data(), mime_type }),
        _ => None,
    }
}

/// A client with the gateway's TLS configuration (`[tls.client]`: its roots and client certificate).
fn builder(connect_timeout: Duration, tls: &ClientTls) -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        .user_agent(concat!("toolgate/", env!("CARGO_PKG_VERSION")))
        // A redirect is answered as the tool's failure, not followed: a 301 or 302 would turn the call's POST into a
        // GET without its arguments, and any redirect would send them to a URL nobody registered.
        .redirect(reqwest::redirect::Policy::none())
        .tls_backend_preconfigured((*tls.http()).clone())
}

fn status_error(status: StatusCode, body: &str) -> BackendError {
    let quoted: String = body.chars().take(ERROR_BODY_CHARS).collect();
    let message =
        if quoted.trim().is_empty() { format!("HTTP {status}") } else { format!("HTTP {status}: {}", quoted.trim()) };
    let class = if status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS {
        FailureClass::Retryable
    } else if model_fixable(status) {
        FailureClass::ModelFixable
    } else {
        // 401, 403, 404, 405, 415…: a misrouted or misconfigured backend, which is not the model's to fix.
        FailureClass::Fatal
    };
    BackendError::Tool { message, class }
}

/// Whether the tool refused the request for what it says: the arguments the model wrote (400, 409, 413, 422). The
/// gateway posts to one URL it was given, so any other 4xx is about the URL, the method or the credentials.
fn model_fixable(status: StatusCode) -> bool {
    matches!(
        status,
        StatusCode::BAD_REQUEST
            | StatusCode::CONFLICT
            | StatusCode::PAYLOAD_TOO_LARGE
            | StatusCode::UNPROCESSABLE_ENTITY
    )
}

/// reqwest's own text hides the cause; walk the chain so "connection refused" reaches the operator.
fn describe(err: &reqwest::Error) -> String {
    if let Some(tls) = crate::tls::find_tls_failure(err) {
        let url = err.url().map_or_else(String::new, |u| format!("{u}: "));
        return format!("{url}TLS: {tls}");
    }
    let mut text = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        text += &format!(": {cause}");
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client() -> HttpClient {
        let tls = Arc::new(ClientTls::load(Default::default()).unwrap());
        HttpClient::new(Duration::from_secs(1), 1 << 20, tls)
    }

    fn spec(url: &str) -> HttpBackend {
        HttpBackend { url: url.into(), method: String::new(), headers: Default::default() }
    }

    fn routes(client: &HttpClient) -> usize {
        client.pools.read().unwrap().routes.len()
    }

    #[test]
    fn a_url_is_read_at_its_first_call_and_its_route_kept() {
        let client = client();
        let tcp = client.route(&spec("http://127.0.0.1:9/echo?x=1")).unwrap();
        assert_eq!(tcp.url.as_str(), "http://127.0.0.1:9/echo?x=1");
        let unix = client.route(&spec("unix:/run/tool.sock:/v1/echo")).unwrap();
        assert_eq!(unix.url.as_str(), "http://localhost/v1/echo");
        assert_eq!(routes(&client), 2);
        assert_eq!(client.route(&spec("http://127.0.0.1:9/echo?x=1")).unwrap().url, tcp.url);
        assert_eq!(routes(&client), 2, "a second call reads the kept route");
        // A kept route is what a call goes out with: one planted under the URL is read, not the URL again.
        let planted = Route { client: tcp.client.clone(), url: reqwest::Url::parse("http://kept.example/").unwrap() };
        client.pools.write().unwrap().routes.insert("http://127.0.0.1:9/echo?x=1".into(), planted);
        assert_eq!(client.route(&spec("http://127.0.0.1:9/echo?x=1")).unwrap().url.as_str(), "http://kept.example/");
        let refused = client.route(&spec("http://[::1")).err().expect("not a URL");
        assert!(refused.to_string().contains("is not a URL"), "{refused}");
    }

    #[test]
    fn the_kept_routes_are_bounded() {
        let client = client();
        for port in 0..MAX_ROUTES {
            client.route(&spec(&format!("http://127.0.0.1:{}/", port + 1))).unwrap();
        }
        assert_eq!(routes(&client), MAX_ROUTES);
        client.route(&spec("http://127.0.0.1:1/other")).unwrap();
        assert_eq!(routes(&client), 1, "emptied, then the new route kept");
    }

    #[test]
    fn the_unix_sockets_pools_are_bounded() {
        let client = client();
        let sockets = |client: &HttpClient| client.pools.read().unwrap().sockets.len();
        for n in 0..MAX_ROUTES {
            client.route(&spec(&format!("unix:/run/tool-{n}.sock:/"))).unwrap();
        }
        assert_eq!(sockets(&client), MAX_ROUTES);
        client.route(&spec("unix:/run/another.sock:/")).unwrap();
        assert_eq!(sockets(&client), 1, "emptied, then the new socket's pool kept");
    }
}
