//! The demo app's pages: plain HTML with every value escaped, one stylesheet of our own, no
//! script. The signed-in page is in `signed_in_page.rs`.

use axum::http::{header, HeaderValue};
use axum::response::{Html, IntoResponse, Response};

use super::{SIGN_IN, START, STYLESHEET};
use crate::demo::ORGANIZATIONS;

const CSS: &str = "\
*, *::before, *::after { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, \"Segoe UI\", Roboto, sans-serif;
  color: #1d2330; background: #eef1f5; }
main { max-width: 62rem; margin: 1.5rem auto; padding: 1.5rem; background: #fff;
  border-radius: 0.75rem; box-shadow: 0 1px 3px rgba(0, 0, 0, 0.12); }
h1 { font-size: 1.5rem; margin: 0 0 0.5rem; }
h2 { font-size: 1.15rem; margin: 1.75rem 0 0.5rem; }
.lead { margin: 0 0 1rem; color: #4a5363; }
.notice { padding: 0.6rem 0.8rem; border-radius: 0.4rem; background: #e6f4ea; }
.alert { padding: 0.6rem 0.8rem; border-radius: 0.4rem; background: #fdecea; }
.actions { display: flex; flex-wrap: wrap; gap: 0.75rem; margin: 1rem 0; }
form { margin: 0; }
button { font: inherit; padding: 0.6rem 1.2rem; border-radius: 0.4rem; border: 1px solid #b8c0cc;
  background: #fff; cursor: pointer; }
button.primary { background: #1f5fd6; border-color: #1f5fd6; color: #fff; }
table { border-collapse: collapse; width: 100%; font-size: 0.95rem; }
th, td { text-align: left; vertical-align: top; padding: 0.3rem 0.6rem; border-bottom: 1px solid #e3e7ee;
  overflow-wrap: anywhere; }
th { font-weight: 600; white-space: nowrap; }
.muted { color: #4a5363; font-size: 0.9rem; }
";

/// `GET /app.css`.
pub async fn stylesheet() -> Response {
    let mut response = CSS.into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/css; charset=utf-8"),
    );
    response
}

/// The page around `body`.
pub fn layout(title: &str, body: &str) -> Html<String> {
    Html(format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title} · fieldauth demo app</title>\n\
         <link rel=\"stylesheet\" href=\"{STYLESHEET}\">\n</head>\n<body>\n<main>\n{body}</main>\n\
         </body>\n</html>\n",
        title = escape(title),
    ))
}

/// `GET /` for a browser that is not signed in: who to sign in as.
pub fn start_page(notice: Option<&str>) -> Html<String> {
    let mut body = String::from(
        "<h1>Dispatch board</h1>\n\
         <p class=\"lead\">The demo app of <code>fieldauth demo</code>: the back end of the \
         public client demo-spa. It signs you in with the authorization code flow and PKCE, \
         then shows what the tokens say and calls userinfo and the API with them.</p>\n",
    );
    if let Some(notice) = notice {
        body.push_str(&format!(
            "<p class=\"notice\" role=\"status\">{}</p>\n",
            escape(notice)
        ));
    }
    body.push_str(&format!(
        "<p>The passwords are printed in the terminal that runs <code>fieldauth demo</code>. \
         alice is a member of {} and {}; bob of {} only.</p>\n<div class=\"actions\">\n",
        escape(ORGANIZATIONS[0]),
        escape(ORGANIZATIONS[1]),
        escape(ORGANIZATIONS[0]),
    ));
    for (user, class) in [("alice", " class=\"primary\""), ("bob", "")] {
        body.push_str(&sign_in_button(user, &format!("Sign in as {user}"), class));
    }
    body.push_str("</div>\n");
    layout("Sign in", &body)
}

/// A GET form to `/signin` with the username to suggest (OpenID Connect Core §3.1.2.1
/// `login_hint`): a button, since the pages have no script.
pub fn sign_in_button(username: &str, label: &str, class: &str) -> String {
    format!(
        "<form method=\"get\" action=\"{SIGN_IN}\">\
         <input type=\"hidden\" name=\"login_hint\" value=\"{username}\">\
         <button type=\"submit\"{class}>{label}</button></form>\n",
        username = escape(username),
        label = escape(label),
    )
}

/// A POST form to `action` with the session's CSRF token.
pub fn post_button(action: &str, csrf: &str, label: &str) -> String {
    format!(
        "<form method=\"post\" action=\"{action}\">\
         <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
         <button type=\"submit\">{label}</button></form>\n",
        csrf = escape(csrf),
        label = escape(label),
    )
}

pub fn error_page(title: &str, message: &str) -> Html<String> {
    layout(
        title,
        &format!(
            "<h1>{}</h1>\n<p class=\"alert\" role=\"alert\">{}</p>\n\
             <p><a href=\"{START}\">Back to the demo app</a></p>\n",
            escape(title),
            escape(message)
        ),
    )
}

/// HTML text and attribute values (double-quoted).
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_is_escaped() {
        assert_eq!(
            escape(r#"<a href="x">O'Neill & co</a>"#),
            "&lt;a href=&quot;x&quot;&gt;O&#39;Neill &amp; co&lt;/a&gt;"
        );
        let page = error_page("<t>", "<script>").0;
        assert!(
            !page.contains("<script>") && !page.contains("<t>"),
            "{page}"
        );
    }
}
