//! Client authentication at the token and revocation endpoints (RFC 6749 §2.3.1, §3.2.1):
//! public clients name themselves with `client_id`; confidential clients prove themselves
//! with HTTP Basic or with `client_id` and `client_secret` in the body, never both. A
//! disabled client is refused exactly as an unknown one, and a secret replaced by a rotation
//! with a grace period is accepted until the grace ends.

use std::borrow::Borrow;

use axum::http::{header, HeaderMap};
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use secrecy::SecretString;
use store::{Client, ClientType, TenantStore, UnixTime};

use crate::client_id::ClientId;
use crate::error::OAuthError;
use crate::params::Params;
use crate::secret::verify_secret;

/// What the request presented, before it is checked against the client.
#[derive(Debug)]
pub(super) struct Presented {
    pub(super) client_id: String,
    secret: Option<SecretString>,
}

/// The authenticated client, or `invalid_client`.
pub async fn authenticate_client(
    tenant: &TenantStore<'_>,
    headers: &HeaderMap,
    params: &Params,
    now: UnixTime,
) -> Result<Client, OAuthError> {
    let presented = presented(headers, params)?;
    let client = tenant.find_client(&presented.client_id).await?;
    check_client(tenant, &presented, client, now)
}

/// Checks what was presented against the client registered under its id (`None`: none is),
/// for a caller that read the client itself or holds the copy a node keeps (`Arc<Client>`),
/// which comes back as it came rather than copied for each request.
pub(super) fn check_client<C: Borrow<Client>>(
    tenant: &TenantStore<'_>,
    presented: &Presented,
    client: Option<C>,
    now: UnixTime,
) -> Result<C, OAuthError> {
    // A disabled client is not told apart from an unknown one: whoever holds its
    // credentials learns nothing from them.
    let client = client
        .filter(|client| !client.borrow().disabled)
        .ok_or(OAuthError::InvalidClient("unknown client"))?;
    authenticates(tenant, presented, client.borrow(), now)?;
    Ok(client)
}

fn authenticates(
    tenant: &TenantStore<'_>,
    presented: &Presented,
    client: &Client,
    now: UnixTime,
) -> Result<(), OAuthError> {
    // Only a registered id reaches the log: a presented one is the client's free text.
    crate::events::log_context(tenant.id(), &client.client_id);
    match (client.client_type, &presented.secret, &client.secret_hash) {
        (ClientType::Public, None, _) => Ok(()),
        (ClientType::Public, Some(_), _) => Err(OAuthError::InvalidClient(
            "a public client must not send a secret",
        )),
        (ClientType::Confidential, Some(secret), Some(hash))
            if secret_matches(client, secret, hash, now) =>
        {
            Ok(())
        }
        (ClientType::Confidential, Some(_), _) => {
            Err(OAuthError::InvalidClient("wrong client credentials"))
        }
        (ClientType::Confidential, None, _) => Err(OAuthError::InvalidClient(
            "a confidential client must authenticate",
        )),
    }
}

/// The current secret or, during its grace period, the one a rotation replaced. Both are
/// compared, each in constant time, whichever matches: the time taken does not say which.
fn secret_matches(client: &Client, secret: &SecretString, current: &[u8], now: UnixTime) -> bool {
    let is_current = verify_secret(secret, current);
    let is_previous = match &client.previous_secret {
        Some(previous) => verify_secret(secret, &previous.hash) & previous.live_at(now),
        None => false,
    };
    is_current | is_previous
}

pub(super) fn presented(headers: &HeaderMap, params: &Params) -> Result<Presented, OAuthError> {
    let presented = presented_as_sent(headers, params)?;
    // No id outside the registration rules was ever registered, so such an id is unknown
    // without a lookup, and text a database cannot store (a NUL) never reaches one.
    ClientId::parse(&presented.client_id)
        .map_err(|_| OAuthError::InvalidClient("unknown client"))?;
    Ok(presented)
}

fn presented_as_sent(headers: &HeaderMap, params: &Params) -> Result<Presented, OAuthError> {
    let repeated = |_| OAuthError::InvalidClient("a client credential is repeated");
    let body_id = params.single("client_id").map_err(repeated)?;
    let body_secret = params.single("client_secret").map_err(repeated)?;
    match basic_credentials(headers)? {
        Some(_) if body_secret.is_some() => Err(OAuthError::InvalidClient(
            "use one authentication method: HTTP Basic or client_secret in the body",
        )),
        Some((id, _)) if body_id.is_some_and(|body| body != id) => Err(OAuthError::InvalidClient(
            "client_id differs from the Basic credentials",
        )),
        Some((client_id, secret)) => Ok(Presented {
            client_id,
            secret: Some(secret),
        }),
        None => {
            let client_id = body_id.ok_or(OAuthError::InvalidClient("no client authentication"))?;
            Ok(Presented {
                client_id: client_id.to_owned(),
                secret: body_secret.map(|s| SecretString::from(s.to_owned())),
            })
        }
    }
}

/// RFC 6749 §2.3.1: the id and secret are form-urlencoded before Base64.
fn basic_credentials(headers: &HeaderMap) -> Result<Option<(String, SecretString)>, OAuthError> {
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return Ok(None);
    };
    let malformed = || OAuthError::InvalidClient("malformed Basic credentials");
    let value = value.to_str().map_err(|_| malformed())?;
    let (scheme, encoded) = value.split_once(' ').ok_or_else(malformed)?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return Err(OAuthError::InvalidClient(
            "only HTTP Basic client authentication is accepted",
        ));
    }
    let decoded = STANDARD.decode(encoded.trim()).map_err(|_| malformed())?;
    let decoded = String::from_utf8(decoded).map_err(|_| malformed())?;
    let (id, secret) = decoded.split_once(':').ok_or_else(malformed)?;
    let id = form_decode(id)
        .filter(|id| !id.is_empty())
        .ok_or_else(malformed)?;
    let secret = form_decode(secret).ok_or_else(malformed)?;
    Ok(Some((id, SecretString::from(secret))))
}

/// RFC 6749 §2.3.1 and Appendix B: each of the id and the secret is one
/// `application/x-www-form-urlencoded` value, so `+` is a space and `%XX` a byte, and nothing
/// else is special: an `&` or `=` belongs to the value (a form parser would cut at `&`).
fn form_decode(value: &str) -> Option<String> {
    crate::params::decode(value.as_bytes()).ok()
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn basic(raw: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        let value = format!("Basic {}", STANDARD.encode(raw));
        headers.insert(
            header::AUTHORIZATION,
            HeaderValue::from_str(&value).unwrap(),
        );
        headers
    }

    #[test]
    fn basic_credentials_are_form_decoded() {
        let (id, secret) = basic_credentials(&basic("my%3Aclient:s%2Bcret+x"))
            .unwrap()
            .unwrap();
        assert_eq!(id, "my:client");
        assert_eq!(secrecy::ExposeSecret::expose_secret(&secret), "s+cret x");
    }

    /// The audit's case: `SECRET&junk` is not `SECRET`.
    #[test]
    fn an_ampersand_or_equals_sign_belongs_to_the_secret() {
        let (_, secret) = basic_credentials(&basic("web:SECRET&junk"))
            .unwrap()
            .unwrap();
        assert_eq!(secrecy::ExposeSecret::expose_secret(&secret), "SECRET&junk");
        let (id, secret) = basic_credentials(&basic("a=b:c=d%26e")).unwrap().unwrap();
        assert_eq!(id, "a=b");
        assert_eq!(secrecy::ExposeSecret::expose_secret(&secret), "c=d&e");
        assert!(matches!(
            basic_credentials(&basic("web:%FF")),
            Err(OAuthError::InvalidClient(_))
        ));
    }

    #[test]
    fn two_methods_or_mismatched_ids_are_refused() {
        let params = Params::parse(b"client_id=web&client_secret=s").unwrap();
        assert!(matches!(
            presented(&basic("web:s"), &params),
            Err(OAuthError::InvalidClient(_))
        ));
        let params = Params::parse(b"client_id=other").unwrap();
        assert!(matches!(
            presented(&basic("web:s"), &params),
            Err(OAuthError::InvalidClient(_))
        ));
        let params = Params::parse(b"client_id=web").unwrap();
        assert_eq!(
            presented(&basic("web:s"), &params).unwrap().client_id,
            "web"
        );
        assert!(matches!(
            presented(&HeaderMap::new(), &Params::parse(b"").unwrap()),
            Err(OAuthError::InvalidClient(_))
        ));
    }

    #[test]
    fn ids_that_could_never_be_registered_are_unknown_clients() {
        for body in [
            &b"client_id=we%00b"[..],
            b"client_id=w%C3%A9b",
            b"client_id=a%20b",
        ] {
            assert!(matches!(
                presented(&HeaderMap::new(), &Params::parse(body).unwrap()),
                Err(OAuthError::InvalidClient("unknown client"))
            ));
        }
        assert!(matches!(
            presented(&basic("we%00b:secret"), &Params::parse(b"").unwrap()),
            Err(OAuthError::InvalidClient("unknown client"))
        ));
    }
}
