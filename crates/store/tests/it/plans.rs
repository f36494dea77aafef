//! PostgreSQL's plans for the lookups by a secret's hash, made as a server's connection makes
//! them in its first moments: a generic plan, kept, prepared while the table is empty and has
//! never been analyzed. Each must go through the primary key `(tenant_id, <hash>)`; another
//! index led by the tenant would read every row of the tenant for each lookup once the table
//! fills (migration 0005).

use sqlx::{Connection, Executor, Row};
use store::testing::TestDatabase;
use store::Store;

const LOOKUPS: [(&str, &str); 4] = [
    ("authorization_codes", "code_hash"),
    ("authorization_requests", "request_hash"),
    ("browser_sessions", "session_hash"),
    ("refresh_tokens", "token_hash"),
];

#[tokio::test]
async fn lookups_by_hash_use_the_primary_key_before_any_statistics() {
    let Some(db) = TestDatabase::postgres().await else {
        return;
    };
    let store = Store::connect(&db.url).await.unwrap();
    store.close().await;
    let mut conn = sqlx::PgConnection::connect(&db.url).await.unwrap();
    conn.execute("SET plan_cache_mode = force_generic_plan")
        .await
        .unwrap();
    for (table, column) in LOOKUPS {
        let (reltuples,): (f32,) =
            sqlx::query_as("SELECT reltuples FROM pg_class WHERE oid = $1::regclass")
                .bind(table)
                .fetch_one(&mut conn)
                .await
                .unwrap();
        assert_eq!(reltuples, -1.0, "{table} was never analyzed");
        conn.execute(
            format!(
                "PREPARE lookup_{table}(text, bytea) AS \
                 SELECT * FROM {table} WHERE tenant_id = $1 AND {column} = $2"
            )
            .as_str(),
        )
        .await
        .unwrap();
        let plan: Vec<String> = sqlx::query(&format!(
            "EXPLAIN EXECUTE lookup_{table}('acme', '\\x00'::bytea)"
        ))
        .fetch_all(&mut conn)
        .await
        .unwrap()
        .iter()
        .map(|row| row.get::<String, _>(0))
        .collect();
        let plan = plan.join("\n");
        assert!(
            plan.contains(&format!("Index Scan using {table}_pkey"))
                && plan.contains(&format!("(tenant_id = $1) AND ({column} = $2)")),
            "{table}: {plan}"
        );
    }
    conn.close().await.unwrap();
}
