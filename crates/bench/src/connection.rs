//! One connection of a workload: its own HTTP client and user, the request (or flow) it
//! repeats, and where its refresh tokens and codes come from.

use std::collections::VecDeque;
use std::sync::Arc;

use anyhow::{anyhow, bail, Context, Result};
use reqwest::{Client, StatusCode};
use serde_json::Value;

use crate::flows::{self, expect_status, Code, Target, Tokens};
use crate::node_oidc::Seeder;
use crate::provision::{JOBS, JOBS_QUERY};
use crate::workloads::{Shared, Workload, LOGIN_SCOPE};

/// One connection's client and what it repeats.
pub enum Connection {
    Login {
        browser: Client,
        target: Arc<Target>,
        username: String,
    },
    Refresh {
        client: Client,
        target: Arc<Target>,
        seeds: Seeds,
        refresh_token: String,
    },
    Exchange {
        /// Where the codes come from.
        seeds: Seeds,
        /// The client app redeeming them.
        client: Client,
        target: Arc<Target>,
        /// Oldest first, each with its PKCE verifier.
        codes: VecDeque<Code>,
        minted: usize,
    },
    Userinfo {
        client: Client,
        url: String,
        token: Arc<str>,
    },
    Api {
        client: Client,
        url: String,
        token: Arc<str>,
        body: Arc<Vec<u8>>,
        /// For `api-uncached`: the connection's index and its requests so far, which make
        /// each query new.
        uncached: Option<(usize, u64)>,
    },
}

impl Connection {
    /// The `index`-th connection; sign-ins use the `index`-th user.
    pub async fn open(workload: Workload, shared: &Shared, index: usize) -> Result<Connection> {
        let target = shared.target.clone();
        let username = target
            .usernames
            .get(index % target.usernames.len().max(1))
            .cloned()
            .ok_or_else(|| anyhow!("no bench user"))?;
        let seeds = || -> Result<Seeds> {
            Ok(match &shared.seeder {
                Some(seeder) => Seeds::Endpoint {
                    seeder: seeder.clone(),
                    account: username.clone(),
                },
                None => Seeds::SignIn {
                    browser: flows::browser()?,
                    username: username.clone(),
                },
            })
        };
        Ok(match workload {
            Workload::Login => Connection::Login {
                browser: flows::browser()?,
                target,
                username,
            },
            Workload::Refresh => {
                let seeds = seeds()?;
                Connection::Refresh {
                    refresh_token: seeds.refresh_token(&target).await?,
                    client: flows::app_client()?,
                    target,
                    seeds,
                }
            }
            Workload::Exchange => {
                let seeds = seeds()?;
                seeds.prepare_codes(&target).await?;
                Connection::Exchange {
                    seeds,
                    client: flows::app_client()?,
                    target,
                    codes: VecDeque::new(),
                    minted: 0,
                }
            }
            Workload::Userinfo => Connection::Userinfo {
                client: flows::app_client()?,
                url: format!("{}/oauth/userinfo", target.issuer),
                token: shared
                    .userinfo_token
                    .clone()
                    .ok_or_else(|| anyhow!("userinfo: no access token for this server"))?,
            },
            Workload::Api | Workload::ApiUncached => Connection::Api {
                client: flows::app_client()?,
                url: format!("{}/api", target.api_url),
                token: shared
                    .api_token
                    .clone()
                    .ok_or_else(|| anyhow!("api: no access token for this server"))?,
                body: Arc::new(serde_json::to_vec(
                    &serde_json::json!({ "query": JOBS_QUERY }),
                )?),
                uncached: (workload == Workload::ApiUncached).then_some((index, 0)),
            },
        })
    }

    pub async fn once(&mut self) -> Result<()> {
        match self {
            Connection::Login {
                browser,
                target,
                username,
            } => {
                flows::login(browser, target, username, LOGIN_SCOPE).await?;
            }
            Connection::Refresh {
                client,
                target,
                refresh_token,
                ..
            } => {
                let tokens = flows::refresh(client, target, refresh_token).await?;
                *refresh_token = flows::signed_with_successor(tokens, "refresh")?;
            }
            Connection::Exchange {
                client,
                target,
                codes,
                minted,
                ..
            } => {
                let code = codes.pop_front().ok_or_else(|| {
                    anyhow!(
                        "code exchange: all {minted} codes minted for this connection are spent"
                    )
                })?;
                let tokens = flows::exchange(client, target, &code).await?;
                flows::signed_with_successor(tokens, "code exchange")?;
            }
            Connection::Userinfo { client, url, token } => {
                let response = client.get(url.as_str()).bearer_auth(&**token).send().await;
                let response = expect_status(response?, StatusCode::OK, "userinfo").await?;
                response.bytes().await.context("userinfo")?;
            }
            Connection::Api {
                client,
                url,
                token,
                body,
                uncached,
            } => {
                let body = match uncached {
                    Some((index, sent)) => {
                        *sent += 1;
                        serde_json::to_vec(&serde_json::json!({
                            "query": unique_jobs_query(*index, *sent)
                        }))?
                    }
                    None => body.as_ref().clone(),
                };
                let response = client
                    .post(url.as_str())
                    .bearer_auth(&**token)
                    .header(reqwest::header::CONTENT_TYPE, "application/json")
                    .body(body)
                    .send()
                    .await;
                let response = expect_status(response?, StatusCode::OK, "api").await?;
                check_jobs_page(&response.bytes().await.context("api")?)?;
            }
        }
        Ok(())
    }

    /// Mints up to `count` codes into an exchange connection's pool, fewer if `deadline`
    /// comes first; returns how many. The other connections need none.
    pub async fn mint(&mut self, count: usize, deadline: std::time::Instant) -> Result<usize> {
        let Connection::Exchange {
            seeds,
            target,
            codes,
            minted,
            ..
        } = self
        else {
            return Ok(0);
        };
        let made = seeds.codes(target, count, deadline).await?;
        *minted += made.len();
        let count = made.len();
        codes.extend(made);
        Ok(count)
    }

    /// After a failure: a refresh chain is broken (its token may be spent or its grant
    /// revoked), so it starts a new one; an exchange connection goes on with its next code,
    /// and stops when none is left; the others just go on.
    pub async fn recover(&mut self) -> Result<()> {
        match self {
            Connection::Refresh {
                target,
                seeds,
                refresh_token,
                ..
            } => {
                *refresh_token = seeds.refresh_token(target).await?;
            }
            Connection::Exchange { codes, .. } if codes.is_empty() => {
                bail!("no codes left");
            }
            _ => {}
        }
        Ok(())
    }
}

/// Where a connection gets its refresh tokens and codes, outside the measured requests.
pub enum Seeds {
    /// fieldauth: the connection's user signs in through the server's pages, and mints codes
    /// with the browser's session.
    SignIn { browser: Client, username: String },
    /// A compared server that has no such pages for the bench (node-oidc-provider): its
    /// seeding endpoint makes them with the provider's own models.
    Endpoint { seeder: Seeder, account: String },
}

impl Seeds {
    /// The first refresh token of a new rotation chain, with a grant of its own.
    async fn refresh_token(&self, target: &Target) -> Result<String> {
        match self {
            Seeds::SignIn { browser, username } => {
                // `prompt=login`: a new sign-in, so a new grant, even with a session.
                let Tokens { refresh_token, .. } =
                    flows::login(browser, target, username, LOGIN_SCOPE).await?;
                refresh_token
                    .ok_or_else(|| anyhow!("login with offline_access gave no refresh token"))
            }
            Seeds::Endpoint { seeder, account } => seeder.refresh_token(account).await,
        }
    }

    /// Before minting: the browser's session the codes are minted in.
    async fn prepare_codes(&self, target: &Target) -> Result<()> {
        if let Seeds::SignIn { browser, username } = self {
            flows::login(browser, target, username, LOGIN_SCOPE).await?;
        }
        Ok(())
    }

    /// Up to `count` codes, oldest first, fewer if `deadline` comes first.
    async fn codes(
        &self,
        target: &Target,
        count: usize,
        deadline: std::time::Instant,
    ) -> Result<Vec<Code>> {
        match self {
            Seeds::SignIn { browser, .. } => {
                let mut codes = Vec::new();
                while codes.len() < count && std::time::Instant::now() < deadline {
                    codes.push(flows::mint(browser, target, LOGIN_SCOPE).await?);
                }
                Ok(codes)
            }
            Seeds::Endpoint { seeder, account } => seeder.codes(account, count, deadline).await,
        }
    }
}

/// A GraphQL answer is a success only with no `errors` and the whole page of jobs.
pub fn check_jobs_page(body: &[u8]) -> Result<()> {
    let body: Value = serde_json::from_slice(body).context("api: not JSON")?;
    if let Some(errors) = body.get("errors") {
        bail!("api: {errors}");
    }
    let nodes = body["data"]["jobs"]["nodes"]
        .as_array()
        .ok_or_else(|| anyhow!("api: no jobs in the answer"))?;
    let assigned = nodes.iter().all(|job| {
        job["workOrder"]["id"].is_string()
            && job["assignments"].as_array().is_some_and(|a| !a.is_empty())
    });
    if nodes.len() != JOBS || !assigned {
        bail!(
            "api: expected {JOBS} jobs with work orders and assignees, got {}",
            nodes.len()
        );
    }
    Ok(())
}

/// The jobs query with one more root field, a `__typename` under an alias no other request
/// uses: the same work for the server, but a query the response cache has never seen.
fn unique_jobs_query(connection: usize, sent: u64) -> String {
    JOBS_QUERY.replacen(
        "query BenchJobs {",
        &format!("query BenchJobs {{ c{connection}r{sent}: __typename"),
        1,
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn each_uncached_query_is_new_and_still_the_jobs_query() {
        let a = unique_jobs_query(0, 1);
        let b = unique_jobs_query(0, 2);
        let c = unique_jobs_query(1, 1);
        assert!(a != b && a != c && b != c && a != JOBS_QUERY);
        assert!(
            a.starts_with("query BenchJobs { c0r1: __typename jobs(first: 20)"),
            "{a}"
        );
        assert!(a.ends_with(&JOBS_QUERY["query BenchJobs {".len()..]));
    }
}
