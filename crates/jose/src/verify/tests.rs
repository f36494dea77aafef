//! Tests of `verify.rs`: a round trip, then each refusal with its exact error.

use std::sync::OnceLock;

use aws_lc_rs::hmac;
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::RSA_PKCS1_SHA256;
use serde_json::{json, Value};

use super::*;
use crate::{generate_signing_key, Jwk, SigningKey};

const ISSUER: &str = "https://auth.example.test/t1";
const AUDIENCE: &str = "https://api.example.test";
const NOW: UnixTime = 1_700_000_000;

/// RSA generation is slow in debug builds: one key for the whole module.
fn key() -> &'static SigningKey {
    static KEY: OnceLock<SigningKey> = OnceLock::new();
    KEY.get_or_init(|| {
        let generated = generate_signing_key().unwrap();
        SigningKey::from_pkcs8(&generated.kid, &generated.pkcs8_der).unwrap()
    })
}

fn keys() -> VerificationKeys {
    VerificationKeys::from_jwks(&Jwks {
        keys: vec![key().public_jwk().clone()],
    })
    .unwrap()
}

fn validation(now: UnixTime) -> Validation<'static> {
    Validation {
        typ: "at+jwt",
        issuer: ISSUER,
        audience: AUDIENCE,
        now,
        leeway: 0,
    }
}

fn claims() -> Value {
    json!({
        "iss": ISSUER,
        "aud": AUDIENCE,
        "sub": "user-1",
        "iat": NOW,
        "exp": NOW + 3600,
    })
}

fn with(mut claims: Value, name: &str, value: Value) -> Value {
    claims[name] = value;
    claims
}

fn without(mut claims: Value, name: &str) -> Value {
    claims.as_object_mut().unwrap().remove(name);
    claims
}

fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Sign an arbitrary header and payload with the test key, bypassing `sign_jwt`'s fixed header.
fn sign_raw(header: &Value, claims: &Value) -> String {
    let input = format!(
        "{}.{}",
        b64(header.to_string().as_bytes()),
        b64(claims.to_string().as_bytes())
    );
    let mut signature = vec![0u8; key().key_pair.public_modulus_len()];
    key()
        .key_pair
        .sign(
            &RSA_PKCS1_SHA256,
            &SystemRandom::new(),
            input.as_bytes(),
            &mut signature,
        )
        .unwrap();
    format!("{input}.{}", b64(&signature))
}

/// Verify as `Value` and return the refusal, checking its message leaks no part of the token.
fn refusal(token: &str, validation: &Validation) -> JoseError {
    let error = verify_jwt::<Value>(token, &keys(), validation).unwrap_err();
    let message = error.to_string();
    for part in token.split('.').filter(|p| p.len() > 3) {
        assert!(!message.contains(part), "{message}");
    }
    error
}

#[derive(Debug, PartialEq, serde::Deserialize)]
struct AccessClaims {
    sub: String,
    exp: i64,
}

#[test]
fn signed_token_verifies_and_yields_its_claims() {
    let token = key().sign_jwt("at+jwt", &claims()).unwrap();
    let verified: AccessClaims = verify_jwt(&token, &keys(), &validation(NOW)).unwrap();
    assert_eq!(
        verified,
        AccessClaims {
            sub: "user-1".into(),
            exp: NOW + 3600
        }
    );
}

#[test]
fn decode_header_reads_without_verifying() {
    let token = key().sign_jwt("at+jwt", &claims()).unwrap();
    assert_eq!(
        decode_header(&token).unwrap(),
        Header {
            alg: "RS256".into(),
            typ: Some("at+jwt".into()),
            kid: Some(key().kid().into()),
        }
    );
    assert!(matches!(decode_header("abc"), Err(JoseError::Malformed(_))));
}

#[test]
fn tampered_payload_is_bad_signature() {
    let token = key().sign_jwt("at+jwt", &claims()).unwrap();
    let forged = b64(with(claims(), "sub", json!("admin")).to_string().as_bytes());
    let parts: Vec<&str> = token.split('.').collect();
    let tampered = format!("{}.{forged}.{}", parts[0], parts[2]);
    assert!(matches!(
        refusal(&tampered, &validation(NOW)),
        JoseError::BadSignature
    ));
}

#[test]
fn tampered_signature_is_bad_signature() {
    let token = key().sign_jwt("at+jwt", &claims()).unwrap();
    let (input, signature) = token.rsplit_once('.').unwrap();
    let flipped = if signature.starts_with('A') { "B" } else { "A" };
    let tampered = format!("{input}.{flipped}{}", &signature[1..]);
    assert!(matches!(
        refusal(&tampered, &validation(NOW)),
        JoseError::BadSignature
    ));
    // 340 of 342 characters: 255 whole bytes, still canonical base64url.
    let truncated = format!("{input}.{}", &signature[..340]);
    assert!(matches!(
        refusal(&truncated, &validation(NOW)),
        JoseError::BadSignature
    ));
}

/// RFC 8725 §2.1, §3.1: an unsecured JWT is never accepted.
#[test]
fn alg_none_is_unsupported_algorithm() {
    let header = json!({"alg": "none", "typ": "at+jwt", "kid": key().kid()});
    let token = format!(
        "{}.{}.",
        b64(header.to_string().as_bytes()),
        b64(claims().to_string().as_bytes())
    );
    assert!(matches!(
        refusal(&token, &validation(NOW)),
        JoseError::UnsupportedAlgorithm
    ));
}

/// RFC 8725 §2.1: HS256 keyed with the RSA public key must not pass as a signature.
#[test]
fn hs256_signed_with_public_key_is_unsupported_algorithm() {
    let header = json!({"alg": "HS256", "typ": "at+jwt", "kid": key().kid()});
    let input = format!(
        "{}.{}",
        b64(header.to_string().as_bytes()),
        b64(claims().to_string().as_bytes())
    );
    let public_key_bytes = serde_json::to_vec(key().public_jwk()).unwrap();
    let mac = hmac::sign(
        &hmac::Key::new(hmac::HMAC_SHA256, &public_key_bytes),
        input.as_bytes(),
    );
    let token = format!("{input}.{}", b64(mac.as_ref()));
    assert!(matches!(
        refusal(&token, &validation(NOW)),
        JoseError::UnsupportedAlgorithm
    ));
}

#[test]
fn alg_other_than_exactly_rs256_is_unsupported_algorithm() {
    for alg in ["rs256", "RS512", "PS256", "ES256"] {
        let token = sign_raw(
            &json!({"alg": alg, "typ": "at+jwt", "kid": key().kid()}),
            &claims(),
        );
        assert!(
            matches!(
                refusal(&token, &validation(NOW)),
                JoseError::UnsupportedAlgorithm
            ),
            "{alg}"
        );
    }
}

/// RFC 8725 §3.11: an ID token (`typ: JWT`) is not an access token.
#[test]
fn wrong_or_missing_typ_is_unexpected_type() {
    let id_token = key().sign_jwt("JWT", &claims()).unwrap();
    assert!(matches!(
        refusal(&id_token, &validation(NOW)),
        JoseError::UnexpectedType
    ));
    let untyped = sign_raw(&json!({"alg": "RS256", "kid": key().kid()}), &claims());
    assert!(matches!(
        refusal(&untyped, &validation(NOW)),
        JoseError::UnexpectedType
    ));
}

/// RFC 9068 §4 / RFC 7515 §4.1.9: `application/at+jwt` and case differences are the same type.
#[test]
fn typ_compares_case_insensitively_with_optional_application_prefix() {
    for typ in ["application/at+jwt", "AT+JWT", "Application/At+Jwt"] {
        let token = key().sign_jwt(typ, &claims()).unwrap();
        assert!(
            verify_jwt::<Value>(&token, &keys(), &validation(NOW)).is_ok(),
            "{typ}"
        );
    }
    let token = key().sign_jwt("at+jwt", &claims()).unwrap();
    let prefixed = Validation {
        typ: "application/at+jwt",
        ..validation(NOW)
    };
    assert!(verify_jwt::<Value>(&token, &keys(), &prefixed).is_ok());
    let other = key().sign_jwt("application/jwt", &claims()).unwrap();
    assert!(matches!(
        refusal(&other, &validation(NOW)),
        JoseError::UnexpectedType
    ));
}

#[test]
fn unknown_or_missing_kid_is_unknown_key() {
    let token = key().sign_jwt("at+jwt", &claims()).unwrap();
    let mut renamed = key().public_jwk().clone();
    renamed.kid = "other".into();
    let other_keys = VerificationKeys::from_jwks(&Jwks {
        keys: vec![renamed],
    })
    .unwrap();
    assert!(other_keys.contains("other"));
    assert!(!other_keys.contains(key().kid()));
    assert!(matches!(
        verify_jwt::<Value>(&token, &other_keys, &validation(NOW)),
        Err(JoseError::UnknownKey)
    ));
    let no_kid = sign_raw(&json!({"alg": "RS256", "typ": "at+jwt"}), &claims());
    assert!(matches!(
        refusal(&no_kid, &validation(NOW)),
        JoseError::UnknownKey
    ));
}

/// RFC 7519 §4.1.4: refused on or after `exp`, leeway included.
#[test]
fn token_at_or_after_exp_is_expired() {
    let exp = NOW + 3600;
    let token = key().sign_jwt("at+jwt", &claims()).unwrap();
    assert!(verify_jwt::<Value>(&token, &keys(), &validation(exp - 1)).is_ok());
    assert!(matches!(
        refusal(&token, &validation(exp)),
        JoseError::Expired
    ));
    let lenient = |now| Validation {
        leeway: 30,
        ..validation(now)
    };
    assert!(verify_jwt::<Value>(&token, &keys(), &lenient(exp + 29)).is_ok());
    assert!(matches!(
        refusal(&token, &lenient(exp + 30)),
        JoseError::Expired
    ));
}

/// RFC 7519 §4.1.5: refused before `nbf`, leeway included.
#[test]
fn token_before_nbf_is_not_yet_valid() {
    let nbf = NOW + 60;
    let token = key()
        .sign_jwt("at+jwt", &with(claims(), "nbf", json!(nbf)))
        .unwrap();
    assert!(matches!(
        refusal(&token, &validation(nbf - 1)),
        JoseError::NotYetValid
    ));
    assert!(verify_jwt::<Value>(&token, &keys(), &validation(nbf)).is_ok());
    let lenient = Validation {
        leeway: 5,
        ..validation(nbf - 5)
    };
    assert!(verify_jwt::<Value>(&token, &keys(), &lenient).is_ok());
}

#[test]
fn fractional_dates_round_toward_refusal() {
    let token = key()
        .sign_jwt(
            "at+jwt",
            &with(with(claims(), "exp", json!(100.5)), "nbf", json!(10.5)),
        )
        .unwrap();
    assert!(matches!(
        refusal(&token, &validation(10)),
        JoseError::NotYetValid
    ));
    assert!(verify_jwt::<Value>(&token, &keys(), &validation(11)).is_ok());
    assert!(verify_jwt::<Value>(&token, &keys(), &validation(99)).is_ok());
    assert!(matches!(
        refusal(&token, &validation(100)),
        JoseError::Expired
    ));
}

#[test]
fn wrong_issuer_is_invalid_issuer() {
    let token = key()
        .sign_jwt(
            "at+jwt",
            &with(claims(), "iss", json!("https://auth.example.test/t2")),
        )
        .unwrap();
    assert!(matches!(
        refusal(&token, &validation(NOW)),
        JoseError::InvalidIssuer
    ));
}

#[test]
fn wrong_audience_is_invalid_audience() {
    for aud in [
        json!("https://other.example.test"),
        json!(["a", "b"]),
        json!([]),
    ] {
        let token = key()
            .sign_jwt("at+jwt", &with(claims(), "aud", aud.clone()))
            .unwrap();
        assert!(
            matches!(
                refusal(&token, &validation(NOW)),
                JoseError::InvalidAudience
            ),
            "{aud}"
        );
    }
}

/// RFC 7519 §4.1.3: an array audience passes when it contains ours.
#[test]
fn audience_array_containing_ours_passes() {
    let token = key()
        .sign_jwt(
            "at+jwt",
            &with(claims(), "aud", json!(["client-1", AUDIENCE])),
        )
        .unwrap();
    assert!(verify_jwt::<Value>(&token, &keys(), &validation(NOW)).is_ok());
}

#[test]
fn missing_registered_claims_are_named() {
    for (name, expected) in [("iss", "iss"), ("aud", "aud"), ("exp", "exp")] {
        let token = key().sign_jwt("at+jwt", &without(claims(), name)).unwrap();
        match refusal(&token, &validation(NOW)) {
            JoseError::MissingClaim(claim) => assert_eq!(claim, expected),
            other => panic!("{name}: {other:?}"),
        }
    }
}

/// RFC 7519 §7.2: a signed payload that is an array, not an object, is refused.
#[test]
fn payload_that_is_not_an_object_is_malformed() {
    let token = sign_raw(
        &json!({"alg": "RS256", "typ": "at+jwt", "kid": key().kid()}),
        &json!([ISSUER, AUDIENCE, NOW + 3600]),
    );
    assert!(matches!(
        refusal(&token, &validation(NOW)),
        JoseError::Malformed("payload is not a JSON object")
    ));
}

#[test]
fn claims_are_checked_before_they_are_deserialized() {
    #[derive(Debug, serde::Deserialize)]
    struct NeedsScope {
        #[allow(dead_code)]
        scope: String,
    }
    let token = key().sign_jwt("at+jwt", &claims()).unwrap();
    assert!(matches!(
        verify_jwt::<NeedsScope>(&token, &keys(), &validation(NOW + 3600)),
        Err(JoseError::Expired)
    ));
    assert!(matches!(
        verify_jwt::<NeedsScope>(&token, &keys(), &validation(NOW)),
        Err(JoseError::Malformed(_))
    ));
}

#[test]
fn token_not_three_base64url_json_parts_is_malformed() {
    let token = key().sign_jwt("at+jwt", &claims()).unwrap();
    let (header, rest) = token.split_once('.').unwrap();
    let cases = [
        String::new(),
        "abc".to_owned(),
        format!("{header}.{rest}.extra"),
        rest.to_owned(),
        format!("{header}=.{rest}"),
        format!("{}.{rest}", b64(b"not json")),
        format!("{}.{rest}", b64(br#"{"typ":"at+jwt"}"#)),
        format!("{}.{rest}", b64(br#"["RS256"]"#)),
        format!("{}.{rest}", b64(br#"{"alg":"RS256","alg":"none"}"#)),
    ];
    for case in cases {
        assert!(
            matches!(refusal(&case, &validation(NOW)), JoseError::Malformed(_)),
            "{case}"
        );
    }
}

/// RFC 7515 §4.1.11: a `crit` extension we do not understand makes the token invalid.
#[test]
fn crit_header_is_refused() {
    let token = sign_raw(
        &json!({"alg": "RS256", "typ": "at+jwt", "kid": key().kid(), "crit": ["exp"], "exp": 1}),
        &claims(),
    );
    assert!(matches!(
        refusal(&token, &validation(NOW)),
        JoseError::Malformed(_)
    ));
}

#[test]
fn verification_keys_refuse_unusable_jwks() {
    let good = key().public_jwk().clone();
    let refuse = |jwk: Jwk| {
        matches!(
            VerificationKeys::from_jwks(&Jwks { keys: vec![jwk] }),
            Err(JoseError::InvalidKey(_))
        )
    };
    assert!(refuse(Jwk {
        alg: "PS256".into(),
        ..good.clone()
    }));
    assert!(refuse(Jwk {
        n: "not base64!".into(),
        ..good.clone()
    }));
    // 1024-bit modulus: RFC 7518 §3.3 requires 2048 or more.
    assert!(refuse(Jwk::rsa_signing("small", &[0xc5; 128], &[1, 0, 1])));
    // A 2048-bit value with a leading zero byte is not the minimal encoding.
    let mut padded = vec![0u8];
    padded.extend(URL_SAFE_NO_PAD.decode(&good.n).unwrap());
    assert!(refuse(Jwk {
        n: b64(&padded),
        ..good.clone()
    }));
}

#[test]
fn verification_keys_keep_first_of_duplicate_kids() {
    let good = key().public_jwk().clone();
    let impostor = Jwk::rsa_signing(good.kid.clone(), &[0xc5; 256], &[1, 0, 1]);
    let keys = VerificationKeys::from_jwks(&Jwks {
        keys: vec![good.clone(), impostor],
    })
    .unwrap();
    let token = key().sign_jwt("at+jwt", &claims()).unwrap();
    assert!(verify_jwt::<Value>(&token, &keys, &validation(NOW)).is_ok());
    assert_eq!(format!("{keys:?}"), format!("[{:?}]", good.kid));
}

#[test]
fn media_types_compare_per_rfc7515() {
    assert!(media_type_eq("at+jwt", "at+jwt"));
    assert!(media_type_eq("application/AT+JWT", "at+jwt"));
    assert!(!media_type_eq("application/", "at+jwt"));
    assert!(!media_type_eq("text/at+jwt", "at+jwt"));
    assert!(!media_type_eq("at+jwt2", "at+jwt"));
}

#[test]
fn modulus_bits_counts_significant_bits() {
    assert_eq!(modulus_bits(&[]), 0);
    assert_eq!(modulus_bits(&[0, 0]), 0);
    assert_eq!(modulus_bits(&[0, 1]), 1);
    assert_eq!(modulus_bits(&[0x80; 256]), 2048);
    assert_eq!(modulus_bits(&[0x7f; 256]), 2047);
}

#[test]
fn bearer_tokens_need_the_bearer_scheme_and_a_token() {
    assert_eq!(bearer_token("Bearer abc"), Some("abc"));
    assert_eq!(bearer_token("bearer  abc "), Some("abc"));
    assert_eq!(bearer_token("Basic abc"), None);
    assert_eq!(bearer_token("Bearer "), None);
    assert_eq!(bearer_token("Bearer"), None);
}
