//! `promptlab serve` probed as a hostile web page and a hostile network
//! would, with a real HTTP/1.1 client over TCP (a foreign `Host` cannot be
//! sent through a URL): DNS-rebinding `Host`s, cross-site writes (content
//! types a page can send without a preflight, foreign and `null`
//! origins), flags that would open it up, error answers, connection
//! limits, and what answers say about files. Each status and body exact.

use crate::support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use support::serve::{Server, chat_body};
use support::{promptlab, repo_root, run_command};

const WAIT: Duration = Duration::from_secs(30);

fn excess() -> std::path::PathBuf {
    repo_root().join("tests/data/scripts/excess.yaml")
}

fn address(server: &Server) -> &str {
    server.url.strip_prefix("http://").unwrap()
}

/// One request on a fresh connection; the status and the body.
fn send(
    server: &Server,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nconnection: close\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    let mut tcp = TcpStream::connect(address(server)).unwrap();
    tcp.set_read_timeout(Some(WAIT)).unwrap();
    tcp.write_all(request.as_bytes()).unwrap();
    let mut answer = Vec::new();
    tcp.read_to_end(&mut answer).unwrap();
    parse_answer(&answer)
}

fn parse_answer(answer: &[u8]) -> (u16, String) {
    let text = String::from_utf8_lossy(answer).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    (status, body.to_string())
}

fn error_body(message: &str) -> String {
    serde_json::json!({ "error": message }).to_string()
}

#[test]
fn a_foreign_host_is_refused_on_every_route_and_method_and_nothing_is_recorded() {
    let server = Server::start(&excess(), &[]);
    let chat = chat_body("What is the excess?").to_string();
    let json = ("content-type", "application/json");
    let routes: [(&str, &str, &str); 10] = [
        ("GET", "/", ""),
        ("GET", "/favicon.ico", ""),
        ("GET", "/api/claims", ""),
        ("GET", "/api/claims/CLM-HH-0001", ""),
        ("GET", "/api/runs", ""),
        ("GET", "/no/such/route", ""),
        ("POST", "/api/chat", &chat),
        ("POST", "/api/feedback", r#"{"turnId":"x","vote":"up"}"#),
        ("OPTIONS", "/api/chat", ""),
        ("PUT", "/api/chat", ""),
    ];
    for host in [
        "evil.example.com",
        "evil.example.com:8787",
        "EVIL.example.com",
    ] {
        let name = host.split(':').next().unwrap();
        let expected = error_body(&format!(
            "Host `{name}` is not allowed; serve --allowed-host {name} allows it"
        ));
        for (method, path, body) in routes {
            let answer = send(&server, method, path, &[("host", host), json], body);
            assert_eq!(answer, (403, expected.clone()), "{method} {path} as {host}");
        }
    }
    for host in ["localhost.evil.example", "127.0.0.2", "[::2]", "0.0.0.0"] {
        let (status, _) = send(&server, "GET", "/api/claims", &[("host", host)], "");
        assert_eq!(status, 403, "{host}");
    }
    let (status, body) = send(&server, "GET", "/api/claims", &[], "");
    assert_eq!(
        (status, body),
        (
            403,
            error_body("a request needs a Host header naming this server")
        )
    );
    assert!(server.logs().is_empty(), "no turn was started");
}

#[test]
fn loopback_names_the_bound_address_and_allowed_hosts_are_answered() {
    let server = Server::start(&excess(), &["--allowed-host", "Lab.Example.Internal"]);
    let port = address(&server).rsplit(':').next().unwrap().to_string();
    for name in [
        "localhost",
        "LocalHost",
        "127.0.0.1",
        "[::1]",
        "lab.example.internal",
    ] {
        for host in [
            name.to_string(),
            format!("{name}:{port}"),
            format!("{name}:1"),
        ] {
            let (status, body) = send(&server, "GET", "/api/claims", &[("host", &host)], "");
            assert_eq!(status, 200, "{host}: {body}");
        }
    }
    let (status, _) = send(
        &server,
        "GET",
        "/api/claims",
        &[("host", "other.example.internal")],
        "",
    );
    assert_eq!(status, 403);
}

#[test]
fn every_post_must_be_json_and_cross_site_bodies_write_nothing() {
    let server = Server::start(&excess(), &[]);
    let host = address(&server).to_string();
    let chat = chat_body("What is the excess?").to_string();
    let refused = |got: &str| {
        error_body(&format!(
            "a POST must be sent as Content-Type: application/json, got {got}"
        ))
    };
    let cases = [
        (
            Some("text/plain;charset=UTF-8"),
            refused("`text/plain;charset=UTF-8`"),
        ),
        (
            Some("application/x-www-form-urlencoded"),
            refused("`application/x-www-form-urlencoded`"),
        ),
        (
            Some("multipart/form-data; boundary=x"),
            refused("`multipart/form-data; boundary=x`"),
        ),
        (Some("application/jsonp"), refused("`application/jsonp`")),
        (None, refused("none")),
    ];
    for path in ["/api/chat", "/api/feedback", "/api/fingerprint"] {
        for (content_type, expected) in &cases {
            let mut headers = vec![("host", host.as_str())];
            if let Some(value) = content_type {
                headers.push(("content-type", value));
            }
            let answer = send(&server, "POST", path, &headers, &chat);
            assert_eq!(answer, (415, expected.clone()), "{path} {content_type:?}");
        }
    }
    assert!(server.logs().is_empty(), "no turn was started");
    for content_type in ["application/json; charset=utf-8", "Application/JSON"] {
        let headers = [("host", host.as_str()), ("content-type", content_type)];
        let (status, _) = send(&server, "POST", "/api/chat", &headers, &chat);
        assert_eq!(status, 200, "{content_type}");
    }
    let logs = server.wait_for_logs(2, WAIT);
    let vote = serde_json::json!({"turnId": logs[0].header.turn_id, "vote": "down"}).to_string();
    let forged = [("host", host.as_str()), ("content-type", "text/plain")];
    assert_eq!(
        send(&server, "POST", "/api/feedback", &forged, &vote).0,
        415
    );
    let feedback = promptlab::runs::feedback::read_feedback(&logs[0].path).unwrap();
    assert!(feedback.is_empty(), "a forged vote wrote nothing");
}

#[test]
fn a_post_with_an_origin_must_be_same_origin_or_a_cors_origin() {
    let server = Server::start(&excess(), &["--cors-origin", "http://localhost:5173"]);
    let host = address(&server).to_string();
    let chat = chat_body("What is the excess?").to_string();
    let post = |origin: Option<&str>, content_type: &str| {
        let mut headers = vec![("host", host.as_str()), ("content-type", content_type)];
        if let Some(origin) = origin {
            headers.push(("origin", origin));
        }
        send(&server, "POST", "/api/chat", &headers, &chat)
    };
    let evil = error_body(
        "Origin `http://evil.example` may not post here; serve --cors-origin http://evil.example allows it",
    );
    assert_eq!(
        post(Some("http://evil.example"), "application/json"),
        (403, evil.clone())
    );
    assert_eq!(post(Some("http://evil.example"), "text/plain"), (403, evil));
    assert_eq!(
        post(Some("null"), "application/json"),
        (
            403,
            error_body("Origin `null` (a sandboxed page, a file or a redirect) may not post here")
        )
    );
    let port = host.rsplit(':').next().unwrap();
    for other in [
        format!("http://localhost:{port}"),
        format!("https://{host}"),
        format!("http://{host}.evil"),
    ] {
        assert_eq!(post(Some(&other), "application/json").0, 403, "{other}");
    }
    assert!(server.logs().is_empty(), "no turn was started");
    let same = format!("http://{host}");
    for origin in [Some(same.as_str()), Some("http://localhost:5173"), None] {
        assert_eq!(post(origin, "application/json").0, 200, "{origin:?}");
    }
    server.wait_for_logs(3, WAIT);
}

#[test]
fn flags_that_would_open_the_server_up_are_usage_errors() {
    let cases = [
        (
            vec!["--cors-origin", "*"],
            "--cors-origin: `*` is refused: the API spends your model key, so name each origin (e.g. http://localhost:5173)",
        ),
        (
            vec!["--cors-origin", "not a url"],
            "--cors-origin: `not a url` is not an origin; expected scheme://host[:port], e.g. http://localhost:5173",
        ),
        (
            vec!["--cors-origin", "http://localhost:5173/app"],
            "--cors-origin: `http://localhost:5173/app` is not an origin; expected scheme://host[:port], e.g. http://localhost:5173",
        ),
        (
            vec!["--allowed-host", "lab:80"],
            "--allowed-host: `lab:80` is not a host name; expected a name or an address without a port, e.g. lab.example.internal",
        ),
    ];
    for (flags, message) in cases {
        let out = run_command(
            promptlab()
                .args(["serve", "--port", "0", "--provider", "script", "--script"])
                .arg(excess())
                .args(&flags),
        );
        assert_eq!(out.code, 2, "{flags:?}: {}", out.stderr);
        assert!(out.stderr.contains(message), "{flags:?}: {}", out.stderr);
        assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
        assert!(out.stdout.is_empty(), "never listened: {}", out.stdout);
    }
}

#[test]
fn every_error_answer_is_json() {
    let server = Server::start(&excess(), &[]);
    let host = address(&server).to_string();
    for (method, path, status) in [
        ("GET", "/api/runs?limit=abc", 400),
        ("GET", "/api/runs?limit=-1", 400),
        ("PUT", "/api/chat", 405),
        ("DELETE", "/api/claims", 405),
        ("GET", "/api/chat", 405),
        ("GET", "/api/claims/%FF", 400),
        ("GET", "/nope", 404),
    ] {
        let (got, body) = send(&server, method, path, &[("host", &host)], "");
        assert_eq!(got, status, "{method} {path}: {body}");
        let json: serde_json::Value = serde_json::from_str(&body)
            .unwrap_or_else(|_| panic!("{method} {path}: not JSON: {body:?}"));
        assert!(
            json["error"].as_str().is_some_and(|e| !e.is_empty()),
            "{body}"
        );
    }
}

#[test]
fn a_wildcard_bind_answers_only_loopback_and_allowed_names_and_says_so() {
    let mut server = Server::start(
        &excess(),
        &["--host", "0.0.0.0", "--allowed-host", "lab.internal"],
    );
    let port = server.url.rsplit(':').next().unwrap().to_string();
    let ask = |host: &str| {
        let mut tcp = TcpStream::connect(("127.0.0.1", port.parse::<u16>().unwrap())).unwrap();
        tcp.set_read_timeout(Some(WAIT)).unwrap();
        write!(
            tcp,
            "GET /api/claims HTTP/1.1\r\nhost: {host}\r\nconnection: close\r\n\r\n"
        )
        .unwrap();
        let mut answer = Vec::new();
        tcp.read_to_end(&mut answer).unwrap();
        parse_answer(&answer).0
    };
    assert_eq!(ask(&format!("127.0.0.1:{port}")), 200);
    assert_eq!(ask("lab.internal"), 200);
    assert_eq!(
        ask(&format!("0.0.0.0:{port}")),
        403,
        "a wildcard is not a name"
    );
    assert_eq!(ask("192.0.2.7"), 403);
    let (code, stderr) = server.stop("INT", WAIT);
    assert_eq!(code, 0);
    assert!(
        stderr.contains(
            "note: 0.0.0.0 is every address, not a name: only requests for Host localhost, 127.0.0.1, [::1], lab.internal are answered"
        ),
        "{stderr}"
    );
}

#[test]
fn connections_over_the_cap_get_503_and_half_open_ones_are_closed() {
    let server = Server::start(&excess(), &["--max-connections", "2"]);
    // Two connections that never finish their request head.
    let mut idle: Vec<TcpStream> = (0..2)
        .map(|_| {
            let mut tcp = TcpStream::connect(address(&server)).unwrap();
            tcp.write_all(b"GET /api/claims HTTP/1.1\r\nhost: loc")
                .unwrap();
            tcp
        })
        .collect();
    let expected =
        error_body("too many open connections (at most 2, --max-connections); try again shortly");
    let deadline = Instant::now() + WAIT;
    loop {
        let host = address(&server).to_string();
        let answer = send(&server, "GET", "/api/claims", &[("host", &host)], "");
        if answer.0 == 503 {
            assert_eq!(answer.1, expected);
            break;
        }
        // The two may not have been accepted yet; the cap is reached once they are.
        assert!(Instant::now() < deadline, "no 503 past the cap: {answer:?}");
    }
    // The header-read timeout (10 s) closes the half-open ones.
    for tcp in &mut idle {
        tcp.set_read_timeout(Some(WAIT)).unwrap();
        let mut rest = Vec::new();
        let closed = tcp.read_to_end(&mut rest);
        assert!(
            closed.is_ok(),
            "closed by the server, not by our timeout: {closed:?}"
        );
    }
    let host = address(&server).to_string();
    assert_eq!(
        send(&server, "GET", "/api/claims", &[("host", &host)], "").0,
        200
    );
}

#[cfg(unix)]
#[test]
fn answers_name_files_relative_to_their_folders_never_absolute_or_link_targets() {
    let dir = tempfile::tempdir().unwrap();
    let claims = dir.path().join("claims");
    std::fs::create_dir(&claims).unwrap();
    std::fs::copy(
        repo_root().join("claims/CLM-HH-0001.json"),
        claims.join("CLM-HH-0001.json"),
    )
    .unwrap();
    std::fs::write(claims.join("CLM-BAD-0001.json"), "{ not json").unwrap();
    let secret = dir.path().join("outside-secret.json");
    std::fs::write(&secret, "{}").unwrap();
    std::os::unix::fs::symlink(&secret, claims.join("CLM-LNK-0001.json")).unwrap();
    let mut command = promptlab();
    command.env("PROMPTLAB_CLAIMS_DIR", &claims);
    let server = Server::start_with(
        command,
        &[
            "--provider",
            "script",
            "--script",
            excess().to_str().unwrap(),
        ],
    );
    let host = address(&server).to_string();
    let (status, body) = send(&server, "GET", "/api/claims", &[("host", &host)], "");
    assert_eq!(status, 200);
    let list: serde_json::Value = serde_json::from_str(&body).unwrap();
    let problems = list["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 2, "{body}");
    let root = dir.path().to_str().unwrap();
    assert!(
        !body.contains(root) && !body.contains("outside-secret"),
        "{body}"
    );
    assert!(
        body.contains("`CLM-BAD-0001.json`"),
        "named relative to the folder: {body}"
    );
    for id in ["CLM-BAD-0001", "CLM-LNK-0001"] {
        let (_, body) = send(
            &server,
            "GET",
            &format!("/api/claims/{id}"),
            &[("host", &host)],
            "",
        );
        assert!(
            !body.contains(root) && !body.contains("outside-secret"),
            "{body}"
        );
    }
    let json = [
        ("host", host.as_str()),
        ("content-type", "application/json"),
    ];
    let mut broken = chat_body("Is it covered?");
    broken["claimId"] = "CLM-BAD-0001".into();
    let (status, stream) = send(&server, "POST", "/api/chat", &json, &broken.to_string());
    assert_eq!(status, 200);
    assert!(stream.contains(r#""type":"error""#), "{stream}");
    assert!(
        stream.contains("CLM-BAD-0001.json") && !stream.contains(root),
        "{stream}"
    );
    let chat = chat_body("What is the excess?").to_string();
    assert_eq!(send(&server, "POST", "/api/chat", &json, &chat).0, 200);
    server.wait_for_logs(2, WAIT);
    let (_, runs) = send(&server, "GET", "/api/runs", &[("host", &host)], "");
    let runs: serde_json::Value = serde_json::from_str(&runs).unwrap();
    for run in runs.as_array().unwrap() {
        let path = run["path"].as_str().unwrap();
        assert!(
            !path.starts_with('/') && path.ends_with(".ndjson"),
            "{path}"
        );
    }
}

/// Issue 61: an error answer quoted a file's content, the process's own
/// key included (an override file whose `prompts` is the key). Every
/// error an answer carries passes the redaction of the process's secrets.
#[test]
fn an_error_answer_never_quotes_the_process_s_own_key() {
    let key = "AIzaSy-serve-leak-0123456789";
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("leak.json"),
        format!(r#"{{"prompts": "{key}"}}"#),
    )
    .unwrap();
    let mut command = promptlab();
    command.env("GEMINI_API_KEY", key);
    let server = Server::start_with(
        command,
        &[
            "--provider",
            "script",
            "--script",
            excess().to_str().unwrap(),
            "--overrides-dir",
            dir.path().to_str().unwrap(),
        ],
    );
    let host = address(&server).to_string();
    for path in ["/api/overrides", "/api/overrides/leak.json"] {
        let (_, body) = send(&server, "GET", path, &[("host", &host)], "");
        assert!(
            body.contains("invalid type: string \\\"[redacted]\\\""),
            "{path}: {body}"
        );
        assert!(!body.contains(key), "{path}: {body}");
    }
}

/// A body that trickles in (its head sent, then a few bytes, then nothing)
/// is cut off at the body's deadline (10 s) with a JSON 408, and no turn
/// starts. (A body that keeps dripping: `tests/it/serve_slow_clients.rs`.)
#[test]
fn a_request_body_that_never_arrives_is_cut_off_with_a_json_error() {
    let server = Server::start(&excess(), &[]);
    let host = address(&server).to_string();
    let mut tcp = TcpStream::connect(address(&server)).unwrap();
    tcp.set_read_timeout(Some(WAIT)).unwrap();
    let head = format!(
        "POST /api/chat HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\ncontent-length: 1000\r\nconnection: close\r\n\r\n{{\"claimId\""
    );
    tcp.write_all(head.as_bytes()).unwrap();
    let started = Instant::now();
    let mut answer = Vec::new();
    let read = tcp.read_to_end(&mut answer);
    assert!(
        read.is_ok(),
        "answered by the server, not our timeout: {read:?}"
    );
    assert!(started.elapsed() < WAIT);
    let (status, body) = parse_answer(&answer);
    assert_eq!(status, 408, "{body}");
    assert_eq!(
        body,
        error_body(
            "request body: 10 of 1000 bytes arrived in 10 s; a body must arrive in full within 10 s of the request's head"
        )
    );
    assert!(server.logs().is_empty(), "no turn started");
}
