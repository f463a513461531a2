//! The Prompt Lab page: a few self-contained files embedded in the binary
//! (no CDN, no build step, works offline), split by concern — the HTML, the
//! CSS, shared helpers (`lab.js`), streaming a turn (`stream.js`), the
//! override editors and files (`editors.js`), the chat (`chat.js`), A/B
//! (`ab.js`), runs and eval history (`history.js`), the Review view
//! (`review.js`), start-up (`boot.js`).
//! Served with a Content-Security-Policy allowing only this origin's
//! scripts, styles and calls, so no injected text can run as script.

use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data: blob:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// (name, content type, contents).
const ASSETS: &[(&str, &str, &str)] = &[
    (
        "lab.css",
        "text/css; charset=utf-8",
        include_str!("assets/lab.css"),
    ),
    (
        "lab.js",
        "text/javascript; charset=utf-8",
        include_str!("assets/lab.js"),
    ),
    (
        "stream.js",
        "text/javascript; charset=utf-8",
        include_str!("assets/stream.js"),
    ),
    (
        "editors.js",
        "text/javascript; charset=utf-8",
        include_str!("assets/editors.js"),
    ),
    (
        "chat.js",
        "text/javascript; charset=utf-8",
        include_str!("assets/chat.js"),
    ),
    (
        "ab.js",
        "text/javascript; charset=utf-8",
        include_str!("assets/ab.js"),
    ),
    (
        "history.js",
        "text/javascript; charset=utf-8",
        include_str!("assets/history.js"),
    ),
    (
        "review.js",
        "text/javascript; charset=utf-8",
        include_str!("assets/review.js"),
    ),
    (
        "boot.js",
        "text/javascript; charset=utf-8",
        include_str!("assets/boot.js"),
    ),
];

const LAB_PAGE: &str = include_str!("assets/lab.html");

pub async fn page() -> Response {
    with_policy(
        (
            [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
            LAB_PAGE,
        )
            .into_response(),
    )
}

pub async fn asset(Path(name): Path<String>) -> Response {
    match ASSETS.iter().find(|(asset, _, _)| *asset == name) {
        Some((_, kind, text)) => {
            with_policy(([(header::CONTENT_TYPE, *kind)], *text).into_response())
        }
        None => super::json_error(StatusCode::NOT_FOUND, "no such endpoint".to_string()),
    }
}

fn with_policy(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}
