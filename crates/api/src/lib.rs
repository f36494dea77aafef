//! The bearer-protected field-service GraphQL API on the API listener: `POST /api`.

mod bearer;
mod error;
mod keys;
mod schema;
mod state;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};

pub use error::ApiError;
pub use keys::RemoteKeys;
pub use schema::ApiSchema;
pub use state::{ApiConfig, ApiState};

/// GraphQL requests are small; anything larger is refused before it is parsed.
const MAX_BODY_BYTES: usize = 64 * 1024;

/// The routes of the API listener. Health, logging and request ids are added by the binary.
pub fn router(state: ApiState) -> Router {
    Router::new()
        .route("/api", post(graphql))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state)
}

/// The token is checked before the schema runs: without a valid one there is no data at all
/// (RFC 6750 §3.1).
async fn graphql(State(state): State<ApiState>, headers: HeaderMap, body: Bytes) -> Response {
    let now = state.clock.now();
    let caller = match bearer::authenticate(&state, &headers, now).await {
        Ok(caller) => caller,
        Err(error) => return error.into_response(),
    };
    let request: async_graphql::Request = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(_) => {
            return ApiError::BadUserInput("the body must be a GraphQL request in JSON".into())
                .into_response()
        }
    };
    let response = state.schema.execute(request.data(caller)).await;
    Json(response).into_response()
}
