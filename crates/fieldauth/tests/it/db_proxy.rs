//! A TCP proxy between a server and its PostgreSQL, owned by one test, which can cut the
//! database away: [`DbProxy::down`] is a stopped database (connections reset),
//! [`DbProxy::stop`] a stopped database host (connections refused), [`DbProxy::blackhole`] a
//! network partition, [`DbProxy::up`] the recovery. Each proxy listens on its own port, so tests that
//! use one run in parallel with everything else.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Bytes flow both ways.
    Up,
    /// Live connections are reset and new ones are closed as soon as they are accepted.
    Down,
    /// As `Down`, and the listening socket is closed, so new connections are refused.
    Stopped,
    /// Connections are accepted and held; no byte moves in either direction.
    Blackhole,
    /// Forwards until the client sends these bytes (a statement's text), then as
    /// `DownAtIdle`.
    DownAfterCommitOf(&'static [u8]),
    /// Forwards until the server says it is idle again (the transaction that held the
    /// statement, or the statement itself when it ran alone, is committed), then goes down:
    /// the database dies right after it made the write durable.
    DownAtIdle,
    /// Forwards until the client sends these bytes (a statement's text, sent only the first
    /// time a connection prepares it), then becomes a `Blackhole` before they go through:
    /// a partition in the middle of a transaction.
    BlackholeAt(&'static [u8]),
}

impl Mode {
    fn forwards(self) -> bool {
        matches!(
            self,
            Mode::Up | Mode::DownAfterCommitOf(_) | Mode::DownAtIdle | Mode::BlackholeAt(_)
        )
    }

    fn is_down(self) -> bool {
        matches!(self, Mode::Down | Mode::Stopped)
    }
}

/// Whether the proxy's port is listening, or why it could not listen again.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Listening {
    Yes,
    No,
    Failed(String),
}

/// A running proxy; dropping it stops it and closes every connection.
pub struct DbProxy {
    url: String,
    mode: Arc<watch::Sender<Mode>>,
    live: Arc<watch::Sender<usize>>,
    listening: Arc<watch::Sender<Listening>>,
    accept: JoinHandle<()>,
}

impl DbProxy {
    /// A proxy in front of the PostgreSQL server that `database_url` names, forwarding.
    pub async fn start(database_url: &str) -> DbProxy {
        let mut url = url::Url::parse(database_url).unwrap();
        let target = format!("{}:{}", url.host_str().unwrap(), url.port().unwrap_or(5432));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        url.set_host(Some("127.0.0.1")).unwrap();
        url.set_port(Some(addr.port())).unwrap();
        // Plain text, so the proxy can see a commit go by: only the link to the proxy
        // changes, and it is loopback.
        url.query_pairs_mut().append_pair("sslmode", "disable");
        let mode = Arc::new(watch::Sender::new(Mode::Up));
        let live = Arc::new(watch::Sender::new(0usize));
        let listening = Arc::new(watch::Sender::new(Listening::Yes));
        let accept = tokio::spawn(accept_loop(
            listener,
            addr,
            target,
            Arc::clone(&mode),
            Arc::clone(&live),
            Arc::clone(&listening),
        ));
        DbProxy {
            url: url.into(),
            mode,
            live,
            listening,
            accept,
        }
    }

    /// The database URL with the proxy in place of the server: same user, database and
    /// options (the test's `search_path`), without TLS.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The database stops: every forwarded connection is reset at once (this returns when
    /// they are all closed), and new connections are closed as soon as they are accepted.
    pub async fn down(&self) {
        self.mode.send_replace(Mode::Down);
        self.until_no_connection().await;
    }

    /// The database host stops: as [`DbProxy::down`], and the port is closed too, so new
    /// connections are refused. Returns when nothing listens or is connected any more.
    pub async fn stop(&self) {
        self.mode.send_replace(Mode::Stopped);
        self.until_no_connection().await;
        let mut listening = self.listening.subscribe();
        let _ = listening.wait_for(|l| *l != Listening::Yes).await;
    }

    /// The database is back: new connections are forwarded (connections held by a
    /// blackhole resume). Returns once the proxy listens (again, after a `stop`).
    pub async fn up(&self) {
        self.mode.send_replace(Mode::Up);
        let mut listening = self.listening.subscribe();
        let state = listening
            .wait_for(|l| *l != Listening::No)
            .await
            .map(|l| l.clone());
        if let Ok(Listening::Failed(why)) = state {
            panic!("the proxy cannot listen on its port again: {why}");
        }
    }

    /// A network partition: connections are accepted but nothing is forwarded, and the
    /// live ones stall where they are, neither answered nor closed.
    pub fn blackhole(&self) {
        self.mode.send_replace(Mode::Blackhole);
    }

    /// Forwards until the database has committed the next use of `statement` (its own
    /// transaction's COMMIT, or the statement alone when it runs without one), then goes
    /// down as [`DbProxy::down`] does: the write is durable, anything after it fails. Only a
    /// connection's first use of a statement carries its text.
    pub fn down_after_commit_of(&self, statement: &'static str) {
        self.mode
            .send_replace(Mode::DownAfterCommitOf(statement.as_bytes()));
    }

    /// Forwards until the server sends a statement whose text contains `statement`, then
    /// partitions as [`DbProxy::blackhole`] does, with that statement held back. Only a
    /// connection's first use of a statement carries its text.
    pub fn blackhole_at_statement(&self, statement: &'static str) {
        self.mode
            .send_replace(Mode::BlackholeAt(statement.as_bytes()));
    }

    /// True once a `down_after_commit_of` has seen its commit (or `down` was called).
    pub fn is_down(&self) -> bool {
        self.mode.borrow().is_down()
    }

    /// True once a `blackhole_at_statement` has seen its statement (or `blackhole` was
    /// called).
    pub fn is_blackholed(&self) -> bool {
        *self.mode.borrow() == Mode::Blackhole
    }

    /// Bounded, so a connection the proxy cannot close fails the test instead of hanging it.
    async fn until_no_connection(&self) {
        let mut live = self.live.subscribe();
        let closed = tokio::time::timeout(Duration::from_secs(5), live.wait_for(|n| *n == 0));
        assert!(
            closed.await.is_ok(),
            "the proxy still holds {} connections after 5 s",
            *self.live.borrow()
        );
    }
}

impl Drop for DbProxy {
    fn drop(&mut self) {
        self.accept.abort();
        // Connection tasks end when they see the proxy go down.
        self.mode.send_replace(Mode::Down);
    }
}

async fn accept_loop(
    mut listener: TcpListener,
    addr: SocketAddr,
    target: String,
    mode: Arc<watch::Sender<Mode>>,
    live: Arc<watch::Sender<usize>>,
    listening: Arc<watch::Sender<Listening>>,
) {
    let mut watch = mode.subscribe();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => Some(accepted),
            _ = watch.wait_for(|m| *m == Mode::Stopped) => None,
        };
        let Some(accepted) = accepted else {
            drop(listener);
            listening.send_replace(Listening::No);
            if watch.wait_for(|m| *m != Mode::Stopped).await.is_err() {
                return;
            }
            // The same port again (tokio sets SO_REUSEADDR): the server's URL names it.
            match TcpListener::bind(addr).await {
                Ok(again) => listener = again,
                Err(error) => {
                    listening.send_replace(Listening::Failed(error.to_string()));
                    return;
                }
            }
            listening.send_replace(Listening::Yes);
            continue;
        };
        let Ok((client, _)) = accepted else {
            continue;
        };
        let current = *mode.borrow();
        if current.is_down() {
            // A reset, not an orderly close: nothing is listening for this client.
            let _ = client.set_zero_linger();
            drop(client);
            continue;
        }
        live.send_modify(|n| *n += 1);
        let guard = Live(Arc::clone(&live));
        tokio::spawn(forward(client, target.clone(), Arc::clone(&mode), guard));
    }
}

/// Counts a connection as live until dropped.
struct Live(Arc<watch::Sender<usize>>);

impl Drop for Live {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n -= 1);
    }
}

async fn forward(client: TcpStream, target: String, mode: Arc<watch::Sender<Mode>>, _live: Live) {
    let mut watch = mode.subscribe();
    // A connection accepted during a partition waits to learn whether it heals.
    let Ok(now) = watch.wait_for(|m| *m != Mode::Blackhole).await.map(|m| *m) else {
        return;
    };
    if now.is_down() {
        let _ = client.set_zero_linger();
        return;
    }
    let Ok(upstream) = TcpStream::connect(&target).await else {
        let _ = client.set_zero_linger();
        return;
    };
    let (mut client_read, mut client_write) = client.into_split();
    let (mut upstream_read, mut upstream_write) = upstream.into_split();
    let both_ways = async {
        tokio::join!(
            pump(&mut client_read, &mut upstream_write, &mode, false),
            pump(&mut upstream_read, &mut client_write, &mode, true),
        )
    };
    tokio::select! {
        _ = both_ways => {}
        _ = watch.wait_for(|m| m.is_down()) => {
            // Reset both sides, as a crashed server or a dropped route would.
            let _ = client_write.as_ref().set_zero_linger();
            let _ = upstream_write.as_ref().set_zero_linger();
        }
    }
}

/// The server's `ReadyForQuery` outside a transaction: tag `Z`, length 5, status `I` (idle).
/// Inside a transaction the status is `T`, so this follows a COMMIT or a statement that ran
/// alone.
const READY_IDLE: &[u8] = b"Z\0\0\0\x05I";

/// Copies one direction while the mode forwards; holds the bytes while it does not. Watches
/// for the statements `BlackholeAt` and `DownAfterCommitOf` wait for (client to server) and
/// the idle answer `DownAtIdle` waits for (server to client).
async fn pump(
    from: &mut OwnedReadHalf,
    to: &mut OwnedWriteHalf,
    mode: &watch::Sender<Mode>,
    from_server: bool,
) {
    let mut watch = mode.subscribe();
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        if watch.wait_for(|m| m.forwards()).await.is_err() {
            return;
        }
        let read = tokio::select! {
            read = from.read(&mut buf) => read,
            _ = watch.wait_for(|m| !m.forwards()) => continue,
        };
        let n = match read {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let current = *watch.borrow();
        let sent = |statement: &[u8]| {
            !from_server && buf[..n].windows(statement.len()).any(|w| w == statement)
        };
        match current {
            Mode::BlackholeAt(statement) if sent(statement) => {
                mode.send_replace(Mode::Blackhole);
            }
            Mode::DownAfterCommitOf(statement) if sent(statement) => {
                mode.send_replace(Mode::DownAtIdle);
            }
            _ => {}
        }
        // Bytes read before a partition began wait for it to end.
        if watch.wait_for(|m| m.forwards()).await.is_err() {
            return;
        }
        let commit = from_server
            && *watch.borrow() == Mode::DownAtIdle
            && buf[..n].windows(READY_IDLE.len()).any(|w| w == READY_IDLE);
        if to.write_all(&buf[..n]).await.is_err() {
            break;
        }
        if commit {
            let _ = to.flush().await;
            mode.send_replace(Mode::Down);
        }
    }
    let _ = to.shutdown().await;
}
