//! `POST /api`: every string argument of every query and mutation, found by introspection so
//! that a field added later is covered too, refuses a control character with
//! `BAD_USER_INPUT` before anything runs; so do variables, cursors, bodies that are not JSON
//! or are too large, and repeated arguments or keys. Nothing is written by any of them.

use serde_json::{json, Value};
use store::testing::TestDatabase;

use crate::api_support::{gql, one_error, setup, token, ALL_API};
use crate::helpers::{on_both_backends, TestApp};

on_both_backends!(
    every_string_argument_of_the_api_refuses_control_characters,
    malformed_api_requests_are_bad_user_input,
);

const INTROSPECTION: &str = r#"{
  __schema {
    queryType { fields { name args { name type { ...T } } } }
    mutationType { fields { name args { name type { ...T } } } }
    types { name kind inputFields { name type { ...T } } }
  }
}
fragment T on __Type { kind name ofType { kind name ofType { kind name ofType { kind name } } } }"#;

/// The named type under any NON_NULL and LIST wrappers, and whether a list wraps it.
fn named(mut ty: &Value) -> (&str, &str, bool) {
    let mut list = false;
    while ty["name"].is_null() {
        list |= ty["kind"] == "LIST";
        ty = &ty["ofType"];
    }
    (
        ty["kind"].as_str().unwrap(),
        ty["name"].as_str().unwrap(),
        list,
    )
}

/// For an argument of type `ty`, one GraphQL literal per string it can hold somewhere (in
/// itself or in the fields of its input objects, at any depth), each with `bad` in that
/// place: `{ field: "…bad…" }`.
fn literals(types: &[Value], ty: &Value, bad: &str, depth: usize) -> Vec<String> {
    let (kind, name, list) = named(ty);
    let wrap = |literal: String| match list {
        true => format!("[{literal}]"),
        false => literal,
    };
    match kind {
        "SCALAR" if matches!(name, "String" | "ID" | "DateTime" | "Date") => {
            vec![wrap(format!("\"x{bad}\""))]
        }
        "INPUT_OBJECT" if depth < 4 => {
            let input = types.iter().find(|t| t["name"] == name).unwrap();
            let mut out = Vec::new();
            for field in input["inputFields"].as_array().unwrap() {
                for inner in literals(types, &field["type"], bad, depth + 1) {
                    out.push(wrap(format!(
                        "{{ {}: {inner} }}",
                        field["name"].as_str().unwrap()
                    )));
                }
            }
            out
        }
        _ => Vec::new(),
    }
}

async fn assert_bad_user_input(app: &TestApp, token: &str, query: &str, variables: Value) {
    let body = gql(app, token, query, variables).await;
    let message = one_error(&body, "BAD_USER_INPUT");
    assert!(message.contains("control character"), "{query}: {message}");
    assert!(body["data"].is_null(), "{query}: {body}");
}

async fn every_string_argument_of_the_api_refuses_control_characters(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let seeded = setup(&app).await;
    let browser = app.browser();
    let token = token(&app, &browser, &seeded.alpha, ALL_API).await;
    let schema = gql(&app, &token, INTROSPECTION, json!({})).await;
    let schema = &schema["data"]["__schema"];
    let types = schema["types"].as_array().unwrap();
    let mut tried = 0;
    for (operation, root) in [("query", "queryType"), ("mutation", "mutationType")] {
        for field in schema[root]["fields"].as_array().unwrap() {
            let field_name = field["name"].as_str().unwrap();
            for arg in field["args"].as_array().unwrap() {
                // Escapes as a client writes them in a document: NUL, ESC, DEL and C1 NEL.
                for bad in ["\\u0000", "\\u001b", "\\u007f", "\\u0085"] {
                    for literal in literals(types, &arg["type"], bad, 0) {
                        let arg_name = arg["name"].as_str().unwrap();
                        let query =
                            format!("{operation} {{ {field_name}({arg_name}: {literal}) {{ __typename }} }}");
                        assert_bad_user_input(&app, &token, &query, json!({})).await;
                        tried += 1;
                    }
                }
            }
        }
    }
    // Every area has string arguments: ids, filters, names, notes, addresses.
    assert!(tried > 100, "only {tried} arguments were found");
    // Every C0 control but the newline a note may hold, in a variable, at any depth.
    for c in (0u8..0x20).filter(|c| *c != b'\n').chain([0x7f]) {
        let bad = format!("x{}y", char::from(c));
        let query = "query ($id: ID!) { job(id: $id) { id } }";
        assert_bad_user_input(&app, &token, query, json!({ "id": bad })).await;
        let query =
            "mutation ($input: CreateCustomerInput!) { createCustomer(input: $input) { id } }";
        let address =
            json!({ "street": bad, "city": "Springfield", "postalCode": "1", "country": "US" });
        let input =
            json!({ "name": "Acme", "billingProfile": { "currency": "USD", "address": address } });
        assert_bad_user_input(&app, &token, query, json!({ "input": input })).await;
    }
    // A newline is text a note may hold: not refused here (the field's own rules apply).
    let query =
        "mutation ($input: CreateCustomerInput!) { createCustomer(input: $input) { name } }";
    let created = gql(
        &app,
        &token,
        query,
        json!({ "input": { "name": "Line\nTwo" } }),
    )
    .await;
    assert!(created.get("errors").is_none(), "{created}");
    // Nothing else was written by any refused mutation.
    let customers = gql(
        &app,
        &token,
        "{ customers(first: 50) { nodes { name } } }",
        json!({}),
    )
    .await;
    assert_eq!(
        customers["data"]["customers"]["nodes"],
        json!([{ "name": "Line\nTwo" }])
    );
    app.stop().await;
}

async fn malformed_api_requests_are_bad_user_input(db: TestDatabase) {
    let app = TestApp::spawn(db).await;
    let seeded = setup(&app).await;
    let browser = app.browser();
    let token = token(&app, &browser, &seeded.alpha, ALL_API).await;
    let post = |body: Vec<u8>| {
        app.http
            .post(format!("{}/api", app.api_url))
            .bearer_auth(&token)
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    for (case, body, status) in [
        (
            "invalid UTF-8",
            b"{\"query\":\"{ job(id: \\\"\xff\\\") { id } }\"}".to_vec(),
            400,
        ),
        ("not JSON", b"query { jobs { nodes { id } } }".to_vec(), 400),
        (
            "a repeated key",
            br#"{"query":"{ __typename }","query":"{ __typename }"}"#.to_vec(),
            400,
        ),
        (
            "over 64 KiB",
            format!(
                "{{\"query\":\"{{ job(id: \\\"{}\\\") {{ id }} }}\"}}",
                "a".repeat(70_000)
            )
            .into_bytes(),
            413,
        ),
    ] {
        let response = post(body).await.unwrap();
        assert_eq!(response.status(), status, "{case}");
        let body: Value = response.json().await.unwrap();
        one_error(&body, "BAD_USER_INPUT");
    }
    // Parameters of the document itself: a repeated argument, and a cursor holding a NUL.
    let repeated = gql(
        &app,
        &token,
        r#"{ job(id: "a", id: "b") { id } }"#,
        json!({}),
    )
    .await;
    one_error(&repeated, "BAD_USER_INPUT");
    use base64::Engine;
    let cursor = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode("t:a\u{0}:job_1");
    let query = "query ($after: String) { jobs(after: $after) { nodes { id } } }";
    let body = gql(&app, &token, query, json!({ "after": cursor })).await;
    one_error(&body, "BAD_USER_INPUT");
    // Long but well-formed: the field's own rule, or simply nothing with that id.
    let name = "n".repeat(2_000);
    let query = "mutation ($input: CreateCustomerInput!) { createCustomer(input: $input) { id } }";
    let body = gql(&app, &token, query, json!({ "input": { "name": name } })).await;
    assert!(
        one_error(&body, "BAD_USER_INPUT").contains("at most 200"),
        "{body}"
    );
    let id = "j".repeat(2_000);
    let body = gql(
        &app,
        &token,
        "query ($id: ID!) { job(id: $id) { id } }",
        json!({ "id": id }),
    )
    .await;
    one_error(&body, "NOT_FOUND");
    app.stop().await;
}
