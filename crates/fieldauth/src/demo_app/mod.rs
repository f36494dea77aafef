//! The demo app of `fieldauth demo`: the back end of the public client `demo-spa`, served on
//! loopback at the origin of its redirect URI, so a first run needs nothing but a browser.
//! It starts the authorization code flow with PKCE, completes it at its callback, and shows
//! what the tokens say. Tokens stay in its memory: never in a URL, a page or a log line.

mod error;
mod flow;
mod handlers;
mod oauth_client;
mod pages;
mod sessions;
mod signed_in_page;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::http::{header, HeaderValue};
use axum::routing::{get, post};
use axum::Router;
use jose::Clock;
use oauth::{Issuer, RandomSource};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tower_http::set_header::SetResponseHeaderLayer;

pub use error::DemoAppError;

use crate::telemetry;
use oauth_client::OAuthClient;
use sessions::Sessions;

/// The paths the app serves.
pub const START: &str = "/";
pub const SIGN_IN: &str = "/signin";
pub const CALLBACK: &str = "/callback";
pub const REFRESH: &str = "/refresh";
pub const REVOKE: &str = "/revoke";
pub const STYLESHEET: &str = "/app.css";

/// What the app needs to know: the servers it talks to and who it is.
#[derive(Clone, Debug)]
pub struct DemoAppConfig {
    pub issuer: Issuer,
    /// `{api_url}`: the access token's audience; the GraphQL endpoint is `{api_url}/api`.
    pub api_url: String,
    pub tenant: String,
    pub client_id: String,
    /// Its own callback, registered as the client's redirect URI.
    pub redirect_uri: String,
    /// The scopes it asks for.
    pub scope: String,
}

/// The app's state: configuration, the HTTP client, the browsers' sessions, clock and
/// randomness.
#[derive(Clone, Debug)]
pub struct DemoAppState {
    config: Arc<DemoAppConfig>,
    client: OAuthClient,
    sessions: Sessions,
    clock: Arc<dyn Clock>,
    random: Arc<dyn RandomSource>,
}

impl DemoAppState {
    pub fn new(
        config: DemoAppConfig,
        clock: Arc<dyn Clock>,
        random: Arc<dyn RandomSource>,
    ) -> Result<DemoAppState, DemoAppError> {
        let config = Arc::new(config);
        Ok(DemoAppState {
            client: OAuthClient::new(Arc::clone(&config))?,
            config,
            sessions: Sessions::default(),
            clock,
            random,
        })
    }
}

/// The origin a loopback listener is reached at, e.g. `http://127.0.0.1:8400`.
pub fn origin(addr: SocketAddr) -> String {
    format!("http://{addr}")
}

/// The routes, with the request-id and logging layers of the other listeners (which record
/// the path, never the query that carries the code) and the pages' security headers.
pub fn router(state: DemoAppState) -> Router {
    let routes = Router::new()
        .route(START, get(handlers::start))
        .route(SIGN_IN, get(handlers::sign_in))
        .route(CALLBACK, get(handlers::callback))
        .route(REFRESH, post(handlers::refresh))
        .route(REVOKE, post(handlers::revoke))
        .route(STYLESHEET, get(pages::stylesheet))
        .fallback(handlers::not_found)
        .with_state(state);
    let headers = [
        // No script at all; the stylesheet is our own; no framing.
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'self'; frame-ancestors 'none'",
        ),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
        // The pages show claims of one person's tokens.
        (header::CACHE_CONTROL, "no-store"),
    ];
    let routes = headers.into_iter().fold(routes, |routes, (name, value)| {
        routes.layer(SetResponseHeaderLayer::overriding(
            name,
            HeaderValue::from_static(value),
        ))
    });
    telemetry::http_layers(routes)
}

/// The running app. Dropping it does not stop it; call [`DemoApp::shutdown`].
#[derive(Debug)]
pub struct DemoApp {
    pub addr: SocketAddr,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl DemoApp {
    /// Serves the app on `listener` until [`DemoApp::shutdown`].
    pub fn start(listener: TcpListener, state: DemoAppState) -> std::io::Result<DemoApp> {
        let addr = listener.local_addr()?;
        let (stop, mut stopped) = watch::channel(false);
        let app = router(state);
        let task = tokio::spawn(async move {
            let shutdown = async move {
                let _ = stopped.wait_for(|stop| *stop).await;
            };
            if let Err(error) = axum::serve(listener, app)
                .with_graceful_shutdown(shutdown)
                .await
            {
                tracing::error!(listener = "demo-app", %error, "listener stopped");
            }
        });
        tracing::info!(demo_app_addr = %addr, "demo app listening");
        Ok(DemoApp { addr, stop, task })
    }

    /// Stops accepting, lets requests in flight finish, and returns when all is done.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

#[cfg(test)]
mod tests;
