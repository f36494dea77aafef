//! The pages of setting up a second factor, shared by the account page and by sign-in when
//! the tenant requires one: the authenticator's QR code and key with the form for its first
//! code, and the recovery codes shown once. The caller says where the form goes and what it
//! carries.

use askama::Template;
use axum::http::StatusCode;
use axum::response::Response;

use crate::mfa::totp::Enrollment;
use crate::pages::{self, FormTarget};

/// A hidden field of a form.
pub(crate) struct Hidden<'a> {
    pub name: &'a str,
    pub value: &'a str,
}

/// Where the enrollment form goes: it posts `code` with the hidden fields to `action`.
pub(crate) struct EnrollmentForm<'a> {
    pub action: &'a str,
    pub hidden: Vec<Hidden<'a>>,
    /// A link away from the set-up, if it may be left.
    pub cancel: Option<&'a str>,
}

#[derive(Template)]
#[template(path = "totp_enroll.html")]
struct EnrollPage<'a> {
    /// Markup made by the server from the key alone, nothing a user typed.
    qr_svg: &'a str,
    key_groups: String,
    otpauth_uri: &'a str,
    action: &'a str,
    hidden: &'a [Hidden<'a>],
    cancel: Option<&'a str>,
    message: Option<&'a str>,
}

#[derive(Template)]
#[template(path = "recovery_codes.html")]
struct RecoveryCodesPage<'a> {
    heading: &'a str,
    codes: &'a [String],
    continue_url: &'a str,
}

/// The set-up page: the QR code and the key as text, and a form for the first code.
/// `message` says why the last code was refused.
pub(crate) fn render_totp_enrollment(
    enrollment: &Enrollment,
    form: &EnrollmentForm<'_>,
    message: Option<&str>,
) -> Response {
    let page = EnrollPage {
        qr_svg: &enrollment.qr_svg,
        key_groups: in_groups(&enrollment.secret_base32),
        otpauth_uri: &enrollment.otpauth_uri,
        action: form.action,
        hidden: &form.hidden,
        cancel: form.cancel,
        message,
    };
    pages::render(&page, StatusCode::OK, FormTarget::SelfOnly)
}

/// The new recovery codes, shown this once, with a link onwards. `after_enrollment`: the
/// authenticator was just set up (the heading says so).
pub(crate) fn render_recovery_codes(
    codes: &[String],
    continue_url: &str,
    after_enrollment: bool,
) -> Response {
    let heading = match after_enrollment {
        true => "Authenticator app set up: save your recovery codes",
        false => "Your new recovery codes",
    };
    let page = RecoveryCodesPage {
        heading,
        codes,
        continue_url,
    };
    pages::render(&page, StatusCode::OK, FormTarget::SelfOnly)
}

/// The key in groups of four, as authenticator apps show and accept it.
fn in_groups(key: &str) -> String {
    key.as_bytes()
        .chunks(4)
        .map(|group| String::from_utf8_lossy(group).into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_shown_in_groups_of_four() {
        assert_eq!(in_groups("GEZDGNBVGY"), "GEZD GNBV GY");
        assert_eq!(in_groups(""), "");
    }

    #[test]
    fn the_pages_escape_the_hidden_fields_and_the_link() {
        let page = EnrollPage {
            qr_svg: "<svg></svg>",
            key_groups: "ABCD".to_owned(),
            otpauth_uri: "otpauth://totp/a:b?secret=ABCD",
            action: "/account/totp/confirm",
            hidden: &[Hidden {
                name: "request",
                value: "\"><script>",
            }],
            cancel: Some("/account?tenant=a&x=\"<b>"),
            message: Some("<i>wrong</i>"),
        };
        let html = page.render().unwrap();
        assert!(html.contains("<svg></svg>"));
        for raw in ["<script>", "<b>", "<i>"] {
            assert!(!html.contains(raw), "{raw} in {html}");
        }
        let codes = RecoveryCodesPage {
            heading: "h",
            codes: &["abcde-12345".to_owned()],
            continue_url: "/account?tenant=a&done=\"<b>",
        };
        let html = codes.render().unwrap();
        assert!(html.contains("<code>abcde-12345</code>"));
        assert!(!html.contains("<b>"));
    }
}
