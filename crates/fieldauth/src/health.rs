//! `/healthz` (the process answers) and `/readyz` (it can reach its database), on every
//! listener.

use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use store::Store;

const READY_TIMEOUT: Duration = Duration::from_secs(2);

pub fn router(store: Store) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .with_state(store)
}

async fn readyz(State(store): State<Store>) -> (StatusCode, &'static str) {
    match tokio::time::timeout(READY_TIMEOUT, store.ping()).await {
        Ok(Ok(())) => (StatusCode::OK, "ready\n"),
        Ok(Err(error)) => {
            tracing::warn!(error = %oauth::error_chain(&error), "readiness check failed");
            (StatusCode::SERVICE_UNAVAILABLE, "database unavailable\n")
        }
        Err(_) => {
            tracing::warn!("readiness check timed out");
            (StatusCode::SERVICE_UNAVAILABLE, "database unavailable\n")
        }
    }
}
