//! The bearer-protected field-service GraphQL API on the API listener: `POST /api`.

mod bearer;
mod cache;
mod document;
mod error;
mod graphiql;
mod keys;
mod known_documents;
mod response_json;
mod schema;
mod state;
mod validate;
mod verified;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use futures_util::stream::{FuturesUnordered, StreamExt};
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use cache::Lookup;

pub use cache::ResponseCache;
pub use error::ApiError;
pub use keys::RemoteKeys;
pub use schema::context::new_id as record_id;
pub use schema::{sdl, ApiSchema};
pub use state::{ApiConfig, ApiState};

/// The GraphQL endpoint: `POST` for apps, `GET` for the GraphiQL page.
pub const GRAPHQL_PATH: &str = "/api";

/// GraphQL requests are small; anything larger is refused before it is parsed.
const MAX_BODY_BYTES: usize = 64 * 1024;

/// The routes of the API listener. Health, logging and request ids are added by the binary.
pub fn router(state: ApiState) -> Router {
    Router::new()
        .route(GRAPHQL_PATH, post(graphql).get(graphiql::page))
        .route("/api/graphiql.js", get(graphiql::start_script))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state)
}

/// The token is checked before the schema runs: without a valid one there is no data at all
/// (RFC 6750 §3.1).
/// A query answered before for the same token, at the same version of the organization's
/// data, is answered again from the response cache (see `cache`).
async fn graphql(
    State(state): State<ApiState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    // Refused as a GraphQL error, like every other malformed request, not axum's plain text.
    let Ok(body) = body else {
        return ApiError::TooLarge.into_response();
    };
    let now = state.clock.now();
    let authenticated = match bearer::authenticate(&state, &headers, now).await {
        Ok(authenticated) => authenticated,
        Err(error) => return error.into_response(),
    };
    let mut request: async_graphql::Request = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(_) => {
            return ApiError::BadUserInput("the body must be a GraphQL request in JSON".into())
                .into_response()
        }
    };
    // The document is parsed once, here, and kept in the request: the check, the cache and
    // the schema all read that parse (ours where it can, else async-graphql's).
    if let Some(document) = document::parse(&request.query) {
        request.set_parsed_query(document);
    }
    if let Err(error) = schema::control_characters::check(&mut request) {
        return answer(async_graphql::Response::from_errors(vec![error])).0;
    }
    let lookup = state.cache.lookup(
        authenticated.token,
        &mut request,
        authenticated.data_version,
    );
    if let Lookup::Hit(body) = lookup {
        return json_body(body);
    }
    // A request without variables that ran without error once was valid, and is again.
    let known = state.known.knows(&request);
    let learn = (!known && request.variables.is_empty())
        .then(|| (request.query.clone(), request.operation_name.clone()));
    let response = execute(&state, known, authenticated.caller, request).await;
    if let (Some((query, operation_name)), true) = (learn, response.is_ok()) {
        state.known.learn(&query, operation_name.as_deref());
    }
    let (answer, kept) = answer(response);
    if let (Lookup::Miss(key, data_version), Some(body)) = (lookup, kept) {
        state.cache.put(key, data_version, body);
    }
    answer
}

/// The HTTP answer to a GraphQL response, and its body again if it may be kept (it holds no
/// error).
fn answer(mut response: async_graphql::Response) -> (Response, Option<Bytes>) {
    label_request_errors(&mut response);
    let keep = response.is_ok();
    match response_json::to_json(&response) {
        Ok(body) => {
            let body = Bytes::from(body);
            let kept = keep.then(|| body.clone());
            (json_body(body), kept)
        }
        Err(error) => {
            tracing::error!(%error, "cannot serialize a GraphQL response");
            (ApiError::Internal.into_response(), None)
        }
    }
}

fn json_body(body: Bytes) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response()
}

/// Errors the resolvers raise carry their code already. The others come from async-graphql
/// itself: a query that does not parse or validate (an unknown field or enum value, too deep,
/// too complex) or an argument that is not of its type. Those are the client's to fix.
fn label_request_errors(response: &mut async_graphql::Response) {
    for error in &mut response.errors {
        let extensions = error.extensions.get_or_insert_with(Default::default);
        if extensions.get("code").is_none() {
            extensions.set("code", "BAD_USER_INPUT");
        }
    }
}

/// Runs the query with the loaders' batches polled in this same task, beside it. A batch
/// starts only once the query can go no further without data, so it holds every key of that
/// level: a long list's items are polled in several rounds (futures yield to be fair), and a
/// batch started between two rounds would hold only part of the keys.
async fn execute(
    state: &ApiState,
    known: bool,
    caller: bearer::Caller,
    mut request: async_graphql::Request,
) -> async_graphql::Response {
    // Answers that are never merged are written as they are answered (`schema::plain`).
    let written = request
        .parsed_query()
        .is_ok_and(schema::plain::is_never_merged);
    let loaders = schema::loaders::loaders(
        state.store.clone(),
        caller.tenant.clone(),
        caller.claims.organization_guid.clone(),
    );
    let schema = match known {
        true => &state.checked_schema,
        false => &state.schema,
    };
    let request = request.data(caller).data(loaders.clone());
    let request = match written {
        true => request.data(schema::plain::Written),
        false => request.data(schema::plain::Shapes::default()),
    };
    let execution = schema.execute(request);
    let mut execution = std::pin::pin!(execution);
    let mut batches = FuturesUnordered::new();
    std::future::poll_fn(move |cx| {
        // A batch that settles at once (SQLite's statements can) lets the query go on now,
        // not after a trip through the scheduler; bounded, like the query's own rounds.
        for _ in 0..MAX_ROUNDS {
            // The query again while it woke itself (it yielded), up to a bound.
            for _ in 0..10_000 {
                let woken = Arc::new(WakeFlag {
                    woken: AtomicBool::new(false),
                    outer: cx.waker().clone(),
                });
                let waker = Waker::from(woken.clone());
                if let Poll::Ready(response) =
                    execution.as_mut().poll(&mut Context::from_waker(&waker))
                {
                    return Poll::Ready(response);
                }
                if !woken.woken.load(Ordering::SeqCst) {
                    break;
                }
            }
            batches.extend(loaders.start_batches());
            let mut settled = false;
            while let Poll::Ready(Some(())) = batches.poll_next_unpin(cx) {
                settled = true;
            }
            if !settled {
                break;
            }
        }
        Poll::Pending
    })
    .await
}

/// Levels of batches read in one poll of `execute` before it lets the runtime in; each level
/// woke the query already, so the next poll goes on where this one stopped.
const MAX_ROUNDS: usize = 64;

/// A waker that notes it was woken before passing the wake on.
struct WakeFlag {
    woken: AtomicBool,
    outer: Waker,
}

impl Wake for WakeFlag {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::SeqCst);
        self.outer.wake_by_ref();
    }
}
