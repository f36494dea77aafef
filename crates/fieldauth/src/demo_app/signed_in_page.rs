//! The page of a signed-in browser: the organization's jobs from the API, the claims of the
//! ID token and the access token decoded, the userinfo answer, and the buttons to refresh,
//! revoke and start again. Claims are shown; the tokens themselves never are.

use axum::response::Html;
use serde_json::{Map, Value};

use super::flow::SignedIn;
use super::oauth_client::Shown;
use super::pages::{escape, layout, post_button, sign_in_button};
use super::{REFRESH, REVOKE};

pub fn signed_in_page(signed_in: &SignedIn, csrf: &str, notice: Option<&str>) -> Html<String> {
    let username = signed_in.id_claim("preferred_username").unwrap_or_default();
    let name = signed_in.id_claim("name").unwrap_or(username);
    let organization = signed_in
        .api
        .as_ref()
        .ok()
        .and_then(|api| api.pointer("/data/viewer/organization/name"))
        .and_then(Value::as_str);
    let mut body = format!("<h1>Signed in as {}</h1>\n", escape(name));
    body.push_str(&format!(
        "<p class=\"lead\">{}{}, through the public client demo-spa (authorization code flow \
         with PKCE).</p>\n",
        escape(username),
        organization.map_or_else(String::new, |o| format!(" for {}", escape(o))),
    ));
    if let Some(notice) = notice {
        body.push_str(&format!(
            "<p class=\"notice\" role=\"status\">{}</p>\n",
            escape(notice)
        ));
    }
    if signed_in.revoked {
        body.push_str(
            "<p class=\"alert\" role=\"status\">The grant is revoked: its refresh token no \
             longer works, and the API refuses its access token.</p>\n",
        );
    }
    body.push_str("<div class=\"actions\">\n");
    body.push_str(&post_button(REFRESH, csrf, "Refresh tokens"));
    body.push_str(&post_button(REVOKE, csrf, "Revoke"));
    body.push_str(&sign_in_button(username, "Start again", ""));
    body.push_str(
        "</div>\n<p class=\"muted\">Refresh trades the refresh token for new tokens (the old \
         one is then spent). Revoke ends the grant (RFC 7009). Start again asks for consent \
         once more: choose the other organization there to see its jobs.</p>\n",
    );

    body.push_str("<h2>Jobs</h2>\n");
    body.push_str(&jobs(&signed_in.api));
    body.push_str(
        "<h2>ID token</h2>\n<p class=\"muted\">Signature checked against the issuer's JWKS; \
         iss, aud, exp, nonce and at_hash checked.</p>\n",
    );
    body.push_str(&claims_table(&signed_in.id_claims));
    body.push_str(
        "<h2>Access token</h2>\n<p class=\"muted\">Verified as the API verifies it (RS256, typ \
         at+jwt, iss, aud, exp).</p>\n",
    );
    body.push_str(&claims_table(&signed_in.access_claims));
    body.push_str("<h2>Userinfo</h2>\n");
    body.push_str(&match &signed_in.userinfo {
        Ok(Value::Object(claims)) => claims_table(claims),
        Ok(other) => pre(other),
        Err(why) => refusal(why),
    });
    layout(&format!("Signed in as {name}"), &body)
}

/// The API example's answer: the organization's jobs as a table, GraphQL errors as a list,
/// anything else as JSON.
fn jobs(api: &Shown) -> String {
    let answer = match api {
        Ok(answer) => answer,
        Err(why) => return refusal(why),
    };
    if let Some(errors) = answer.get("errors").and_then(Value::as_array) {
        let items: String = errors
            .iter()
            .map(|e| {
                let message = e.get("message").and_then(Value::as_str).unwrap_or("error");
                format!("<li>{}</li>", escape(message))
            })
            .collect();
        return format!("<p class=\"alert\">The API answered with errors:</p><ul>{items}</ul>\n");
    }
    let (Some(total), Some(nodes)) = (
        answer
            .pointer("/data/jobs/totalCount")
            .and_then(Value::as_i64),
        answer.pointer("/data/jobs/nodes").and_then(Value::as_array),
    ) else {
        return pre(answer);
    };
    let organization = answer
        .pointer("/data/viewer/organization/name")
        .and_then(Value::as_str)
        .unwrap_or("the organization");
    let text = |job: &Value, pointer: &str| {
        escape(job.pointer(pointer).and_then(Value::as_str).unwrap_or(""))
    };
    let mut html = format!(
        "<p>{} has {total} jobs; the API's example query asks for the first {}:</p>\n\
         <table>\n<tr><th>Job</th><th>Status</th><th>Scheduled</th><th>Work order</th>\
         <th>Customer</th><th>Crew</th></tr>\n",
        escape(organization),
        nodes.len(),
    );
    for job in nodes {
        let crew: Vec<String> = job
            .get("assignments")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|a| a.pointer("/employee/name").and_then(Value::as_str))
            .map(escape)
            .collect();
        html.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
            text(job, "/title"),
            text(job, "/status"),
            text(job, "/scheduledStart"),
            text(job, "/workOrder/number"),
            text(job, "/workOrder/customer/name"),
            crew.join(", "),
        ));
    }
    html.push_str("</table>\n");
    html
}

/// One row per claim; times also in UTC.
fn claims_table(claims: &Map<String, Value>) -> String {
    let mut html = String::from("<table>\n");
    for (name, value) in claims {
        let shown = match value {
            Value::String(text) => escape(text),
            Value::Number(n) if matches!(name.as_str(), "iat" | "exp" | "auth_time" | "nbf") => {
                let when = n
                    .as_i64()
                    .and_then(|secs| chrono::DateTime::from_timestamp(secs, 0))
                    .map(|t| t.format(" (%Y-%m-%d %H:%M:%S UTC)").to_string())
                    .unwrap_or_default();
                format!("{n}{when}")
            }
            other => escape(&other.to_string()),
        };
        html.push_str(&format!(
            "<tr><th>{}</th><td>{shown}</td></tr>\n",
            escape(name)
        ));
    }
    html.push_str("</table>\n");
    html
}

fn pre(value: &Value) -> String {
    let text = serde_json::to_string_pretty(value).unwrap_or_default();
    format!("<pre>{}</pre>\n", escape(&text))
}

fn refusal(why: &str) -> String {
    format!("<p class=\"alert\">{}</p>\n", escape(why))
}
