//! The database partitioned away: connections that neither answer nor close.

use super::*;

/// A network partition (connections that neither answer nor close): requests still get a
/// 503 within a bounded time instead of hanging, and the node recovers once it heals.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partitioned_database_answers_503_within_bounded_time_then_recovers() {
    let Some((app, proxy)) = app_behind_proxy().await else {
        return;
    };
    let issued = issue(&app).await;
    assert_eq!(api(&app, &issued.access_token).await.status(), 200);

    proxy.blackhole();

    let (response, took) = within(
        PARTITION_LIMIT,
        "refresh during a partition",
        refresh(&app, &issued.refresh_token, &[]),
    )
    .await;
    eprintln!("refresh answered in {took:?} during the partition");
    assert_temporarily_unavailable(response, "refresh during a partition").await;
    // A person on the sign-in page gets the error page, with the pages' headers.
    let (page, took) = within(
        PARTITION_LIMIT,
        "authorization page during a partition",
        get(&app, authorize_url(&app, &[])),
    )
    .await;
    eprintln!("the authorization page answered in {took:?} during the partition");
    assert_unavailable_page(page, "authorization page during a partition").await;
    for base in [&app.issuer, &app.api_url] {
        let (ready, took) = within(
            PARTITION_LIMIT,
            "readyz during a partition",
            get(&app, format!("{base}/readyz")),
        )
        .await;
        eprintln!("{base}/readyz answered in {took:?} during the partition");
        assert_eq!(ready.status(), 503, "{base}/readyz during a partition");
    }
    let (response, took) = within(
        PARTITION_LIMIT,
        "API during a partition",
        api(&app, &issued.access_token),
    )
    .await;
    eprintln!("the API answered in {took:?} during the partition");
    assert_eq!(response.status(), 503, "API during a partition");
    assert_eq!(response.headers()["retry-after"], "5");
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        body["errors"][0]["extensions"]["code"], "UNAVAILABLE",
        "{body}"
    );

    proxy.up().await;
    let took = until_ready(&app).await;
    eprintln!("ready {took:?} after the partition healed");
    let second = rotate(&app, &issued.refresh_token, "the refused token, after").await;
    assert_grant_intact(&app, &issued.grant_id, 1, &second).await;
    app.stop().await;
}

/// A partition that begins in the middle of a rotation, with the transaction open and its
/// statement sent: the request still answers 503 within a bounded time rather than hanging
/// on the stalled connection, and once the partition heals the token the client kept (it
/// was told to try again) still works and the grant stands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partition_in_the_middle_of_a_rotation_answers_503_within_bounded_time() {
    let Some((app, proxy)) = app_behind_proxy().await else {
        return;
    };
    let issued = issue(&app).await;

    // The rotation's first statement; this server has not prepared it on any connection yet.
    proxy.blackhole_at_statement("UPDATE refresh_tokens SET consumed_at");
    let answer = within(
        PARTITION_LIMIT,
        "refresh partitioned in the middle of its rotation",
        refresh(&app, &issued.refresh_token, &[]),
    );
    let (response, took) = answer.await;
    assert!(proxy.is_blackholed(), "the rotation reached the database");
    eprintln!("refresh partitioned mid-rotation answered in {took:?}");
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap();
    proxy.up().await;
    until_ready(&app).await;

    let newest = match status {
        503 => {
            assert_eq!(body["error"], "temporarily_unavailable", "{body}");
            rotate(&app, &issued.refresh_token, "the retry after a 503").await
        }
        // The statement went through once the partition healed, within the limit.
        200 => body["refresh_token"].as_str().unwrap().to_owned(),
        other => panic!("refresh partitioned mid-rotation: {other} {body}"),
    };
    assert_grant_live(&app, &issued.grant_id, &newest).await;
    app.stop().await;
}

/// A partition that begins while a page's statement is on the wire: the request deadline
/// answers, and in the page's own form (an HTML error page with the pages' headers), not
/// with the token endpoint's JSON.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_stalled_by_a_partition_answers_the_error_page_at_the_deadline() {
    let Some((app, proxy)) = app_behind_proxy().await else {
        return;
    };
    // The authorization request's client lookup; this server has not prepared it yet.
    proxy.blackhole_at_statement("FROM clients");
    let (page, took) = within(
        PARTITION_LIMIT,
        "authorization page stalled by a partition",
        get(&app, authorize_url(&app, &[])),
    )
    .await;
    assert!(
        proxy.is_blackholed(),
        "the page's statement reached the database"
    );
    eprintln!("the stalled page answered in {took:?}");
    assert_unavailable_page(page, "a stalled page").await;
    proxy.up().await;
    until_ready(&app).await;
    let page = get(&app, authorize_url(&app, &[])).await;
    assert_eq!(page.status(), 200, "the page after the partition healed");
    app.stop().await;
}

/// The pages' 503: the HTML error page with the pages' headers and no detail of ours.
async fn assert_unavailable_page(page: reqwest::Response, what: &str) {
    assert_eq!(page.status(), 503, "{what}");
    assert_eq!(
        page.headers()["content-type"],
        "text/html; charset=utf-8",
        "{what}"
    );
    assert_eq!(page.headers()["retry-after"], "5", "{what}");
    let csp = page.headers()["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("frame-ancestors 'none'"), "{what}: {csp}");
    let html = page.text().await.unwrap();
    assert!(html.contains("Temporarily unavailable"), "{what}: {html}");
    assert_no_internal_detail(&html, what);
}
