//! (filled by the passkeys work of issue 24)
use crate::error::OAuthError;
use crate::state::OAuthState;
use jose::UnixTime;
use store::TenantId;
pub(crate) struct Verified {
    pub user_id: String,
    pub factor: crate::mfa::Factor,
}
pub(crate) async fn finish_authentication(
    _s: &OAuthState,
    _t: &TenantId,
    _c: &str,
    _j: &str,
    _e: Option<&str>,
    _n: UnixTime,
) -> Result<Option<Verified>, OAuthError> {
    Ok(None)
}
