//! (filled by the totp work of issue 24)
use crate::error::OAuthError;
use crate::state::OAuthState;
use jose::UnixTime;
use store::TenantId;
pub(crate) struct Enrollment {
    pub secret_base32: String,
    pub otpauth_uri: String,
    pub qr_svg: String,
}
pub(crate) async fn verify(
    _s: &OAuthState,
    _t: &TenantId,
    _u: &str,
    _c: &str,
    _n: UnixTime,
) -> Result<bool, OAuthError> {
    Ok(false)
}
pub(crate) async fn begin_enrollment(
    _s: &OAuthState,
    _t: &TenantId,
    _u: &store::User,
    _n: UnixTime,
) -> Result<Enrollment, OAuthError> {
    Ok(Enrollment {
        secret_base32: String::new(),
        otpauth_uri: String::new(),
        qr_svg: String::new(),
    })
}
pub(crate) async fn confirm_enrollment(
    _s: &OAuthState,
    _t: &TenantId,
    _u: &str,
    _c: &str,
    _n: UnixTime,
) -> Result<Option<Vec<String>>, OAuthError> {
    Ok(None)
}
