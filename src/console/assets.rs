//! The console's static files, embedded in the binary: nothing is loaded from the network or the disk.

use axum::extract::Path;
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use http::header::{CACHE_CONTROL, CONTENT_TYPE};

/// htmx 2.0.11 (0BSD, `assets/console/htmx.LICENSE`), for the parts of pages that refresh themselves.
const HTMX: &str = include_str!("../../assets/console/htmx.min.js");
const CSS: &str = include_str!("../../assets/console/console.css");

pub async fn serve(Path(name): Path<String>) -> Response {
    let (body, kind) = match name.as_str() {
        "htmx.min.js" => (HTMX, "text/javascript; charset=utf-8"),
        "console.css" => (CSS, "text/css; charset=utf-8"),
        _ => return (StatusCode::NOT_FOUND, "no such asset").into_response(),
    };
    ([(CONTENT_TYPE, kind), (CACHE_CONTROL, "max-age=3600")], body).into_response()
}
