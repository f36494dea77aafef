//! The planner's statistics during a soak on a PostgreSQL whose autovacuum is off, as on the
//! bench's own machines. Every sign-in of the soak adds a grant, a code and an authorization
//! request, so the tables grow a hundredfold within minutes; with the statistics of the
//! nearly empty tables the soak began with, PostgreSQL plans the refresh's check of its grant
//! as a read of every grant of the client, and the soak fell behind from its second minute
//! (docs/performance.md). In production autovacuum keeps the statistics: it analyzes a table
//! once `autovacuum_analyze_threshold` + `autovacuum_analyze_scale_factor` × its rows were
//! changed, looking every `autovacuum_naptime`. The bench applies that same rule, with the
//! server's own settings, while autovacuum is off.

use std::time::Duration;

use anyhow::{Context, Result};
use sqlx::{Connection, PgConnection};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// The bench's tables whose changes since their last `ANALYZE` pass autovacuum's threshold.
const DUE: &str = "SELECT s.relname::TEXT FROM pg_stat_user_tables s \
     JOIN pg_class c ON c.oid = s.relid \
     WHERE s.schemaname = current_schema() \
       AND s.n_mod_since_analyze > current_setting('autovacuum_analyze_threshold')::FLOAT8 \
         + current_setting('autovacuum_analyze_scale_factor')::FLOAT8 * GREATEST(c.reltuples, 0) \
     ORDER BY s.relname";

/// Autovacuum's `ANALYZE`, run by the bench while the soak runs.
pub struct StandIn {
    stop: watch::Sender<bool>,
    task: JoinHandle<Result<u64>>,
}

impl StandIn {
    /// Starts the stand-in if the database's autovacuum is off; `None` when it is on.
    pub async fn start_if_off(url: &str, label: &str) -> Result<Option<StandIn>> {
        let mut connection = PgConnection::connect(url)
            .await
            .context("connect to PostgreSQL for its statistics")?;
        let autovacuum: String = sqlx::query_scalar("SELECT current_setting('autovacuum')")
            .fetch_one(&mut connection)
            .await
            .context("read autovacuum")?;
        if autovacuum == "on" {
            connection.close().await.ok();
            return Ok(None);
        }
        let naptime: f64 = sqlx::query_scalar(
            "SELECT EXTRACT(EPOCH FROM current_setting('autovacuum_naptime')::INTERVAL)::FLOAT8",
        )
        .fetch_one(&mut connection)
        .await
        .context("read autovacuum_naptime")?;
        let naptime = Duration::from_secs_f64(naptime.max(1.0));
        eprintln!(
            "{label}: autovacuum is off on this PostgreSQL: the bench analyzes the tables as \
             it would, looking every {} s",
            naptime.as_secs()
        );
        let (stop, stopped) = watch::channel(false);
        let task = tokio::spawn(analyze_when_due(connection, naptime, stopped));
        Ok(Some(StandIn { stop, task }))
    }

    /// Stops it: how many tables it analyzed.
    pub async fn stop(self) -> Result<u64> {
        let _ = self.stop.send(true);
        self.task.await.context("the statistics task failed")?
    }
}

async fn analyze_when_due(
    mut connection: PgConnection,
    naptime: Duration,
    mut stopped: watch::Receiver<bool>,
) -> Result<u64> {
    let mut ticks = tokio::time::interval(naptime);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut analyzed = 0;
    loop {
        tokio::select! {
            _ = ticks.tick() => {}
            _ = stopped.changed() => break,
        }
        let due: Vec<String> = sqlx::query_scalar(DUE)
            .fetch_all(&mut connection)
            .await
            .context("the tables due for ANALYZE")?;
        for table in due {
            // The names come from the catalog; quoted all the same.
            let statement = format!("ANALYZE \"{}\"", table.replace('"', "\"\""));
            sqlx::query(&statement)
                .execute(&mut connection)
                .await
                .with_context(|| format!("ANALYZE {table}"))?;
            analyzed += 1;
        }
    }
    connection.close().await.ok();
    Ok(analyzed)
}
