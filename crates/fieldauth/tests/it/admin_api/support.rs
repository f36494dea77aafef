//! A client of the admin API for the tests: a token made the way operators make one, and one
//! method per HTTP verb that returns the status, the ETag and the JSON body.

use reqwest::{Method, StatusCode};
use serde_json::Value;

use crate::helpers::TestApp;

/// An admin token and the listener it is sent to.
pub struct AdminClient {
    pub http: reqwest::Client,
    pub base: String,
    pub token: String,
}

/// What the admin API answered.
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub etag: Option<String>,
    pub content_type: Option<String>,
    pub body: Value,
}

impl Reply {
    /// Asserts an RFC 9457 problem of this status and `type` suffix, and returns its detail.
    #[track_caller]
    pub fn assert_problem(&self, status: u16, kind: &str) -> String {
        assert_eq!(self.status.as_u16(), status, "{:?}", self.body);
        assert_eq!(
            self.content_type.as_deref(),
            Some("application/problem+json"),
            "{:?}",
            self.body
        );
        assert_eq!(
            self.body["type"],
            format!("urn:fieldauth:problem:{kind}"),
            "{:?}",
            self.body
        );
        assert_eq!(self.body["status"], status);
        self.body["detail"].as_str().unwrap_or_default().to_owned()
    }

    #[track_caller]
    pub fn assert_ok(&self) -> &Value {
        assert!(self.status.is_success(), "{}: {:?}", self.status, self.body);
        &self.body
    }
}

#[allow(dead_code)] // not every suite uses every verb
impl AdminClient {
    /// A new token of every tenant (`tenant` `None`) or of one tenant.
    pub async fn new(app: &TestApp, name: &str, tenant: Option<&str>) -> AdminClient {
        let made = admin::tokens::create(
            &app.store,
            &oauth::OsRandom::new(),
            name,
            tenant,
            app.clock_now(),
        )
        .await
        .unwrap();
        AdminClient {
            http: app.http.clone(),
            base: app.admin_url.clone(),
            token: secrecy::ExposeSecret::expose_secret(&made.token).to_owned(),
        }
    }

    /// The same listener with another `Authorization` value (or none).
    pub fn with_token(&self, token: &str) -> AdminClient {
        AdminClient {
            http: self.http.clone(),
            base: self.base.clone(),
            token: token.to_owned(),
        }
    }

    pub async fn get(&self, path: &str) -> Reply {
        self.send(Method::GET, path, None, None).await
    }

    pub async fn post(&self, path: &str, body: Value) -> Reply {
        self.send(Method::POST, path, Some(body), None).await
    }

    pub async fn patch(&self, path: &str, body: Value, if_match: Option<&str>) -> Reply {
        self.send(Method::PATCH, path, Some(body), if_match).await
    }

    pub async fn put(&self, path: &str, body: Option<Value>) -> Reply {
        self.send(Method::PUT, path, body, None).await
    }

    pub async fn delete(&self, path: &str) -> Reply {
        self.send(Method::DELETE, path, None, None).await
    }

    /// `path` is under `/admin/v1`.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
        if_match: Option<&str>,
    ) -> Reply {
        let mut request = self
            .http
            .request(method, format!("{}/admin/v1{path}", self.base));
        if !self.token.is_empty() {
            request = request.bearer_auth(&self.token);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        if let Some(tag) = if_match {
            request = request.header("If-Match", tag);
        }
        let response = request.send().await.unwrap();
        let status = response.status();
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .map(|v| v.to_str().unwrap().to_owned())
        };
        let etag = header("etag");
        let content_type = header("content-type");
        let text = response.text().await.unwrap();
        let body = match text.is_empty() {
            true => Value::Null,
            false => serde_json::from_str(&text)
                .unwrap_or_else(|_| panic!("{status}: not JSON: {text:?}")),
        };
        Reply {
            status,
            etag,
            content_type,
            body,
        }
    }
}
