//! CORS (the Fetch standard's CORS protocol) for the endpoints single-page apps call from the
//! browser: metadata, keys, token, userinfo, revocation, and the API's `POST /api`. Only the
//! origins of registered clients (see [`AllowedOrigins`]) are answered, each by name, never
//! with `*` and never with credentials: these endpoints take no cookies. The pages a person
//! uses (authorization, sign-in, consent) are not among the routes and never get CORS
//! headers.

mod origins;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::paths;

pub use origins::{AllowedOrigins, WebOrigin};

/// A path a page may call from another origin, and the methods it may use there.
#[derive(Debug)]
pub struct CorsRoute {
    pub path: &'static str,
    pub methods: &'static [Method],
}

/// The auth listener's endpoints for apps. `/oauth/authorize` (GET and the consent POST),
/// `/oauth/signin` and the stylesheet are pages, and stay out.
pub const AUTH_ROUTES: &[CorsRoute] = &[
    CorsRoute {
        path: paths::OPENID_CONFIGURATION,
        methods: &[Method::GET],
    },
    CorsRoute {
        path: paths::AUTHORIZATION_SERVER_METADATA,
        methods: &[Method::GET],
    },
    CorsRoute {
        path: paths::JWKS,
        methods: &[Method::GET],
    },
    CorsRoute {
        path: paths::TOKEN,
        methods: &[Method::POST],
    },
    CorsRoute {
        path: paths::USERINFO,
        methods: &[Method::GET, Method::POST],
    },
    CorsRoute {
        path: paths::REVOKE,
        methods: &[Method::POST],
    },
];

/// Request headers a page may send beyond the CORS-safelisted ones: the access token, a
/// JSON body's type, and a DPoP proof (RFC 9449 §4.1).
const ALLOW_HEADERS: &str = "Authorization, Content-Type, DPoP";

/// Response headers a page may read beyond the safelisted ones: the bearer or DPoP error
/// (RFC 6750 §3, RFC 9449 §7.1), when to retry a 503, and the next DPoP nonce (§8).
const EXPOSE_HEADERS: &str = "WWW-Authenticate, Retry-After, DPoP-Nonce";

/// Seconds a browser may reuse a preflight's answer: Chromium's ceiling. Withdrawing an
/// origin still takes effect at once, since every actual response is checked again.
const MAX_AGE: &str = "7200";

/// The CORS layer of one listener: its routes for apps, and the shared allow-list.
#[derive(Clone, Debug)]
pub struct Cors {
    origins: AllowedOrigins,
    routes: &'static [CorsRoute],
}

/// What the CORS protocol asks of one request.
#[derive(Debug, PartialEq, Eq)]
enum Answer {
    /// Not one of the routes, or a method the route does not offer to apps (`GET /api` is
    /// GraphiQL): the response is left alone.
    Untouched,
    /// One of the routes, from no allowed origin: no CORS headers, so the browser keeps the
    /// response from the page. An `OPTIONS` then gets what it would without CORS.
    Refused,
    /// A preflight (an `OPTIONS` with `Origin` and `Access-Control-Request-Method`) from an
    /// allowed origin, answered here.
    Preflight(HeaderValue, &'static [Method]),
    /// A request from an allowed origin: the page may read the response.
    Allowed(HeaderValue),
}

impl Cors {
    pub fn new(origins: AllowedOrigins, routes: &'static [CorsRoute]) -> Cors {
        Cors { origins, routes }
    }

    fn answer(&self, method: &Method, path: &str, headers: &HeaderMap) -> Answer {
        let preflight = method == Method::OPTIONS;
        let requested = match preflight {
            true => headers
                .get(header::ACCESS_CONTROL_REQUEST_METHOD)
                .and_then(|m| Method::from_bytes(m.as_bytes()).ok()),
            false => Some(method.clone()),
        };
        let Some(route) = self.routes.iter().find(|route| {
            route.path == path
                && requested
                    .as_ref()
                    .is_some_and(|method| route.methods.contains(method))
        }) else {
            return Answer::Untouched;
        };
        let Some(origin) = headers
            .get(header::ORIGIN)
            .filter(|origin| self.origins.allows(origin.as_bytes()))
        else {
            return Answer::Refused;
        };
        match preflight {
            true => Answer::Preflight(origin.clone(), route.methods),
            false => Answer::Allowed(origin.clone()),
        }
    }
}

/// The middleware: answers preflights, and lets an allowed origin read the response.
pub async fn apply_cors(State(cors): State<Cors>, request: Request, next: Next) -> Response {
    let answer = cors.answer(request.method(), request.uri().path(), request.headers());
    let mut response = match &answer {
        Answer::Untouched => return next.run(request).await,
        Answer::Preflight(origin, methods) => preflight(origin, methods),
        Answer::Refused | Answer::Allowed(_) => next.run(request).await,
    };
    let headers = response.headers_mut();
    // The answer depends on `Origin` whatever it was, so a shared cache must key on it.
    headers.append(header::VARY, HeaderValue::from_static("Origin"));
    if let Answer::Allowed(origin) = answer {
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        headers.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static(EXPOSE_HEADERS),
        );
    }
    response
}

/// 204 with the origin, the route's methods and the headers a page may send. No
/// `Access-Control-Allow-Credentials`: nothing here reads a cookie.
fn preflight(origin: &HeaderValue, methods: &[Method]) -> Response {
    let methods = methods
        .iter()
        .map(Method::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    let mut response = StatusCode::NO_CONTENT.into_response();
    let headers = response.headers_mut();
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
    if let Ok(methods) = HeaderValue::from_str(&methods) {
        headers.insert(header::ACCESS_CONTROL_ALLOW_METHODS, methods);
    }
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static(ALLOW_HEADERS),
    );
    headers.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static(MAX_AGE),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    const APP: &str = "https://app.example.com";

    fn cors() -> Cors {
        Cors::new(AllowedOrigins::of(&[APP]), AUTH_ROUTES)
    }

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(name, value)| (name.clone(), HeaderValue::from_str(value).unwrap()))
            .collect()
    }

    #[test]
    fn an_allowed_origin_gets_a_preflight_and_readable_responses() {
        let preflight = headers(&[
            (header::ORIGIN, APP),
            (header::ACCESS_CONTROL_REQUEST_METHOD, "POST"),
        ]);
        assert_eq!(
            cors().answer(&Method::OPTIONS, paths::USERINFO, &preflight),
            Answer::Preflight(
                HeaderValue::from_static(APP),
                &[Method::GET, Method::POST][..]
            )
        );
        let actual = headers(&[(header::ORIGIN, APP)]);
        assert_eq!(
            cors().answer(&Method::POST, paths::TOKEN, &actual),
            Answer::Allowed(HeaderValue::from_static(APP))
        );
    }

    #[test]
    fn other_origins_methods_and_paths_get_nothing() {
        for origin in [
            "https://app.example.com.evil.example",
            "http://app.example.com",
            "https://app.example.com:8443",
            "https://APP.example.com",
            "null",
        ] {
            let preflight = headers(&[
                (header::ORIGIN, origin),
                (header::ACCESS_CONTROL_REQUEST_METHOD, "POST"),
            ]);
            assert_eq!(
                cors().answer(&Method::OPTIONS, paths::TOKEN, &preflight),
                Answer::Refused,
                "{origin}"
            );
        }
        assert_eq!(
            cors().answer(&Method::POST, paths::TOKEN, &HeaderMap::new()),
            Answer::Refused
        );
        let from_app = headers(&[(header::ORIGIN, APP)]);
        assert_eq!(
            cors().answer(&Method::GET, paths::TOKEN, &from_app),
            Answer::Untouched
        );
        let preflight_for_get = headers(&[
            (header::ORIGIN, APP),
            (header::ACCESS_CONTROL_REQUEST_METHOD, "GET"),
        ]);
        assert_eq!(
            cors().answer(&Method::OPTIONS, paths::TOKEN, &preflight_for_get),
            Answer::Untouched
        );
        // An OPTIONS without Access-Control-Request-Method is no preflight.
        assert_eq!(
            cors().answer(&Method::OPTIONS, paths::TOKEN, &from_app),
            Answer::Untouched
        );
        for page in [paths::AUTHORIZE, paths::SIGNIN, paths::STYLESHEET] {
            assert_eq!(
                cors().answer(&Method::GET, page, &from_app),
                Answer::Untouched,
                "{page}"
            );
        }
    }
}
