//! Wiring: binds the listeners, loads the signing keys, builds the states and routers, and
//! runs until told to stop. The binary and the end-to-end tests start the server through
//! [`start`], so tests exercise exactly what operators run.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use axum::extract::State;
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use jose::Clock;
use oauth::cors::{AllowedOrigins, Cors, CorsRoute};
use oauth::stopping::run_every;
use oauth::{OAuthConfig, OAuthState, OsRandom, SigningKeys};
use prometheus_client::registry::Registry;
use store::Store;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tower::ServiceBuilder;

use crate::config::ServeConfig;
use crate::metrics::{self, HttpMetrics};
use crate::{connections, health, maintenance, telemetry, wal_checkpoints};

/// A running server. Dropping it does not stop it; call [`Server::shutdown`].
#[derive(Debug)]
pub struct Server {
    pub auth_addr: SocketAddr,
    pub api_addr: SocketAddr,
    /// The metrics listener's address, when there is one (`--metrics-listen`).
    pub metrics_addr: Option<SocketAddr>,
    /// The admin API listener's address, when there is one (`--admin-listen`).
    pub admin_addr: Option<SocketAddr>,
    stop: watch::Sender<bool>,
    tasks: JoinSet<()>,
}

/// Binds the configured addresses; a busy port stops start-up with the flag that named it.
pub async fn bind_listeners(config: &ServeConfig) -> anyhow::Result<Listeners> {
    Ok(Listeners {
        auth: bind(config.auth_listen, "--auth-listen").await?,
        api: bind(config.api_listen, "--api-listen").await?,
        metrics: match config.metrics_listen {
            Some(addr) => Some(bind(addr, "--metrics-listen").await?),
            None => None,
        },
        admin: match config.admin_listen {
            Some(addr) => Some(bind(addr, "--admin-listen").await?),
            None => None,
        },
    })
}

/// Listeners bound by the caller: tests bind port 0 first, so the issuer URL can name the
/// port the server will answer on.
#[derive(Debug)]
pub struct Listeners {
    pub auth: TcpListener,
    pub api: TcpListener,
    /// `/metrics` and the probes, off the public listeners; none unless configured.
    pub metrics: Option<TcpListener>,
    /// The admin API, its probes and `/metrics`; none unless configured.
    pub admin: Option<TcpListener>,
}

pub async fn start_on(
    config: &ServeConfig,
    listeners: Listeners,
    store: Store,
    clock: Arc<dyn Clock>,
) -> anyhow::Result<Server> {
    let auth_addr = listeners.auth.local_addr()?;
    let api_addr = listeners.api.local_addr()?;
    let metrics_addr = match &listeners.metrics {
        Some(listener) => Some(listener.local_addr()?),
        None => None,
    };

    let admin_addr = match &listeners.admin {
        Some(listener) => Some(listener.local_addr()?),
        None => None,
    };

    let signing_keys =
        SigningKeys::load_or_create(&store, clock.now(), config.key_encryption.clone())
            .await
            .map_err(|e| crate::keys::naming_the_kek(e, "cannot load the signing keys"))?;
    let origins = AllowedOrigins::load(&store)
        .await
        .context("cannot load the clients' origins for CORS")?;
    let reload_clock = Arc::clone(&clock);
    let admin_state = admin::http::AdminState::new(
        store.clone(),
        Arc::clone(&clock),
        Arc::new(OsRandom::new()),
        config.issuer.as_str(),
    );
    let oauth_state = OAuthState::new(
        OAuthConfig {
            issuer: config.issuer.clone(),
            api_audience: config.api_url.clone(),
            throttle: config.throttle,
            grant_max_age: config.grant_max_age,
        },
        store.clone(),
        signing_keys.clone(),
        clock,
        Arc::new(OsRandom::new()),
    )
    .await
    .context("cannot prepare the authorization server")?
    .with_mailer(config.mail.clone());
    let api_state = api::ApiState::new(
        api::ApiConfig {
            issuer: config.issuer.as_str().to_owned(),
            audience: config.api_url.clone(),
            response_cache_bytes: config.api_cache_bytes,
        },
        store.clone(),
        Arc::clone(&reload_clock),
    )
    .context("cannot prepare the API")?;
    let http_metrics = HttpMetrics::default();
    let cleanup_metrics = metrics::CleanupMetrics::default();
    let registry = metrics::registry(
        &http_metrics,
        oauth_state.metrics(),
        &api_state.cache,
        &cleanup_metrics,
        &store,
    );
    let common = Common {
        store: &store,
        registry: &registry,
        http_metrics: &http_metrics,
        origins: &origins,
    };
    let deliverer_state = oauth_state.clone();
    let auth_router = common.router(oauth::router(oauth_state), "auth");
    let api_router = common.router(api::router(api_state), "api");

    let (stop, stopped) = watch::channel(false);
    let mut tasks = JoinSet::new();
    let limits = config.connections;
    let proxies = Arc::new(config.trusted_proxies.clone());
    tasks.spawn(connections::serve(
        listeners.auth,
        auth_router,
        limits,
        Arc::clone(&proxies),
        stopped.clone(),
        "auth",
    ));
    tasks.spawn(connections::serve(
        listeners.api,
        api_router,
        limits,
        Arc::clone(&proxies),
        stopped.clone(),
        "api",
    ));
    if let Some(listener) = listeners.metrics {
        tasks.spawn(connections::serve(
            listener,
            common.metrics_router(),
            limits,
            Arc::clone(&proxies),
            stopped.clone(),
            "metrics",
        ));
    }
    if let Some(listener) = listeners.admin {
        tasks.spawn(connections::serve(
            listener,
            common.admin_router(admin_state),
            limits,
            Arc::clone(&proxies),
            stopped.clone(),
            "admin",
        ));
    }
    tasks.spawn(origins.clone().reload_every(
        store.clone(),
        config.key_reload_interval,
        stopped.clone(),
    ));
    if let Some(every) = config.cleanup_interval {
        tasks.spawn(maintenance::clean_up_every(
            store.clone(),
            Arc::clone(&reload_clock),
            every,
            config.throttle.window(),
            config.audit_retention,
            cleanup_metrics,
            stopped.clone(),
        ));
    }
    // Back-Channel Logout 1.0: every node delivers what any node or the CLI queued.
    tasks.spawn(oauth::logout::backchannel::deliver_logout_tokens(
        deliverer_state,
        config.backchannel.clone(),
        stopped.clone(),
    ));
    let store_for_checkpoints = store.clone();
    let stopped_for_checkpoints = stopped.clone();
    tasks.spawn(refresh_statistics(store.clone(), stopped.clone()));
    tasks.spawn(reload_keys(
        signing_keys,
        store,
        reload_clock,
        config.key_reload_interval,
        stopped,
    ));
    tasks.spawn(wal_checkpoints::run(
        store_for_checkpoints,
        stopped_for_checkpoints,
    ));
    tracing::info!(%auth_addr, %api_addr, issuer = %config.issuer, "listening");
    if let Some(metrics_addr) = metrics_addr {
        tracing::info!(%metrics_addr, "serving metrics");
    }
    if let Some(admin_addr) = admin_addr {
        tracing::info!(%admin_addr, "serving the admin API");
    }
    Ok(Server {
        auth_addr,
        api_addr,
        metrics_addr,
        admin_addr,
        stop,
        tasks,
    })
}

impl Server {
    /// Stops accepting, lets requests in flight finish, and returns when all is done.
    pub async fn shutdown(mut self) {
        let _ = self.stop.send(true);
        while self.tasks.join_next().await.is_some() {}
    }
}

async fn bind(addr: SocketAddr, flag: &str) -> anyhow::Result<TcpListener> {
    TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr} ({flag})"))
}

/// What both public listeners serve besides their own routes, and the layers around them.
struct Common<'a> {
    store: &'a Store,
    registry: &'a Arc<Registry>,
    http_metrics: &'a HttpMetrics,
    origins: &'a AllowedOrigins,
}

/// The API's endpoint for apps; GraphiQL (`GET /api`) is a page and stays out.
const API_CORS_ROUTES: &[CorsRoute] = &[CorsRoute {
    path: api::GRAPHQL_PATH,
    methods: &[Method::POST],
}];

impl Common<'_> {
    fn router(&self, routes: Router, listener: &'static str) -> Router {
        // One stack, outermost first: a router boxes each `layer` it is given around every
        // route, and a request clones the boxes inside each middleware it passes (one
        // allocation per box), so layers given one at a time cost allocations by the square
        // of their number (docs/performance.md).
        let layers = ServiceBuilder::new()
            .layer(axum::middleware::from_fn_with_state(
                (self.http_metrics.clone(), listener),
                metrics::track,
            ))
            // Outside the deadline, so a page can read a 503 too.
            .layer(axum::middleware::from_fn_with_state(
                self.cors(listener),
                oauth::cors::apply_cors,
            ))
            .layer(axum::middleware::from_fn_with_state(listener, deadline));
        let router = routes
            .merge(health::router(self.store.clone()))
            .fallback(|| async { (StatusCode::NOT_FOUND, "not found\n") })
            .layer(layers);
        telemetry::http_layers(router)
    }

    /// The metrics listener: `/metrics` and the probes. Its own requests are counted under
    /// `listener="metrics"`.
    fn metrics_router(&self) -> Router {
        let router = metrics::router(Arc::clone(self.registry))
            .merge(health::router(self.store.clone()))
            .fallback(|| async { (StatusCode::NOT_FOUND, "not found\n") })
            .layer(axum::middleware::from_fn_with_state(
                (self.http_metrics.clone(), "metrics"),
                metrics::track,
            ));
        telemetry::http_layers(router)
    }

    /// The admin listener: the admin API, the probes and `/metrics`, under the deadline.
    /// No CORS: the admin API is for back offices and scripts, never for browsers' pages.
    fn admin_router(&self, state: admin::http::AdminState) -> Router {
        let router = admin::http::router(state)
            .merge(metrics::router(Arc::clone(self.registry)))
            .merge(health::router(self.store.clone()))
            .layer(
                ServiceBuilder::new()
                    .layer(axum::middleware::from_fn_with_state(
                        (self.http_metrics.clone(), "admin"),
                        metrics::track,
                    ))
                    .layer(axum::middleware::from_fn_with_state("admin", deadline)),
            );
        telemetry::http_layers(router)
    }

    fn cors(&self, listener: &str) -> Cors {
        let routes = match listener {
            "api" => API_CORS_ROUTES,
            _ => oauth::cors::AUTH_ROUTES,
        };
        Cors::new(self.origins.clone(), routes)
    }
}

/// The most a request may take. The pool gives up waiting for a connection after 5 s, but a
/// statement on a connection that stopped answering (a network partition) has no timeout of
/// its own: past the deadline the request is dropped, its open transaction with it (rolled
/// back, so nothing is half-written), and the client is told to retry.
const REQUEST_DEADLINE: Duration = Duration::from_secs(10);

/// What a 503 tells clients to wait before they retry (RFC 9110 §10.2.3): about the time the
/// pool takes to give up on a database that does not answer.
const RETRY_AFTER_SECONDS: &str = "5";

async fn deadline(
    State(listener): State<&'static str>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let path = request.uri().path().to_owned();
    let mut response = match tokio::time::timeout(REQUEST_DEADLINE, next.run(request)).await {
        Ok(response) => response,
        // Each listener answers in its own protocol's words; the auth listener logs the
        // error itself.
        Err(_) if listener == "api" => {
            tracing::warn!("request deadline passed: answered 503");
            api::ApiError::Unavailable.into_response()
        }
        Err(_) if listener == "admin" => {
            tracing::warn!("request deadline passed: answered 503");
            admin::AdminError::Unavailable.into_response()
        }
        Err(_) => oauth::timed_out(&path),
    };
    if response.status() == StatusCode::SERVICE_UNAVAILABLE {
        response
            .headers_mut()
            .entry(header::RETRY_AFTER)
            .or_insert(HeaderValue::from_static(RETRY_AFTER_SECONDS));
    }
    response
}

/// Picks up keys rotated by the CLI or another node.
async fn reload_keys(
    keys: SigningKeys,
    store: Store,
    clock: Arc<dyn Clock>,
    every: Duration,
    stopped: watch::Receiver<bool>,
) {
    run_every(every, stopped, || {
        let (keys, store, now) = (keys.clone(), store.clone(), clock.now());
        async move {
            match keys.reload(&store, now).await {
                Ok(true) => tracing::info!("signing keys reloaded"),
                Ok(false) => {}
                Err(error) => {
                    tracing::warn!(error = %oauth::error_chain(&error), "signing keys not reloaded")
                }
            }
        }
    })
    .await
}

/// A PostgreSQL database without autovacuum is heard of at every start: its statistics stay
/// those of the last `ANALYZE`, and plans made for tables that were nearly empty then read
/// whole tables once they have grown (a refresh read every grant of its client in the soak,
/// docs/performance.md). Nothing stops the start: the operator may run `ANALYZE` on a
/// schedule of their own.
pub async fn warn_without_autovacuum(store: &Store) {
    match store.autovacuum_off().await {
        Ok(databases) => {
            for database in databases {
                tracing::warn!(%database, "PostgreSQL's autovacuum is off: nothing keeps the planner's statistics up with the tables' growth; turn it on or run ANALYZE regularly (docs/deployment.md)");
            }
        }
        Err(error) => tracing::warn!(error = %error, "cannot read PostgreSQL's autovacuum setting"),
    }
}

/// How often PostgreSQL's tables are checked for growth that their planner statistics have
/// not seen (`store::Store::refresh_statistics`): a hot table doubles within a second of a
/// new database's first load.
const STATISTICS_INTERVAL: Duration = Duration::from_secs(1);

/// Analyzes the PostgreSQL tables that doubled since their last analysis, so that the
/// statements reading them are planned for their size. Nothing to do on SQLite; a failure is
/// retried at the next tick (autovacuum analyzes them too, only later).
async fn refresh_statistics(store: Store, stopped: watch::Receiver<bool>) {
    run_every(STATISTICS_INTERVAL, stopped, || {
        let store = store.clone();
        async move {
            match store.refresh_statistics().await {
                Ok(tables) if !tables.is_empty() => {
                    tracing::debug!(?tables, "planner statistics refreshed");
                }
                Ok(_) => {}
                Err(error) => tracing::warn!(error = %error, "planner statistics not refreshed"),
            }
        }
    })
    .await
}
