//! `/metrics`, in the OpenMetrics text format that Prometheus scrapes, on its own listener
//! (`--metrics-listen`) so the public ones do not show it:
//! HTTP requests by listener, route and status with a latency histogram, the authorization
//! server's own counters (grants, revocations, sign-ins, locks, consents) and the database
//! pools. Every label comes from a bounded set: routes are the router's patterns, never the
//! path sent, and no label names a tenant, client or user, so a scrape stays small and says
//! nothing about who uses the server.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use store::Store;

pub const PATH: &str = "/metrics";

const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Latency buckets in seconds: from half a millisecond (a JWKS or userinfo answer) to the
/// 10 s request deadline.
const LATENCY_BUCKETS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// The HTTP counters, shared by the listeners (told apart by the `listener` label).
#[derive(Clone, Debug)]
pub struct HttpMetrics {
    requests: Family<RequestLabels, Counter>,
    latency: Family<RouteLabels, Histogram>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    listener: &'static str,
    method: &'static str,
    route: String,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    listener: &'static str,
    route: String,
}

impl Default for HttpMetrics {
    fn default() -> Self {
        HttpMetrics {
            requests: Family::default(),
            latency: Family::new_with_constructor(|| Histogram::new(LATENCY_BUCKETS)),
        }
    }
}

/// Rows the expiry clean-up deleted, by table (a fixed set of names).
#[derive(Clone, Debug, Default)]
pub struct CleanupMetrics {
    deleted: Family<TableLabels, Counter>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TableLabels {
    table: &'static str,
}

impl CleanupMetrics {
    pub fn count(&self, report: &store::CleanupReport) {
        for (table, n) in &report.deleted {
            self.deleted
                .get_or_create(&TableLabels { table })
                .inc_by(*n);
        }
    }
}

/// One registry per process: the HTTP counters, `oauth`'s counters, the clean-up and the
/// pools.
pub fn registry(
    http: &HttpMetrics,
    oauth: &oauth::Metrics,
    api_cache: &api::ResponseCache,
    cleanup: &CleanupMetrics,
    store: &Store,
) -> Arc<Registry> {
    let mut registry = Registry::default();
    registry.register(
        "fieldauth_cleanup_deleted_rows",
        "Rows the expiry clean-up deleted, by table",
        cleanup.deleted.clone(),
    );
    registry.register(
        "fieldauth_http_requests",
        "HTTP requests answered, by listener, method, route and status",
        http.requests.clone(),
    );
    registry.register(
        "fieldauth_http_request_duration_seconds",
        "Time to answer an HTTP request, by listener and route",
        http.latency.clone(),
    );
    oauth.register(&mut registry);
    api_cache.register(&mut registry);
    registry.register_collector(Box::new(DatabaseCollector {
        store: store.clone(),
    }));
    Arc::new(registry)
}

/// The `/metrics` route, served by the metrics listener alone.
pub fn router(registry: Arc<Registry>) -> Router {
    Router::new().route(PATH, get(scrape)).with_state(registry)
}

async fn scrape(State(registry): State<Arc<Registry>>) -> Response {
    let mut body = String::new();
    if let Err(error) = prometheus_client::encoding::text::encode(&mut body, &registry) {
        tracing::error!(%error, "cannot encode the metrics");
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    }
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// Middleware counting each request once it is answered, under the listener's name.
pub async fn track(
    State((metrics, listener)): State<(HttpMetrics, &'static str)>,
    request: Request,
    next: Next,
) -> Response {
    let started = Instant::now();
    let method = method_label(request.method());
    // The fallback has no pattern; one label for every unrouted path keeps the set bounded.
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |p| p.as_str().to_owned());
    let response = next.run(request).await;
    let elapsed = started.elapsed().as_secs_f64();
    metrics
        .requests
        .get_or_create(&RequestLabels {
            listener,
            method,
            route: route.clone(),
            status: response.status().as_u16(),
        })
        .inc();
    metrics
        .latency
        .get_or_create(&RouteLabels { listener, route })
        .observe(elapsed);
    response
}

/// Methods outside the standard set share one label, so a client inventing methods cannot
/// grow the scrape.
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        _ => "other",
    }
}

/// Reads the pools at scrape time rather than keeping gauges current on every checkout.
#[derive(Debug)]
struct DatabaseCollector {
    store: Store,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PoolLabels {
    database: String,
    state: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DatabaseLabels {
    database: String,
}

impl Collector for DatabaseCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let connections = Family::<PoolLabels, Gauge>::default();
        let max = Family::<DatabaseLabels, Gauge>::default();
        for pool in self.store.pool_use() {
            let in_use = pool.size.saturating_sub(pool.idle);
            for (state, count) in [("idle", pool.idle), ("in_use", in_use)] {
                connections
                    .get_or_create(&PoolLabels {
                        database: pool.database.clone(),
                        state,
                    })
                    .set(i64::from(count));
            }
            max.get_or_create(&DatabaseLabels {
                database: pool.database,
            })
            .set(i64::from(pool.max));
        }
        connections.encode(encoder.encode_descriptor(
            "fieldauth_db_connections",
            "Open database connections by database (default or a shard's name) and state",
            None,
            connections.metric_type(),
        )?)?;
        max.encode(encoder.encode_descriptor(
            "fieldauth_db_connections_max",
            "The most connections each database's pool may open",
            None,
            max.metric_type(),
        )?)?;
        let statements = ConstCounter::new(self.store.statements_executed());
        statements.encode(encoder.encode_descriptor(
            "fieldauth_db_statements",
            "Statements sent to the databases since the process started",
            None,
            statements.metric_type(),
        )?)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unusual_methods_share_one_label() {
        assert_eq!(method_label(&Method::POST), "POST");
        let invented = Method::from_bytes(b"BREW").unwrap_or(Method::TRACE);
        assert_eq!(method_label(&invented), "other");
    }
}
