//! What a client registers for sign-out: the URI its logout tokens are POSTed to
//! (Back-Channel Logout 1.0 §2.2). Post-logout redirect URIs follow the redirect URIs' rules
//! (`RedirectUri`).

use crate::error::OAuthError;
use crate::redirect_uri::RedirectUri;

/// Back-Channel Logout §2.2: an absolute http(s) URL without a fragment; as for redirect
/// URIs, plain http only to a loopback host, and no credentials in it. A private-use scheme
/// is refused: the server POSTs to it, a browser never opens it.
pub fn parse_backchannel_logout_uri(value: &str) -> Result<String, OAuthError> {
    let uri = RedirectUri::parse(value)?;
    match uri.as_str().split_once(':') {
        Some(("https" | "http", _)) => Ok(uri.into_string()),
        _ => Err(OAuthError::InvalidRedirectUri(
            "a back-channel logout URI must be https (or http to a loopback host)",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backchannel_uris_are_https_or_loopback_http_without_fragment() {
        for good in [
            "https://app.example.com/backchannel",
            "http://127.0.0.1:8400/logout",
            "http://localhost:3000/logout?x=1",
        ] {
            assert_eq!(parse_backchannel_logout_uri(good).unwrap(), good);
        }
        for bad in [
            "http://app.example.com/logout",
            "https://app.example.com/logout#x",
            "com.example.app:/logout",
            "/logout",
            "https://user:pw@app.example.com/logout",
        ] {
            assert!(parse_backchannel_logout_uri(bad).is_err(), "{bad}");
        }
    }
}
