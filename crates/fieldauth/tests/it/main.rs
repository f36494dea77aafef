//! End-to-end tests: the real binary and the real server on random loopback ports, on
//! SQLite and on PostgreSQL. One test binary, so it links once.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod helpers;

mod account;
mod account_browser;
mod admin_api;
mod admin_tokens;
mod api;
mod api_access;
mod api_areas;
mod api_cache;
mod api_plain;
mod api_support;
mod audit;
mod authorize;
mod backchannel;
mod backup;
mod bad_input;
mod browser;
mod browser_flow;
mod cleanup;
mod cli;
mod consent;
mod cors;
mod cors_browser;
mod db_proxy;
mod demo;
mod demo_app;
mod discovery;
mod dpop;
mod faults;
mod flow;
mod kek;
mod keys;
mod limits;
mod logout;
mod metrics;
mod node_support;
mod nodes;
mod otp;
mod passkey_support;
mod passkeys;
mod password_policy;
mod recovery;
mod refresh;
mod refresh_retry;
mod revoke;
#[cfg(target_os = "linux")]
mod scheduling;
mod second_factor;
mod shards;
mod signin;
mod slow_clients;
mod startup;
mod token;
mod totp;
mod trusted_proxies;
mod userinfo;
