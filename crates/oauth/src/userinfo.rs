//! `GET`/`POST /oauth/userinfo` (OpenID Connect Core §5.3): the claims the access token's
//! scopes allow, for a token with `openid`.

use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, Method};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Map, Value};
use store::GrantUser;

use crate::bearer::{presented_token, verify_access_token};
use crate::dpop;
use crate::error::OAuthError;
use crate::paths;
use crate::scope::Scope;
use crate::state::OAuthState;

pub async fn userinfo(
    State(state): State<OAuthState>,
    method: Method,
    headers: HeaderMap,
) -> Result<Response, OAuthError> {
    let now = state.clock.now();
    let presented = presented_token(&headers)?;
    let (claims, tenant) = verify_access_token(&state, presented.1, now)?;
    let store = state.store.tenant(&tenant);
    let endpoint = (method.as_str(), paths::USERINFO);
    dpop::check_presentation(
        &state,
        &headers,
        presented,
        claims.dpop_jkt(),
        &store,
        endpoint,
        now,
    )
    .await?;
    if !claims.has_scope(Scope::OpenId.as_str()) {
        return Err(OAuthError::InsufficientScope("openid"));
    }
    crate::events::log_context(&tenant, &claims.client_id);
    let user = match store.user_of_grant(&claims.grant_id, &claims.sub).await? {
        GrantUser::Live(user) => user,
        GrantUser::Revoked => {
            return Err(OAuthError::InvalidToken(
                "the access token has been revoked",
            ))
        }
        GrantUser::Gone => return Err(OAuthError::InvalidToken("the user no longer exists")),
    };
    let mut body = Map::new();
    body.insert("sub".into(), json!(user.user_id));
    if claims.has_scope(Scope::Profile.as_str()) {
        body.insert("name".into(), json!(user.name));
        body.insert("preferred_username".into(), json!(user.username));
    }
    if claims.has_scope(Scope::Email.as_str()) {
        body.insert("email".into(), json!(user.email));
        body.insert("email_verified".into(), json!(false));
    }
    let mut response = Json(Value::Object(body)).into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}
