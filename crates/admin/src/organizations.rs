//! Organizations of a tenant and their members: created, listed by name, read, renamed,
//! deleted; members listed, added and removed. Deleting an organization or removing a member
//! revokes the grants bound to it, so those tokens stop at once on every node.

use serde::{Deserialize, Serialize};
use store::{Member, Organization, Revision, TenantId};
use utoipa::ToSchema;

use crate::audit::{self, Change};
use crate::context::{about, Ctx};
use crate::error::AdminError;
use crate::etag::Precondition;
use crate::page::{Page, PageRequest};
use crate::text::display_name;
use crate::versioned::Versioned;

/// An organization as the admin API shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct OrganizationView {
    /// A UUID: the `organization_guid` claim of the access tokens issued for it.
    pub organization_guid: String,
    pub name: String,
    /// Unix seconds.
    pub created_at: i64,
}

impl From<Organization> for OrganizationView {
    fn from(o: Organization) -> OrganizationView {
        OrganizationView {
            organization_guid: o.organization_guid,
            name: o.name,
            created_at: o.created_at,
        }
    }
}

/// A member of an organization.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct MemberView {
    pub sub: String,
    pub username: String,
    pub name: String,
    pub email: String,
}

impl From<Member> for MemberView {
    fn from(m: Member) -> MemberView {
        MemberView {
            sub: m.user_id,
            username: m.username,
            name: m.name,
            email: m.email,
        }
    }
}

/// `POST …/organizations` and `PATCH …/organizations/{guid}`.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OrganizationName {
    pub name: String,
}

/// What adding a member did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Added {
    Added,
    AlreadyMember,
}

/// An organization_guid as organizations are made: a lowercase hyphenated UUID. Anything
/// else names no organization.
pub fn is_organization_guid(guid: &str) -> bool {
    guid.len() == 36
        && guid.bytes().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => b == b'-',
            _ => b.is_ascii_digit() || (b'a'..=b'f').contains(&b),
        })
}

pub async fn create(
    ctx: &Ctx<'_>,
    tenant: &str,
    new: &OrganizationName,
) -> Result<Versioned<OrganizationView>, AdminError> {
    let id = ctx.tenant(tenant).await?;
    let name = display_name(&new.name, "name")?;
    let guid = ctx.random.uuid_v4().map_err(|error| {
        tracing::error!(%error, "no randomness for an organization_guid");
        AdminError::Internal
    })?;
    let records = ctx.records(&id);
    let made = records
        .create_organization(&guid, name, ctx.now)
        .await
        .map_err(about("organization"))?;
    audit::record(
        ctx,
        &records,
        Change {
            kind: "admin.organization.created",
            what: format!("organization {guid} created, named {name:?}"),
            ..Change::default()
        },
    )
    .await?;
    Ok(Versioned {
        revision: Revision {
            created_at: made.created_at,
            revision: 1,
        },
        value: made.into(),
    })
}

/// By name, then guid; `q` matches the name, case-insensitively.
pub async fn list(
    ctx: &Ctx<'_>,
    tenant: &str,
    request: &PageRequest<(String, String)>,
) -> Result<Page<OrganizationView>, AdminError> {
    let id = ctx.tenant(tenant).await?;
    let after = request
        .after
        .as_ref()
        .map(|(name, guid)| (name.as_str(), guid.as_str()));
    let rows = ctx
        .records(&id)
        .list_organizations_page(after, request.search.as_deref(), request.fetch())
        .await?;
    Ok(Page::from_rows(
        rows,
        request,
        |o| (o.name.clone(), o.organization_guid.clone()),
        OrganizationView::from,
    ))
}

pub async fn get(
    ctx: &Ctx<'_>,
    tenant: &str,
    guid: &str,
) -> Result<Versioned<OrganizationView>, AdminError> {
    let id = ctx.tenant(tenant).await?;
    found(ctx, &id, guid).await
}

pub async fn rename(
    ctx: &Ctx<'_>,
    tenant: &str,
    guid: &str,
    changes: &OrganizationName,
    precondition: Precondition,
) -> Result<Versioned<OrganizationView>, AdminError> {
    let id = ctx.tenant(tenant).await?;
    let name = display_name(&changes.name, "name")?;
    let guid = known_shape(guid)?;
    let records = ctx.records(&id);
    records
        .rename_organization(guid, name, precondition.expected())
        .await
        .map_err(about("organization"))?;
    audit::record(
        ctx,
        &records,
        Change {
            kind: "admin.organization.renamed",
            what: format!("organization {guid} renamed to {name:?}"),
            ..Change::default()
        },
    )
    .await?;
    found(ctx, &id, guid).await
}

/// Deletes the organization with its field-service records and memberships, and revokes
/// every grant bound to it.
pub async fn delete(ctx: &Ctx<'_>, tenant: &str, guid: &str) -> Result<(), AdminError> {
    let id = ctx.tenant(tenant).await?;
    let guid = known_shape(guid)?;
    let records = ctx.records(&id);
    records
        .delete_organization(guid, ctx.now)
        .await
        .map_err(about("organization"))?;
    audit::record(
        ctx,
        &records,
        Change {
            kind: "admin.organization.deleted",
            what: format!("organization {guid} deleted; its grants revoked"),
            ..Change::default()
        },
    )
    .await
}

/// The organization's members, by username.
pub async fn members(
    ctx: &Ctx<'_>,
    tenant: &str,
    guid: &str,
    request: &PageRequest<String>,
) -> Result<Page<MemberView>, AdminError> {
    let id = ctx.tenant(tenant).await?;
    let guid = known_shape(guid)?;
    let records = ctx.records(&id);
    if records.find_organization(guid).await?.is_none() {
        return Err(AdminError::NotFound("organization"));
    }
    let rows = records
        .list_members(guid, request.after.as_deref(), request.fetch())
        .await?;
    Ok(Page::from_rows(
        rows,
        request,
        |m| m.username.clone(),
        MemberView::from,
    ))
}

/// Makes the user `sub` a member; adding a member again changes nothing.
pub async fn add_member(
    ctx: &Ctx<'_>,
    tenant: &str,
    guid: &str,
    sub: &str,
) -> Result<Added, AdminError> {
    let id = ctx.tenant(tenant).await?;
    let guid = known_shape(guid)?;
    let records = ctx.records(&id);
    match records.add_membership(sub, guid, ctx.now).await {
        Ok(()) => {}
        Err(store::StoreError::Conflict(store::Entity::Membership)) => {
            return Ok(Added::AlreadyMember)
        }
        Err(other) => return Err(about("membership")(other)),
    }
    audit::record(
        ctx,
        &records,
        Change {
            kind: "admin.membership.added",
            subject: Some(sub),
            what: format!("user {sub} added to organization {guid}"),
            ..Change::default()
        },
    )
    .await?;
    Ok(Added::Added)
}

/// Ends the membership and revokes the user's grants bound to the organization.
pub async fn remove_member(
    ctx: &Ctx<'_>,
    tenant: &str,
    guid: &str,
    sub: &str,
) -> Result<(), AdminError> {
    let id = ctx.tenant(tenant).await?;
    let guid = known_shape(guid)?;
    let records = ctx.records(&id);
    if records.find_organization(guid).await?.is_none() {
        return Err(AdminError::NotFound("organization"));
    }
    records
        .remove_member(sub, guid, ctx.now)
        .await
        .map_err(about("membership"))?;
    audit::record(
        ctx,
        &records,
        Change {
            kind: "admin.membership.removed",
            subject: Some(sub),
            what: format!("user {sub} removed from organization {guid}; its grants revoked"),
            ..Change::default()
        },
    )
    .await
}

/// The `sub` of the user named `username` in the tenant, if any: the CLI names members by
/// username.
pub async fn sub_of_username(
    ctx: &Ctx<'_>,
    tenant: &str,
    username: &str,
) -> Result<Option<String>, AdminError> {
    let id = ctx.tenant(tenant).await?;
    let user = ctx.records(&id).find_user_by_username(username).await?;
    Ok(user.map(|u| u.user_id))
}

async fn found(
    ctx: &Ctx<'_>,
    tenant: &TenantId,
    guid: &str,
) -> Result<Versioned<OrganizationView>, AdminError> {
    let guid = known_shape(guid)?;
    let (organization, revision) = ctx
        .records(tenant)
        .find_organization_with_revision(guid)
        .await?
        .ok_or(AdminError::NotFound("organization"))?;
    Ok(Versioned {
        value: organization.into(),
        revision,
    })
}

/// A guid of another shape is an organization that is not there; checked before the store
/// is asked, so no caller's text reaches a query it cannot match.
fn known_shape(guid: &str) -> Result<&str, AdminError> {
    match is_organization_guid(guid) {
        true => Ok(guid),
        false => Err(AdminError::NotFound("organization")),
    }
}

#[cfg(test)]
mod tests {
    use super::is_organization_guid;

    #[test]
    fn an_organization_guid_is_a_lowercase_uuid() {
        assert!(is_organization_guid("0f8fad5b-d9cb-469f-a165-70867728950e"));
        for bad in [
            "",
            "0f8fad5b-d9cb-469f-a165-70867728950",
            "0F8FAD5B-D9CB-469F-A165-70867728950E",
            "0f8fad5b-d9cb-469f-a165-70867728950\u{0}",
            "0f8fad5bd9cb-469f-a165-70867728950ee",
        ] {
            assert!(!is_organization_guid(bad), "{bad:?}");
        }
    }
}
