//! Never-panics properties for the new input paths of issue #24: any
//! `Host`, `Origin` and `Content-Type` a client sends to `serve`, any
//! `--allowed-host` / `--cors-origin` / `--max-call-time` text, any
//! redirect `Location` and base URL, and any text and secrets through the
//! redaction step — with the rule each must keep (only trusted hosts pass;
//! a shown URL has no userinfo or query; no secret survives redaction).

use axum::http::{HeaderMap, HeaderValue, Method, header};
use proptest::prelude::*;

use promptlab::provider::transport::bounds::parse_max_call_time;
use promptlab::provider::transport::redact::{MIN_SECRET_CHARS, REDACTED};
use promptlab::provider::transport::{Redactor, Secret, redirect_message, shown_url};
use promptlab::serve::Trust;

fn trust() -> Trust {
    Trust::new(
        "127.0.0.1".parse().unwrap(),
        &["lab.example".to_string()],
        &["http://localhost:5173".to_string()],
    )
    .unwrap()
}

fn headers(pairs: &[(header::HeaderName, &[u8])]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        if let Ok(value) = HeaderValue::from_bytes(value) {
            map.insert(name.clone(), value);
        }
    }
    map
}

/// The host part a trusted request may name.
fn trusted(host: &str) -> bool {
    let lower = host.trim().to_ascii_lowercase();
    let name = match lower.strip_prefix('[') {
        Some(_) => lower.split_inclusive(']').next().unwrap_or("").to_string(),
        None => lower
            .rsplit_once(':')
            .map_or(lower.clone(), |(n, _)| n.to_string()),
    };
    ["localhost", "127.0.0.1", "[::1]", "lab.example"].contains(&name.as_str())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn any_host_origin_and_content_type_is_answered_without_panicking(
        host in prop_oneof![
            "[ -~]{0,40}",
            "(localhost|127\\.0\\.0\\.1|\\[::1\\]|lab\\.example|evil\\.example)(:[0-9]{0,6})?",
        ],
        origin in proptest::option::of("[ -~]{0,60}"),
        content_type in proptest::option::of("[ -~]{0,60}"),
        post in any::<bool>(),
        raw in proptest::collection::vec(any::<u8>(), 0..40),
    ) {
        let trust = trust();
        let method = if post { Method::POST } else { Method::GET };
        let mut pairs: Vec<(header::HeaderName, &[u8])> = vec![(header::HOST, host.as_bytes())];
        if let Some(origin) = &origin {
            pairs.push((header::ORIGIN, origin.as_bytes()));
        }
        if let Some(content_type) = &content_type {
            pairs.push((header::CONTENT_TYPE, content_type.as_bytes()));
        }
        let map = headers(&pairs);
        let passed = trust.check(&method, &map).is_ok();
        if passed {
            prop_assert!(trusted(&host), "an untrusted Host passed: {host:?}");
        }
        // Raw bytes as a Host (whatever the header type lets through).
        let _ = trust.check(&Method::POST, &headers(&[(header::HOST, &raw)]));
        let _ = trust.host_allowed(&String::from_utf8_lossy(&raw));
    }

    #[test]
    fn any_flag_text_is_accepted_or_refused_without_panicking(
        text in "\\PC{0,60}",
    ) {
        let _ = Trust::new("0.0.0.0".parse().unwrap(), std::slice::from_ref(&text), &[]);
        let _ = Trust::new("::1".parse().unwrap(), &[], std::slice::from_ref(&text));
        if let Ok(duration) = parse_max_call_time(&text) {
            prop_assert!(!duration.is_zero() && duration.as_secs() <= 86_400);
        }
    }

    #[test]
    fn no_secret_survives_redaction(
        secrets in proptest::collection::vec("[A-Za-z0-9+/=_~.-]{0,24}", 0..4),
        pieces in proptest::collection::vec("\\PC{0,20}", 0..6),
    ) {
        let named: Vec<Secret> = secrets.iter().map(|value| Secret { name: "S", value }).collect();
        let (redactor, warnings) = Redactor::new(named);
        let short = secrets.iter().filter(|s| {
            let n = s.trim().chars().count();
            n > 0 && n < MIN_SECRET_CHARS
        });
        prop_assert_eq!(warnings.len(), short.count());
        // Secrets embedded in arbitrary text, as given and URL-encoded.
        let mut text = String::new();
        for (index, piece) in pieces.iter().enumerate() {
            text.push_str(piece);
            if let Some(secret) = secrets.get(index % secrets.len().max(1)) {
                text.push_str(secret);
            }
        }
        let redacted = redactor.redact(&text);
        for secret in secrets.iter().filter(|s| s.chars().count() >= MIN_SECRET_CHARS) {
            prop_assert!(!redacted.contains(secret.as_str()), "{secret} in {redacted}");
        }
        if !redactor.is_empty() && text.contains(secrets.iter().find(|s| s.len() >= MIN_SECRET_CHARS).map_or("\u{0}", |s| s.as_str())) {
            prop_assert!(redacted.contains(REDACTED));
        }
    }

    #[test]
    fn any_location_or_base_url_is_shown_without_userinfo_or_query(
        location in prop_oneof![
            "[ -~]{0,60}",
            "(https?://)?([a-z]{1,8}(:[a-z0-9]{1,12})?@)?[a-z.]{1,12}(:[0-9]{1,5})?/[a-z/]{0,12}(\\?[a-z=&]{0,12})?",
        ],
        status in 300u16..400,
    ) {
        let mut builder = axum::http::Response::builder().status(status);
        if let Ok(value) = HeaderValue::from_str(&location) {
            builder = builder.header(header::LOCATION, value);
        }
        let response = reqwest::Response::from(builder.body(Vec::<u8>::new()).unwrap());
        let message = redirect_message("Gemini", &response).expect("a 3xx is an error");
        prop_assert!(message.ends_with(": redirects are not followed"), "{message}");
        let target = message
            .strip_prefix(&format!("Gemini answered {status} to "))
            .and_then(|rest| rest.strip_suffix(": redirects are not followed"));
        let shown = shown_url(&location);
        for url in target.into_iter().chain([shown.as_str()]) {
            if let Ok(url) = reqwest::Url::parse(url) {
                prop_assert!(url.username().is_empty() && url.password().is_none(), "{url}");
                prop_assert!(url.query().is_none() && url.fragment().is_none(), "{url}");
            }
        }
    }
}
