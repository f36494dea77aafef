use store::{Client, ClientType, TenantId};

use super::*;

const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

fn target() -> TrustedTarget {
    TrustedTarget {
        tenant: TenantId::parse("acme").unwrap(),
        client: Client {
            client_id: "spa".into(),
            name: "SPA".into(),
            client_type: ClientType::Public,
            secret_hash: None,
            redirect_uris: vec!["https://app.example.com/cb".into()],
            scopes: vec!["openid".into(), "profile".into(), "jobs".into()],
            created_at: 0,
            disabled: false,
            previous_secret: None,
            refresh_retry_seconds: 0,
            dpop_bound_access_tokens: false,
            revision: 1,
        },
        redirect_uri: "https://app.example.com/cb".into(),
    }
}

fn query(extra: &str) -> String {
    format!(
        "response_type=code&code_challenge={CHALLENGE}&code_challenge_method=S256&state=st&scope=openid%20jobs{extra}"
    )
}

fn error_of(query: &str) -> (AuthorizeErrorCode, Option<String>) {
    match validate(
        &Params::parse(query.as_bytes()).unwrap(),
        target(),
        "https://id.example.com",
    ) {
        Err(OAuthError::Redirect(redirect)) => {
            assert_eq!(redirect.issuer, "https://id.example.com");
            (redirect.error, redirect.state)
        }
        other => panic!("expected a redirect error for {query}, got {other:?}"),
    }
}

#[test]
fn a_complete_request_validates_with_sorted_unique_scopes() {
    let request = validate(
        &Params::parse(
            query("%20openid&nonce=n&prompt=login&max_age=60&login_hint=Alice").as_bytes(),
        )
        .unwrap(),
        target(),
        "https://id.example.com",
    )
    .unwrap();
    assert_eq!(request.scopes, [Scope::OpenId, Scope::Jobs]);
    assert_eq!(request.state, "st");
    assert_eq!(request.nonce.as_deref(), Some("n"));
    assert_eq!(
        request.prompt,
        Prompt {
            none: false,
            login: true
        }
    );
    assert_eq!(request.max_age, Some(60));
    assert_eq!(request.login_hint.as_deref(), Some("Alice"));
}

#[test]
fn each_rule_has_its_rfc_error_and_keeps_state() {
    use AuthorizeErrorCode::*;
    let state = Some("st".to_owned());
    let cases = [
        (
            query("").replace("response_type=code", "response_type=token"),
            UnsupportedResponseType,
        ),
        (query("").replace("response_type=code&", ""), InvalidRequest),
        (
            query("").replace(&format!("code_challenge={CHALLENGE}&"), ""),
            InvalidRequest,
        ),
        (query("").replace("S256", "plain"), InvalidRequest),
        (query("").replace(CHALLENGE, "short"), InvalidRequest),
        (
            query("").replace(CHALLENGE, &CHALLENGE.replace('M', "+")),
            InvalidRequest,
        ),
        (query("&nonce=a&nonce=b"), InvalidRequest),
        (
            query("").replace("scope=openid%20jobs", "scope=openid%20admin"),
            InvalidScope,
        ),
        (
            query("").replace("scope=openid%20jobs", "scope=openid%20invoices"),
            InvalidScope,
        ),
        (query("").replace("scope=openid%20jobs", ""), InvalidRequest),
        (query("&prompt=none%20login"), InvalidRequest),
        (query("&prompt=create"), InvalidRequest),
        (query("&max_age=-1"), InvalidRequest),
        (query("&request=eyJ"), RequestNotSupported),
        (query("&request_uri=urn:x"), RequestUriNotSupported),
        (query("&response_mode=fragment"), InvalidRequest),
    ];
    for (query, expected) in cases {
        assert_eq!(error_of(&query), (expected, state.clone()), "{query}");
    }
}

#[test]
fn missing_or_repeated_state_is_invalid_request_without_state() {
    assert_eq!(
        error_of(&query("").replace("state=st&", "")),
        (AuthorizeErrorCode::InvalidRequest, None)
    );
    assert_eq!(
        error_of(&query("&state=other")),
        (AuthorizeErrorCode::InvalidRequest, None)
    );
}

#[test]
fn state_nonce_and_login_hint_past_their_limits_are_invalid_request() {
    let at_limit = format!(
        "&nonce={}&login_hint={}",
        "n".repeat(MAX_NONCE_LEN),
        "h".repeat(MAX_LOGIN_HINT_LEN)
    );
    let long_state = "s".repeat(MAX_STATE_LEN);
    let request = validate(
        &Params::parse(
            query(&at_limit)
                .replace("state=st", &format!("state={long_state}"))
                .as_bytes(),
        )
        .unwrap(),
        target(),
        "https://id.example.com",
    )
    .unwrap();
    assert_eq!(request.state.len(), MAX_STATE_LEN);
    let too_long_state = "s".repeat(MAX_STATE_LEN + 1);
    assert_eq!(
        error_of(&query("").replace("state=st", &format!("state={too_long_state}"))),
        (AuthorizeErrorCode::InvalidRequest, Some(too_long_state)),
        "state is echoed unchanged (RFC 6749 §4.1.2.1), not stored"
    );
    for extra in [
        format!("&nonce={}", "n".repeat(MAX_NONCE_LEN + 1)),
        format!("&login_hint={}", "h".repeat(MAX_LOGIN_HINT_LEN + 1)),
    ] {
        assert_eq!(
            error_of(&query(&extra)),
            (AuthorizeErrorCode::InvalidRequest, Some("st".to_owned())),
            "{extra}"
        );
    }
}
