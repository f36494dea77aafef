//! The provisioning CLI (operators' scripts depend on it): every command, its `--json`
//! output, and every refusal, which exits 1 and writes nothing.

use store::testing::TestDatabase;
use store::{ClientType, Store, TenantId};

use crate::helpers::{assert_ok, assert_refused, cli, json_output, on_both_backends};

on_both_backends!(
    tenant_create_and_list,
    tenant_refusals_write_nothing,
    client_create_public_and_confidential,
    client_refusals_write_nothing,
    user_create_reads_password_from_stdin_and_stores_argon2id,
    user_refusals_write_nothing,
    org_create_and_add_member,
    org_refusals_write_nothing,
    keys_rotate_list_and_retire,
);

async fn open(db: &TestDatabase) -> Store {
    Store::connect(&db.url).await.unwrap()
}

fn tenant(db: &TestDatabase, id: &str) {
    json_output(&cli(db, &["tenant", "create", id, "--json"], None));
}

async fn tenant_create_and_list(db: TestDatabase) {
    let created = json_output(&cli(
        &db,
        &[
            "tenant",
            "create",
            "acme",
            "--name",
            "Acme Services",
            "--json",
        ],
        None,
    ));
    assert_eq!(created["tenant"], "acme");
    tenant(&db, "beta");
    let listed = json_output(&cli(&db, &["tenant", "list", "--json"], None));
    let tenants = listed["tenants"].as_array().unwrap();
    assert_eq!(tenants.len(), 2);
    assert_eq!(tenants[0]["tenant"], "acme");
    assert_eq!(tenants[0]["name"], "Acme Services");
    assert_eq!(tenants[1]["name"], "beta", "the name defaults to the id");
    // Without --json, people get one line per tenant.
    let text = cli(&db, &["tenant", "list"], None);
    assert_eq!(
        String::from_utf8(text.stdout).unwrap(),
        "acme\tAcme Services\nbeta\tbeta\n"
    );
}

async fn tenant_refusals_write_nothing(db: TestDatabase) {
    tenant(&db, "acme");
    assert_refused(
        &cli(&db, &["tenant", "create", "acme", "--json"], None),
        "already exists",
    );
    for bad in ["Acme", "acme.co", "a_b", &"a".repeat(64)] {
        assert_refused(
            &cli(&db, &["tenant", "create", bad, "--json"], None),
            "invalid tenant id",
        );
    }
    let store = open(&db).await;
    assert_eq!(store.list_tenants().await.unwrap().len(), 1);
}

async fn client_create_public_and_confidential(db: TestDatabase) {
    tenant(&db, "acme");
    let public = json_output(&cli(
        &db,
        &[
            "client",
            "create",
            "--tenant",
            "acme",
            "--client-id",
            "spa",
            "--redirect-uri",
            "http://127.0.0.1:8400/cb",
            "--redirect-uri",
            "com.example.app:/cb",
            "--json",
        ],
        None,
    ));
    assert_eq!(public.get("client_id").unwrap(), "spa");
    assert!(
        public.get("client_secret").is_none(),
        "a public client has no secret: {public:?}"
    );

    let confidential = json_output(&cli(
        &db,
        &[
            "client",
            "create",
            "--tenant",
            "acme",
            "--client-id",
            "web",
            "--redirect-uri",
            "https://app.example.com/cb",
            "--confidential",
            "--name",
            "Back office",
            "--scope",
            "openid",
            "--scope",
            "jobs",
            "--json",
        ],
        None,
    ));
    assert_eq!(confidential["client_id"], "web");
    let secret = confidential["client_secret"].as_str().unwrap();
    assert_eq!(secret.len(), 43, "256 random bits, base64url");

    let store = open(&db).await;
    let acme = TenantId::parse("acme").unwrap();
    let spa = store
        .tenant(&acme)
        .find_client("spa")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(spa.client_type, ClientType::Public);
    assert_eq!(
        spa.redirect_uris,
        ["http://127.0.0.1:8400/cb", "com.example.app:/cb"]
    );
    assert_eq!(
        spa.scopes.len(),
        9,
        "every scope of the spec by default: {:?}",
        spa.scopes
    );
    assert_eq!(spa.name, "spa");
    let web = store
        .tenant(&acme)
        .find_client("web")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(web.client_type, ClientType::Confidential);
    assert_eq!(web.name, "Back office");
    assert_eq!(web.scopes, ["openid", "jobs"]);
    // Only the hash is stored.
    assert_eq!(
        web.secret_hash.as_deref(),
        Some(&oauth::secret::hash_secret(secret)[..])
    );
}

async fn client_refusals_write_nothing(db: TestDatabase) {
    tenant(&db, "acme");
    let create = |client_id: &str, uri: &str, extra: &[&str]| {
        let mut args = vec![
            "client",
            "create",
            "--tenant",
            "acme",
            "--client-id",
            client_id,
            "--redirect-uri",
            uri,
            "--json",
        ];
        args.extend_from_slice(extra);
        cli(&db, &args, None)
    };
    json_output(&create("web", "https://app.example.com/cb", &[]));
    assert_refused(
        &create("web", "https://app.example.com/cb", &[]),
        "already exists",
    );
    assert_refused(&create("rel", "/callback", &[]), "not an absolute URI");
    assert_refused(
        &create("frag", "https://app.example.com/cb#x", &[]),
        "fragment",
    );
    assert_refused(
        &create("plain", "http://app.example.com/cb", &[]),
        "loopback",
    );
    assert_refused(&create("scheme", "myapp:/cb", &[]), "private-use scheme");
    assert_refused(
        &create("scope", "https://app.example.com/cb", &["--scope", "admin"]),
        "unknown scope",
    );
    assert_refused(
        &create("bad id", "https://app.example.com/cb", &[]),
        "invalid client_id",
    );
    let ghost = cli(
        &db,
        &[
            "client",
            "create",
            "--tenant",
            "ghost",
            "--client-id",
            "web",
            "--redirect-uri",
            "https://a.example.com/cb",
        ],
        None,
    );
    assert_refused(&ghost, "tenant not found");
    let store = open(&db).await;
    let ids: Vec<_> = store
        .tenant(&TenantId::parse("acme").unwrap())
        .list_clients()
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.client_id)
        .collect();
    assert_eq!(ids, ["web"]);
}

fn create_user(
    db: &TestDatabase,
    tenant: &str,
    username: &str,
    password: Option<&str>,
) -> std::process::Output {
    cli(
        db,
        &[
            "user",
            "create",
            "--tenant",
            tenant,
            "--username",
            username,
            "--name",
            "Alice Anders",
            "--email",
            "alice@example.com",
            "--password-stdin",
            "--json",
        ],
        password,
    )
}

async fn user_create_reads_password_from_stdin_and_stores_argon2id(db: TestDatabase) {
    tenant(&db, "acme");
    let created = json_output(&create_user(
        &db,
        "acme",
        "Alice",
        Some("correct horse battery\n"),
    ));
    let sub = created["sub"].as_str().unwrap();
    assert_eq!(sub.len(), 36, "a UUID: {sub}");
    let store = open(&db).await;
    let user = store
        .tenant(&TenantId::parse("acme").unwrap())
        .find_user(sub)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        user.username, "alice",
        "usernames are case-insensitive, kept lowercase"
    );
    assert_eq!(
        (user.name.as_str(), user.email.as_str()),
        ("Alice Anders", "alice@example.com")
    );
    assert!(
        user.password_hash.starts_with("$argon2id$"),
        "{}",
        user.password_hash
    );
    let password = secrecy::SecretString::from("correct horse battery".to_owned());
    assert!(
        oauth::password::verify_password(&password, &user.password_hash).unwrap(),
        "the trailing newline is not part of the password"
    );
}

async fn user_refusals_write_nothing(db: TestDatabase) {
    tenant(&db, "acme");
    json_output(&create_user(
        &db,
        "acme",
        "alice",
        Some("correct horse battery"),
    ));
    assert_refused(
        &create_user(&db, "acme", "ALICE", Some("another password")),
        "already exists",
    );
    assert_refused(
        &create_user(&db, "ghost", "zed", Some("correct horse battery")),
        "tenant not found",
    );
    assert_refused(
        &create_user(&db, "acme", "carol", Some("")),
        "no password on standard input",
    );
    assert_refused(
        &create_user(&db, "acme", "carol", Some("short\n")),
        "at least 10 characters",
    );
    assert_refused(
        &create_user(&db, "acme", "a b", Some("correct horse battery")),
        "invalid username",
    );
    let bad_email = cli(
        &db,
        &[
            "user",
            "create",
            "--tenant",
            "acme",
            "--username",
            "dave",
            "--name",
            "Dave",
            "--email",
            "dave",
            "--password-stdin",
        ],
        Some("correct horse battery"),
    );
    assert_refused(&bad_email, "not an email address");
    // The password is never taken from argv.
    let no_flag = cli(
        &db,
        &[
            "user",
            "create",
            "--tenant",
            "acme",
            "--username",
            "erin",
            "--name",
            "E",
            "--email",
            "e@example.com",
        ],
        Some("pw"),
    );
    assert_eq!(
        no_flag.status.code(),
        Some(2),
        "clap refuses a missing --password-stdin"
    );
    let store = open(&db).await;
    let acme = TenantId::parse("acme").unwrap();
    for username in ["carol", "dave", "erin"] {
        assert_eq!(
            store
                .tenant(&acme)
                .find_user_by_username(username)
                .await
                .unwrap(),
            None
        );
    }
}

async fn org_create_and_add_member(db: TestDatabase) {
    tenant(&db, "acme");
    let sub = json_output(&create_user(
        &db,
        "acme",
        "alice",
        Some("correct horse battery"),
    ))["sub"]
        .clone();
    let org = json_output(&cli(
        &db,
        &[
            "org",
            "create",
            "--tenant",
            "acme",
            "--name",
            "Northwind Plumbing",
            "--json",
        ],
        None,
    ));
    let guid = org["organization_guid"].as_str().unwrap().to_owned();
    assert_eq!(guid.len(), 36, "a UUID: {guid}");
    let added = json_output(&cli(
        &db,
        &[
            "org",
            "add-member",
            "--tenant",
            "acme",
            "--org",
            &guid,
            "--username",
            "alice",
            "--json",
        ],
        None,
    ));
    assert_eq!(added["organization_guid"], guid.as_str());
    assert_eq!(added["sub"], sub);
    let store = open(&db).await;
    let orgs = store
        .tenant(&TenantId::parse("acme").unwrap())
        .organizations_of(sub.as_str().unwrap())
        .await
        .unwrap();
    assert_eq!(orgs.len(), 1);
    assert_eq!(
        (orgs[0].organization_guid.as_str(), orgs[0].name.as_str()),
        (guid.as_str(), "Northwind Plumbing")
    );
}

async fn org_refusals_write_nothing(db: TestDatabase) {
    tenant(&db, "acme");
    tenant(&db, "beta");
    json_output(&create_user(
        &db,
        "acme",
        "alice",
        Some("correct horse battery"),
    ));
    assert_refused(
        &cli(
            &db,
            &["org", "create", "--tenant", "ghost", "--name", "X"],
            None,
        ),
        "tenant not found",
    );
    let guid = json_output(&cli(
        &db,
        &[
            "org", "create", "--tenant", "acme", "--name", "North", "--json",
        ],
        None,
    ))["organization_guid"]
        .as_str()
        .unwrap()
        .to_owned();
    let add = |tenant: &str, org: &str, username: &str| {
        cli(
            &db,
            &[
                "org",
                "add-member",
                "--tenant",
                tenant,
                "--org",
                org,
                "--username",
                username,
            ],
            None,
        )
    };
    assert_refused(
        &add("acme", "00000000-0000-4000-8000-000000000000", "alice"),
        "organization not found",
    );
    assert_refused(&add("acme", &guid, "nobody"), "user \"nobody\" not found");
    assert_refused(&add("beta", &guid, "alice"), "not found");
    assert_refused(&add("ghost", &guid, "alice"), "tenant not found");
    assert_ok(&add("acme", &guid, "alice"));
    assert_refused(&add("acme", &guid, "alice"), "membership already exists");
    let store = open(&db).await;
    assert!(store
        .tenant(&TenantId::parse("beta").unwrap())
        .list_organizations()
        .await
        .unwrap()
        .is_empty());
}

/// A rotated key is published first and signs only later (it is "pending" now); retiring
/// is refused for the key that signs, and allowed for a pending one.
async fn keys_rotate_list_and_retire(db: TestDatabase) {
    let kid =
        |output: std::process::Output| json_output(&output)["kid"].as_str().unwrap().to_owned();
    let first = kid(cli(&db, &["keys", "rotate", "--json"], None));
    let second = kid(cli(&db, &["keys", "rotate", "--json"], None));
    assert_ne!(first, second);
    let statuses = || {
        let listed = json_output(&cli(&db, &["keys", "list", "--json"], None));
        let keys = listed["keys"].as_array().unwrap().clone();
        assert!(keys
            .iter()
            .all(|k| k["alg"] == "RS256" && !k.as_object().unwrap().contains_key("private_key")));
        keys.iter()
            .map(|k| {
                (
                    k["kid"].as_str().unwrap().to_owned(),
                    k["status"].as_str().unwrap().to_owned(),
                )
            })
            .collect::<Vec<_>>()
    };
    let pair = |kid: &str, status: &str| (kid.to_owned(), status.to_owned());
    assert_eq!(
        statuses(),
        [pair(&second, "pending"), pair(&first, "signing")]
    );

    assert_refused(
        &cli(&db, &["keys", "retire", &first], None),
        "it signs tokens now",
    );
    assert_refused(
        &cli(&db, &["keys", "retire", "no-such-kid"], None),
        "signing key not found",
    );
    let retired = json_output(&cli(&db, &["keys", "retire", &second, "--json"], None));
    assert_eq!(retired["kid"], second.as_str());
    assert_eq!(
        statuses(),
        [pair(&second, "retired"), pair(&first, "signing")]
    );
    assert_refused(
        &cli(&db, &["keys", "retire", &second], None),
        "signing key not found",
    );
}
