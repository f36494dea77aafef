//! Reading the server's sign-in and consent pages as a browser would: which page it is, and
//! the values of its hidden inputs.

use anyhow::{anyhow, Result};

/// The page the server answered with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Page {
    SignIn,
    Consent,
    Other,
}

/// Tells the sign-in form (posts to `/oauth/signin`) from the consent form (has a `decision`).
pub fn page_kind(html: &str) -> Page {
    if html.contains("name=\"decision\"") {
        Page::Consent
    } else if html.contains("action=\"/oauth/signin\"") {
        Page::SignIn
    } else {
        Page::Other
    }
}

/// The value of the hidden input `name`, HTML entities decoded.
pub fn hidden_field(html: &str, name: &str) -> Result<String> {
    let marker = format!("name=\"{name}\"");
    html.match_indices("<input")
        .filter_map(|(start, _)| {
            let tag = &html[start..];
            tag.find('>').map(|end| &tag[..end])
        })
        .find(|tag| tag.contains("type=\"hidden\"") && tag.contains(&marker))
        .and_then(|tag| attribute(tag, "value"))
        .map(|value| unescape(&value))
        .ok_or_else(|| anyhow!("the page has no hidden input {name:?}"))
}

/// An attribute's raw value inside one tag.
fn attribute(tag: &str, name: &str) -> Option<String> {
    let marker = format!(" {name}=\"");
    let start = tag.find(&marker)? + marker.len();
    let value = &tag[start..];
    value.find('"').map(|end| value[..end].to_owned())
}

/// The entities a template engine writes inside an attribute value.
fn unescape(value: &str) -> String {
    if !value.contains('&') {
        return value.to_owned();
    }
    value
        .replace("&quot;", "\"")
        .replace("&#34;", "\"")
        .replace("&#x27;", "'")
        .replace("&#39;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

#[cfg(test)]
mod tests {
    use super::*;

    // The shape of `crates/oauth/templates/signin.html` and `consent.html` as rendered.
    const SIGN_IN: &str = r#"<form method="post" action="/oauth/signin" autocomplete="on">
  <input type="hidden" name="tenant" value="bench">
  <input type="hidden" name="request" value="Zk3x_Q-abc">
  <input type="hidden" name="csrf" value="c&amp;s&#34;rf">
  <label for="username">Username</label>
  <input id="username" name="username" type="text" required value="">
</form>"#;

    const CONSENT: &str = r#"<form method="post" action="/oauth/authorize">
  <input type="hidden" name="tenant" value="bench">
  <input type="hidden" name="request" value="req-2">
  <input type="hidden" name="csrf" value="csrf-2">
  <input type="hidden" name="scope" value="openid">
  <input id="scope-jobs" name="scope" value="jobs" type="checkbox" checked>
  <button type="submit" name="decision" value="allow" class="primary">Allow</button>
</form>"#;

    #[test]
    fn hidden_inputs_of_the_sign_in_form_are_read_and_decoded() {
        assert_eq!(hidden_field(SIGN_IN, "tenant").unwrap(), "bench");
        assert_eq!(hidden_field(SIGN_IN, "request").unwrap(), "Zk3x_Q-abc");
        assert_eq!(hidden_field(SIGN_IN, "csrf").unwrap(), "c&s\"rf");
    }

    #[test]
    fn a_visible_input_of_the_same_name_is_not_a_hidden_one() {
        assert!(hidden_field(SIGN_IN, "username").is_err());
        // `jobs` is a checkbox; the only hidden `scope` is `openid`.
        assert_eq!(hidden_field(CONSENT, "scope").unwrap(), "openid");
    }

    #[test]
    fn a_missing_input_is_an_error_naming_it() {
        let error = hidden_field("<p>Request refused</p>", "csrf").unwrap_err();
        assert!(error.to_string().contains("\"csrf\""), "{error}");
    }

    #[test]
    fn a_name_that_prefixes_another_does_not_match_it() {
        let html = r#"<input type="hidden" name="requested" value="no"><input type="hidden" name="request" value="yes">"#;
        assert_eq!(hidden_field(html, "request").unwrap(), "yes");
    }

    #[test]
    fn pages_are_told_apart() {
        assert_eq!(page_kind(SIGN_IN), Page::SignIn);
        assert_eq!(page_kind(CONSENT), Page::Consent);
        assert_eq!(page_kind("<h1>Sign-in cannot continue</h1>"), Page::Other);
    }
}
