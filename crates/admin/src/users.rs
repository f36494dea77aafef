//! A tenant's users: created (with a password, or with none until they set one through a
//! link), listed and searched, read, changed, given a new password, disabled and enabled,
//! deleted, and signed out everywhere. Disabling and signing out end every browser session
//! and revoke every grant at once, so each token the user holds stops working on every node.
//! The audit trail names the user by `sub` only and records which fields changed, never
//! their values, so a deleted user leaves nothing personal behind in it.

use secrecy::SecretString;
use serde::{Deserialize, Serialize};
use store::{AdminUser, NewUser, Revision, UserChanges as StoreChanges};
use utoipa::ToSchema;

use crate::audit::{self, Change};
use crate::context::{about, Ctx};
use crate::error::AdminError;
use crate::etag::Precondition;
use crate::page::{Page, PageRequest};
use crate::text::display_name;
use crate::versioned::Versioned;

/// A user as the admin API shows it (never the password hash).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct UserView {
    /// The OpenID `sub`: a UUID, stable, never reused.
    pub sub: String,
    /// Lowercase; unique in the tenant.
    pub username: String,
    pub name: String,
    pub email: String,
    /// A disabled user cannot sign in and holds no live token.
    pub disabled: bool,
    /// Unix seconds.
    pub created_at: i64,
}

impl From<&AdminUser> for UserView {
    fn from(found: &AdminUser) -> UserView {
        UserView {
            sub: found.user.user_id.clone(),
            username: found.user.username.clone(),
            name: found.user.name.clone(),
            email: found.user.email.clone(),
            disabled: found.disabled_at.is_some(),
            created_at: found.user.created_at,
        }
    }
}

/// `POST /admin/v1/tenants/{tenant}/users`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewUserRequest {
    pub username: String,
    pub name: String,
    pub email: String,
    /// 8 to 256 characters. Without it the user cannot sign in until a password is set
    /// (`PUT …/password`, or a password link).
    #[schema(value_type = Option<String>, format = Password)]
    pub password: Option<Password>,
}

/// `PATCH /admin/v1/tenants/{tenant}/users/{sub}`: the fields to change.
#[derive(Clone, Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UserChanges {
    pub username: Option<String>,
    pub name: Option<String>,
    pub email: Option<String>,
}

/// `PUT /admin/v1/tenants/{tenant}/users/{sub}/password`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewPassword {
    #[schema(value_type = String, format = Password)]
    pub password: Password,
}

/// A password in a request body, deserialized straight into a secret: no `Debug`, log or
/// error message can show it.
#[derive(Debug)]
pub struct Password(pub SecretString);

impl<'de> Deserialize<'de> for Password {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Password, D::Error> {
        String::deserialize(deserializer).map(|p| Password(SecretString::from(p)))
    }
}

/// What resetting a user's second factors did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SecondFactorsResetView {
    pub sub: String,
    /// Whether the user had any second factor to remove.
    pub removed: bool,
}

/// What signing a user out everywhere ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SignedOutView {
    pub sub: String,
    pub sessions_ended: u64,
    pub grants_revoked: u64,
}

pub async fn create(
    ctx: &Ctx<'_>,
    tenant: &str,
    new: NewUserRequest,
) -> Result<Versioned<UserView>, AdminError> {
    let id = ctx.tenant(tenant).await?;
    let username = username(&new.username)?;
    let name = display_name(&new.name, "name")?;
    let email = email(&new.email)?;
    let with_password = new.password.is_some();
    let password_hash = match new.password {
        Some(Password(password)) => {
            let records = ctx.records(&id);
            hash(ctx, &records, password, username.as_str(), email).await?
        }
        None => oauth::password::NO_PASSWORD.to_owned(),
    };
    let sub = ctx.random.uuid_v4().map_err(internal)?;
    let records = ctx.records(&id);
    let user = NewUser {
        user_id: &sub,
        username: username.as_str(),
        password_hash: &password_hash,
        name,
        email,
    };
    records
        .create_user(&user, ctx.now)
        .await
        .map_err(about("user"))?;
    let how = match with_password {
        true => "with a password",
        false => "without a password",
    };
    let what = format!("user {sub} created {how}");
    record(ctx, &records, "admin.user.created", &sub, what).await?;
    get(ctx, tenant, &sub).await
}

/// The tenant's users by username; `q` matches username, name or email.
pub async fn list(
    ctx: &Ctx<'_>,
    tenant: &str,
    request: &PageRequest<String>,
) -> Result<Page<UserView>, AdminError> {
    let id = ctx.tenant(tenant).await?;
    let rows = ctx
        .records(&id)
        .list_admin_users(
            request.after.as_deref(),
            request.search.as_deref(),
            request.fetch(),
        )
        .await?;
    Ok(Page::from_rows(
        rows,
        request,
        |u| u.user.username.clone(),
        |u| UserView::from(&u),
    ))
}

pub async fn get(
    ctx: &Ctx<'_>,
    tenant: &str,
    sub: &str,
) -> Result<Versioned<UserView>, AdminError> {
    let id = ctx.tenant(tenant).await?;
    let found = ctx
        .records(&id)
        .find_admin_user(sub)
        .await?
        .ok_or(AdminError::NotFound("user"))?;
    Ok(versioned(&found))
}

/// The user with this username (the CLI names users either way).
pub async fn find_by_username(
    ctx: &Ctx<'_>,
    tenant: &str,
    name: &str,
) -> Result<Versioned<UserView>, AdminError> {
    let id = ctx.tenant(tenant).await?;
    let username = username(name)?;
    let found = ctx
        .records(&id)
        .find_admin_user_by_username(username.as_str())
        .await?
        .ok_or(AdminError::NotFound("user"))?;
    Ok(versioned(&found))
}

pub async fn update(
    ctx: &Ctx<'_>,
    tenant: &str,
    sub: &str,
    changes: &UserChanges,
    precondition: Precondition,
) -> Result<Versioned<UserView>, AdminError> {
    let id = ctx.tenant(tenant).await?;
    let username = changes.username.as_deref().map(username).transpose()?;
    let name = changes
        .name
        .as_deref()
        .map(|n| display_name(n, "name"))
        .transpose()?;
    let email = changes.email.as_deref().map(email).transpose()?;
    let changed: Vec<&str> = [
        ("username", username.is_some()),
        ("name", name.is_some()),
        ("email", email.is_some()),
    ]
    .into_iter()
    .filter_map(|(field, given)| given.then_some(field))
    .collect();
    if changed.is_empty() {
        return Err(AdminError::Invalid(
            "body: give at least one of username, name, email".to_owned(),
        ));
    }
    let records = ctx.records(&id);
    let store_changes = StoreChanges {
        username: username.as_ref().map(oauth::Username::as_str),
        name,
        email,
    };
    records
        .update_user(sub, store_changes, precondition.expected())
        .await
        .map_err(about("user"))?;
    let what = format!("user {sub}: changed {}", changed.join(", "));
    record(ctx, &records, "admin.user.updated", sub, what).await?;
    get(ctx, tenant, sub).await
}

/// Sets a new password. The user's sessions and tokens stay; sign them out to end those.
pub async fn set_password(
    ctx: &Ctx<'_>,
    tenant: &str,
    sub: &str,
    password: SecretString,
) -> Result<(), AdminError> {
    let id = ctx.tenant(tenant).await?;
    let records = ctx.records(&id);
    // Before the hash: Argon2id is not spent on a user that is not there.
    let user = records
        .find_user(sub)
        .await?
        .ok_or(AdminError::NotFound("user"))?;
    let password_hash = hash(ctx, &records, password, &user.username, &user.email).await?;
    records
        .set_admin_password_hash(sub, &password_hash)
        .await
        .map_err(about("user"))?;
    let what = format!("user {sub}: password set");
    record(ctx, &records, "admin.user.password_set", sub, what).await
}

/// Disables the user: no sign-in, every browser session ended and every grant revoked, in
/// one transaction.
pub async fn disable(
    ctx: &Ctx<'_>,
    tenant: &str,
    sub: &str,
) -> Result<Versioned<UserView>, AdminError> {
    let id = ctx.tenant(tenant).await?;
    let records = ctx.records(&id);
    let ended = records
        .disable_user(sub, ctx.now)
        .await
        .map_err(about("user"))?;
    let what = format!(
        "user {sub} disabled; {} session(s) ended, {} grant(s) revoked",
        ended.sessions, ended.grants
    );
    record(ctx, &records, "admin.user.disabled", sub, what).await?;
    get(ctx, tenant, sub).await
}

/// Enables the user again; the grants revoked by the disabling stay revoked.
pub async fn enable(
    ctx: &Ctx<'_>,
    tenant: &str,
    sub: &str,
) -> Result<Versioned<UserView>, AdminError> {
    let id = ctx.tenant(tenant).await?;
    let records = ctx.records(&id);
    records.enable_user(sub).await.map_err(about("user"))?;
    let what = format!("user {sub} enabled");
    record(ctx, &records, "admin.user.enabled", sub, what).await?;
    get(ctx, tenant, sub).await
}

/// Deletes the user with their grants, sessions and memberships.
pub async fn delete(ctx: &Ctx<'_>, tenant: &str, sub: &str) -> Result<(), AdminError> {
    let id = ctx.tenant(tenant).await?;
    let records = ctx.records(&id);
    records
        .delete_user(sub, ctx.now)
        .await
        .map_err(about("user"))?;
    let what = format!("user {sub} deleted");
    record(ctx, &records, "admin.user.deleted", sub, what).await
}

/// Ends every browser session of the user and revokes every grant.
pub async fn sign_out(ctx: &Ctx<'_>, tenant: &str, sub: &str) -> Result<SignedOutView, AdminError> {
    let id = ctx.tenant(tenant).await?;
    let records = ctx.records(&id);
    let ended = records
        .sign_out_user(sub, ctx.now)
        .await
        .map_err(about("user"))?;
    let what = format!(
        "user {sub} signed out everywhere; {} session(s) ended, {} grant(s) revoked",
        ended.sessions, ended.grants
    );
    record(ctx, &records, "admin.user.signed_out", sub, what).await?;
    Ok(SignedOutView {
        sub: sub.to_owned(),
        sessions_ended: ended.sessions,
        grants_revoked: ended.grants,
    })
}

/// Removes every second factor of the user (authenticator app, recovery codes, passkeys),
/// after a lost device: under the tenant's policy they enroll again at their next sign-in.
/// Their sessions and tokens stay; sign them out too when the device may be in other hands.
pub async fn reset_second_factors(
    ctx: &Ctx<'_>,
    tenant: &str,
    sub: &str,
) -> Result<SecondFactorsResetView, AdminError> {
    let id = ctx.tenant(tenant).await?;
    let records = ctx.records(&id);
    let had_any = records
        .reset_second_factors(sub)
        .await
        .map_err(about("user"))?;
    let what = match had_any {
        true => format!("user {sub}: every second factor removed"),
        false => format!("user {sub}: second factors reset; there were none"),
    };
    record(ctx, &records, "admin.user.second_factors_reset", sub, what).await?;
    Ok(SecondFactorsResetView {
        sub: sub.to_owned(),
        removed: had_any,
    })
}

fn versioned(found: &AdminUser) -> Versioned<UserView> {
    Versioned {
        value: UserView::from(found),
        revision: Revision {
            created_at: found.revision.created_at,
            revision: found.revision.revision,
        },
    }
}

async fn record(
    ctx: &Ctx<'_>,
    records: &store::TenantStore<'_>,
    kind: &str,
    sub: &str,
    what: String,
) -> Result<(), AdminError> {
    let change = Change {
        kind,
        subject: Some(sub),
        what,
        ..Change::default()
    };
    audit::record(ctx, records, change).await
}

/// The tenant's password policy (NIST SP 800-63B §5.1.1.2), then Argon2id on a blocking
/// thread. The refusal names the field and says why, never echoing the password.
async fn hash(
    ctx: &Ctx<'_>,
    records: &store::TenantStore<'_>,
    password: SecretString,
    username: &str,
    email: &str,
) -> Result<String, AdminError> {
    oauth::password_policy::check_for_tenant(records, &password, username, email)
        .await
        .map_err(|error| match error {
            oauth::OAuthError::Store(error) => error.into(),
            other => internal(other),
        })?
        .map_err(|refusal| AdminError::Invalid(format!("password: {refusal}")))?;
    oauth::password::hash_password(password, ctx.random)
        .await
        .map_err(internal)
}

fn username(value: &str) -> Result<oauth::Username, AdminError> {
    oauth::Username::parse(value).map_err(|e| AdminError::Invalid(format!("username: {e}")))
}

/// A plausibility check, not RFC 5322: one `@` between non-empty parts, a dot in the
/// domain, no spaces or control characters, at most 254 characters.
fn email(value: &str) -> Result<&str, AdminError> {
    let email = value.trim();
    let valid = match email.split_once('@') {
        Some((local, domain)) => {
            !local.is_empty()
                && domain.contains('.')
                && !domain.contains('@')
                && !domain.starts_with('.')
                && !domain.ends_with('.')
        }
        None => false,
    };
    match valid
        && email.len() <= 254
        && !email.contains(|c: char| c.is_whitespace() || c.is_control())
    {
        true => Ok(email),
        false => Err(AdminError::Invalid(format!(
            "email: {email:?} is not an email address"
        ))),
    }
}

/// A failure of the random source or of a blocking thread: nothing the caller can fix.
fn internal(error: oauth::OAuthError) -> AdminError {
    tracing::error!(error = %oauth::error_chain(&error), "user administration failed");
    AdminError::Internal
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn email_plausibility() {
        assert_eq!(email(" alice@example.com ").unwrap(), "alice@example.com");
        for bad in [
            "alice",
            "@example.com",
            "alice@localhost",
            "a b@example.com",
            "a@b@c.com",
            "a@.com",
            "a\u{0}@example.com",
            "a@exam\u{7}ple.com",
        ] {
            let Err(AdminError::Invalid(why)) = email(bad) else {
                panic!("{bad:?} was accepted");
            };
            assert!(why.starts_with("email: "), "{why}");
        }
    }

    #[test]
    fn usernames_are_named_in_the_refusal() {
        let Err(AdminError::Invalid(why)) = username("a b") else {
            panic!("accepted");
        };
        assert!(why.starts_with("username: invalid username"), "{why}");
    }
}
