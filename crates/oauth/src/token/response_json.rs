//! The token response's body (RFC 6749 §5.1), written field by field.
//!
//! Almost all of its bytes are the tokens: two JWTs and a refresh token, base64url and dots
//! by construction, so nothing in them needs escaping. serde_json still looks each byte up
//! to see whether it does: 20,000 instructions a refresh, 6% of what one spent beside its
//! signatures (docs/performance.md). A value is written as it is when none of its bytes
//! needs escaping (checked, not assumed), else by serde_json; the bytes are serde_json's
//! either way, in the order `TokenResponse` declares its fields (a field added there and not
//! here fails the test that compares the two).

use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};

use jose::write_json_string as string;

use super::issue::TokenResponse;

impl TokenResponse {
    /// The JSON `serde_json::to_vec` gives for this response.
    pub fn to_json(&self) -> Result<Vec<u8>, serde_json::Error> {
        let tokens = self.access_token.len()
            + self.id_token.as_ref().map_or(0, String::len)
            + self.refresh_token.as_ref().map_or(0, String::len);
        let mut out = Vec::with_capacity(tokens + self.scope.len() + 128);
        out.extend_from_slice(b"{\"access_token\":");
        string(&mut out, &self.access_token)?;
        out.extend_from_slice(b",\"token_type\":");
        string(&mut out, self.token_type)?;
        out.extend_from_slice(b",\"expires_in\":");
        out.extend_from_slice(self.expires_in.to_string().as_bytes());
        out.extend_from_slice(b",\"scope\":");
        string(&mut out, &self.scope)?;
        if let Some(id_token) = &self.id_token {
            out.extend_from_slice(b",\"id_token\":");
            string(&mut out, id_token)?;
        }
        if let Some(refresh_token) = &self.refresh_token {
            out.extend_from_slice(b",\"refresh_token\":");
            string(&mut out, refresh_token)?;
        }
        out.push(b'}');
        Ok(out)
    }
}

impl IntoResponse for TokenResponse {
    fn into_response(self) -> Response {
        match self.to_json() {
            Ok(body) => (
                [(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                )],
                body,
            )
                .into_response(),
            Err(error) => {
                crate::error::OAuthError::from(jose::JoseError::Serialize(error)).into_response()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(scope: &str, id_token: Option<&str>, refresh_token: Option<&str>) -> TokenResponse {
        TokenResponse {
            access_token: "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln-_".to_owned(),
            token_type: "Bearer",
            expires_in: 3600,
            scope: scope.to_owned(),
            id_token: id_token.map(str::to_owned),
            refresh_token: refresh_token.map(str::to_owned),
        }
    }

    #[test]
    fn the_body_is_serde_jsons_for_every_field_present_or_absent() {
        for tokens in [
            response("openid offline_access", Some("a.b.c"), Some("r-_0")),
            response("openid", Some("a.b.c"), None),
            response("api:read", None, Some("r")),
            response("", None, None),
        ] {
            assert_eq!(
                String::from_utf8(tokens.to_json().unwrap()).unwrap(),
                serde_json::to_string(&tokens).unwrap()
            );
        }
    }

    #[test]
    fn a_value_that_needs_escaping_is_escaped() {
        // Never a token's bytes, but the writer must not rely on it (every byte that needs
        // escaping: `jose::write_json_string`'s tests).
        for odd in ["quote\"", "tab\t", "é ü"] {
            let tokens = response(odd, Some(odd), Some(odd));
            let body = tokens.to_json().unwrap();
            assert_eq!(
                String::from_utf8(body.clone()).unwrap(),
                serde_json::to_string(&tokens).unwrap()
            );
            let parsed: serde_json::Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(parsed["scope"], odd);
        }
    }

    #[test]
    fn the_response_is_json_with_the_body() {
        let response = response("openid", Some("a.b.c"), None).into_response();
        assert_eq!(
            response.headers()[header::CONTENT_TYPE],
            HeaderValue::from_static("application/json")
        );
    }
}
