//! RFC 6238 TOTP (SHA-1, 6 digits, 30-second steps) computed here, independently of the
//! crate the server uses: RFC 4648 base32 decoding and RFC 4226 dynamic truncation over
//! aws-lc-rs's HMAC-SHA1.

use aws_lc_rs::hmac;

/// The code of `secret` (base32, as the enrollment page shows it) at Unix time `at`.
pub fn totp(secret: &str, at: i64) -> String {
    let key = base32_decode(secret);
    let step = u64::try_from(at / 30).unwrap();
    let key = hmac::Key::new(hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY, &key);
    let mac = hmac::sign(&key, &step.to_be_bytes());
    let mac = mac.as_ref();
    let offset = usize::from(mac[19] & 0x0f);
    let binary = u32::from_be_bytes(mac[offset..offset + 4].try_into().unwrap()) & 0x7fff_ffff;
    format!("{:06}", binary % 1_000_000)
}

fn base32_decode(text: &str) -> Vec<u8> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let mut bits: u64 = 0;
    let mut count = 0;
    let mut out = Vec::new();
    for c in text.bytes().filter(|c| !matches!(c, b'=' | b' ' | b'-')) {
        let value = ALPHABET
            .iter()
            .position(|a| *a == c.to_ascii_uppercase())
            .unwrap_or_else(|| panic!("{c} is not base32"));
        bits = (bits << 5) | u64::try_from(value).unwrap();
        count += 5;
        if count >= 8 {
            count -= 8;
            out.push(u8::try_from((bits >> count) & 0xff).unwrap());
        }
    }
    out
}

#[test]
fn rfc_6238_appendix_b_sha1_vectors_at_six_digits() {
    // The RFC's key "12345678901234567890" in base32; its 8-digit values end in these 6.
    let secret = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ";
    for (at, code) in [
        (59, "287082"),
        (1_111_111_109, "081804"),
        (1_111_111_111, "050471"),
        (1_234_567_890, "005924"),
        (2_000_000_000, "279037"),
    ] {
        assert_eq!(totp(secret, at), code, "at {at}");
    }
}
