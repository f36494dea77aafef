//! Group commit for SQLite's token grants: a refresh rotation or code exchange writes inside
//! the transaction the pool's connection has open, if one is, and the transaction commits
//! once for all of them, before the first of their responses goes out.
//!
//! Why: each commit writes every page it changed to the log as a frame of its own (13 for an
//! exchange, 5 for a rotation), checksums them, hands them to the kernel and later copies
//! them into the database file, and takes and gives back SQLite's locks. Grants made one
//! after another change many of the same pages (each table's and time index's last page,
//! the trees' inner pages), so a commit of several writes each such page once. A response
//! needs its two signatures before it can go, and signing takes longer than the write: so
//! the write goes first, the signatures next, and the commit is made when the first of the
//! group's responses is ready ([`Durable::wait`]), by then with the writes of the requests
//! that came meanwhile (docs/performance.md, docs/decisions.md).
//!
//! What holds:
//! - each grant's writes are all in one transaction, all committed or none: a failed write
//!   or commit fails every member, none of which has answered;
//! - nothing is answered before its commit: the token endpoint waits for [`Durable::wait`]
//!   before it sends the tokens, and a read of a member that found nothing (and answers an
//!   error on that) commits the group before it returns;
//! - nothing reads what is not committed: every other use of the connection
//!   ([`Pool::acquire`]) commits the open group first, and so does the log's restart;
//! - writers still take turns: a member holds the turn to write while it reads and writes.
//!
//! The group's connection waits in a slot of its own in the pool, which whoever takes a
//! connection next takes first: a pool of several connections (from 8 cores) groups too.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};

use crate::error::StoreError;
use crate::pool::{Pool, PooledConnection};

/// Writes per transaction at most: each holds its pages in SQLite's page cache until the
/// commit, and the group's first member waits for the commit of all of them.
const MAX_MEMBERS: u32 = 32;

/// A transaction open on the pool's connection with writes waiting for their commit.
#[derive(Debug, Default)]
pub(crate) struct Group {
    outcome: OnceLock<Result<(), String>>,
    members: AtomicU32,
}

impl Group {
    /// Records how the transaction ended, for every member; the first word stands.
    pub(crate) fn settle(&self, outcome: Result<(), String>) {
        let _ = self.outcome.set(outcome);
    }
}

/// Whether a write is committed yet: [`Durable::wait`] before anything that depends on it
/// is answered.
#[must_use = "a grant is not durable until its commit: wait for it before answering"]
#[derive(Debug)]
pub struct Durable(Option<(Arc<Group>, Pool)>);

impl Durable {
    /// A write that is committed already (PostgreSQL's statements, and SQLite's outside a
    /// group).
    pub(crate) fn done() -> Durable {
        Durable(None)
    }

    /// Returns once the write is committed; an error if its transaction was rolled back
    /// (nothing of it is stored then, and nothing of it may be answered).
    pub async fn wait(self) -> Result<(), StoreError> {
        let Some((group, pool)) = self.0 else {
            return Ok(());
        };
        if group.outcome.get().is_none() {
            // Taking the connection commits the open group, ours unless it was ended since.
            let mut conn = pool.acquire().await?;
            conn.settle();
        }
        match group.outcome.get() {
            Some(Ok(())) => Ok(()),
            Some(Err(reason)) => Err(not_committed(reason)),
            // Its transaction went with its connection, closed mid-way: rolled back.
            None => Err(not_committed("its connection was closed")),
        }
    }
}

fn not_committed(reason: &str) -> StoreError {
    StoreError::Unavailable(sqlx::Error::Protocol(format!(
        "the transaction of this write was not committed: {reason}"
    )))
}

/// A refresh rotation or code exchange in the group's transaction: it holds the pool's
/// connection from its read to its write. Dropped before [`GroupWrite::wrote`] or
/// [`GroupWrite::read_nothing`] (an error, or the request gone), its connection is closed,
/// which rolls the transaction back, and every member's [`Durable::wait`] fails.
pub(crate) struct GroupWrite {
    pub(crate) conn: PooledConnection,
    /// `None` when the pool does not group: the write commits at once.
    group: Option<Arc<Group>>,
    pool: Pool,
    ended: bool,
}

impl GroupWrite {
    /// Joins the transaction open on the pool's connection, or begins one (`BEGIN
    /// IMMEDIATE`, the write lock from the start). The caller holds the turn to write.
    pub(crate) async fn join(pool: &Pool) -> Result<GroupWrite, StoreError> {
        let (mut conn, group) = pool.acquire_joining().await?;
        let group = match group {
            Some(group) => Some(group),
            None => {
                sqlx::query("BEGIN IMMEDIATE").execute(&mut *conn).await?;
                pool.groups().then(Arc::default)
            }
        };
        Ok(GroupWrite {
            conn,
            group,
            pool: pool.clone(),
            ended: false,
        })
    }

    /// The read found nothing to write. What it read is committed before the caller answers
    /// on it: the transaction is rolled back if it holds no other member's writes, committed
    /// otherwise.
    pub(crate) async fn read_nothing(mut self) -> Result<(), StoreError> {
        let others = self
            .group
            .as_ref()
            .is_some_and(|group| group.members.load(Ordering::Acquire) > 0);
        if others {
            self.commit().await
        } else {
            sqlx::query("ROLLBACK").execute(&mut *self.conn).await?;
            self.conn.settle();
            self.ended = true;
            Ok(())
        }
    }

    /// The write is in the transaction: it is left open for the writes that come before the
    /// first member's response is ready, unless the group is full or the pool does not
    /// group, when it is committed now.
    pub(crate) async fn wrote(mut self) -> Result<Durable, StoreError> {
        let Some(group) = self.group.clone() else {
            self.commit().await?;
            return Ok(Durable::done());
        };
        if group.members.fetch_add(1, Ordering::AcqRel) + 1 >= MAX_MEMBERS {
            self.commit().await?;
            return Ok(Durable::done());
        }
        self.conn.leave_group_open(Arc::clone(&group));
        self.ended = true;
        Ok(Durable(Some((group, self.pool.clone()))))
    }

    async fn commit(&mut self) -> Result<(), StoreError> {
        let committed = sqlx::query("COMMIT").execute(&mut *self.conn).await;
        self.ended = true;
        match committed {
            Ok(_) => {
                self.conn.settle();
                if let Some(group) = &self.group {
                    group.settle(Ok(()));
                }
                Ok(())
            }
            // The connection is closed (not settled), which rolls back what is left.
            Err(error) => {
                if let Some(group) = &self.group {
                    group.settle(Err(error.to_string()));
                }
                Err(error.into())
            }
        }
    }
}

impl Drop for GroupWrite {
    fn drop(&mut self) {
        if !self.ended {
            if let Some(group) = &self.group {
                group.settle(Err("a write in it failed or was given up".to_owned()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestDatabase;
    use crate::Store;

    /// A store on a new SQLite file with table `t`, and another on the same file: the other
    /// node, whose own connection reads only what is committed.
    async fn two_nodes() -> (TestDatabase, Store, Store) {
        let db = TestDatabase::sqlite();
        let node = Store::connect(&db.url).await.unwrap();
        sqlx::query("CREATE TABLE t (x INTEGER)")
            .execute(node.pool())
            .await
            .unwrap();
        let other = Store::connect(&db.url).await.unwrap();
        assert!(node.pool().groups());
        (db, node, other)
    }

    async fn count(store: &Store) -> i64 {
        sqlx::query_scalar("SELECT COUNT(*) FROM t")
            .fetch_one(store.pool())
            .await
            .unwrap()
    }

    /// A member that inserts `x` and leaves it to the group's commit.
    async fn insert(pool: &Pool, x: i64) -> Durable {
        let mut write = GroupWrite::join(pool).await.unwrap();
        sqlx::query("INSERT INTO t VALUES ($1)")
            .bind(x)
            .execute(&mut *write.conn)
            .await
            .unwrap();
        write.wrote().await.unwrap()
    }

    #[tokio::test]
    async fn writes_of_a_group_commit_together_at_its_first_wait() {
        let (_db, node, other) = two_nodes().await;
        let first = insert(node.pool(), 1).await;
        let second = insert(node.pool(), 2).await;
        assert_eq!(count(&other).await, 0, "nothing is committed before a wait");
        first.wait().await.unwrap();
        assert_eq!(count(&other).await, 2, "the first wait commits both");
        second.wait().await.unwrap();
    }

    #[tokio::test]
    async fn any_other_use_of_the_connection_commits_the_group_first() {
        let (_db, node, other) = two_nodes().await;
        let write = insert(node.pool(), 1).await;
        assert_eq!(count(&node).await, 1);
        assert_eq!(count(&other).await, 1, "what the node read was committed");
        write.wait().await.unwrap();
    }

    #[tokio::test]
    async fn a_group_whose_connection_is_closed_fails_its_members() {
        let (_db, node, other) = two_nodes().await;
        let write = insert(node.pool(), 1).await;
        // Taken and given up unsettled (a statement's future dropped mid-way): closed.
        drop(node.pool().acquire_joining().await.unwrap().0);
        let error = write.wait().await.unwrap_err();
        assert!(matches!(error, StoreError::Unavailable(_)), "{error:?}");
        assert_eq!((count(&node).await, count(&other).await), (0, 0));
    }

    #[tokio::test]
    async fn a_write_given_up_mid_way_fails_the_group() {
        let (_db, node, other) = two_nodes().await;
        let first = insert(node.pool(), 1).await;
        let mut write = GroupWrite::join(node.pool()).await.unwrap();
        sqlx::query("INSERT INTO t VALUES (2)")
            .execute(&mut *write.conn)
            .await
            .unwrap();
        drop(write);
        assert!(first.wait().await.is_err());
        assert_eq!((count(&node).await, count(&other).await), (0, 0));
    }

    #[tokio::test]
    async fn a_read_that_found_nothing_commits_the_writes_before_it() {
        let (_db, node, other) = two_nodes().await;
        // Alone in its transaction, it rolls back and commits nothing.
        GroupWrite::join(node.pool())
            .await
            .unwrap()
            .read_nothing()
            .await
            .unwrap();
        let first = insert(node.pool(), 1).await;
        GroupWrite::join(node.pool())
            .await
            .unwrap()
            .read_nothing()
            .await
            .unwrap();
        assert_eq!(count(&other).await, 1, "what it read is committed");
        first.wait().await.unwrap();
    }

    #[tokio::test]
    async fn a_full_group_commits_at_its_last_write() {
        let (_db, node, other) = two_nodes().await;
        let mut members = Vec::new();
        for x in 0..i64::from(MAX_MEMBERS) {
            members.push(insert(node.pool(), x).await);
        }
        assert_eq!(count(&other).await, i64::from(MAX_MEMBERS));
        for member in members {
            member.wait().await.unwrap();
        }
    }

    /// The log's restart waits for no writer: an open group is committed first.
    #[tokio::test]
    async fn the_logs_restart_commits_the_group_first() {
        let (_db, mut node, other) = two_nodes().await;
        node.restart_log_after(1);
        // The checkpoints' connection, opened as the server's is, before any write.
        node.checkpoint().await.unwrap();
        let write = insert(node.pool(), 1).await;
        let checkpoint = node.checkpoint().await.unwrap();
        assert_eq!((checkpoint.restarts, checkpoint.restarts_refused), (1, 0));
        assert_eq!(count(&other).await, 1);
        write.wait().await.unwrap();
    }

    #[tokio::test]
    async fn closing_the_store_commits_the_group() {
        let (_db, node, other) = two_nodes().await;
        let write = insert(node.pool(), 1).await;
        node.close().await;
        assert_eq!(count(&other).await, 1);
        write.wait().await.unwrap();
    }
}
