//! PostgreSQL's planner statistics follow tables that grow from empty
//! (`Store::refresh_statistics`), so that prepared statements are planned again for their
//! tables' size; on SQLite there is nothing to refresh.

use std::time::{Duration, Instant};

use store::testing::TestDatabase;
use store::{Backend, EmployeeRole, NewEmployee, Store, TenantId, GROWN_ROWS};

on_both_backends!(a_table_that_doubled_is_analyzed_once_and_the_others_are_left);

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
    let t = TenantId::parse("acme").unwrap();
    store.create_tenant(&t, "Acme", 0).await.unwrap();
    store
        .tenant(&t)
        .create_organization("org-a", "A", 0)
        .await
        .unwrap();
    let org = store.tenant(&t).organization("org-a");
    for n in 0..GROWN_ROWS + 20 {
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
