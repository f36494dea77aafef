//! The authorization flow as a browser drives it, for the tests of `/oauth/authorize`, the
//! sign-in and consent pages: a seeded tenant, authorization URLs, and the forms.

use secrecy::SecretString;
use store::{NewClient, NewUser, TenantId};

use crate::helpers::TestApp;

pub const TENANT: &str = "acme";
pub const CLIENT_ID: &str = "spa";
/// Nothing listens there: the HTTP tests read the redirect, they never follow it.
pub const REDIRECT_URI: &str = "http://127.0.0.1:9/callback";
pub const PASSWORD: &str = "correct horse battery";
pub const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
/// RFC 7636 Appendix B: the verifier of `CHALLENGE`.
pub const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
/// The confidential client `web` and its secret.
pub const WEB_CLIENT: &str = "web";
pub const WEB_SECRET: &str = "web-secret-0123456789-0123456789-0123456789";

/// What `seed` made.
#[derive(Debug, Clone)]
pub struct Seeded {
    pub alice_sub: String,
    /// Alice belongs to both, Bob to Alpha, Carol to none.
    pub alpha: String,
    pub bravo: String,
    /// An organization of the tenant that Alice does not belong to.
    pub charlie: String,
}

/// Tenant `acme`: public client `spa` (redirect `REDIRECT_URI`, scopes openid profile email
/// offline_access jobs customers, not invoices), users alice, bob, carol (password
/// `PASSWORD`), organizations Alpha, Bravo, Charlie; confidential client `web` (secret
/// `WEB_SECRET`) with the same redirect URIs and scopes.
pub async fn seed(app: &TestApp) -> Seeded {
    let tenant_id = TenantId::parse(TENANT).unwrap();
    app.store
        .create_tenant(&tenant_id, "Acme", 0)
        .await
        .unwrap();
    let tenant = app.store.tenant(&tenant_id);
    let uris = [
        REDIRECT_URI.to_owned(),
        "https://app.example.com/cb?from=acme".to_owned(),
    ];
    let scopes: Vec<String> = [
        "openid",
        "profile",
        "email",
        "offline_access",
        "jobs",
        "customers",
    ]
    .map(str::to_owned)
    .to_vec();
    let client = NewClient {
        client_id: CLIENT_ID,
        name: "Dispatch Board",
        secret_hash: None,
        redirect_uris: &uris,
        scopes: &scopes,
    };
    tenant.create_client(&client, 0).await.unwrap();
    let web_hash = oauth::secret::hash_secret(WEB_SECRET);
    let web = NewClient {
        client_id: WEB_CLIENT,
        name: "Back Office",
        secret_hash: Some(&web_hash),
        redirect_uris: &uris,
        scopes: &scopes,
    };
    tenant.create_client(&web, 0).await.unwrap();
    let random = oauth::OsRandom::new();
    let hash = oauth::password::hash_password(SecretString::from(PASSWORD.to_owned()), &random)
        .await
        .unwrap();
    let mut subs = Vec::new();
    for (i, username) in ["alice", "bob", "carol"].into_iter().enumerate() {
        let sub = format!("00000000-0000-4000-8000-00000000000{i}");
        let user = NewUser {
            user_id: &sub,
            username,
            password_hash: &hash,
            name: &format!("{username} Example"),
            email: &format!("{username}@example.com"),
        };
        tenant.create_user(&user, 0).await.unwrap();
        subs.push(sub);
    }
    let mut orgs = Vec::new();
    for (i, name) in ["Alpha", "Bravo", "Charlie"].into_iter().enumerate() {
        let guid = format!("10000000-0000-4000-8000-00000000000{i}");
        tenant.create_organization(&guid, name, 0).await.unwrap();
        orgs.push(guid);
    }
    tenant.add_membership(&subs[0], &orgs[0], 0).await.unwrap();
    tenant.add_membership(&subs[0], &orgs[1], 0).await.unwrap();
    tenant.add_membership(&subs[1], &orgs[0], 0).await.unwrap();
    Seeded {
        alice_sub: subs[0].clone(),
        alpha: orgs[0].clone(),
        bravo: orgs[1].clone(),
        charlie: orgs[2].clone(),
    }
}

/// The query of a valid authorization request; `overrides` replace or (with a value of
/// `None`) remove parameters, and new names are appended.
pub fn authorize_url(app: &TestApp, overrides: &[(&str, Option<&str>)]) -> String {
    let mut params: Vec<(String, String)> = [
        ("tenant", TENANT),
        ("response_type", "code"),
        ("client_id", CLIENT_ID),
        ("redirect_uri", REDIRECT_URI),
        ("scope", "openid profile jobs"),
        ("code_challenge", CHALLENGE),
        ("code_challenge_method", "S256"),
        ("state", "state-123"),
        ("nonce", "nonce-456"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    for (name, value) in overrides {
        match (params.iter().position(|(k, _)| k == name), value) {
            (Some(i), Some(v)) => params[i].1 = v.to_string(),
            (Some(i), None) => {
                params.remove(i);
            }
            (None, Some(v)) => params.push((name.to_string(), v.to_string())),
            (None, None) => {}
        }
    }
    let mut url = url::Url::parse(&format!("{}/oauth/authorize", app.issuer)).unwrap();
    url.query_pairs_mut().extend_pairs(params);
    url.into()
}

/// The value of a hidden input of a rendered form.
pub fn hidden(html: &str, name: &str) -> String {
    let marker = format!("type=\"hidden\" name=\"{name}\" value=\"");
    let start = html
        .find(&marker)
        .unwrap_or_else(|| panic!("no hidden {name} in {html}"))
        + marker.len();
    html[start..].split('"').next().unwrap().to_owned()
}

/// The hidden `tenant`, `request` and `csrf` of a sign-in or consent form: what every
/// submission of it carries back.
pub fn form_handles(page: &str) -> (String, String, String) {
    (
        hidden(page, "tenant"),
        hidden(page, "request"),
        hidden(page, "csrf"),
    )
}

pub async fn post_form(
    browser: &reqwest::Client,
    url: &str,
    fields: &[(&str, &str)],
) -> reqwest::Response {
    browser.post(url).form(fields).send().await.unwrap()
}

/// Submits the sign-in form of `page`.
pub async fn sign_in(
    app: &TestApp,
    browser: &reqwest::Client,
    page: &str,
    username: &str,
    password: &str,
) -> reqwest::Response {
    let (tenant, request, csrf) = form_handles(page);
    let fields = [
        ("tenant", tenant.as_str()),
        ("request", &request),
        ("csrf", &csrf),
        ("username", username),
        ("password", password),
    ];
    post_form(browser, &format!("{}/oauth/signin", app.issuer), &fields).await
}

/// Submits the consent form of `page` with a decision, an organization and scopes.
pub async fn consent(
    app: &TestApp,
    browser: &reqwest::Client,
    page: &str,
    decision: &str,
    organization: Option<&str>,
    scopes: &[&str],
) -> reqwest::Response {
    let (tenant, request, csrf) = form_handles(page);
    let mut fields = vec![
        ("tenant", tenant.as_str()),
        ("request", &request),
        ("csrf", &csrf),
        ("decision", decision),
    ];
    if let Some(org) = organization {
        fields.push(("organization", org));
    }
    fields.extend(scopes.iter().map(|s| ("scope", *s)));
    post_form(browser, &format!("{}/oauth/authorize", app.issuer), &fields).await
}

/// Opens the authorization URL and signs in as `username`: the consent page's HTML.
pub async fn signed_in_consent_page(
    app: &TestApp,
    browser: &reqwest::Client,
    url: &str,
    username: &str,
) -> String {
    let page = browser.get(url).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let page = page.text().await.unwrap();
    let consent = sign_in(app, browser, &page, username, PASSWORD).await;
    assert_eq!(consent.status(), 200);
    let html = consent.text().await.unwrap();
    assert!(
        html.contains("name=\"decision\""),
        "not the consent page: {html}"
    );
    html
}

/// The query parameters of a redirect response's `Location`.
pub fn location_params(response: &reqwest::Response) -> (String, Vec<(String, String)>) {
    let location = response
        .headers()
        .get("location")
        .unwrap_or_else(|| panic!("no Location on {}", response.status()));
    let url = url::Url::parse(location.to_str().unwrap()).unwrap();
    let base = format!("{}{}", url.origin().ascii_serialization(), url.path());
    (base, url.query_pairs().into_owned().collect())
}

pub fn param<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// A fresh code through a browser (signing in as alice when it has no session yet),
/// approving every requested scope for Alpha.
pub async fn code_for(
    app: &TestApp,
    browser: &reqwest::Client,
    overrides: &[(&str, Option<&str>)],
) -> String {
    let mut page = browser
        .get(authorize_url(app, overrides))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    if !page.contains("name=\"decision\"") {
        page = sign_in(app, browser, &page, "alice", PASSWORD)
            .await
            .text()
            .await
            .unwrap();
    }
    let scopes: Vec<String> = page
        .match_indices("name=\"scope\" value=\"")
        .map(|(i, m)| page[i + m.len()..].split('"').next().unwrap().to_owned())
        .collect();
    let scopes: Vec<&str> = scopes.iter().map(String::as_str).collect();
    let alpha = "10000000-0000-4000-8000-000000000000";
    let response = consent(app, browser, &page, "allow", Some(alpha), &scopes).await;
    assert_eq!(response.status(), 302, "consent did not redirect");
    let (_, pairs) = location_params(&response);
    param(&pairs, "code").expect("a code").to_owned()
}

/// `POST /oauth/token` with form fields, optionally with HTTP Basic credentials.
pub async fn token_request(
    app: &TestApp,
    fields: &[(&str, &str)],
    basic: Option<(&str, &str)>,
) -> reqwest::Response {
    client_post(app, "/oauth/token", fields, basic).await
}

/// A client's form POST to an endpoint, optionally with HTTP Basic credentials.
pub async fn client_post(
    app: &TestApp,
    path: &str,
    fields: &[(&str, &str)],
    basic: Option<(&str, &str)>,
) -> reqwest::Response {
    let request = app.http.post(format!("{}{path}", app.issuer)).form(fields);
    let request = match basic {
        Some((id, secret)) => request.basic_auth(id, Some(secret)),
        None => request,
    };
    request.send().await.unwrap()
}

/// Exchanges a code of the public client `spa` and returns the JSON body (asserting 200).
pub async fn exchange(app: &TestApp, code: &str) -> serde_json::Value {
    let fields = [
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", REDIRECT_URI),
        ("code_verifier", VERIFIER),
        ("client_id", CLIENT_ID),
    ];
    let response = token_request(app, &fields, None).await;
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

/// An RFC 6749 §5.2 error: status, `error`, a description, no-store.
pub async fn assert_oauth_error(response: reqwest::Response, status: u16, error: &str) {
    assert_eq!(response.status().as_u16(), status, "expected {error}");
    assert_eq!(response.headers()["cache-control"], "no-store");
    assert_eq!(response.headers()["content-type"], "application/json");
    if status == 401 && error == "invalid_client" {
        let challenge = response.headers()["www-authenticate"].to_str().unwrap();
        assert!(challenge.starts_with("Basic"), "{challenge}");
    }
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["error"], error, "{body}");
    assert!(
        body["error_description"]
            .as_str()
            .is_some_and(|d| !d.is_empty()),
        "{body}"
    );
}

/// The claims of a JWT, without verifying it (tests look at what was issued).
pub fn jwt_parts(token: &str) -> (serde_json::Value, serde_json::Value) {
    use base64::Engine;
    let mut parts = token.split('.');
    let mut decode = || {
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(parts.next().unwrap())
            .unwrap();
        serde_json::from_slice::<serde_json::Value>(&bytes).unwrap()
    };
    let header = decode();
    (header, decode())
}

/// Submits a password link's page (`/account/password`) with a new password and its
/// confirmation.
pub async fn submit_password(
    app: &TestApp,
    browser: &reqwest::Client,
    page: &str,
    password: &str,
    confirmation: &str,
) -> reqwest::Response {
    let fields = [
        ("token", hidden(page, "token")),
        ("csrf", hidden(page, "csrf")),
        ("password", password.to_owned()),
        ("confirmation", confirmation.to_owned()),
    ];
    browser
        .post(format!("{}/account/password", app.issuer))
        .form(&fields)
        .send()
        .await
        .unwrap()
}

/// Signs in as alice with `password` through the real authorization flow, in a new browser:
/// true when the consent page shows.
pub async fn signs_in(app: &TestApp, password: &str) -> bool {
    let browser = app.browser();
    let page = browser
        .get(authorize_url(app, &[]))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let answer = sign_in(app, &browser, &page, "alice", password).await;
    answer.text().await.unwrap().contains("name=\"decision\"")
}

/// A change of a client that makes it require DPoP-bound access tokens, or no longer.
pub fn requiring_dpop(required: bool) -> store::ClientChanges<'static> {
    store::ClientChanges {
        dpop_bound_access_tokens: Some(required),
        ..store::ClientChanges::default()
    }
}
