//! The recovery mail: plain text, so that every client shows it the same and nothing in it
//! runs or loads.

use secrecy::{ExposeSecret, SecretString};

use crate::issuer::Issuer;

pub(super) const SUBJECT: &str = "Reset your password";

/// The message's text for `user`, with the link to open.
pub(super) fn text(user: &store::User, issuer: &Issuer, link: &SecretString) -> SecretString {
    let host = url::Url::parse(issuer.as_str())
        .ok()
        .and_then(|url| url.host_str().map(str::to_owned))
        .unwrap_or_else(|| issuer.as_str().to_owned());
    let hours = super::RECOVERY_LINK_LIFETIME / 3600;
    SecretString::from(format!(
        "Hello {name},\n\
         \n\
         Someone asked to reset the password of the account \"{username}\" at {host}.\n\
         To choose a new password, open this link within {hours} hour(s):\n\
         \n\
         {link}\n\
         \n\
         The link works once. Setting a new password signs you out everywhere and ends the\n\
         access of every application you had signed in to; sign in again afterwards.\n\
         \n\
         If you did not ask for this, ignore this message: your password stays as it is.\n",
        name = user.name,
        username = user.username,
        link = link.expose_secret(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_holds_the_link_and_names_the_account() {
        let user = store::User {
            user_id: "u1".into(),
            username: "alice".into(),
            password_hash: String::new(),
            name: "Alice Example".into(),
            email: "alice@example.com".into(),
            created_at: 0,
        };
        let issuer = Issuer::parse("https://id.example.com").unwrap();
        let link =
            SecretString::from("https://id.example.com/account/password?token=t.x".to_owned());
        let text = text(&user, &issuer, &link);
        let text = text.expose_secret();
        assert!(text.contains("\nhttps://id.example.com/account/password?token=t.x\n"));
        assert!(text.contains("\"alice\" at id.example.com"));
        assert!(text.contains("within 1 hour(s)"));
    }
}
