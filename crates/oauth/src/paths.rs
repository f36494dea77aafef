//! Endpoint paths, read by both the router and discovery so the two cannot drift.

pub const OPENID_CONFIGURATION: &str = "/.well-known/openid-configuration";
pub const AUTHORIZATION_SERVER_METADATA: &str = "/.well-known/oauth-authorization-server";
pub const JWKS: &str = "/oauth/jwks";
pub const AUTHORIZE: &str = "/oauth/authorize";
pub const TOKEN: &str = "/oauth/token";
pub const USERINFO: &str = "/oauth/userinfo";
pub const REVOKE: &str = "/oauth/revoke";
/// RP-Initiated Logout 1.0's end-session endpoint.
pub const LOGOUT: &str = "/oauth/logout";
/// The sign-in form's target. Not in discovery: it is part of the authorization UI.
pub const SIGNIN: &str = "/oauth/signin";
/// The second step of a sign-in: a TOTP code, a recovery code or a passkey (or enrolling
/// one, when the tenant requires it).
pub const SECOND_FACTOR: &str = "/oauth/signin/second-factor";
pub const STYLESHEET: &str = "/oauth/assets/fieldauth.css";
/// Where a user sets a password from a password link (an invitation). Not in discovery: it
/// belongs to the account pages, not to OAuth.
pub const ACCOUNT_PASSWORD: &str = "/account/password";
/// "Forgot your password?": where a user asks for a recovery link by mail. Not in discovery.
pub const ACCOUNT_RECOVER: &str = "/account/recover";
/// The user's own account page (`?tenant=T`) and its forms. Not in discovery.
pub const ACCOUNT: &str = "/account";
pub const ACCOUNT_REMOVE_ACCESS: &str = "/account/remove-access";
pub const ACCOUNT_CHANGE_PASSWORD: &str = "/account/change-password";
pub const ACCOUNT_SIGN_OUT_EVERYWHERE: &str = "/account/sign-out-everywhere";
// Passkeys (issue 24). Not in discovery: they belong to the sign-in and account pages.
/// The pages' one script, which drives WebAuthn for the passkey buttons.
pub const PASSKEY_SCRIPT: &str = "/oauth/assets/passkey.js";
/// Passwordless sign-in: the options of a discoverable ceremony (JSON), and the form's target.
pub const SIGNIN_PASSKEY_START: &str = "/oauth/signin/passkey/start";
pub const SIGNIN_PASSKEY: &str = "/oauth/signin/passkey";
/// The second factor: the options of a ceremony for the session's user (JSON).
pub const SECOND_FACTOR_PASSKEY_START: &str = "/oauth/second-factor/passkey/start";
/// The account page's passkeys: registration options (JSON), add, remove.
pub const ACCOUNT_PASSKEY_START: &str = "/account/passkeys/start";
pub const ACCOUNT_PASSKEY_ADD: &str = "/account/passkeys/add";
pub const ACCOUNT_PASSKEY_REMOVE: &str = "/account/passkeys/remove";
/// Setting up (GET shows, POST starts), confirming and removing the authenticator app, and
/// new recovery codes (issue 24).
pub const ACCOUNT_TOTP_SETUP: &str = "/account/totp/setup";
pub const ACCOUNT_TOTP_CONFIRM: &str = "/account/totp/confirm";
pub const ACCOUNT_TOTP_REMOVE: &str = "/account/totp/remove";
pub const ACCOUNT_RECOVERY_CODES: &str = "/account/recovery-codes";
