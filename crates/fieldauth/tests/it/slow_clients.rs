//! Issue 26: clients cannot hold a listener's connections for ever. A request's head must
//! arrive within the header-read timeout, a kept-alive connection closes after the idle
//! timeout, and each listener keeps at most its connection limit open. These tests run on
//! real time (a socket's timeout cannot follow the manual clock), with timeouts of a second
//! or two.

use std::time::Duration;

use fieldauth::connections::ConnectionLimits;
use store::testing::TestDatabase;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::{timeout, Instant};

use crate::helpers::TestApp;

/// Longer than any timeout here: a connection still open this long was never cut.
const PATIENCE: Duration = Duration::from_secs(5);

fn limits(header_read_seconds: f64, idle_seconds: f64, max_connections: usize) -> ConnectionLimits {
    ConnectionLimits {
        header_read_timeout: Duration::from_secs_f64(header_read_seconds),
        idle_timeout: Duration::from_secs_f64(idle_seconds),
        max_connections,
    }
}

async fn connect(base: &str) -> TcpStream {
    TcpStream::connect(base.trim_start_matches("http://"))
        .await
        .unwrap()
}

/// Sends `GET /healthz` on a kept-alive connection and reads the whole answer.
async fn get_healthz(stream: &mut TcpStream) -> String {
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n")
        .await
        .unwrap();
    read_response(stream).await
}

/// One response: its head, then as many body bytes as its `content-length` says.
async fn read_response(stream: &mut TcpStream) -> String {
    let mut received = Vec::new();
    let mut chunk = [0_u8; 1024];
    loop {
        let text = String::from_utf8_lossy(&received).into_owned();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length: usize = head
                .lines()
                .find_map(|line| line.strip_prefix("content-length: "))
                .unwrap()
                .parse()
                .unwrap();
            if body.len() >= length {
                return text;
            }
        }
        let read = stream.read(&mut chunk).await.unwrap();
        assert_ne!(read, 0, "closed mid-response: {text:?}");
        received.extend_from_slice(&chunk[..read]);
    }
}

/// Waits for the server to close the connection; returns what it sent first.
async fn read_until_closed(stream: &mut TcpStream) -> Vec<u8> {
    let mut received = Vec::new();
    let mut chunk = [0_u8; 1024];
    loop {
        match stream.read(&mut chunk).await {
            Ok(0) => return received,
            Ok(read) => received.extend_from_slice(&chunk[..read]),
            Err(error) if error.kind() == std::io::ErrorKind::ConnectionReset => return received,
            Err(error) => panic!("read failed: {error}"),
        }
    }
}

/// Slowloris: one byte of the head per second holds the connection no longer than the
/// header-read timeout, and the listener answers others meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_sending_its_head_a_byte_a_second_is_cut_off_while_others_are_served() {
    let app =
        TestApp::spawn_with_connection_limits(TestDatabase::sqlite(), limits(2.0, 60.0, 8)).await;
    let slow = connect(&app.issuer).await;
    let started = Instant::now();
    let (mut reader, mut writer) = slow.into_split();
    let closed = tokio::spawn(async move {
        let mut received = Vec::new();
        let mut chunk = [0_u8; 64];
        loop {
            match reader.read(&mut chunk).await {
                Ok(0) | Err(_) => return (started.elapsed(), received),
                Ok(read) => received.extend_from_slice(&chunk[..read]),
            }
        }
    });
    let trickle = tokio::spawn(async move {
        for byte in b"GET /healthz HTTP/1.1\r\nHost: test\r\n" {
            if writer.write_all(&[*byte]).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    });

    // Another client is served while the slow one is connected.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let response = app.get(&format!("{}/healthz", app.issuer)).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.text().await.unwrap(), "ok\n");
    assert!(
        !closed.is_finished(),
        "the slow client was cut off too soon"
    );

    let (after, received) = timeout(PATIENCE, closed)
        .await
        .expect("the slow client is still connected")
        .unwrap();
    assert!(
        after >= Duration::from_millis(1800),
        "cut off after {after:?}"
    );
    assert_eq!(String::from_utf8_lossy(&received), "", "no answer is sent");
    trickle.abort();
    app.stop().await;
}

/// A kept-alive connection outlives the header-read timeout while it waits for its next
/// request, and closes once it has waited the idle timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_kept_alive_connection_is_closed_after_the_idle_timeout() {
    let app =
        TestApp::spawn_with_connection_limits(TestDatabase::sqlite(), limits(1.0, 2.0, 8)).await;
    let mut stream = connect(&app.issuer).await;
    assert!(get_healthz(&mut stream)
        .await
        .starts_with("HTTP/1.1 200 OK\r\n"));

    // Past the header-read timeout, within the idle timeout: still open.
    tokio::time::sleep(Duration::from_millis(1300)).await;
    assert!(get_healthz(&mut stream)
        .await
        .starts_with("HTTP/1.1 200 OK\r\n"));

    let idle_from = Instant::now();
    let received = timeout(PATIENCE, read_until_closed(&mut stream))
        .await
        .expect("the idle connection is still open");
    let after = idle_from.elapsed();
    assert!(received.is_empty(), "sent {received:?}");
    assert!(
        after >= Duration::from_millis(1700),
        "closed after {after:?}"
    );
    app.stop().await;
}

/// With a limit of 2, a third connection waits in the accept queue, unanswered, until one of
/// the two closes; the other listener is not limited by this one's connections.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_over_the_limit_waits_until_one_closes() {
    let app =
        TestApp::spawn_with_connection_limits(TestDatabase::sqlite(), limits(10.0, 60.0, 2)).await;
    let mut first = connect(&app.issuer).await;
    let mut second = connect(&app.issuer).await;
    for stream in [&mut first, &mut second] {
        assert!(get_healthz(stream).await.starts_with("HTTP/1.1 200 OK\r\n"));
    }

    let mut third = connect(&app.issuer).await;
    third
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n")
        .await
        .unwrap();
    let mut byte = [0_u8; 1];
    let early = timeout(Duration::from_millis(500), third.read(&mut byte)).await;
    assert!(early.is_err(), "the third connection was served: {early:?}");
    let api = app.get(&format!("{}/healthz", app.api_url)).await;
    assert_eq!(api.status(), 200, "the API listener has its own limit");

    drop(first);
    let response = timeout(PATIENCE, read_response(&mut third))
        .await
        .expect("the third connection is still waiting");
    assert!(response.starts_with("HTTP/1.1 200 OK\r\n"), "{response}");
    assert!(response.ends_with("\r\n\r\nok\n"), "{response}");
    drop((second, third));
    app.stop().await;
}
