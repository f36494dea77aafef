//! How `fieldauth serve` shares the CPU (docs/performance.md): RS256 signatures run on
//! threads of their own, never on the async workers, and every thread of the process is under
//! Linux's `SCHED_BATCH`, so that one of ours waking up does not preempt another mid-slice.

use store::testing::TestDatabase;

use crate::node_support::{code_at, exchange, prepare, refresh, Cluster};

/// `SCHED_BATCH` in `sched.h`, the 41st field of `/proc/PID/task/TID/stat`.
const SCHED_BATCH: &str = "3";

/// One thread of a process, as `/proc` shows it.
struct Thread {
    name: String,
    policy: String,
    /// Nanoseconds it ran on a CPU (`schedstat`'s first field).
    ran_ns: u64,
}

fn threads(pid: u32) -> Vec<Thread> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).unwrap();
    tasks
        .map(|task| {
            let dir = task.unwrap().path();
            let stat = std::fs::read_to_string(dir.join("stat")).unwrap();
            // The name is in parentheses and may hold spaces: fields count from its end.
            let (name, rest) = stat.split_once(" (").unwrap().1.rsplit_once(") ").unwrap();
            let policy = rest.split(' ').nth(41 - 3).unwrap().to_owned();
            let schedstat = std::fs::read_to_string(dir.join("schedstat")).unwrap();
            let ran_ns = schedstat.split(' ').next().unwrap().parse().unwrap();
            Thread {
                name: name.to_owned(),
                policy,
                ran_ns,
            }
        })
        .collect()
}

fn signing_ns(pid: u32) -> u64 {
    threads(pid)
        .iter()
        .filter(|t| t.name.starts_with("fieldauth-sign"))
        .map(|t| t.ran_ns)
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signatures_run_on_signing_threads_and_every_thread_is_sched_batch() {
    let db = TestDatabase::sqlite();
    prepare(&db).await;
    let cluster = Cluster::start(db, 1, &[]).await;
    let node = cluster.node(0);
    let pid = node.pid();

    let tokens = exchange(
        &cluster.http,
        &node.auth,
        &code_at(&node.auth, "openid offline_access").await,
    )
    .await;
    let mut refresh_token = tokens["refresh_token"].as_str().unwrap().to_owned();
    let before = signing_ns(pid);
    // Forty refreshes are eighty RSA-2048 signatures: 8 ms or more on any current core.
    for _ in 0..40 {
        let response = refresh(&cluster.http, &node.auth, &refresh_token).await;
        assert_eq!(response.status(), 200);
        let body: serde_json::Value = response.json().await.unwrap();
        assert!(
            body["id_token"].is_string(),
            "a refresh with openid signs both"
        );
        refresh_token = body["refresh_token"].as_str().unwrap().to_owned();
    }
    let signed_ns = signing_ns(pid) - before;
    assert!(
        signed_ns >= 4_000_000,
        "the signing threads ran {signed_ns} ns for 80 signatures"
    );

    let all = threads(pid);
    assert!(all.iter().any(|t| t.name.starts_with("fieldauth-sign")));
    for thread in &all {
        assert_eq!(
            thread.policy, SCHED_BATCH,
            "thread {:?} is not under SCHED_BATCH",
            thread.name
        );
    }
}
