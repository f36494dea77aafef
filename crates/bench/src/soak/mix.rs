//! The soak's mix: the kinds of step, the pattern each connection repeats, and a connection
//! that can take any step.

use std::sync::Arc;

use anyhow::{anyhow, bail, Context, Result};
use reqwest::{Client, StatusCode};
use serde::Serialize;
use serde_json::{json, Value};

use crate::connection::check_jobs_page;
use crate::flows::{self, expect_status, Target};
use crate::provision::JOBS_QUERY;

/// One step of the mix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// A whole sign-in: authorize with `prompt=login`, the password, the consent, the code
    /// exchange (four requests, Argon2id once).
    SignIn,
    /// A code minted with the connection's browser session (authorize, consent), then
    /// exchanged (three requests).
    Exchange,
    Refresh,
    Userinfo,
    /// The jobs page; cached by the API until a write changes the organization's data.
    ApiQuery,
    /// `updateWorkOrderStatus`: a write that changes a row, and so the organization's data
    /// version, without adding one.
    ApiWrite,
}

impl Kind {
    pub const ALL: [Kind; 6] = [
        Kind::SignIn,
        Kind::Exchange,
        Kind::Refresh,
        Kind::Userinfo,
        Kind::ApiQuery,
        Kind::ApiWrite,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::SignIn => "sign-in",
            Kind::Exchange => "exchange",
            Kind::Refresh => "refresh",
            Kind::Userinfo => "userinfo",
            Kind::ApiQuery => "api-query",
            Kind::ApiWrite => "api-write",
        }
    }

    /// HTTP requests the step sends.
    pub fn requests(self) -> u64 {
        match self {
            Kind::SignIn => 4,
            Kind::Exchange => 3,
            _ => 1,
        }
    }
}

/// A connection's steps, repeated: of 20, one sign-in, 3 exchanges, 6 refreshes, 4 userinfo,
/// 4 API queries and 2 API writes. Each connection starts at another place in it, so the
/// sign-ins are spread out.
const PATTERN: [Kind; 20] = {
    use Kind::*;
    [
        Refresh, ApiQuery, Userinfo, Exchange, Refresh, ApiQuery, ApiWrite, Refresh, Userinfo,
        SignIn, Refresh, ApiQuery, Exchange, Userinfo, Refresh, ApiQuery, ApiWrite, Refresh,
        Userinfo, Exchange,
    ]
};

/// Scopes of the soak's grants: the sign-in app's and the API's.
const SOAK_SCOPE: &str = "openid profile email offline_access jobs workOrders employees customers";

/// What the soak shares: where, as whom, and the work orders the writes change.
pub struct Mix {
    pub target: Arc<Target>,
    pub work_orders: Arc<Vec<String>>,
}

/// One connection of the mix: a browser (its session mints codes), a client app, its
/// refresh-token chain and latest access token.
pub struct MixedConnection {
    browser: Client,
    app: Client,
    target: Arc<Target>,
    username: String,
    refresh_token: String,
    access_token: String,
    work_orders: Arc<Vec<String>>,
    index: usize,
    step: usize,
    writes: usize,
}

impl MixedConnection {
    /// Signs the `index`-th user in (not counted), for a session and a first chain.
    pub async fn open(mix: &Mix, index: usize) -> Result<MixedConnection> {
        let target = mix.target.clone();
        let username = target
            .usernames
            .get(index % target.usernames.len().max(1))
            .cloned()
            .ok_or_else(|| anyhow!("no bench user"))?;
        let mut connection = MixedConnection {
            browser: flows::browser()?,
            app: flows::app_client()?,
            target,
            username,
            refresh_token: String::new(),
            access_token: String::new(),
            work_orders: mix.work_orders.clone(),
            index,
            step: (index * 7) % PATTERN.len(),
            writes: 0,
        };
        connection.sign_in().await?;
        Ok(connection)
    }

    pub fn next_kind(&mut self) -> Kind {
        let kind = PATTERN[self.step % PATTERN.len()];
        self.step += 1;
        kind
    }

    async fn sign_in(&mut self) -> Result<()> {
        let tokens = flows::login(&self.browser, &self.target, &self.username, SOAK_SCOPE).await?;
        self.access_token = tokens.access_token.clone();
        self.refresh_token = flows::signed_with_successor(tokens, "sign-in")?;
        Ok(())
    }

    pub async fn run(&mut self, kind: Kind) -> Result<()> {
        match kind {
            Kind::SignIn => self.sign_in().await,
            Kind::Exchange => {
                let code = flows::mint(&self.browser, &self.target, SOAK_SCOPE).await?;
                let tokens = flows::exchange(&self.app, &self.target, &code).await?;
                flows::signed_with_successor(tokens, "code exchange").map(drop)
            }
            Kind::Refresh => {
                let tokens = flows::refresh(&self.app, &self.target, &self.refresh_token).await?;
                let access_token = tokens.access_token.clone();
                self.refresh_token = flows::signed_with_successor(tokens, "refresh")?;
                self.access_token = access_token;
                Ok(())
            }
            Kind::Userinfo => {
                let url = format!("{}/oauth/userinfo", self.target.issuer);
                let response = self
                    .app
                    .get(url)
                    .bearer_auth(&self.access_token)
                    .send()
                    .await;
                let response = expect_status(response?, StatusCode::OK, "userinfo").await?;
                response.bytes().await.context("userinfo")?;
                Ok(())
            }
            Kind::ApiQuery => {
                let body = self.graphql(json!({ "query": JOBS_QUERY }), "api").await?;
                check_jobs_page(&body)
            }
            Kind::ApiWrite => {
                self.writes += 1;
                let id = self
                    .work_orders
                    .get((self.index + self.writes) % self.work_orders.len().max(1))
                    .cloned()
                    .ok_or_else(|| anyhow!("api write: no work order"))?;
                // Back and forth between two statuses that are not final.
                let status = match self.writes % 2 {
                    0 => "IN_PROGRESS",
                    _ => "ON_HOLD",
                };
                let body = json!({
                    "query": "mutation($input: UpdateWorkOrderStatusInput!) { \
                              updateWorkOrderStatus(input: $input) { id status } }",
                    "variables": { "input": { "id": id, "status": status } },
                });
                let body = self.graphql(body, "api write").await?;
                let body: Value = serde_json::from_slice(&body).context("api write: not JSON")?;
                if let Some(errors) = body.get("errors") {
                    bail!("api write: {errors}");
                }
                if body["data"]["updateWorkOrderStatus"]["status"] != status {
                    bail!("api write: the status did not change: {body}");
                }
                Ok(())
            }
        }
    }

    async fn graphql(&self, body: Value, step: &str) -> Result<Vec<u8>> {
        let response = self
            .app
            .post(format!("{}/api", self.target.api_url))
            .bearer_auth(&self.access_token)
            .json(&body)
            .send()
            .await;
        let response = expect_status(response?, StatusCode::OK, step).await?;
        Ok(response.bytes().await.context("api")?.to_vec())
    }

    /// After a failure the refresh chain may be broken: a new sign-in starts another.
    pub async fn recover(&mut self) -> Result<()> {
        self.sign_in().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pattern_mixes_every_kind_in_its_proportion() {
        let count = |kind| PATTERN.iter().filter(|k| **k == kind).count();
        assert_eq!(
            Kind::ALL.map(count),
            [1, 3, 6, 4, 4, 2],
            "sign-in, exchange, refresh, userinfo, api-query, api-write"
        );
    }
}
