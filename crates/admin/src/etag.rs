//! ETags and `If-Match` (RFC 9110 §8.8.3, §13.1.1). A record's ETag is its creation time and
//! its revision, which every administrative change raises; an update sent with `If-Match`
//! applies only while both still match, checked in the update's own statement, so two admins
//! cannot overwrite each other silently. The creation time is in it so a record deleted and
//! made again under the same id does not match a tag of its predecessor.

use axum::http::HeaderValue;
use store::Revision;

use crate::error::AdminError;

/// A strong entity tag: `"<revision>-<created_at>"`.
pub fn etag(revision: Revision) -> String {
    format!("\"{}-{}\"", revision.revision, revision.created_at)
}

pub fn etag_header(revision: Revision) -> HeaderValue {
    // Digits, a dash and quotes only: always a valid header value.
    HeaderValue::from_str(&etag(revision)).unwrap_or(HeaderValue::from_static("\"0-0\""))
}

/// What an update requires of the record it changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Precondition {
    /// No `If-Match`: the update applies to whatever is there.
    #[default]
    None,
    /// `If-Match: *`: the record must exist (it must anyway).
    Exists,
    /// One of the listed tags must be the record's current one. Tags we never gave cannot
    /// match anything, and then the update is refused with 412, as RFC 9110 §13.1.1 says.
    OneOf(Option<Revision>),
}

impl Precondition {
    /// The `If-Match` header, if any. Several tags may be listed; a weak tag never matches
    /// (strong comparison). Only the first of ours is kept: one record has one current tag.
    pub fn from_if_match(value: Option<&HeaderValue>) -> Result<Precondition, AdminError> {
        let Some(value) = value else {
            return Ok(Precondition::None);
        };
        let text = value
            .to_str()
            .map_err(|_| AdminError::Invalid("If-Match: not a list of entity tags".to_owned()))?
            .trim();
        if text == "*" {
            return Ok(Precondition::Exists);
        }
        let mut ours = None;
        for tag in text.split(',').map(str::trim) {
            let quoted = tag.len() >= 2 && tag.starts_with('"') && tag.ends_with('"');
            if !quoted && !tag.starts_with("W/") {
                return Err(AdminError::Invalid(
                    "If-Match: not a list of entity tags".to_owned(),
                ));
            }
            if ours.is_none() {
                ours = parse(tag);
            }
        }
        Ok(Precondition::OneOf(ours))
    }

    /// What the store's conditional update compares: `None` when anything goes.
    pub fn expected(self) -> Option<Revision> {
        match self {
            Precondition::None | Precondition::Exists => None,
            // No tag of ours: a revision no record has, so the update matches nothing.
            Precondition::OneOf(tag) => Some(tag.unwrap_or(Revision {
                created_at: i64::MIN,
                revision: i64::MIN,
            })),
        }
    }
}

fn parse(tag: &str) -> Option<Revision> {
    let inner = tag.strip_prefix('"')?.strip_suffix('"')?;
    let (revision, created_at) = inner.split_once('-')?;
    Some(Revision {
        revision: revision.parse().ok()?,
        created_at: created_at.parse().ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(value: &str) -> Option<HeaderValue> {
        Some(HeaderValue::from_str(value).unwrap())
    }

    #[test]
    fn a_tag_given_reads_back_as_its_revision() {
        let revision = Revision {
            created_at: 1_700_000_000,
            revision: 3,
        };
        let given = etag(revision);
        assert_eq!(given, "\"3-1700000000\"");
        assert_eq!(
            Precondition::from_if_match(header(&given).as_ref()).unwrap(),
            Precondition::OneOf(Some(revision))
        );
        assert_eq!(
            Precondition::from_if_match(header(&format!("\"x\", {given}")).as_ref()).unwrap(),
            Precondition::OneOf(Some(revision)),
        );
    }

    #[test]
    fn star_absent_foreign_and_malformed() {
        assert_eq!(
            Precondition::from_if_match(None).unwrap(),
            Precondition::None
        );
        assert_eq!(
            Precondition::from_if_match(header("*").as_ref()).unwrap(),
            Precondition::Exists
        );
        let foreign = Precondition::from_if_match(header("\"abc\"").as_ref()).unwrap();
        assert_eq!(foreign, Precondition::OneOf(None));
        assert!(
            foreign.expected().is_some(),
            "a foreign tag must match nothing"
        );
        let weak = Precondition::from_if_match(header("W/\"3-1\"").as_ref()).unwrap();
        assert_eq!(weak, Precondition::OneOf(None));
        assert!(Precondition::from_if_match(header("3-1").as_ref()).is_err());
    }
}
