//! `GET /oauth/authorize`: what cannot be trusted (the tenant, the client, the redirect URI,
//! a query that does not decode or is over the limit) is a 400 page; anything else is an
//! `invalid_request` redirect to the registered URI with `state` echoed as sent (RFC 6749
//! §4.1.2.1). Nothing is stored: the valid request still signs in afterwards.

use store::testing::TestDatabase;

use super::{assert_page, common_defects, encode, encode_with, Defect, Kind, LONG, OVER_LIMIT};
use crate::flow::{location_params, param, seed, CHALLENGE, CLIENT_ID, REDIRECT_URI, TENANT};
use crate::helpers::{on_both_backends, TestApp};

on_both_backends!(every_parameter_of_an_authorization_request_refuses_bad_input);

/// A valid request carrying every parameter the endpoint reads.
fn pairs() -> Vec<(&'static str, &'static str)> {
    vec![
        ("tenant", TENANT),
        ("response_type", "code"),
        ("client_id", CLIENT_ID),
        ("redirect_uri", REDIRECT_URI),
        ("scope", "openid profile jobs"),
        ("code_challenge", CHALLENGE),
        ("code_challenge_method", "S256"),
        ("state", "state-123"),
        ("nonce", "nonce-456"),
        ("prompt", "login"),
        ("max_age", "600"),
        ("login_hint", "alice"),
        ("response_mode", "query"),
    ]
}

enum Expected {
    Page(&'static str),
    /// An error redirect with this code and this `state`.
    Redirect(&'static str, Option<String>),
}

fn expected(name: &str, defect: Defect) -> Expected {
    let trusted_page = |name| match name {
        "tenant" => "not a valid tenant id",
        "client_id" => "is not registered with this tenant",
        _ => "redirect_uri is not registered",
    };
    let trusted = matches!(name, "tenant" | "client_id" | "redirect_uri");
    let state = match name {
        "state" => Some(defect.decoded("state-123")),
        _ => Some("state-123".to_owned()),
    };
    match (defect.kind(), trusted) {
        (Kind::NotUtf8, _) => Expected::Page("percent-encoding is not UTF-8"),
        (Kind::OverLimit, _) => Expected::Page("too long or has too many parameters"),
        (Kind::Repeated, true) => Expected::Page("parameter is repeated"),
        (Kind::Repeated, false) if name == "state" => Expected::Redirect("invalid_request", None),
        (Kind::Control | Kind::Long, true) => Expected::Page(trusted_page(name)),
        (Kind::Long, false) => Expected::Redirect(
            match name {
                "response_type" => "unsupported_response_type",
                "scope" => "invalid_scope",
                _ => "invalid_request",
            },
            state,
        ),
        (Kind::Control | Kind::Repeated, false) => Expected::Redirect("invalid_request", state),
    }
}

async fn every_parameter_of_an_authorization_request_refuses_bad_input(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let url = |query: Vec<u8>| {
        format!(
            "{}/oauth/authorize?{}",
            app.issuer,
            String::from_utf8(query).unwrap()
        )
    };
    let pairs = pairs();
    let mut defects = common_defects();
    defects.push(("over 8 KiB".into(), Defect::Long(OVER_LIMIT, 'a')));
    // Digits, so that max_age is refused for its size rather than for not being a number.
    defects.push((format!("{LONG} characters"), Defect::Long(LONG, '9')));
    for (name, _) in &pairs {
        for (defect_name, defect) in &defects {
            let case = format!("{name} with {defect_name}");
            let response = app.get(&url(encode_with(&pairs, name, *defect))).await;
            match expected(name, *defect) {
                Expected::Page(message) => assert_page(response, 400, message, &case).await,
                Expected::Redirect(error, state) => {
                    assert_eq!(response.status(), 302, "{case}");
                    let (base, query) = location_params(&response);
                    assert_eq!(base, REDIRECT_URI, "{case}");
                    assert_eq!(param(&query, "error"), Some(error), "{case}");
                    assert_eq!(param(&query, "state"), state.as_deref(), "{case}");
                    assert_eq!(param(&query, "iss"), Some(app.issuer.as_str()), "{case}");
                }
            }
        }
    }
    // Nothing was kept of any of them, and the valid request still works.
    assert_eq!(app.rows("authorization_requests").await, 0);
    let page = app.get(&url(encode(&pairs))).await;
    assert_eq!(page.status(), 200);
    assert!(page.text().await.unwrap().contains("name=\"password\""));
    app.stop().await;
}
