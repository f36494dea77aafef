//! The sign-in and consent forms (`POST /oauth/signin`, `POST /oauth/authorize`): a field that
//! carries what no form sends is a 400 page, and the request behind the form stays usable, so
//! the same browser signs in and consents afterwards.

use store::testing::TestDatabase;

use super::{
    assert_page, body_defects, encode, encode_with, post_raw, Defect, Kind, LONG, OVER_LIMIT,
};
use crate::flow::{authorize_url, form_handles, location_params, param, seed, PASSWORD};
use crate::helpers::{on_both_backends, TestApp};

on_both_backends!(
    every_field_of_the_sign_in_form_refuses_bad_input,
    every_field_of_the_consent_form_refuses_bad_input,
);

/// The defects each field is tried with: those of any body, one over the size limit and one
/// within it but longer than any field may be.
fn defects() -> Vec<(String, Defect)> {
    let mut defects = body_defects();
    defects.push(("over 8 KiB".into(), Defect::Long(OVER_LIMIT, 'a')));
    defects.push((format!("{LONG} characters"), Defect::Long(LONG, 'a')));
    defects
}

/// The page every malformed body gets, whatever the field.
fn malformed(kind: Kind) -> Option<&'static str> {
    match kind {
        Kind::Control => Some("a parameter contains a control character"),
        Kind::NotUtf8 => Some("percent-encoding is not UTF-8"),
        Kind::OverLimit => Some("larger than 8 KiB"),
        Kind::Repeated | Kind::Long => None,
    }
}

async fn every_field_of_the_sign_in_form_refuses_bad_input(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    seed(&app).await;
    let browser = app.browser();
    let page = browser.get(authorize_url(&app, &[])).send().await.unwrap();
    let page = page.text().await.unwrap();
    let (tenant, request, csrf) = form_handles(&page);
    let fields = [
        ("tenant", tenant.as_str()),
        ("request", &request),
        ("csrf", &csrf),
        ("username", "alice"),
        ("password", PASSWORD),
    ];
    let url = format!("{}/oauth/signin", app.issuer);
    for (name, _) in &fields {
        for (defect_name, defect) in defects() {
            let case = format!("sign-in {name} with {defect_name}");
            let response = post_raw(&browser, &url, encode_with(&fields, name, defect)).await;
            let message = match (malformed(defect.kind()), defect.kind(), *name) {
                (Some(message), ..) => message,
                (None, Kind::Repeated, _) => "a parameter is repeated",
                (None, _, "tenant") => "The form is incomplete or was altered.",
                (None, _, "request") => "This sign-in request is unknown.",
                (None, _, "csrf") => "security token is missing or wrong",
                // A username no account can have, and a wrong password: the form again.
                (None, _, "username") => {
                    assert_page(response, 200, "Enter your username and password.", &case).await;
                    continue;
                }
                (None, ..) => {
                    assert_page(response, 200, "Incorrect username or password.", &case).await;
                    continue;
                }
            };
            assert_page(response, 400, message, &case).await;
        }
    }
    // One wrong password was counted (its back-off is a second); once it has passed, the
    // request and the account still let alice in.
    app.clock.advance(2);
    let response = post_raw(&browser, &url, encode(&fields)).await;
    let status = response.status();
    let page = response.text().await.unwrap();
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("name=\"decision\""), "{page}");
    app.stop().await;
}

async fn every_field_of_the_consent_form_refuses_bad_input(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let seeded = seed(&app).await;
    let browser = app.browser();
    let url = authorize_url(&app, &[]);
    let page = crate::flow::signed_in_consent_page(&app, &browser, &url, "alice").await;
    let (tenant, request, csrf) = form_handles(&page);
    let fields = [
        ("tenant", tenant.as_str()),
        ("request", &request),
        ("csrf", &csrf),
        ("decision", "allow"),
        ("organization", &seeded.alpha),
        ("scope", "jobs"),
    ];
    let url = format!("{}/oauth/authorize", app.issuer);
    for (name, _) in &fields {
        for (defect_name, defect) in defects() {
            // Each approved scope is its own `scope` field: repeating it is the form's own use.
            if *name == "scope" && defect.kind() == Kind::Repeated {
                continue;
            }
            let case = format!("consent {name} with {defect_name}");
            let response = post_raw(&browser, &url, encode_with(&fields, name, defect)).await;
            let message = match (malformed(defect.kind()), *name) {
                (Some(message), _) => message,
                (None, "request") if defect.kind() == Kind::Long => {
                    "This sign-in request is unknown."
                }
                (None, "csrf") if defect.kind() == Kind::Long => {
                    "security token is missing or wrong"
                }
                (None, "organization") if defect.kind() == Kind::Repeated => {
                    "Choose an organization."
                }
                (None, "organization") => "You are not a member of the chosen organization.",
                (None, _) => "The form is incomplete or was altered.",
            };
            assert_page(response, 400, message, &case).await;
        }
    }
    // The request was not consumed by any of them: allowing it now gives a code.
    let response = post_raw(&browser, &url, encode(&fields)).await;
    assert_eq!(response.status(), 302);
    let (_, query) = location_params(&response);
    assert!(param(&query, "code").is_some(), "{query:?}");
    app.stop().await;
}
