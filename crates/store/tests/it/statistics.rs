//! PostgreSQL's planner statistics follow tables that grow from empty
//! (`Store::refresh_statistics`), so that prepared statements are planned again for their
//! tables' size; on SQLite there is nothing to refresh.

use std::time::{Duration, Instant};

use sqlx::{Connection, Executor, Row};
use store::testing::TestDatabase;
use store::{Backend, EmployeeRole, NewEmployee, OrgStore, Store, GROWN_ROWS};

use crate::field::tenant_with_orgs;

on_both_backends!(a_table_that_doubled_is_analyzed_once_and_the_others_are_left);

#[tokio::test]
async fn postgres_a_statement_prepared_on_an_empty_table_is_planned_again_once_it_grew() {
    let Some(db) = TestDatabase::postgres().await else {
        return;
    };
    a_statement_prepared_on_an_empty_table_is_planned_again_once_it_grew(&db).await;
}

async fn a_table_that_doubled_is_analyzed_once_and_the_others_are_left(db: &TestDatabase) {
    let store = Store::connect(&db.url).await.unwrap();
    let direct = sqlx::AnyPool::connect(&db.url).await.unwrap();
    if store.backend() == Backend::Postgres {
        // Autovacuum could analyze the table first, and this test would not see the store's.
        sqlx::query("ALTER TABLE employees SET (autovacuum_enabled = false)")
            .execute(&direct)
            .await
            .unwrap();
    }
    let t = tenant_with_orgs(&store, "acme", &["org-a"]).await;
    let org = store.tenant(&t).organization("org-a");
    hire(&org, GROWN_ROWS + 20).await;
    if store.backend() == Backend::Sqlite {
        assert_eq!(
            store.refresh_statistics().await.unwrap(),
            Vec::<String>::new()
        );
        return;
    }
    let before = analyses(&direct).await;
    // Each connection reports its writes to the shared statistics within a second or so of
    // going idle: wait for them.
    let deadline = Instant::now() + Duration::from_secs(20);
    let analyzed = loop {
        let analyzed = store.refresh_statistics().await.unwrap();
        if analyzed.iter().any(|table| table == "employees") {
            break analyzed;
        }
        assert!(
            Instant::now() < deadline,
            "employees was not analyzed after {} new rows",
            GROWN_ROWS + 20
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    // The organization and the tenant grew by one row each: too few to analyze.
    assert!(
        !analyzed.iter().any(|table| table == "organizations"),
        "{analyzed:?}"
    );
    assert_eq!(analyses(&direct).await, before + 1);
    // Analyzed once: unchanged since, it is not analyzed again.
    let again = store.refresh_statistics().await.unwrap();
    assert!(!again.iter().any(|table| table == "employees"), "{again:?}");
    direct.close().await;
    store.close().await;
}

/// What the table's statistics are for: a statement prepared while `employees` was nearly
/// empty is planned as a scan of every row, from statistics that stay those of the empty
/// table until an analysis; after the store's, it is planned again and finds an employee by
/// key.
async fn a_statement_prepared_on_an_empty_table_is_planned_again_once_it_grew(db: &TestDatabase) {
    let store = Store::connect(&db.url).await.unwrap();
    let mut conn = sqlx::PgConnection::connect(&db.url).await.unwrap();
    conn.execute(
        "ALTER TABLE employees SET (autovacuum_enabled = false); ANALYZE employees; \
         SET plan_cache_mode = force_generic_plan; \
         PREPARE lookup(text, text) AS SELECT * FROM employees \
           WHERE tenant_id = $1 AND employee_id = $2",
    )
    .await
    .unwrap();
    let t = tenant_with_orgs(&store, "acme", &["org-a"]).await;
    let before = plan(&mut conn).await;
    assert!(before.contains("Seq Scan on employees"), "{before}");
    let org = store.tenant(&t).organization("org-a");
    hire(&org, GROWN_ROWS * 4).await;
    // The statistics still say nearly empty: without another analysis, a plan made from them
    // scans. (Whether this connection's cached plan is still the first one is PostgreSQL's
    // business: any catalog change elsewhere, as concurrent tests make, may drop it.)
    assert!(rows_known(&mut conn).await < GROWN_ROWS as f32);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !store
        .refresh_statistics()
        .await
        .unwrap()
        .iter()
        .any(|table| table == "employees")
    {
        assert!(Instant::now() < deadline, "employees was not analyzed");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(rows_known(&mut conn).await >= (GROWN_ROWS * 4) as f32);
    let after = plan(&mut conn).await;
    assert!(after.contains("Index Scan using employees_pkey"), "{after}");
    conn.close().await.unwrap();
    store.close().await;
}

/// Adds `count` employees to the organization.
async fn hire(org: &OrgStore<'_>, count: i64) {
    for n in 0..count {
        let (id, name) = (format!("e{n}"), format!("Tech {n}"));
        let new = NewEmployee {
            employee_id: &id,
            name: &name,
            role: EmployeeRole::Technician,
            email: None,
            phone: None,
        };
        org.create_employee(&new, 0).await.unwrap();
    }
}

/// How many rows the planner's statistics say `employees` holds.
async fn rows_known(conn: &mut sqlx::PgConnection) -> f32 {
    sqlx::query_scalar("SELECT reltuples FROM pg_class WHERE oid = 'employees'::regclass")
        .fetch_one(conn)
        .await
        .unwrap()
}

/// The plan `lookup` runs with now.
async fn plan(conn: &mut sqlx::PgConnection) -> String {
    let rows = sqlx::query("EXPLAIN EXECUTE lookup('acme', 'e1')")
        .fetch_all(conn)
        .await
        .unwrap();
    let lines: Vec<String> = rows.iter().map(|row| row.get::<String, _>(0)).collect();
    lines.join("\n")
}

/// How often `employees` was analyzed by hand (not by autovacuum).
async fn analyses(direct: &sqlx::AnyPool) -> i64 {
    sqlx::query_scalar(
        "SELECT analyze_count FROM pg_stat_user_tables \
         WHERE schemaname = current_schema() AND relname = 'employees'",
    )
    .fetch_one(direct)
    .await
    .unwrap()
}
