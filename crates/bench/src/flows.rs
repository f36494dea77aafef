//! The OAuth steps a workload repeats, driven without a browser: the authorization code flow
//! with PKCE (authorize, sign in, consent, code exchange), a code for a browser already
//! signed in (authorize, consent), and the refresh grant.

use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use reqwest::{Client, Response, StatusCode};
use serde::Deserialize;

use crate::html::{hidden_field, page_kind, Page};

/// Where and as whom the flows run: what provisioning created.
#[derive(Debug, Clone)]
pub struct Target {
    pub issuer: String,
    pub api_url: String,
    pub tenant: String,
    pub client_id: String,
    pub redirect_uri: String,
    /// One user per connection: the sign-in throttle counts an attempt as a failure until its
    /// password is checked, so two sign-ins of one user at the same moment get a 429.
    pub usernames: Vec<String>,
    pub password: String,
    pub organization: String,
}

/// What the token endpoint answered.
#[derive(Debug, Clone, Deserialize)]
pub struct Tokens {
    pub access_token: String,
    pub refresh_token: Option<String>,
    pub id_token: Option<String>,
}

/// The refresh token of a token response to `scope` [`workloads::LOGIN_SCOPE`], after
/// checking that it is what both compared servers must answer: a JWT access token and an ID
/// token (two signatures, `openid`), and a refresh token (`offline_access`).
///
/// [`workloads::LOGIN_SCOPE`]: crate::workloads::LOGIN_SCOPE
pub fn signed_with_successor(tokens: Tokens, step: &str) -> Result<String> {
    let is_jws = |token: &str| token.split('.').count() == 3 && !token.contains("..");
    if !is_jws(&tokens.access_token) {
        bail!("{step}: the access token is not a signed JWT");
    }
    match tokens.id_token.as_deref() {
        Some(id_token) if is_jws(id_token) => {}
        Some(_) => bail!("{step}: the ID token is not a signed JWT"),
        None => bail!("{step}: no ID token for a grant with scope openid"),
    }
    match tokens.refresh_token {
        Some(token) if !token.is_empty() => Ok(token),
        _ => bail!("{step}: no refresh token for a grant with scope offline_access"),
    }
}

/// A request that hangs this long is an error, not a latency.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// A browser: its own cookie jar, redirects not followed, one keep-alive connection.
pub fn browser() -> Result<Client> {
    Client::builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .pool_max_idle_per_host(1)
        .timeout(REQUEST_TIMEOUT)
        .build()
        .context("cannot build an HTTP client")
}

/// A client app or resource-server caller: no cookies, one keep-alive connection.
pub fn app_client() -> Result<Client> {
    Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .pool_max_idle_per_host(1)
        .timeout(REQUEST_TIMEOUT)
        .build()
        .context("cannot build an HTTP client")
}

/// A PKCE pair (RFC 7636 §4.1, §4.2): 32 random bytes as the verifier, S256 challenge.
struct Pkce {
    verifier: String,
    challenge: String,
}

fn pkce() -> Result<Pkce> {
    let verifier = URL_SAFE_NO_PAD.encode(random_bytes()?);
    let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, verifier.as_bytes());
    let challenge = URL_SAFE_NO_PAD.encode(digest.as_ref());
    Ok(Pkce {
        verifier,
        challenge,
    })
}

fn random_value() -> Result<String> {
    Ok(URL_SAFE_NO_PAD.encode(&random_bytes()?[..16]))
}

fn random_bytes() -> Result<[u8; 32]> {
    let mut bytes = [0u8; 32];
    aws_lc_rs::rand::fill(&mut bytes).map_err(|_| anyhow!("no randomness from the OS"))?;
    Ok(bytes)
}

/// An authorization code with the PKCE verifier its request was made with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Code {
    pub code: String,
    verifier: String,
}

impl Code {
    /// A code made elsewhere (a compared server's seeding endpoint), with its verifier.
    pub fn new(code: String, verifier: String) -> Code {
        Code { code, verifier }
    }
}

/// One whole sign-in as a browser and a public client do it: [`sign_in`], then the code
/// exchange, as `username`.
pub async fn login(
    browser: &Client,
    target: &Target,
    username: &str,
    scope: &str,
) -> Result<Tokens> {
    let code = sign_in(browser, target, username, scope).await?;
    exchange(browser, target, &code).await
}

/// `GET /oauth/authorize` with `prompt=login` (so a session kept in the jar does not skip the
/// sign-in page), the sign-in form, and the consent: a code, and a session in the jar.
pub async fn sign_in(
    browser: &Client,
    target: &Target,
    username: &str,
    scope: &str,
) -> Result<Code> {
    let started = authorize(browser, target, scope, Prompt::Login).await?;
    let signin = form_fields(&started.page)?;
    let fields = [
        ("tenant", signin.tenant.as_str()),
        ("request", &signin.request),
        ("csrf", &signin.csrf),
        ("username", username),
        ("password", &target.password),
    ];
    let url = format!("{}/oauth/signin", target.issuer);
    let response = browser.post(&url).form(&fields).send().await;
    let page = expect_page(response.context("sign-in")?, "sign-in", Page::Consent).await?;
    consent(browser, target, scope, Started { page, ..started }).await
}

/// A code for a browser already signed in: `GET /oauth/authorize` reuses the session and
/// shows the consent page (always asked, as the user picks an organization), then the
/// consent.
pub async fn mint(browser: &Client, target: &Target, scope: &str) -> Result<Code> {
    let started = authorize(browser, target, scope, Prompt::Session).await?;
    consent(browser, target, scope, started).await
}

/// `grant_type=authorization_code` as a public client with PKCE (RFC 6749 §4.1.3, RFC 7636
/// §4.5).
pub async fn exchange(client: &Client, target: &Target, code: &Code) -> Result<Tokens> {
    let fields = [
        ("grant_type", "authorization_code"),
        ("code", code.code.as_str()),
        ("redirect_uri", &target.redirect_uri),
        ("code_verifier", &code.verifier),
        ("client_id", &target.client_id),
    ];
    token_request(client, target, &fields, "code exchange").await
}

/// Whether the authorization request may reuse the browser's session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Prompt {
    /// `prompt=login`: the sign-in page, always.
    Login,
    /// No `prompt`: the consent page for a browser signed in.
    Session,
}

/// An authorization request the server answered with a page.
struct Started {
    pkce: Pkce,
    state: String,
    page: String,
}

async fn authorize(
    browser: &Client,
    target: &Target,
    scope: &str,
    prompt: Prompt,
) -> Result<Started> {
    let pkce = pkce()?;
    let state = random_value()?;
    let nonce = random_value()?;
    let mut authorize = url::Url::parse(&format!("{}/oauth/authorize", target.issuer))?;
    authorize.query_pairs_mut().extend_pairs([
        ("tenant", target.tenant.as_str()),
        ("response_type", "code"),
        ("client_id", &target.client_id),
        ("redirect_uri", &target.redirect_uri),
        ("scope", scope),
        ("code_challenge", &pkce.challenge),
        ("code_challenge_method", "S256"),
        ("state", &state),
        ("nonce", &nonce),
    ]);
    let expected = match prompt {
        Prompt::Login => {
            authorize.query_pairs_mut().append_pair("prompt", "login");
            Page::SignIn
        }
        Prompt::Session => Page::Consent,
    };
    let response = browser.get(authorize).send().await.context("authorize")?;
    let page = expect_page(response, "authorize", expected).await?;
    Ok(Started { pkce, state, page })
}

/// Posts the consent page's form (allow, the bench organization, every requested scope) and
/// reads the code from the redirect.
async fn consent(browser: &Client, target: &Target, scope: &str, started: Started) -> Result<Code> {
    let consent = form_fields(&started.page)?;
    let mut fields = vec![
        ("tenant", consent.tenant.as_str()),
        ("request", &consent.request),
        ("csrf", &consent.csrf),
        ("decision", "allow"),
        ("organization", &target.organization),
    ];
    fields.extend(scope.split_whitespace().map(|s| ("scope", s)));
    let url = format!("{}/oauth/authorize", target.issuer);
    let response = browser.post(&url).form(&fields).send().await;
    let code = code_from_redirect(response.context("consent")?, &started.state).await?;
    Ok(Code {
        code,
        verifier: started.pkce.verifier,
    })
}

/// `grant_type=refresh_token` (RFC 6749 §6); the answer carries the next token of the chain.
pub async fn refresh(client: &Client, target: &Target, refresh_token: &str) -> Result<Tokens> {
    let fields = [
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh_token),
        ("client_id", &target.client_id),
    ];
    token_request(client, target, &fields, "refresh").await
}

async fn token_request(
    client: &Client,
    target: &Target,
    fields: &[(&str, &str)],
    step: &str,
) -> Result<Tokens> {
    let url = format!("{}/oauth/token", target.issuer);
    let response = client
        .post(url)
        .form(fields)
        .send()
        .await
        .context(step.to_owned())?;
    let response = expect_status(response, StatusCode::OK, step).await?;
    response
        .json()
        .await
        .with_context(|| format!("{step}: the token response"))
}

struct FormFields {
    tenant: String,
    request: String,
    csrf: String,
}

fn form_fields(page: &str) -> Result<FormFields> {
    Ok(FormFields {
        tenant: hidden_field(page, "tenant")?,
        request: hidden_field(page, "request")?,
        csrf: hidden_field(page, "csrf")?,
    })
}

/// The HTML of a 200 answer that is the expected page.
async fn expect_page(response: Response, step: &str, expected: Page) -> Result<String> {
    let response = expect_status(response, StatusCode::OK, step).await?;
    let html = response.text().await.with_context(|| step.to_owned())?;
    match page_kind(&html) {
        kind if kind == expected => Ok(html),
        kind => bail!("{step}: expected the {expected:?} page, got {kind:?}"),
    }
}

/// The `code` of the consent's redirect to the client, after checking `state` (RFC 6749
/// §4.1.2).
async fn code_from_redirect(response: Response, state: &str) -> Result<String> {
    let response = expect_status(response, StatusCode::FOUND, "consent").await?;
    let location = response
        .headers()
        .get(reqwest::header::LOCATION)
        .and_then(|l| l.to_str().ok())
        .ok_or_else(|| anyhow!("consent: a redirect without Location"))?;
    let location = url::Url::parse(location).context("consent: the Location")?;
    let param = |name: &str| {
        location
            .query_pairs()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    };
    if let Some(error) = param("error") {
        bail!("consent: redirected with error={error}");
    }
    if param("state").as_deref() != Some(state) {
        bail!("consent: the redirect does not carry our state");
    }
    param("code").ok_or_else(|| anyhow!("consent: the redirect has no code"))
}

/// The response when its status is `expected`; otherwise an error with the start of the body.
pub async fn expect_status(
    response: Response,
    expected: StatusCode,
    step: &str,
) -> Result<Response> {
    let status = response.status();
    if status == expected {
        return Ok(response);
    }
    let body = response.text().await.unwrap_or_default();
    let excerpt = excerpt(&body);
    bail!("{step}: expected {expected}, got {status}: {excerpt}")
}

/// What a failure answer says, on one line: a page's alert, else the start of the body.
fn excerpt(body: &str) -> String {
    let marker = "role=\"alert\">";
    let text = match body.find(marker) {
        Some(start) => body[start + marker.len()..].split('<').next().unwrap_or(""),
        None => body,
    };
    let words: Vec<&str> = text.split_whitespace().collect();
    words.join(" ").chars().take(200).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_challenge_is_the_s256_of_the_verifier() {
        let pair = pkce().unwrap();
        assert_eq!(
            pair.verifier.len(),
            43,
            "RFC 7636 §4.1: 43 to 128 characters"
        );
        let digest =
            aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, pair.verifier.as_bytes());
        assert_eq!(pair.challenge, URL_SAFE_NO_PAD.encode(digest.as_ref()));
        assert_ne!(pkce().unwrap().verifier, pair.verifier);
    }

    #[test]
    fn a_failure_is_summarized_by_the_page_alert_or_the_body_start() {
        let page = "<html>\n<p class=\"alert\" role=\"alert\">Too many attempts.\n Try again in 1 second.</p>";
        assert_eq!(excerpt(page), "Too many attempts. Try again in 1 second.");
        let json = "{\"error\":\"invalid_grant\",\n\"error_description\":\"spent\"}";
        assert_eq!(
            excerpt(json),
            "{\"error\":\"invalid_grant\", \"error_description\":\"spent\"}"
        );
        assert_eq!(excerpt(&"x".repeat(500)).len(), 200);
    }

    #[test]
    fn a_token_response_needs_two_jwts_and_a_refresh_token() {
        let jwt = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln";
        let tokens = |access: &str, id: Option<&str>, refresh: Option<&str>| Tokens {
            access_token: access.to_owned(),
            id_token: id.map(str::to_owned),
            refresh_token: refresh.map(str::to_owned),
        };
        let next = signed_with_successor(tokens(jwt, Some(jwt), Some("rt-2")), "refresh");
        assert_eq!(next.unwrap(), "rt-2");
        let cases = [
            (
                tokens("opaque-token", Some(jwt), Some("rt")),
                "refresh: the access token is not a signed JWT",
            ),
            (
                tokens(jwt, None, Some("rt")),
                "refresh: no ID token for a grant with scope openid",
            ),
            (
                tokens(jwt, Some("a..c"), Some("rt")),
                "refresh: the ID token is not a signed JWT",
            ),
            (
                tokens(jwt, Some(jwt), None),
                "refresh: no refresh token for a grant with scope offline_access",
            ),
        ];
        for (response, expected) in cases {
            let error = signed_with_successor(response, "refresh").unwrap_err();
            assert_eq!(error.to_string(), expected);
        }
    }

    #[test]
    fn the_rfc_7636_example_pair_matches() {
        // RFC 7636 Appendix B.
        let digest = aws_lc_rs::digest::digest(
            &aws_lc_rs::digest::SHA256,
            b"dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk",
        );
        assert_eq!(
            URL_SAFE_NO_PAD.encode(digest.as_ref()),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }
}
