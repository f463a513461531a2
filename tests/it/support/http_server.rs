//! A real HTTP/1.1 server on 127.0.0.1 for provider tests: it records each
//! request and answers with a scripted reply — a stream served in pieces of
//! any size, an error status, a connection reset mid-body, a stall, or a
//! stream that never ends.
//! Runs on its own thread and runtime so that both async tests and tests of
//! the binary can use it; it stops when dropped.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[derive(Debug, Clone)]
pub struct RecordedRequest {
    pub method: String,
    /// Path and query, as sent.
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl RecordedRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("the client sends JSON")
    }
}

pub enum Reply {
    /// 200 `text/event-stream`, written as chunks of `piece` bytes, with
    /// `pause` after each.
    Stream {
        body: Vec<u8>,
        piece: usize,
        pause: Duration,
    },
    /// Any status, headers and body.
    Status {
        code: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// 200, `body` is sent, then the connection is reset.
    ResetAfter { body: Vec<u8> },
    /// 200, `body` is sent, then nothing for `hold`.
    StallAfter { body: Vec<u8>, hold: Duration },
    /// These bytes as the whole answer, head included (a body that is not
    /// text).
    Raw(Vec<u8>),
    /// 200, `head` once, then `chunk` again and again, with `pause` after
    /// each, until the client goes away (a stream that never ends).
    Endless {
        head: Vec<u8>,
        chunk: Vec<u8>,
        pause: Duration,
    },
}

impl Reply {
    pub fn stream(body: impl Into<Vec<u8>>) -> Reply {
        Reply::Stream {
            body: body.into(),
            piece: 7,
            pause: Duration::ZERO,
        }
    }

    pub fn status(code: u16, body: impl Into<String>) -> Reply {
        Reply::Status {
            code,
            headers: Vec::new(),
            body: body.into(),
        }
    }
}

pub type Responder = Box<dyn Fn(&RecordedRequest) -> Reply + Send + Sync>;

pub struct TestServer {
    pub base_url: String,
    requests: Arc<Mutex<Vec<RecordedRequest>>>,
    /// Requests being answered now, and the most there ever were at once.
    in_flight: Arc<Mutex<(usize, usize)>>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TestServer {
    /// Request `i` gets reply `i`; any further request gets a 500.
    pub fn start(responders: Vec<Responder>) -> TestServer {
        TestServer::on(
            std::net::TcpListener::bind("127.0.0.1:0").unwrap(),
            responders,
        )
    }

    /// `start` on a listener already bound (a port a client was refused at).
    pub fn on(listener: std::net::TcpListener, responders: Vec<Responder>) -> TestServer {
        listener.set_nonblocking(true).unwrap();
        let base_url = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let recorded = Arc::clone(&requests);
        let in_flight = Arc::new(Mutex::new((0, 0)));
        let counting = Arc::clone(&in_flight);
        let (shutdown, stop) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = TcpListener::from_std(listener).unwrap();
                let responders = Arc::new(responders);
                let accept = async {
                    loop {
                        let Ok((socket, _)) = listener.accept().await else {
                            return;
                        };
                        let recorded = Arc::clone(&recorded);
                        let responders = Arc::clone(&responders);
                        let counting = Arc::clone(&counting);
                        tokio::spawn(async move {
                            let _ = serve(socket, recorded, responders, counting).await;
                        });
                    }
                };
                tokio::select! {
                    _ = stop => {}
                    _ = accept => {}
                }
            });
        });
        TestServer {
            base_url,
            requests,
            in_flight,
            shutdown: Some(shutdown),
            thread: Some(thread),
        }
    }

    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.requests.lock().unwrap().clone()
    }

    /// The most requests that were being answered at the same moment.
    pub fn max_in_flight(&self) -> usize {
        self.in_flight.lock().unwrap().1
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn serve(
    socket: TcpStream,
    recorded: Arc<Mutex<Vec<RecordedRequest>>>,
    responders: Arc<Vec<Responder>>,
    in_flight: Arc<Mutex<(usize, usize)>>,
) -> std::io::Result<()> {
    let mut socket = socket;
    let request = read_request(&mut socket).await?;
    {
        let mut counts = in_flight.lock().unwrap();
        counts.0 += 1;
        counts.1 = counts.1.max(counts.0);
    }
    let mut finished = Finished(Some(in_flight));
    let result = answer(&mut socket, request, &recorded, &responders, &mut finished).await;
    finished.now();
    result
}

/// Takes a request out of the in-flight count once. A stream counts as
/// finished just before its last piece goes out: the client cannot start
/// another request before it has that piece, so the count never overlaps
/// the next request (as it would if taken after the closing bytes).
struct Finished(Option<Arc<Mutex<(usize, usize)>>>);

impl Finished {
    fn now(&mut self) {
        if let Some(counts) = self.0.take() {
            counts.lock().unwrap().0 -= 1;
        }
    }
}

async fn answer(
    socket: &mut TcpStream,
    request: RecordedRequest,
    recorded: &Mutex<Vec<RecordedRequest>>,
    responders: &[Responder],
    finished: &mut Finished,
) -> std::io::Result<()> {
    let index = {
        let mut requests = recorded.lock().unwrap();
        requests.push(request.clone());
        requests.len() - 1
    };
    let reply = match responders.get(index) {
        Some(responder) => responder(&request),
        None => Reply::status(
            500,
            "{\"error\": {\"code\": 500, \"message\": \"unexpected request\", \"status\": \"INTERNAL\"}}",
        ),
    };
    match reply {
        Reply::Status {
            code,
            headers,
            body,
        } => {
            let mut head = format!(
                "HTTP/1.1 {code} Test\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
                body.len()
            );
            for (name, value) in headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str("\r\n");
            socket.write_all(head.as_bytes()).await?;
            socket.write_all(body.as_bytes()).await?;
        }
        Reply::Stream { body, piece, pause } => {
            stream_head(socket).await?;
            let pieces = body.chunks(piece.max(1)).count();
            for (index, chunk) in body.chunks(piece.max(1)).enumerate() {
                if index + 1 == pieces {
                    finished.now();
                }
                write_chunk(socket, chunk).await?;
                if !pause.is_zero() {
                    tokio::time::sleep(pause).await;
                }
            }
            socket.write_all(b"0\r\n\r\n").await?;
        }
        Reply::Raw(bytes) => socket.write_all(&bytes).await?,
        Reply::ResetAfter { body } => {
            stream_head(socket).await?;
            write_chunk(socket, &body).await?;
            // Dropped by `serve` right after: a reset, not a clean end.
            socket.set_zero_linger()?;
            return Ok(());
        }
        Reply::StallAfter { body, hold } => {
            stream_head(socket).await?;
            write_chunk(socket, &body).await?;
            tokio::time::sleep(hold).await;
        }
        Reply::Endless { head, chunk, pause } => {
            stream_head(socket).await?;
            write_chunk(socket, &head).await?;
            finished.now();
            // Ends only with an error: the client closed the connection.
            loop {
                write_chunk(socket, &chunk).await?;
                if !pause.is_zero() {
                    tokio::time::sleep(pause).await;
                }
            }
        }
    }
    socket.flush().await?;
    socket.shutdown().await
}

async fn stream_head(socket: &mut TcpStream) -> std::io::Result<()> {
    socket
        .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
        .await
}

async fn write_chunk(socket: &mut TcpStream, chunk: &[u8]) -> std::io::Result<()> {
    if chunk.is_empty() {
        return Ok(());
    }
    socket
        .write_all(format!("{:x}\r\n", chunk.len()).as_bytes())
        .await?;
    socket.write_all(chunk).await?;
    socket.write_all(b"\r\n").await?;
    socket.flush().await
}

async fn read_request(socket: &mut TcpStream) -> std::io::Result<RecordedRequest> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        let read = socket.read(&mut chunk).await?;
        if read == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buffer.extend_from_slice(&chunk[..read]);
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break end;
        }
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next().unwrap_or_default().split(' ');
    let method = request_line.next().unwrap_or_default().to_string();
    let target = request_line.next().unwrap_or_default().to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_string(), value.trim().to_string()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| value.parse().ok())
        .unwrap_or(0);
    let mut body = buffer[head_end + 4..].to_vec();
    while body.len() < length {
        let read = socket.read(&mut chunk).await?;
        if read == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..read]);
    }
    Ok(RecordedRequest {
        method,
        target,
        headers,
        body,
    })
}

/// A fixture's bytes as the API would send them; `*.chunks.txt` files (one
/// chunk JSON per line) are framed as `data: …\r\n\r\n`.
pub fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/data/gemini/{name}", env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    if !name.ends_with(".chunks.txt") {
        return bytes;
    }
    String::from_utf8(bytes)
        .unwrap()
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| format!("data: {line}\r\n\r\n"))
        .collect::<String>()
        .into_bytes()
}
