//! The browser's cookie for a tenant. Its value is 256 random bits; the server keeps only
//! its SHA-256. Before sign-in it binds pending authorization requests to this browser;
//! after sign-in it names the server-side session record.

use axum::http::{header, HeaderMap, HeaderValue};
use jose::UnixTime;
use store::{BrowserSession, TenantId, TenantStore};

use crate::error::OAuthError;
use crate::secret::hash_secret;

/// How long a sign-in lasts in a browser.
pub const SESSION_LIFETIME: UnixTime = 12 * 3600;

/// How long a session that proved the password has to prove its second factor: it signs
/// nothing in meanwhile, and lives no longer than an authorization request.
pub const STEP_LIFETIME: UnixTime = crate::authorize::REQUEST_LIFETIME;

/// The cookie of one tenant: a cookie per tenant, so signing in to one tenant says nothing
/// about another. On https the `__Host-` prefix pins it to this host, path `/` and Secure.
pub fn cookie_name(tenant: &TenantId, https: bool) -> String {
    match https {
        true => format!("__Host-fieldauth-{tenant}"),
        false => format!("fieldauth-{tenant}"),
    }
}

/// The cookie's value when it has the shape of one of ours (43 base64url characters).
pub fn read_cookie<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
        .filter(|v| {
            v.len() == 43
                && v.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

/// `Set-Cookie` for the browser value: HttpOnly, SameSite=Lax (the authorization request
/// arrives as a top-level navigation from the client's site), Secure on https.
pub fn set_cookie(name: &str, value: &str, https: bool) -> Result<HeaderValue, OAuthError> {
    let secure = if https { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{name}={value}; Path=/; Max-Age={SESSION_LIFETIME}; HttpOnly; SameSite=Lax{secure}"
    ))
    .map_err(|_| OAuthError::InvalidForm("cookie"))
}

/// The signed-in session behind the cookie value, if it is live.
pub async fn find_session(
    tenant: &TenantStore<'_>,
    cookie: Option<&str>,
    now: UnixTime,
) -> Result<Option<BrowserSession>, OAuthError> {
    match cookie {
        Some(value) => Ok(tenant
            .find_browser_session(&hash_secret(value), now)
            .await?),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALUE: &str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ";

    #[test]
    fn reads_only_our_cookie_and_only_in_our_shape() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            HeaderValue::from_str(&format!("other=1; fieldauth-acme={VALUE}")).unwrap(),
        );
        headers.append(
            header::COOKIE,
            HeaderValue::from_static("fieldauth-beta=short"),
        );
        assert_eq!(read_cookie(&headers, "fieldauth-acme"), Some(VALUE));
        assert_eq!(read_cookie(&headers, "fieldauth-beta"), None);
        assert_eq!(read_cookie(&headers, "fieldauth-gamma"), None);
    }

    #[test]
    fn cookie_is_http_only_lax_and_secure_with_host_prefix_on_https() {
        let tenant = TenantId::parse("acme").unwrap();
        assert_eq!(cookie_name(&tenant, false), "fieldauth-acme");
        let name = cookie_name(&tenant, true);
        assert_eq!(name, "__Host-fieldauth-acme");
        let cookie = set_cookie(&name, VALUE, true).unwrap();
        let cookie = cookie.to_str().unwrap();
        for part in ["Path=/", "HttpOnly", "SameSite=Lax", "Secure"] {
            assert!(cookie.contains(part), "{cookie}");
        }
        assert!(!set_cookie("n", VALUE, false)
            .unwrap()
            .to_str()
            .unwrap()
            .contains("Secure"));
    }
}
