//! NIST SP 800-63B §5.1.1.2 on every path that sets a password: the admin API, the CLI and
//! the password page, with the tenant's own minimum length. Each refusal says why, and none
//! echoes the password. (The account page's change of password has its own tests.)

use serde_json::json;

use crate::admin_api::support::AdminClient;
use crate::flow::{seed, submit_password, TENANT};
use crate::helpers::{assert_refused, cli, json_output, on_both_backends, TestApp};
use store::testing::TestDatabase;

on_both_backends!(
    a_tenant_sets_its_minimum_length_within_8_to_64,
    the_admin_api_refuses_each_kind_of_weak_password_and_says_why,
    the_cli_refuses_weak_passwords_and_out_of_range_floors,
    the_password_page_refuses_a_weak_password_and_the_link_stays_usable,
);

/// Eleven characters that the estimator finds strong: refused only by a floor of 12.
const ELEVEN: &str = "tX9#qLmv2!z";
const STRONG: &str = "marmalade tugboat ceiling";

/// Each weak password for alice (email alice@example.com) and what the refusal says.
const REFUSALS: [(&str, &str); 5] = [
    ("tX9#q", "at least 10 characters"),
    ("alice", "at least 10 characters"),
    ("Alice@Example.com", "must not be the email address"),
    ("password123", "too easy to guess"),
    ("marmalade\ttugboat", "control characters"),
];

fn tenant_path() -> String {
    format!("/tenants/{TENANT}")
}

/// RFC 9457 problem on bad input; the setting is shown and applies to the next password.
async fn a_tenant_sets_its_minimum_length_within_8_to_64(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let seeded = seed(&app).await;
    let admin = AdminClient::new(&app, "ops", None).await;
    let shown = admin.get(&tenant_path()).await;
    assert_eq!(shown.assert_ok()["password_min_length"], 10);
    for bad in [7, 65, -1] {
        let reply = admin
            .patch(&tenant_path(), json!({ "password_min_length": bad }), None)
            .await;
        let detail = reply.assert_problem(400, "invalid-input");
        assert!(detail.contains("password_min_length"), "{bad}: {detail}");
    }
    admin
        .patch(&tenant_path(), json!({}), None)
        .await
        .assert_problem(400, "invalid-input");

    let password = |p: &str| json!({ "password": p });
    let path = format!("/tenants/{TENANT}/users/{}/password", seeded.alice_sub);
    assert_eq!(admin.put(&path, Some(password(ELEVEN))).await.status, 204);
    let reply = admin
        .patch(&tenant_path(), json!({ "password_min_length": 12 }), None)
        .await;
    assert_eq!(reply.assert_ok()["password_min_length"], 12);
    assert_eq!(reply.assert_ok()["name"], "Acme", "the name stays");
    let detail = admin
        .put(&path, Some(password(ELEVEN)))
        .await
        .assert_problem(400, "invalid-input");
    assert_eq!(
        detail,
        "password: The password must have at least 12 characters."
    );
    assert_eq!(admin.put(&path, Some(password(STRONG))).await.status, 204);
    let trail = admin
        .get(&format!(
            "/tenants/{TENANT}/audit?kind=admin.tenant.password_policy_changed"
        ))
        .await;
    assert_eq!(trail.assert_ok()["items"].as_array().unwrap().len(), 1);
}

async fn the_admin_api_refuses_each_kind_of_weak_password_and_says_why(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let seeded = seed(&app).await;
    let admin = AdminClient::new(&app, "ops", None).await;
    let path = format!("/tenants/{TENANT}/users/{}/password", seeded.alice_sub);
    for (weak, why) in REFUSALS {
        let detail = admin
            .put(&path, Some(json!({ "password": weak })))
            .await
            .assert_problem(400, "invalid-input");
        assert!(detail.starts_with("password: "), "{weak:?}: {detail}");
        assert!(detail.contains(why), "{weak:?}: {detail}");
        assert!(!detail.contains(weak), "the refusal echoes {weak:?}");
    }
    // The username, at the floor's length: refused as the username.
    let users = format!("/tenants/{TENANT}/users");
    let person = |password: &str| {
        json!({
            "username": "technician7",
            "name": "Tech Seven",
            "email": "t7@example.com",
            "password": password,
        })
    };
    let detail = admin
        .post(&users, person("Technician7"))
        .await
        .assert_problem(400, "invalid-input");
    assert_eq!(detail, "password: The password must not be the username.");
    assert_eq!(admin.post(&users, person(STRONG)).await.status, 201);
}

async fn the_cli_refuses_weak_passwords_and_out_of_range_floors(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let seeded = seed(&app).await;
    let who = ["--tenant", TENANT, "--sub", seeded.alice_sub.as_str()];
    let set = |password: &str| {
        cli(
            &app.db,
            &[
                &["user", "set-password"][..],
                &who[..],
                &["--password-stdin"],
            ]
            .concat(),
            Some(password),
        )
    };
    for (weak, why) in REFUSALS {
        let refused = set(weak);
        assert_refused(&refused, why);
        assert!(!String::from_utf8_lossy(&refused.stderr).contains(weak));
    }
    assert_refused(
        &cli(
            &app.db,
            &["tenant", "update", TENANT, "--password-min-length", "65"],
            None,
        ),
        "password_min_length: must be from 8 to 64",
    );
    let updated = json_output(&cli(
        &app.db,
        &[
            "tenant",
            "update",
            TENANT,
            "--password-min-length",
            "12",
            "--json",
        ],
        None,
    ));
    assert_eq!(updated["password_min_length"], 12);
    assert_refused(&set(ELEVEN), "at least 12 characters");
    json_output(&cli(
        &app.db,
        &[
            &["user", "set-password"][..],
            &who[..],
            &["--password-stdin", "--json"],
        ]
        .concat(),
        Some(STRONG),
    ));
}

async fn the_password_page_refuses_a_weak_password_and_the_link_stays_usable(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let seeded = seed(&app).await;
    let admin = AdminClient::new(&app, "ops", None).await;
    let reply = admin
        .post(
            &format!("/tenants/{TENANT}/users/{}/password-link", seeded.alice_sub),
            json!({}),
        )
        .await;
    let url = reply.assert_ok()["url"].as_str().unwrap().to_owned();
    let browser = app.browser();
    let mut page = browser
        .get(&url)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    // A control character in a form is refused before the form is read (tests/it/bad_input).
    for (weak, why) in &REFUSALS[..4] {
        let response = submit_password(&app, &browser, &page, weak, weak).await;
        assert_eq!(response.status(), 200, "{weak:?}");
        page = response.text().await.unwrap();
        assert!(page.contains("role=\"alert\""), "{weak:?}: {page}");
        assert!(page.contains(*why), "{weak:?}: {page}");
        // The form comes back empty: the refused password is never sent back.
        let fields = page
            .lines()
            .filter(|line| line.contains("type=\"password\""));
        assert!(fields.clone().count() == 2 && fields.clone().all(|f| !f.contains("value=")));
    }
    let done = submit_password(&app, &browser, &page, STRONG, STRONG).await;
    assert_eq!(done.status(), 200);
    assert!(done.text().await.unwrap().contains("Password set"));
}
