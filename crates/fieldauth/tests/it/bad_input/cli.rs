//! The provisioning CLI: every flag whose text is stored refuses control characters (which
//! an argument can carry, all but the NUL) and over-long values with a one-line reason and
//! exit 1, and writes nothing.

use store::testing::TestDatabase;

use crate::helpers::{assert_ok, assert_refused, cli, json_output, on_both_backends};

on_both_backends!(every_stored_flag_of_the_cli_refuses_control_characters_and_long_values);

const CONTROLS: [char; 6] = ['\u{1}', '\u{7}', '\u{1b}', '\n', '\u{7f}', '\u{85}'];

async fn every_stored_flag_of_the_cli_refuses_control_characters_and_long_values(db: TestDatabase) {
    assert_ok(&cli(&db, &["tenant", "create", "acme"], None));
    let org = json_output(&cli(
        &db,
        &[
            "org", "create", "--tenant", "acme", "--name", "North", "--json",
        ],
        None,
    ))["organization_guid"]
        .as_str()
        .unwrap()
        .to_owned();
    let password = Some("correct horse battery\n");
    let user = |username: &str, name: &str, email: &str| {
        let args = [
            "user",
            "create",
            "--tenant",
            "acme",
            "--username",
            username,
            "--name",
            name,
            "--email",
            email,
            "--password-stdin",
        ];
        cli(&db, &args, password)
    };
    assert_ok(&user("alice", "Alice", "alice@example.com"));
    let client = |id: &str, name: &str, uri: &str, origin: &str| {
        let args = [
            "client",
            "create",
            "--tenant",
            "acme",
            "--client-id",
            id,
            "--name",
            name,
            "--redirect-uri",
            uri,
            "--web-origin",
            origin,
        ];
        cli(&db, &args, None)
    };
    let long = "a".repeat(300);
    for c in CONTROLS {
        let bad = |value: &str| format!("{value}{c}x");
        let case = format!("{c:?}");
        let refused = |output, why: &str| {
            assert_refused(&output, why);
            eprintln!("refused {case}: {why}");
        };
        refused(
            cli(&db, &["tenant", "create", &bad("globex")], None),
            "only lowercase letters, digits and '-' are allowed",
        );
        refused(
            cli(
                &db,
                &["tenant", "create", "globex", "--name", &bad("Globex")],
                None,
            ),
            "name must not contain control characters",
        );
        refused(
            cli(
                &db,
                &["org", "create", "--tenant", "acme", "--name", &bad("South")],
                None,
            ),
            "name must not contain control characters",
        );
        refused(
            user(&bad("bob"), "Bob", "bob@example.com"),
            "space or control character",
        );
        refused(
            user("bob", &bad("Bob"), "bob@example.com"),
            "name must not contain control characters",
        );
        refused(
            user("bob", "Bob", &bad("bob@example.com")),
            "is not an email address",
        );
        let uri = "https://app.example.com/cb";
        let origin = "https://app.example.com";
        refused(
            client(&bad("spa"), "SPA", uri, origin),
            "only letters, digits and - . _ ~ are allowed",
        );
        refused(
            client("spa", &bad("SPA"), uri, origin),
            "name must not contain control characters",
        );
        refused(
            client("spa", "SPA", &bad(uri), origin),
            "space or control character",
        );
        refused(
            client("spa", "SPA", uri, &bad(origin)),
            "space or control character",
        );
        for command in ["add-member", "remove-member"] {
            refused(
                cli(
                    &db,
                    &[
                        "org",
                        command,
                        "--tenant",
                        "acme",
                        "--org",
                        &bad(&org),
                        "--username",
                        "alice",
                    ],
                    None,
                ),
                "is not an organization_guid",
            );
        }
    }
    // A password no form can send back.
    let args = [
        "user",
        "create",
        "--tenant",
        "acme",
        "--username",
        "bob",
        "--name",
        "Bob",
        "--email",
        "bob@example.com",
        "--password-stdin",
    ];
    assert_refused(
        &cli(&db, &args, Some("correct horse\u{7}battery\n")),
        "must not contain control characters",
    );
    // Longer than any of them may be.
    assert_refused(
        &cli(&db, &["tenant", "create", &long], None),
        "longer than 63 characters",
    );
    assert_refused(
        &user("bob", &long, "bob@example.com"),
        "name must have at most 200 characters",
    );
    assert_refused(
        &user(&long, "Bob", "bob@example.com"),
        "longer than 64 characters",
    );
    assert_refused(
        &client(&long, "SPA", "https://a.example/cb", "https://a.example"),
        "1 to 128 characters",
    );
    // Nothing was written by any of them.
    let tenants = json_output(&cli(&db, &["tenant", "list", "--json"], None));
    assert_eq!(tenants["tenants"].as_array().unwrap().len(), 1);
    assert_ok(&user("bob", "Bob", "bob@example.com"));
}
