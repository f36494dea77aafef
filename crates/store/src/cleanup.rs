//! Expiry clean-up: deletes what can no longer be used, in every database of the store, one
//! table at a time and in bounded batches, so no pass holds a lock for long or opens a big
//! transaction. Deletes are idempotent, so nodes may run passes at once; on PostgreSQL an
//! advisory lock lets one node clean each database per tick and the others skip it.
//!
//! What "can no longer be used" means is the caller's policy ([`Retention`]); the store only
//! applies it. A table is cleaned by one line of [`RULES`].

use std::time::Duration;

use sqlx::any::AnyArguments;
use sqlx::query::{Query, QueryScalar};
use sqlx::Any;

use crate::db::{Backend, Database, Store};
use crate::error::StoreError;
use crate::pool::{Pool, PooledConnection};
use crate::UnixTime;

/// Rows per delete: small enough that the writers waiting behind one on SQLite wait a few
/// milliseconds (a logged soak's pass deleted 21,341 rows in batches of 1,000, and freed
/// their pages, in about 0.6 s on a 2-vCPU host: under 30 ms a batch).
pub const CLEANUP_BATCH_ROWS: i64 = 250;

/// Free SQLite pages returned to the file system per step of `incremental_vacuum` (1 MiB of
/// 4 KiB pages), each step a short write of its own.
const VACUUM_STEP_PAGES: i64 = 256;

/// A pass beside requests ([`Store::clean_up_beside_requests`]) pauses after each of its
/// statements for this many times the statement's own duration, so that it holds the
/// database (and, on SQLite, the server's CPU) a tenth of the time at most. Unpaced, a pass
/// that deleted 55,000 rows held them for 4 to 7 s at once, and a server running at 80% of
/// its capacity took a minute to catch up: p99 0.9 to 2.3 s in those minutes of a soak.
/// Paced to a quarter of the time (a factor of 3), such a pass still asked more than the 20%
/// such a server has spare, and the minute's p99 tripled (docs/performance.md). A pass of
/// 60,000 rows now takes about 20 s of the 300 between passes.
pub const CLEANUP_PAUSE_FACTOR: u32 = 9;

/// The advisory lock a PostgreSQL clean-up pass holds: the first key is a constant no other
/// lock uses (the bytes spell "fldc"), the second the schema's name hashed, because advisory
/// locks are per database while a deployment's tables are per schema (`search_path`): two
/// deployments (or test runs) in one database each clean their own schema.
const CLEANUP_LOCK: i32 = 0x666c_6463;
const TRY_CLEANUP_LOCK: &str = "SELECT pg_try_advisory_lock($1, hashtext(current_schema()))";
const CLEANUP_UNLOCK: &str = "SELECT pg_advisory_unlock($1, hashtext(current_schema()))";

/// How long each kind of record is kept, in seconds, as of `now`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retention {
    pub now: UnixTime,
    /// A used authorization code presented again still revokes its grant this long after
    /// the code's expiry, so the code is kept until then.
    pub code_replay_window: i64,
    /// The access-token lifetime. A refresh token is kept this long past its expiry, and a
    /// grant without refresh tokens is kept this long past its creation, so that a grant
    /// outlives every access token it issued (docs/decisions.md, clean-up of grants).
    pub access_token_lifetime: i64,
    /// A sign-in failure count older than this has started over.
    pub signin_window: i64,
    /// An anonymous authorization-request quota's window.
    pub request_quota_window: i64,
    /// A password-recovery quota's window.
    pub recovery_quota_window: i64,
    /// Audit events older than this go.
    pub audit_retention: i64,
}

/// One table's clean-up: rows of `table` matching `condition`, where `$1` is the cutoff that
/// `cutoff` computes, deleted by `key` (the table's primary key).
struct Rule {
    table: &'static str,
    key: &'static str,
    condition: &'static str,
    cutoff: fn(&Retention) -> UnixTime,
    /// How the rows are found: by the condition's own index, or by a walk over an indexed
    /// time column when the condition keeps rows the index cannot skip.
    find: Find,
}

enum Find {
    /// The condition is an index range: a batch reads no more than it deletes.
    Indexed,
    /// Rows with `column <= cutoff` are visited a batch at a time, and those of a batch
    /// that also match `condition` (no `$1`) deleted. A grant whose refresh tokens still
    /// live stays for 30 days past the cutoff; found through the condition, each pass's
    /// last batch would read every such grant in one statement, holding SQLite's write lock
    /// for all of them.
    Walk { column: &'static str },
}

/// Every table that holds records that expire, in the order of a pass: refresh tokens before
/// the grants that can only go once their tokens have. The columns in the conditions and the
/// walks are indexed (migrations 0005, 0007, 0008, 0011, 0016, 0018), so a batch reads no
/// more than it deletes, or than a batch of the walk.
#[rustfmt::skip]
const RULES: &[Rule] = &[
    Rule { table: "authorization_requests", key: "tenant_id, request_hash", condition: "expires_at <= $1", cutoff: |r| r.now, find: Find::Indexed },
    Rule { table: "password_links", key: "tenant_id, user_id", condition: "expires_at <= $1", cutoff: |r| r.now, find: Find::Indexed },
    Rule { table: "webauthn_ceremonies", key: "tenant_id, ceremony_hash", condition: "expires_at <= $1", cutoff: |r| r.now, find: Find::Indexed },
    Rule { table: "browser_sessions", key: "tenant_id, session_hash", condition: "expires_at <= $1", cutoff: |r| r.now, find: Find::Indexed },
    Rule { table: "authorization_codes", key: "tenant_id, code_hash", condition: "expires_at <= $1", cutoff: |r| r.now - r.code_replay_window, find: Find::Indexed },
    Rule { table: "refresh_tokens", key: "tenant_id, token_hash", condition: "expires_at <= $1", cutoff: |r| r.now - r.access_token_lifetime, find: Find::Indexed },
    Rule { table: "grants", key: "tenant_id, grant_id", condition: "NOT EXISTS (SELECT 1 FROM refresh_tokens t WHERE t.tenant_id = grants.tenant_id AND t.grant_id = grants.grant_id)", cutoff: |r| r.now - r.access_token_lifetime, find: Find::Walk { column: "created_at" } },
    Rule { table: "signin_failures", key: "tenant_id, kind, subject", condition: "last_attempt_at < $1", cutoff: |r| r.now - r.signin_window, find: Find::Indexed },
    Rule { table: "authorization_request_quotas", key: "tenant_id, address", condition: "window_started_at <= $1", cutoff: |r| r.now - r.request_quota_window, find: Find::Indexed },
    Rule { table: "recovery_quotas", key: "tenant_id, kind, subject", condition: "window_started_at <= $1", cutoff: |r| r.now - r.recovery_quota_window, find: Find::Indexed },
    Rule { table: "dpop_proofs", key: "tenant_id, proof_hash", condition: "expires_at <= $1", cutoff: |r| r.now, find: Find::Indexed },
    Rule { table: "audit_events", key: "seq", condition: "occurred_at < $1", cutoff: |r| r.now - r.audit_retention, find: Find::Indexed },
];

/// What one pass did, summed over the databases.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CleanupReport {
    /// How long its deletes and vacuum steps ran, waits for the turn to write left out.
    pub busy: Duration,
    /// How long it paused between them to leave the database to requests.
    pub paused: Duration,
    /// Rows deleted per table, every table of the pass in its order (zeros included).
    pub deleted: Vec<(&'static str, u64)>,
    /// Databases another node was cleaning (PostgreSQL): left to it this time.
    pub skipped: Vec<String>,
    /// SQLite pages given back to the file system after the deletes.
    pub pages_released: u64,
}

impl CleanupReport {
    /// Rows deleted in all tables.
    pub fn total(&self) -> u64 {
        self.deleted.iter().map(|(_, n)| n).sum()
    }
}

impl Store {
    /// One clean-up pass over every database of the store (the default one and each shard).
    pub async fn clean_up(&self, retention: &Retention) -> Result<CleanupReport, StoreError> {
        self.clean_up_in_batches(retention, CLEANUP_BATCH_ROWS)
            .await
    }

    /// [`Store::clean_up`] paced for a server that answers requests meanwhile: after each
    /// statement it pauses for [`CLEANUP_PAUSE_FACTOR`] times the statement's duration.
    pub async fn clean_up_beside_requests(
        &self,
        retention: &Retention,
    ) -> Result<CleanupReport, StoreError> {
        self.pass(retention, CLEANUP_BATCH_ROWS, CLEANUP_PAUSE_FACTOR)
            .await
    }

    /// [`Store::clean_up`] with deletes of at most `batch` rows.
    pub async fn clean_up_in_batches(
        &self,
        retention: &Retention,
        batch: i64,
    ) -> Result<CleanupReport, StoreError> {
        self.pass(retention, batch, 0).await
    }

    /// A pass in batches of `batch` rows, pausing `pause_factor` times each statement's
    /// duration after it.
    async fn pass(
        &self,
        retention: &Retention,
        batch: i64,
        pause_factor: u32,
    ) -> Result<CleanupReport, StoreError> {
        let mut pace = Pace::new(pause_factor);
        let mut report = CleanupReport {
            deleted: RULES.iter().map(|rule| (rule.table, 0)).collect(),
            ..CleanupReport::default()
        };
        for database in self.databases() {
            let mut lane = match database.backend() {
                Backend::Postgres => {
                    // A connection that fails mid-pass is closed, not pooled with the lock held:
                    // it is settled only after the unlock.
                    let mut conn = database.pool().acquire().await?;
                    self.count_statement();
                    let locked: bool = sqlx::query_scalar(TRY_CLEANUP_LOCK)
                        .bind(CLEANUP_LOCK)
                        .fetch_one(&mut *conn)
                        .await?;
                    if !locked {
                        // Another node's pass holds the lock; this connection holds nothing.
                        conn.settle();
                        report.skipped.push(database.name().to_owned());
                        continue;
                    }
                    Lane::Locked(conn)
                }
                Backend::Sqlite => Lane::Pooled(database.pool().clone()),
            };
            let mut deleted_here = 0;
            for (rule, (_, count)) in RULES.iter().zip(report.deleted.iter_mut()) {
                let n = self
                    .delete_expired(database, &mut lane, rule, retention, batch, &mut pace)
                    .await?;
                *count += n;
                deleted_here += n;
            }
            match lane {
                Lane::Locked(mut conn) => {
                    self.count_statement();
                    sqlx::query(CLEANUP_UNLOCK)
                        .bind(CLEANUP_LOCK)
                        .execute(&mut *conn)
                        .await?;
                    conn.settle();
                }
                Lane::Pooled(_) if deleted_here > 0 => {
                    report.pages_released += self
                        .release_free_pages(database, &mut lane, &mut pace)
                        .await?;
                }
                Lane::Pooled(_) => {}
            }
        }
        (report.busy, report.paused) = (pace.busy, pace.paused);
        Ok(report)
    }

    /// Deletes a table's expired rows, `batch` at a time, until a batch finds fewer.
    async fn delete_expired(
        &self,
        database: &Database,
        lane: &mut Lane,
        rule: &Rule,
        retention: &Retention,
        batch: i64,
        pace: &mut Pace,
    ) -> Result<u64, StoreError> {
        let Rule {
            table,
            key,
            condition,
            cutoff,
            find,
        } = rule;
        if let Find::Walk { column } = find {
            let walk = Walk {
                table,
                column,
                condition,
                cutoff: cutoff(retention),
            };
            return self
                .delete_walking(database, lane, &walk, batch, pace)
                .await;
        }
        // One shape on both engines: the keys of one batch, then the delete of those keys.
        let statement = format!(
            "DELETE FROM {table} WHERE ({key}) IN \
             (SELECT {key} FROM {table} WHERE {condition} LIMIT $2)"
        );
        let cutoff = cutoff(retention);
        let mut total = 0;
        loop {
            let query = sqlx::query(&statement).bind(cutoff).bind(batch);
            let deleted = self.write_step(database, lane, query, pace).await?;
            total += deleted;
            if deleted < u64::try_from(batch).unwrap_or(0) {
                return Ok(total);
            }
        }
    }

    /// [`Find::Walk`]: from the oldest row on, reads where the next `batch` rows end (the
    /// walk's column is an integer time, so the rows sharing that last value come with
    /// them), deletes those of the range that match the condition, and goes on past it
    /// until the cutoff. Every statement reads one range of the index, a batch long.
    async fn delete_walking(
        &self,
        database: &Database,
        lane: &mut Lane,
        walk: &Walk<'_>,
        batch: i64,
        pace: &mut Pace,
    ) -> Result<u64, StoreError> {
        let Walk {
            table,
            column,
            condition,
            cutoff,
        } = *walk;
        let range_end = format!(
            "SELECT {column} FROM {table} WHERE {column} >= $1 AND {column} <= $2 \
             ORDER BY {column} LIMIT 1 OFFSET $3"
        );
        let delete =
            format!("DELETE FROM {table} WHERE {column} >= $1 AND {column} <= $2 AND {condition}");
        let mut from = i64::MIN;
        let mut total = 0;
        loop {
            // A read: it needs no turn to write, and SQLite's readers do not wait for writers.
            self.count_statement();
            let started = std::time::Instant::now();
            let end = lane
                .optional_number(
                    sqlx::query_scalar(&range_end)
                        .bind(from)
                        .bind(cutoff)
                        .bind(batch.max(1) - 1),
                )
                .await?;
            pace.ran(started.elapsed());
            // Fewer than a batch left: the last range reaches the cutoff.
            let to = end.unwrap_or(cutoff);
            let query = sqlx::query(&delete).bind(from).bind(to);
            total += self.write_step(database, lane, query, pace).await?;
            if to >= cutoff {
                return Ok(total);
            }
            from = to + 1;
        }
    }

    /// SQLite: gives the free pages back to the file system in short steps. Only a file in
    /// `auto_vacuum = INCREMENTAL` mode (every file created since migration 0008) has any to
    /// give; in an older file the free pages stay inside it and new rows reuse them, so it
    /// still does not grow past what its live rows once needed (docs/deployment.md).
    async fn release_free_pages(
        &self,
        database: &Database,
        lane: &mut Lane,
        pace: &mut Pace,
    ) -> Result<u64, StoreError> {
        self.count_statement();
        let mode = lane
            .number(sqlx::query_scalar("PRAGMA auto_vacuum"))
            .await?;
        // 2 is INCREMENTAL.
        if mode != 2 {
            return Ok(0);
        }
        let mut released = 0;
        loop {
            let before = self.free_pages(lane).await?;
            if before == 0 {
                return Ok(released);
            }
            let step = format!("PRAGMA incremental_vacuum({VACUUM_STEP_PAGES})");
            self.write_step(database, lane, sqlx::query(&step), pace)
                .await?;
            let after = self.free_pages(lane).await?;
            if after >= before {
                // Nothing moved (another connection holds the pages): next pass.
                return Ok(released);
            }
            released += before - after;
        }
    }

    /// One write of the pass, then the pause it owes. On SQLite it waits for the process's
    /// turn to write, as a request does, and the writers that came meanwhile go before the
    /// next (the turn is a fair lock: they queued while this ran, its statement being off
    /// this thread). The rows it changed.
    async fn write_step<'q>(
        &self,
        database: &Database,
        lane: &mut Lane,
        query: Query<'q, Any, AnyArguments<'q>>,
        pace: &mut Pace,
    ) -> Result<u64, StoreError> {
        let changed = {
            let _turn = match database.writer() {
                Some(turn) => Some(turn.lock_owned().await),
                None => None,
            };
            self.count_statement();
            let started = std::time::Instant::now();
            let changed = lane.execute(query).await?;
            pace.ran(started.elapsed());
            changed
        };
        pace.pause().await;
        Ok(changed)
    }

    async fn free_pages(&self, lane: &mut Lane) -> Result<u64, StoreError> {
        self.count_statement();
        let free = lane
            .number(sqlx::query_scalar("PRAGMA freelist_count"))
            .await?;
        Ok(u64::try_from(free).unwrap_or(0))
    }
}

/// A [`Find::Walk`] rule, with its cutoff.
#[derive(Clone, Copy)]
struct Walk<'a> {
    table: &'a str,
    column: &'a str,
    condition: &'a str,
    cutoff: UnixTime,
}

/// A pass's share of the database: what its statements took, and the pause each owes.
struct Pace {
    pause_factor: u32,
    busy: Duration,
    paused: Duration,
    owed: Duration,
}

impl Pace {
    fn new(pause_factor: u32) -> Pace {
        Pace {
            pause_factor,
            busy: Duration::ZERO,
            paused: Duration::ZERO,
            owed: Duration::ZERO,
        }
    }

    /// A statement of the pass ran this long.
    fn ran(&mut self, took: Duration) {
        self.busy += took;
        self.owed += took.saturating_mul(self.pause_factor);
    }

    /// Pauses for what the statements since the last pause owe, after the turn to write is
    /// let go (so requests get it meanwhile).
    async fn pause(&mut self) {
        let owed = std::mem::take(&mut self.owed);
        if owed.is_zero() {
            return;
        }
        let started = std::time::Instant::now();
        tokio::time::sleep(owed).await;
        self.paused += started.elapsed();
    }
}

/// Where a pass's statements run.
enum Lane {
    /// PostgreSQL: the connection that holds the pass's advisory lock.
    Locked(PooledConnection),
    /// SQLite: a pooled connection per statement, taken after the turn to write as every
    /// writer takes them. Held across the turn's waits, one connection would deadlock a
    /// pool of one (a writer holding the turn would wait for it). The deletes and vacuum
    /// steps run on the blocking pool: inline, a batch held every request on its worker
    /// thread for its whole length, and the pass took the turn again before any of them
    /// could queue for it (a logged soak: 21,341 rows in 0.6 s, requests held 485 ms).
    Pooled(Pool),
}

impl Lane {
    /// Runs a statement; the rows it changed.
    async fn execute<'q>(
        &mut self,
        query: Query<'q, Any, AnyArguments<'q>>,
    ) -> Result<u64, StoreError> {
        Ok(match self {
            Lane::Locked(conn) => query.execute(&mut **conn).await?.rows_affected(),
            Lane::Pooled(pool) => pool.execute_off_worker(query).await?,
        })
    }

    /// A statement's one number, if it returned a row.
    async fn optional_number<'q>(
        &mut self,
        query: QueryScalar<'q, Any, i64, AnyArguments<'q>>,
    ) -> Result<Option<i64>, StoreError> {
        Ok(match self {
            Lane::Locked(conn) => query.fetch_optional(&mut **conn).await?,
            Lane::Pooled(pool) => query.fetch_optional(&*pool).await?,
        })
    }

    /// A statement's one number (a pragma's answer).
    async fn number<'q>(
        &mut self,
        query: QueryScalar<'q, Any, i64, AnyArguments<'q>>,
    ) -> Result<i64, StoreError> {
        Ok(match self {
            Lane::Locked(conn) => query.fetch_one(&mut **conn).await?,
            Lane::Pooled(pool) => query.fetch_one(&*pool).await?,
        })
    }
}
