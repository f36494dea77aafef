//! The listeners' connections: HTTP/1.1 on each accepted socket, with a cap on the open
//! connections, a time limit on a request's head and on an idle keep-alive connection, and a
//! stop that lets the requests in flight finish. A client that sends its request a byte at a
//! time, or opens connections and leaves them, holds a slot for seconds, not for ever.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::extract::ConnectInfo;
use axum::Router;
use hyper::body::Incoming;
use hyper::rt::{Sleep, Timer};
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use oauth::{ClientAddress, TrustedProxies};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tower::ServiceExt;

/// How long a client may take over a request and keep a connection, and how many
/// connections one listener keeps open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// From the connection's start, or from the first byte of a later request, to the end
    /// of the request's head (its line and headers).
    pub header_read_timeout: Duration,
    /// From the end of a response to the first byte of the next request on that connection.
    pub idle_timeout: Duration,
    /// Open connections per listener; the next ones wait in the kernel's accept queue.
    pub max_connections: usize,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            max_connections: 4096,
        }
    }
}

/// How long the listener waits before accepting again after an error that is not one
/// connection's (out of file descriptors, most likely): connections closing meanwhile free
/// some.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_secs(1);

/// Accepts connections until told to stop, then waits until the open ones have answered
/// what they were asked and closed.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    proxies: Arc<TrustedProxies>,
    mut stopped: watch::Receiver<bool>,
    name: &'static str,
) {
    // A connection over the limit is not accepted: it waits in the accept queue (the
    // listen backlog) until one closes, and past the backlog the kernel drops new SYNs, so
    // clients retry. Accepting and closing it at once would spend work on the flood.
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let mut connections = JoinSet::new();
    loop {
        let slot = tokio::select! {
            slot = Arc::clone(&slots).acquire_owned() => slot,
            () = stop_requested(&mut stopped) => break,
        };
        let Ok(slot) = slot else { break };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = stop_requested(&mut stopped) => break,
        };
        match accepted {
            Ok((stream, remote)) => {
                let connection = Connection {
                    router: router.clone(),
                    limits,
                    proxies: Arc::clone(&proxies),
                    remote,
                    name,
                    _slot: slot,
                };
                connections.spawn(connection.serve(stream, stopped.clone()));
            }
            Err(error) if is_connection_error(&error) => {}
            Err(error) => {
                tracing::error!(listener = name, %error, "cannot accept connections");
                tokio::select! {
                    _ = tokio::time::sleep(ACCEPT_ERROR_PAUSE) => {}
                    () = stop_requested(&mut stopped) => break,
                }
            }
        }
        while connections.try_join_next().is_some() {}
    }
    // Closing the socket refuses new connections while the open ones finish.
    drop(listener);
    while connections.join_next().await.is_some() {}
}

/// Returns once the server is told to stop (or its handle is gone).
async fn stop_requested(stopped: &mut watch::Receiver<bool>) {
    let _ = stopped.wait_for(|stop| *stop).await;
}

/// Errors of the one connection being accepted, which the next accept does not repeat.
fn is_connection_error(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}

struct Connection {
    router: Router,
    limits: ConnectionLimits,
    proxies: Arc<TrustedProxies>,
    remote: SocketAddr,
    name: &'static str,
    /// Held while the connection is open: its place under the listener's limit.
    _slot: OwnedSemaphorePermit,
}

impl Connection {
    async fn serve(self, stream: TcpStream, mut stopped: watch::Receiver<bool>) {
        let Connection {
            router,
            limits,
            proxies,
            remote,
            name,
            _slot,
        } = self;
        let received = Arc::new(AtomicU64::new(0));
        let io = TokioIo::new(Counted {
            stream,
            received: Arc::clone(&received),
        });
        // The client's address, resolved once here so that the request log (outside the
        // router) and the handlers (the sign-in throttle, the audit trail) see the same one.
        let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
            let client = proxies.client_address(remote.ip(), request.headers());
            request.extensions_mut().insert(ConnectInfo(remote));
            request.extensions_mut().insert(ClientAddress(client));
            router.clone().oneshot(request)
        });
        let mut builder = http1::Builder::new();
        builder
            .timer(HeadTimer {
                header_read_timeout: limits.header_read_timeout,
                idle_timeout: limits.idle_timeout,
                received,
            })
            .header_read_timeout(limits.header_read_timeout);
        let connection = builder.serve_connection(io, service);
        tokio::pin!(connection);
        let closed = tokio::select! {
            closed = connection.as_mut() => closed,
            () = stop_requested(&mut stopped) => {
                // Finishes the request in flight, if any, then closes; an idle connection
                // closes at once.
                connection.as_mut().graceful_shutdown();
                connection.await
            }
        };
        if let Err(error) = closed {
            // A client that went away or was too slow: nothing the server did wrong.
            tracing::debug!(listener = name, %error, "connection closed");
        }
    }
}

/// The socket, counting the bytes received so that [`HeadSleep`] sees the first byte of a
/// request arrive.
struct Counted {
    stream: TcpStream,
    received: Arc<AtomicU64>,
}

impl AsyncRead for Counted {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.stream).poll_read(cx, buf);
        let read = buf.filled().len().saturating_sub(before);
        if read > 0 {
            self.received.fetch_add(read as u64, Ordering::Relaxed);
        }
        polled
    }
}

impl AsyncWrite for Counted {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

/// hyper's HTTP/1 server uses its timer for one thing: the wait for a request's head, from
/// the moment it starts reading one (the connection's start, or the end of the previous
/// response) until the head is whole. That wait is two waits on a kept-alive connection:
/// for the client to send anything (the idle timeout), then for the rest of the head (the
/// header-read timeout, from the first byte, as Go's `ReadHeaderTimeout`). A new connection
/// gets the header-read timeout from its start: one that never sends is let go soon.
struct HeadTimer {
    header_read_timeout: Duration,
    idle_timeout: Duration,
    received: Arc<AtomicU64>,
}

impl Timer for HeadTimer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn Sleep>> {
        self.sleep_until(Instant::now() + duration)
    }

    /// hyper asks for `now + header_read_timeout` as it starts reading a head.
    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn Sleep>> {
        let received = self.received.load(Ordering::Relaxed);
        // A head whose first bytes came in with the previous request (pipelined) is waited
        // for under the idle timeout until its next byte arrives.
        let (deadline, idle) = match received {
            0 => (deadline, false),
            _ => (Instant::now() + self.idle_timeout, true),
        };
        Box::pin(HeadSleep {
            sleep: Box::pin(tokio::time::sleep_until(deadline.into())),
            idle,
            header_read_timeout: self.header_read_timeout,
            received: Arc::clone(&self.received),
            received_at_start: received,
        })
    }
}

struct HeadSleep {
    sleep: Pin<Box<tokio::time::Sleep>>,
    /// Still waiting for the first byte of the head.
    idle: bool,
    header_read_timeout: Duration,
    received: Arc<AtomicU64>,
    received_at_start: u64,
}

impl Future for HeadSleep {
    type Output = ();

    /// hyper polls this each time a read leaves the head unfinished, so the first byte is
    /// seen as it arrives.
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.idle && self.received.load(Ordering::Relaxed) > self.received_at_start {
            self.idle = false;
            let deadline = tokio::time::Instant::now() + self.header_read_timeout;
            self.sleep.as_mut().reset(deadline);
        }
        self.sleep.as_mut().poll(cx)
    }
}

impl Sleep for HeadSleep {}
