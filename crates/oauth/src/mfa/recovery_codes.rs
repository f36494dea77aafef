//! (filled by the recovery_codes work of issue 24)
use crate::error::OAuthError;
use crate::state::OAuthState;
use jose::UnixTime;
use store::TenantId;
pub(crate) async fn redeem(
    _s: &OAuthState,
    _t: &TenantId,
    _u: &str,
    _c: &str,
    _n: UnixTime,
) -> Result<bool, OAuthError> {
    Ok(false)
}
pub(crate) async fn remaining(_s: &OAuthState, _t: &TenantId, _u: &str) -> Result<i64, OAuthError> {
    Ok(0)
}
