//! Server metadata: OpenID Connect Discovery 1.0 §3 and RFC 8414 §2, one document for both
//! well-known paths. Built once at start, from the same paths the router serves.

use axum::extract::State;
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::issuer::Issuer;
use crate::paths;
use crate::scope::Scope;
use crate::state::OAuthState;

/// Claims the ID token and userinfo can carry (OpenID Connect Core §2, §5.1).
const CLAIMS_SUPPORTED: [&str; 16] = [
    "iss",
    "sub",
    "aud",
    "exp",
    "iat",
    "auth_time",
    "nonce",
    "at_hash",
    "azp",
    "name",
    "preferred_username",
    "email",
    "email_verified",
    "sid",
    "amr",
    "acr",
];

pub fn metadata(issuer: &Issuer) -> serde_json::Value {
    let client_auth = ["none", "client_secret_basic", "client_secret_post"];
    json!({
        "issuer": issuer.as_str(),
        "authorization_endpoint": issuer.endpoint(paths::AUTHORIZE),
        "token_endpoint": issuer.endpoint(paths::TOKEN),
        "userinfo_endpoint": issuer.endpoint(paths::USERINFO),
        "revocation_endpoint": issuer.endpoint(paths::REVOKE),
        // RP-Initiated Logout 1.0 §2.1.
        "end_session_endpoint": issuer.endpoint(paths::LOGOUT),
        "jwks_uri": issuer.endpoint(paths::JWKS),
        "scopes_supported": Scope::ALL.map(Scope::as_str),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        // Implicit, password and client_credentials are refused, so never advertised.
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": client_auth,
        "revocation_endpoint_auth_methods_supported": client_auth,
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
        // RFC 9449 §5.1: the token endpoint, userinfo and the API accept DPoP proofs.
        "dpop_signing_alg_values_supported": jose::DPOP_ALGORITHMS,
        "claims_supported": CLAIMS_SUPPORTED,
        // Core §3.1.2.1 `acr_values`: asking for `…:mfa` demands a second factor proved
        // for this request.
        "acr_values_supported": [crate::mfa::ACR_PASSWORD, crate::mfa::ACR_MFA],
        "claim_types_supported": ["normal"],
        "claims_parameter_supported": false,
        "request_parameter_supported": false,
        // OpenID Connect Discovery §3 defaults this one to true: say no explicitly.
        "request_uri_parameter_supported": false,
        // RFC 9207: the authorization response carries `iss`.
        "authorization_response_iss_parameter_supported": true,
        // Back-Channel Logout 1.0 §2.1: logout tokens carry `sid`, and so do ID tokens.
        "backchannel_logout_supported": true,
        "backchannel_logout_session_supported": true,
    })
}

pub async fn serve_metadata(State(state): State<OAuthState>) -> Response {
    let mut response = state.discovery_json().into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=3600"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_hang_off_the_issuer_and_only_s256_code_flow_is_offered() {
        let doc = metadata(&Issuer::parse("https://id.example.com").unwrap());
        assert_eq!(doc["issuer"], "https://id.example.com");
        assert_eq!(doc["token_endpoint"], "https://id.example.com/oauth/token");
        assert_eq!(doc["jwks_uri"], "https://id.example.com/oauth/jwks");
        assert_eq!(doc["response_types_supported"], json!(["code"]));
        assert_eq!(doc["code_challenge_methods_supported"], json!(["S256"]));
        assert_eq!(
            doc["dpop_signing_alg_values_supported"],
            json!(["ES256", "ES384", "EdDSA", "PS256", "RS256"])
        );
        assert_eq!(
            doc["grant_types_supported"],
            json!(["authorization_code", "refresh_token"])
        );
        assert_eq!(doc["scopes_supported"].as_array().unwrap().len(), 9);
    }
}
