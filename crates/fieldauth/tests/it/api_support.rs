//! For the API tests: a client allowed every API scope, access tokens from the real flow
//! (sign-in, consent choosing the organization, code exchange), and GraphQL requests.

use serde_json::{json, Value};
use store::{NewClient, NewUser, TenantId};

use crate::flow::{
    authorize_url, consent, location_params, param, seed, sign_in, token_request, Seeded, PASSWORD,
    REDIRECT_URI, VERIFIER,
};
use crate::helpers::TestApp;

/// A public client of tenant `acme` (and of `globex`) allowed every scope.
pub const FIELD_CLIENT: &str = "field";
pub const ALL_API: &str = "jobs workOrders customers invoices employees";

/// The flow's tenant `acme` plus the client `field`.
pub async fn setup(app: &TestApp) -> Seeded {
    let seeded = seed(app).await;
    add_field_client(app, "acme").await;
    seeded
}

async fn add_field_client(app: &TestApp, tenant: &str) {
    let tenant_id = TenantId::parse(tenant).unwrap();
    let scopes: Vec<String> = format!("openid {ALL_API}")
        .split(' ')
        .map(str::to_owned)
        .collect();
    let uris = [REDIRECT_URI.to_owned()];
    let client = NewClient {
        client_id: FIELD_CLIENT,
        name: "Field app",
        secret_hash: None,
        redirect_uris: &uris,
        scopes: &scopes,
    };
    app.store
        .tenant(&tenant_id)
        .create_client(&client, 0)
        .await
        .unwrap();
}

/// A second tenant, `globex`, whose user `alice` belongs to its one organization; returns
/// that organization's guid.
pub async fn other_tenant(app: &TestApp) -> String {
    let id = TenantId::parse("globex").unwrap();
    app.store.create_tenant(&id, "Globex", 0).await.unwrap();
    add_field_client(app, "globex").await;
    let tenant = app.store.tenant(&id);
    let random = oauth::OsRandom::new();
    let hash =
        oauth::password::hash_password(secrecy::SecretString::from(PASSWORD.to_owned()), &random)
            .await
            .unwrap();
    let sub = "20000000-0000-4000-8000-000000000000";
    let user = NewUser {
        user_id: sub,
        username: "alice",
        password_hash: &hash,
        name: "Alice of Globex",
        email: "alice@globex.example",
    };
    tenant.create_user(&user, 0).await.unwrap();
    let guid = "30000000-0000-4000-8000-000000000000";
    tenant
        .create_organization(guid, "Globex Field", 0)
        .await
        .unwrap();
    tenant.add_membership(sub, guid, 0).await.unwrap();
    guid.to_owned()
}

/// An access token of `alice` for `organization` with `openid` and `scopes`, through the
/// authorization endpoint, sign-in, consent and the token endpoint. `browser` keeps the
/// sign-in session between calls.
pub async fn token_in(
    app: &TestApp,
    browser: &reqwest::Client,
    tenant: &str,
    organization: &str,
    scopes: &str,
) -> String {
    let scope = format!("openid {scopes}");
    let url = authorize_url(
        app,
        &[
            ("tenant", Some(tenant)),
            ("client_id", Some(FIELD_CLIENT)),
            ("scope", Some(scope.trim())),
        ],
    );
    let mut page = browser.get(url).send().await.unwrap().text().await.unwrap();
    if !page.contains("name=\"decision\"") {
        page = sign_in(app, browser, &page, "alice", PASSWORD)
            .await
            .text()
            .await
            .unwrap();
    }
    let granted: Vec<&str> = scope.split_whitespace().collect();
    let response = consent(app, browser, &page, "allow", Some(organization), &granted).await;
    assert_eq!(response.status(), 302, "consent did not redirect");
    let (_, pairs) = location_params(&response);
    let code = param(&pairs, "code").expect("a code").to_owned();
    let fields = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", REDIRECT_URI),
        ("code_verifier", VERIFIER),
        ("client_id", FIELD_CLIENT),
    ];
    let response = token_request(app, &fields, None).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    body["access_token"].as_str().unwrap().to_owned()
}

/// A token of tenant `acme`.
pub async fn token(app: &TestApp, browser: &reqwest::Client, org: &str, scopes: &str) -> String {
    token_in(app, browser, "acme", org, scopes).await
}

/// `POST /api` with the token; asserts 200 and returns the JSON body.
pub async fn gql(app: &TestApp, token: &str, query: &str, variables: Value) -> Value {
    let response = app
        .http
        .post(format!("{}/api", app.api_url))
        .bearer_auth(token)
        .json(&json!({ "query": query, "variables": variables }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

/// As [`gql`], asserting there were no errors; returns `data`.
pub async fn ok(app: &TestApp, token: &str, query: &str, variables: Value) -> Value {
    let body = gql(app, token, query, variables).await;
    assert!(body.get("errors").is_none(), "errors: {body:#}");
    body["data"].clone()
}

/// The `(path, extensions.code, message)` of each error.
pub fn errors(body: &Value) -> Vec<(String, String, String)> {
    body["errors"]
        .as_array()
        .map(|errors| {
            errors
                .iter()
                .map(|e| {
                    let path = e["path"]
                        .as_array()
                        .map(|p| {
                            p.iter()
                                .map(|s| s.as_str().map_or(s.to_string(), str::to_owned))
                                .collect::<Vec<_>>()
                                .join(".")
                        })
                        .unwrap_or_default();
                    (
                        path,
                        e["extensions"]["code"].as_str().unwrap_or("").to_owned(),
                        e["message"].as_str().unwrap_or("").to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Asserts exactly one error, with this code; returns its message.
pub fn one_error(body: &Value, code: &str) -> String {
    let errors = errors(body);
    assert_eq!(errors.len(), 1, "{body:#}");
    assert_eq!(errors[0].1, code, "{body:#}");
    errors[0].2.clone()
}
