//! The client of `server.mjs`'s seeding endpoint: first refresh tokens of rotation chains and
//! authorization codes with their PKCE verifiers, made by node-oidc-provider's own models
//! before a measured window, and checked before use.

use std::sync::Arc;
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};
use reqwest::{Client, StatusCode};
use serde::Deserialize;

use crate::flows::{self, expect_status, Code};

/// Codes asked for in one request, so that minting stops soon after its deadline.
const CODES_PER_REQUEST: usize = 250;

/// The seeding endpoint of one running `server.mjs`; cheap to clone.
#[derive(Clone)]
pub struct Seeder {
    client: Client,
    url: Arc<str>,
}

impl Seeder {
    pub fn new(url: String) -> Result<Seeder> {
        Ok(Seeder {
            client: flows::app_client()?,
            url: url.into(),
        })
    }

    pub fn readiness_url(&self) -> String {
        format!("{}/readyz", self.url)
    }

    /// The first refresh token of a new rotation chain (its own grant) for `account`.
    pub async fn refresh_token(&self, account: &str) -> Result<String> {
        let body = self.post("refresh-tokens", account, 1).await?;
        let mut tokens = parse_refresh_tokens(&body, 1)?;
        tokens
            .pop()
            .ok_or_else(|| anyhow!("seeding: no refresh token"))
    }

    /// Up to `count` codes for `account`, fewer if `deadline` comes first.
    pub async fn codes(&self, account: &str, count: usize, deadline: Instant) -> Result<Vec<Code>> {
        let mut codes = Vec::with_capacity(count);
        while codes.len() < count && Instant::now() < deadline {
            let batch = (count - codes.len()).min(CODES_PER_REQUEST);
            let body = self.post("codes", account, batch).await?;
            codes.extend(parse_codes(&body, batch)?);
        }
        Ok(codes)
    }

    async fn post(&self, what: &str, account: &str, count: usize) -> Result<Vec<u8>> {
        let url = format!("{}/seed/{what}", self.url);
        let step = format!("seeding {what}");
        let response = self
            .client
            .post(url)
            .query(&[("account", account), ("count", &count.to_string())])
            .send()
            .await
            .with_context(|| step.clone())?;
        let response = expect_status(response, StatusCode::OK, &step).await?;
        Ok(response
            .bytes()
            .await
            .with_context(|| step.clone())?
            .to_vec())
    }
}

#[derive(Debug, Deserialize)]
struct RefreshTokens {
    refresh_tokens: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct Codes {
    codes: Vec<SeededCode>,
}

#[derive(Debug, Deserialize)]
struct SeededCode {
    code: String,
    code_verifier: String,
}

/// `{"refresh_tokens": [...]}` with exactly `expected` non-empty tokens.
fn parse_refresh_tokens(body: &[u8], expected: usize) -> Result<Vec<String>> {
    let parsed: RefreshTokens =
        serde_json::from_slice(body).context("seeding refresh tokens: not the expected JSON")?;
    check_count("refresh tokens", parsed.refresh_tokens.len(), expected)?;
    if parsed.refresh_tokens.iter().any(String::is_empty) {
        bail!("seeding refresh tokens: an empty token");
    }
    Ok(parsed.refresh_tokens)
}

/// `{"codes": [{"code": …, "code_verifier": …}, …]}` with exactly `expected` codes, each
/// with a verifier RFC 7636 §4.1 allows.
fn parse_codes(body: &[u8], expected: usize) -> Result<Vec<Code>> {
    let parsed: Codes =
        serde_json::from_slice(body).context("seeding codes: not the expected JSON")?;
    check_count("codes", parsed.codes.len(), expected)?;
    parsed
        .codes
        .into_iter()
        .map(|seeded| {
            if seeded.code.is_empty() {
                bail!("seeding codes: an empty code");
            }
            // RFC 7636 §4.1: 43 to 128 unreserved characters.
            let verifier_ok = (43..=128).contains(&seeded.code_verifier.len())
                && seeded
                    .code_verifier
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b));
            if !verifier_ok {
                bail!("seeding codes: a code_verifier RFC 7636 §4.1 does not allow");
            }
            Ok(Code::new(seeded.code, seeded.code_verifier))
        })
        .collect()
}

fn check_count(what: &str, got: usize, expected: usize) -> Result<()> {
    if got != expected {
        bail!("seeding {what}: asked for {expected}, got {got}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";

    #[test]
    fn refresh_tokens_are_read_in_order() {
        let body = br#"{"refresh_tokens":["first-token","second-token"]}"#;
        assert_eq!(
            parse_refresh_tokens(body, 2).unwrap(),
            ["first-token", "second-token"]
        );
    }

    #[test]
    fn fewer_refresh_tokens_than_asked_for_is_an_error() {
        let error = parse_refresh_tokens(br#"{"refresh_tokens":["only-one"]}"#, 2).unwrap_err();
        assert_eq!(
            error.to_string(),
            "seeding refresh tokens: asked for 2, got 1"
        );
    }

    #[test]
    fn an_empty_refresh_token_is_an_error() {
        let error = parse_refresh_tokens(br#"{"refresh_tokens":[""]}"#, 1).unwrap_err();
        assert_eq!(error.to_string(), "seeding refresh tokens: an empty token");
    }

    #[test]
    fn an_error_answer_is_not_taken_for_tokens() {
        let body = br#"{"error":"expected account=bench-NNN and count=1..10000"}"#;
        let error = parse_refresh_tokens(body, 1).unwrap_err();
        assert_eq!(
            error.to_string(),
            "seeding refresh tokens: not the expected JSON"
        );
        assert!(parse_codes(body, 1).is_err());
    }

    #[test]
    fn codes_keep_their_verifiers() {
        let body = format!(
            r#"{{"codes":[{{"code":"c1","code_verifier":"{VERIFIER}"}},{{"code":"c2","code_verifier":"{}"}}]}}"#,
            "~".repeat(128)
        );
        let codes = parse_codes(body.as_bytes(), 2).unwrap();
        let expected = [
            Code::new("c1".to_owned(), VERIFIER.to_owned()),
            Code::new("c2".to_owned(), "~".repeat(128)),
        ];
        assert_eq!(codes, expected);
    }

    #[test]
    fn a_code_without_a_verifier_is_an_error() {
        let error = parse_codes(br#"{"codes":[{"code":"c1"}]}"#, 1).unwrap_err();
        assert_eq!(error.to_string(), "seeding codes: not the expected JSON");
    }

    #[test]
    fn a_verifier_rfc_7636_forbids_is_an_error() {
        for verifier in [
            "short".to_owned(),
            "x".repeat(129),
            format!("{}+", &VERIFIER[1..]),
        ] {
            let body = format!(r#"{{"codes":[{{"code":"c1","code_verifier":"{verifier}"}}]}}"#);
            let error = parse_codes(body.as_bytes(), 1).unwrap_err();
            assert_eq!(
                error.to_string(),
                "seeding codes: a code_verifier RFC 7636 §4.1 does not allow",
                "{verifier}"
            );
        }
    }

    #[test]
    fn an_empty_code_or_a_short_batch_is_an_error() {
        let body = format!(r#"{{"codes":[{{"code":"","code_verifier":"{VERIFIER}"}}]}}"#);
        let error = parse_codes(body.as_bytes(), 1).unwrap_err();
        assert_eq!(error.to_string(), "seeding codes: an empty code");
        let error = parse_codes(br#"{"codes":[]}"#, 3).unwrap_err();
        assert_eq!(error.to_string(), "seeding codes: asked for 3, got 0");
    }
}
