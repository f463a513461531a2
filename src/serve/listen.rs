//! Accepting connections: at most `max_connections` open at once (one over
//! gets a JSON 503 and is closed), each given `HEADER_READ_TIMEOUT` to send
//! its request head (the body's deadline is the router's, `read_whole_body`)
//! and closed when it takes nothing of an answer for `WRITE_STALL_TIMEOUT`,
//! so that neither half-open connections nor clients that never read can
//! pile up; on shutdown, accepting stops and open connections are let finish.
//!
//! Why not `axum::serve`: it sets neither a header-read timeout nor a
//! connection cap, and offers no hook for either.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::time::Sleep;
use tokio_util::sync::CancellationToken;

/// How long a client has to send a request's head.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long an answer may wait on a client that takes none of it (its
/// socket full) before the connection is closed: hyper has no write
/// timeout, and a client that sends requests and never reads would hold its
/// connection for ever. As long as `chat`'s wait for a stream's last frames.
pub const WRITE_STALL_TIMEOUT: Duration = Duration::from_secs(30);
/// `--max-connections`' default.
pub const DEFAULT_MAX_CONNECTIONS: usize = 256;
/// How long shutdown waits for open connections after their turns were cancelled.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// How many connections, and how patient with each.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    pub max_connections: usize,
    pub header_read_timeout: Duration,
    pub write_stall_timeout: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> ConnectionLimits {
        ConnectionLimits {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            header_read_timeout: HEADER_READ_TIMEOUT,
            write_stall_timeout: WRITE_STALL_TIMEOUT,
        }
    }
}

/// Serves `router` on `listener` until `shutdown` is cancelled, then waits
/// (bounded) for open connections to finish.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    shutdown: CancellationToken,
    limits: ConnectionLimits,
) -> std::io::Result<()> {
    let open = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    loop {
        let accepted = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let tcp = match accepted {
            Ok((tcp, _)) => tcp,
            Err(error) => {
                accept_error(error).await;
                continue;
            }
        };
        // Frames are small and must go out at once: without TCP_NODELAY,
        // Nagle and the client's delayed ACK hold the first frame back ~40 ms.
        let _ = tcp.set_nodelay(true);
        let Ok(permit) = open.clone().try_acquire_owned() else {
            tokio::spawn(refuse(tcp, limits.max_connections));
            continue;
        };
        let service = TowerToHyperService::new(router.clone());
        let tcp = StallGuard::new(tcp, limits.write_stall_timeout);
        let connection = graceful.watch(http.serve_connection(TokioIo::new(tcp), service));
        tokio::spawn(async move {
            let _ = connection.await;
            drop(permit);
        });
    }
    drop(listener);
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown()).await;
    Ok(())
}

/// Errors of one connection are skipped; others (out of file descriptors)
/// are waited out, as `axum::serve` does, rather than spun on.
async fn accept_error(error: std::io::Error) {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if !matches!(
        error.kind(),
        ConnectionAborted | ConnectionRefused | ConnectionReset
    ) {
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// A connection over the cap: a JSON 503, then closed. What the client
/// already sent is read (briefly) first, so that closing does not reset
/// the connection before it has read the answer.
async fn refuse(mut tcp: TcpStream, max: usize) {
    let body = serde_json::json!({
        "error": format!("too many open connections (at most {max}, --max-connections); try again shortly")
    })
    .to_string();
    let head = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: {}\r\nretry-after: 1\r\nconnection: close\r\n\r\n",
        body.len()
    );
    let answer = async {
        tcp.write_all(head.as_bytes()).await?;
        tcp.write_all(body.as_bytes()).await?;
        tcp.shutdown().await?;
        let mut sink = [0u8; 4096];
        while tcp.read(&mut sink).await? > 0 {}
        Ok::<(), std::io::Error>(())
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), answer).await;
}

/// A connection's socket whose writes fail (`TimedOut`) once one has waited
/// `timeout` without the client taking a byte; hyper then drops the
/// connection, and with it any response body (a chat turn is cancelled).
/// Reads pass through: their patience is hyper's header timeout and the
/// router's body deadline.
struct StallGuard<T> {
    inner: T,
    timeout: Duration,
    /// Running while a write is waiting; cleared by any progress.
    stalled: Option<Pin<Box<Sleep>>>,
}

impl<T> StallGuard<T> {
    fn new(inner: T, timeout: Duration) -> StallGuard<T> {
        StallGuard {
            inner,
            timeout,
            stalled: None,
        }
    }

    /// `poll` as it was, unless it has been waiting past the timeout.
    fn watch<R>(&mut self, cx: &mut Context<'_>, poll: Poll<io::Result<R>>) -> Poll<io::Result<R>> {
        if poll.is_ready() {
            self.stalled = None;
            return poll;
        }
        let timeout = self.timeout;
        let stalled = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        match stalled.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("the client read nothing for {} s", timeout.as_secs()),
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for StallGuard<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for StallGuard<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.watch(cx, poll)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.watch(cx, poll)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let poll = Pin::new(&mut self.inner).poll_flush(cx);
        self.watch(cx, poll)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let poll = Pin::new(&mut self.inner).poll_shutdown(cx);
        self.watch(cx, poll)
    }
}
