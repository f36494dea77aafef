//! Logging: `tracing` to stderr (stdout is for command output), human or JSON, and the HTTP
//! layers that give each request an id, a span and one line when it completes.

use std::time::Duration;

use axum::extract::MatchedPath;
use axum::http::{HeaderName, Request, Response};
use axum::Router;
use tower::ServiceBuilder;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;
use tracing::Span;
use tracing_subscriber::EnvFilter;

use crate::cli::LogFormat;

const QUIET_NOTICES: &str = "sqlx::postgres::notice=warn";

const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

pub fn init(format: LogFormat, filter: &str) -> anyhow::Result<()> {
    let mut parsed =
        EnvFilter::try_new(filter).map_err(|e| anyhow::anyhow!("--log {filter:?}: {e}"))?;
    // PostgreSQL's notices at migration ("relation _sqlx_migrations already exists, skipping")
    // would open every command's output; a filter that names sqlx decides for itself.
    if !filter.contains("sqlx") {
        parsed = parsed.add_directive(QUIET_NOTICES.parse()?);
    }
    let filter = parsed;
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi);
    let installed = match format {
        LogFormat::Human => builder.try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .try_init(),
    };
    installed.map_err(|e| anyhow::anyhow!("cannot install the logger: {e}"))
}

/// Wraps a listener's router: request id (kept from `x-request-id` or made up, and echoed),
/// a span with method, matched path and id, and one `info` line per response. The span
/// records the route, never the query string, which carries `state`, `nonce` and codes.
pub fn http_layers(router: Router) -> Router {
    // One stack, outermost first, for the reason `serve.rs` gives.
    let layers = ServiceBuilder::new()
        .layer(SetRequestIdLayer::new(REQUEST_ID, MakeRequestUuid))
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(|request: &Request<_>| {
                    let path = request.extensions().get::<MatchedPath>().map_or_else(
                        || request.uri().path().to_owned(),
                        |p| p.as_str().to_owned(),
                    );
                    let request_id = request
                        .headers()
                        .get(REQUEST_ID)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default();
                    // The connection resolved the client's address (`--trusted-proxies`).
                    let client = request
                        .extensions()
                        .get::<oauth::ClientAddress>()
                        .map(|address| address.0.to_string())
                        .unwrap_or_default();
                    // Handlers fill in the tenant and client once they know them.
                    tracing::info_span!(
                        "request",
                        method = %request.method(),
                        path,
                        request_id,
                        client_address = client,
                        tenant = tracing::field::Empty,
                        client_id = tracing::field::Empty,
                    )
                })
                .on_request(())
                .on_response(|response: &Response<_>, latency: Duration, _span: &Span| {
                    tracing::info!(
                        status = response.status().as_u16(),
                        latency_us = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX),
                        "response"
                    );
                })
                .on_failure(()),
        )
        .layer(PropagateRequestIdLayer::new(REQUEST_ID));
    router.layer(layers)
}
