//! The database stopped under a running node: its process (connections reset) or its
//! host (connections refused).

use super::*;

/// How the database stops.
#[derive(Debug, Clone, Copy)]
enum Stop {
    /// The database process: connections reset, new ones closed at once.
    Process,
    /// The database host: connections reset, new ones refused (the pool retries those until
    /// its acquire timeout).
    Host,
}

/// RFC 6749 §5.2 and §4.1.2.1: `temporarily_unavailable` (503) is what a client gets while
/// the database is stopped, on every endpoint that needs it; the node says not ready but
/// alive, and once the database is back it is ready again without a restart, and the refresh
/// token refused during the outage was never spent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_database_answers_503_everywhere_and_nothing_is_lost_when_it_returns() {
    stopped_database_answers_503_and_recovers(Stop::Process).await;
}

/// As above, with the database's port refusing connections.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_database_answers_503_everywhere_and_nothing_is_lost_when_it_returns() {
    stopped_database_answers_503_and_recovers(Stop::Host).await;
}

async fn stopped_database_answers_503_and_recovers(stop: Stop) {
    let Some((app, proxy)) = app_behind_proxy().await else {
        return;
    };
    let issued = issue(&app).await;
    // The API has fetched the issuer's keys, so a 503 later is about the database.
    assert_eq!(api(&app, &issued.access_token).await.status(), 200);
    assert_eq!(readiness(&app).await, (200, 200));

    match stop {
        Stop::Process => proxy.down().await,
        Stop::Host => proxy.stop().await,
    }

    let (response, took) = within(
        STOPPED_LIMIT,
        "refresh",
        refresh(&app, &issued.refresh_token, &[]),
    )
    .await;
    eprintln!("{stop:?}: refresh answered in {took:?}");
    assert_temporarily_unavailable(response, "refresh while the database is stopped").await;

    for base in [&app.issuer, &app.api_url] {
        let (ready, took) =
            within(STOPPED_LIMIT, "readyz", get(&app, format!("{base}/readyz"))).await;
        eprintln!("{stop:?}: {base}/readyz answered in {took:?}");
        assert_eq!(ready.status(), 503, "{base}/readyz while stopped");
        let (alive, _) = within(
            STOPPED_LIMIT,
            "healthz",
            get(&app, format!("{base}/healthz")),
        )
        .await;
        assert_eq!(alive.status(), 200, "{base}/healthz: the process is alive");
    }

    let (response, took) = within(STOPPED_LIMIT, "API", api(&app, &issued.access_token)).await;
    eprintln!("{stop:?}: the API answered in {took:?}");
    assert_eq!(response.status(), 503, "API while the database is stopped");
    let body: Value = response.json().await.unwrap();
    let errors = body["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{body}");
    assert_eq!(errors[0]["extensions"]["code"], "UNAVAILABLE", "{body}");
    assert_eq!(
        errors[0]["message"],
        api::ApiError::Unavailable.to_string(),
        "the database's error, not the keys': {body}"
    );
    assert!(body.get("data").is_none(), "{body}");

    let (page, took) = within(
        STOPPED_LIMIT,
        "authorize",
        app.browser().get(authorize_url(&app, &[])).send(),
    )
    .await;
    eprintln!("{stop:?}: the authorization page answered in {took:?}");
    let page = page.unwrap();
    assert_eq!(page.status(), 503, "GET /oauth/authorize while stopped");
    let content_type = page.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(content_type.starts_with("text/html"), "{content_type}");
    let html = page.text().await.unwrap();
    assert_no_internal_detail(&html, "the authorization page");

    proxy.up().await;
    let took = until_ready(&app).await;
    eprintln!("{stop:?}: ready {took:?} after the database returned");

    // The token refused during the outage was never spent: it rotates now, and the chain
    // goes on.
    let second = rotate(&app, &issued.refresh_token, "the refused token, after").await;
    let third = rotate(&app, &second, "the next one").await;
    assert_grant_intact(&app, &issued.grant_id, 2, &third).await;
    app.stop().await;
}
