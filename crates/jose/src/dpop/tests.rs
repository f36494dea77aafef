#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{
    EcdsaKeyPair, Ed25519KeyPair, KeyPair as _, ECDSA_P256_SHA256_FIXED_SIGNING,
};
use serde_json::json;

use super::*;

const NOW: UnixTime = 1_800_000_000;
const URL: &str = "https://auth.example.com/oauth/token";

fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// A client's P-256 key, signing proofs the way RFC 9449 §4.2 shows.
struct Client {
    pair: EcdsaKeyPair,
}

impl Client {
    fn new() -> Client {
        let pkcs8 =
            EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &SystemRandom::new())
                .unwrap();
        Client {
            pair: EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref())
                .unwrap(),
        }
    }

    fn jwk(&self) -> Value {
        let point = self.pair.public_key().as_ref();
        json!({"kty": "EC", "crv": "P-256", "x": b64(&point[1..33]), "y": b64(&point[33..65])})
    }

    fn sign(&self, header: &Value, claims: &Value) -> String {
        let input = format!(
            "{}.{}",
            b64(header.to_string().as_bytes()),
            b64(claims.to_string().as_bytes())
        );
        let signature = self
            .pair
            .sign(&SystemRandom::new(), input.as_bytes())
            .unwrap();
        format!("{input}.{}", b64(signature.as_ref()))
    }

    fn header(&self) -> Value {
        json!({"typ": "dpop+jwt", "alg": "ES256", "jwk": self.jwk()})
    }

    fn proof(&self, claims: Value) -> String {
        self.sign(&self.header(), &claims)
    }
}

fn claims() -> Value {
    json!({"jti": "e1j3V_bKic8-LAEB", "htm": "POST", "htu": URL, "iat": NOW})
}

fn request() -> ProofRequest<'static> {
    ProofRequest {
        method: "POST",
        url: URL,
        access_token: None,
        now: NOW,
    }
}

fn refused(proof: &str, request: &ProofRequest) -> &'static str {
    match verify_proof(proof, request) {
        Err(JoseError::InvalidProof(why)) => why,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

fn with(mut value: Value, key: &str, member: Value) -> Value {
    value[key] = member;
    value
}

fn without(mut value: Value, key: &str) -> Value {
    value.as_object_mut().unwrap().remove(key);
    value
}

#[test]
fn a_proof_of_this_request_passes_and_names_its_key() {
    let client = Client::new();
    let proof = verify_proof(&client.proof(claims()), &request()).unwrap();
    assert_eq!(proof.jti, "e1j3V_bKic8-LAEB");
    assert_eq!(proof.iat, NOW);
    assert_eq!(proof.nonce, None);
    // RFC 7638 §3: SHA-256 over the required members in order, without whitespace.
    let jwk = client.jwk();
    let canonical = format!(
        r#"{{"crv":"P-256","kty":"EC","x":"{}","y":"{}"}}"#,
        jwk["x"].as_str().unwrap(),
        jwk["y"].as_str().unwrap()
    );
    assert_eq!(
        proof.jkt,
        b64(digest(&SHA256, canonical.as_bytes()).as_ref())
    );
    let with_nonce = client.proof(with(claims(), "nonce", json!("n-1")));
    assert_eq!(
        verify_proof(&with_nonce, &request())
            .unwrap()
            .nonce
            .as_deref(),
        Some("n-1")
    );
}

#[test]
fn the_rfc_7638_example_key_has_the_rfc_thumbprint() {
    let jwk = json!({
        "kty": "RSA",
        "n": "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw",
        "e": "AQAB",
        "alg": "RS256",
        "kid": "2011-04-29"
    });
    let key = key::ProofKey::from_jwk(jwk.as_object().unwrap(), "RS256").unwrap();
    assert_eq!(
        key.thumbprint(),
        "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"
    );
}

#[test]
fn an_ed25519_proof_passes() {
    let pkcs8 = Ed25519KeyPair::generate_pkcs8(&SystemRandom::new()).unwrap();
    let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap();
    let header = json!({"typ": "dpop+jwt", "alg": "EdDSA",
        "jwk": {"kty": "OKP", "crv": "Ed25519", "x": b64(pair.public_key().as_ref())}});
    let input = format!(
        "{}.{}",
        b64(header.to_string().as_bytes()),
        b64(claims().to_string().as_bytes())
    );
    let proof = format!("{input}.{}", b64(pair.sign(input.as_bytes()).as_ref()));
    assert!(verify_proof(&proof, &request()).is_ok());
}

#[test]
fn the_request_must_be_the_one_the_proof_names() {
    let client = Client::new();
    let proof = client.proof(claims());
    let get = ProofRequest {
        method: "GET",
        ..request()
    };
    assert_eq!(refused(&proof, &get), "htm is not this request's method");
    let userinfo = ProofRequest {
        url: "https://auth.example.com/oauth/userinfo",
        ..request()
    };
    assert_eq!(refused(&proof, &userinfo), "htu is not this endpoint's URL");
    // Query and fragment do not count, and both sides are normalized (RFC 3986 §6).
    for htu in [
        "https://auth.example.com/oauth/token?x=1",
        "https://auth.example.com/oauth/token#f",
        "HTTPS://Auth.Example.com:443/oauth/token",
    ] {
        let proof = client.proof(with(claims(), "htu", json!(htu)));
        assert!(verify_proof(&proof, &request()).is_ok(), "{htu}");
    }
    for htu in [
        "https://auth.example.com:8443/oauth/token",
        "http://auth.example.com/oauth/token",
        "https://auth.example.com/oauth/token/",
        "/oauth/token",
    ] {
        let proof = client.proof(with(claims(), "htu", json!(htu)));
        assert_eq!(
            refused(&proof, &request()),
            "htu is not this endpoint's URL",
            "{htu}"
        );
    }
}

#[test]
fn iat_must_be_within_the_window() {
    let client = Client::new();
    for iat in [NOW - PROOF_WINDOW, NOW + PROOF_WINDOW] {
        let proof = client.proof(with(claims(), "iat", json!(iat)));
        assert!(verify_proof(&proof, &request()).is_ok(), "{iat}");
    }
    for iat in [
        json!(NOW - PROOF_WINDOW - 1),
        json!(NOW + PROOF_WINDOW + 1),
        json!("now"),
    ] {
        let proof = client.proof(with(claims(), "iat", iat.clone()));
        assert!(verify_proof(&proof, &request()).is_err(), "{iat}");
    }
}

#[test]
fn with_an_access_token_ath_must_be_its_hash() {
    let client = Client::new();
    let token = "eyJhbGciOiJSUzI1NiJ9.e30.sig";
    let ath = b64(digest(&SHA256, token.as_bytes()).as_ref());
    let resource = ProofRequest {
        access_token: Some(token),
        ..request()
    };
    let proof = client.proof(with(claims(), "ath", json!(ath)));
    assert!(verify_proof(&proof, &resource).is_ok());
    assert_eq!(
        refused(&client.proof(claims()), &resource),
        "the proof has no ath for the access token"
    );
    let other = client.proof(with(claims(), "ath", json!(b64(b"another token hash!"))));
    assert_eq!(
        refused(&other, &resource),
        "ath is not the hash of this access token"
    );
}

#[test]
fn every_required_claim_must_be_there() {
    let client = Client::new();
    for claim in ["jti", "htm", "htu", "iat"] {
        let proof = client.proof(without(claims(), claim));
        assert!(verify_proof(&proof, &request()).is_err(), "{claim}");
    }
    let empty_jti = client.proof(with(claims(), "jti", json!("")));
    assert!(verify_proof(&empty_jti, &request()).is_err());
}

#[test]
fn the_header_must_type_the_proof_and_carry_a_public_key_of_its_alg() {
    let client = Client::new();
    let header = client.header();
    let cases = [
        (
            with(header.clone(), "typ", json!("JWT")),
            "typ must be dpop+jwt",
        ),
        (without(header.clone(), "typ"), "typ must be dpop+jwt"),
        (
            with(header.clone(), "alg", json!("none")),
            "unsupported alg",
        ),
        (
            with(header.clone(), "alg", json!("HS256")),
            "unsupported alg",
        ),
        (
            with(header.clone(), "alg", json!("ES384")),
            "the jwk's curve does not match alg",
        ),
        (
            with(header.clone(), "alg", json!("RS256")),
            "the jwk's key type does not match alg",
        ),
        (without(header.clone(), "jwk"), "the header has no jwk"),
        (
            with(header.clone(), "crit", json!(["exp"])),
            "critical header extension not understood",
        ),
        (
            with(
                header.clone(),
                "jwk",
                with(client.jwk(), "d", json!(b64(&[7; 32]))),
            ),
            "the jwk header holds private key material",
        ),
    ];
    for (header, why) in cases {
        assert_eq!(refused(&client.sign(&header, &claims()), &request()), why);
    }
}

#[test]
fn a_proof_signed_by_another_key_or_altered_is_refused() {
    let (client, thief) = (Client::new(), Client::new());
    // The thief signs, but names the client's key.
    let forged = thief.sign(&client.header(), &claims());
    assert_eq!(
        refused(&forged, &request()),
        "the proof's signature does not verify with its jwk"
    );
    let proof = client.proof(claims());
    let (input, _) = proof.rsplit_once('.').unwrap();
    let other = client.proof(with(claims(), "jti", json!("another")));
    let (_, signature) = other.rsplit_once('.').unwrap();
    assert!(verify_proof(&format!("{input}.{signature}"), &request()).is_err());
    assert!(verify_proof("not.a.proof", &request()).is_err());
    assert!(verify_proof(&"a".repeat(10_000), &request()).is_err());
}

#[test]
fn the_replay_key_depends_on_the_key_and_the_jti() {
    let proof = |jkt: &str, jti: &str| Proof {
        jkt: jkt.into(),
        jti: jti.into(),
        iat: NOW,
        nonce: None,
    };
    let one = proof("k1", "j1").replay_key();
    assert_eq!(one, proof("k1", "j1").replay_key());
    assert_ne!(one, proof("k2", "j1").replay_key());
    assert_ne!(one, proof("k1", "j2").replay_key());
    assert_ne!(proof("k", "1j").replay_key(), proof("k1", "j").replay_key());
}

#[test]
fn the_scheme_is_read_case_insensitively() {
    assert_eq!(presented_token("Bearer abc"), Some((Scheme::Bearer, "abc")));
    assert_eq!(presented_token("dpop abc "), Some((Scheme::Dpop, "abc")));
    assert_eq!(presented_token("DPoP "), None);
    assert_eq!(presented_token("Basic abc"), None);
    assert_eq!(presented_token("abc"), None);
}

#[test]
fn a_bound_token_goes_only_with_the_dpop_scheme_and_a_proof_by_its_key() {
    let (client, thief) = (Client::new(), Client::new());
    let token = "header.claims.signature";
    let url = "https://api.example.com/api";
    let resource_claims = |who: &Client| {
        let ath = b64(digest(&SHA256, token.as_bytes()).as_ref());
        who.proof(json!({"jti": "j", "htm": "POST", "htu": url, "iat": NOW, "ath": ath}))
    };
    let jkt = verify_proof(
        &resource_claims(&client),
        &ProofRequest {
            method: "POST",
            url,
            access_token: Some(token),
            now: NOW,
        },
    )
    .unwrap()
    .jkt;
    let check = |scheme, jkt: Option<&str>, proofs: &[&str]| {
        check_presentation(scheme, token, jkt, proofs, "POST", url, NOW)
    };
    let good = resource_claims(&client);
    let stolen = resource_claims(&thief);

    assert_eq!(check(Scheme::Bearer, None, &[]), Ok(None));
    assert!(matches!(
        check(Scheme::Dpop, None, &[&good]),
        Err(BindingError::InvalidToken(_))
    ));
    assert!(matches!(
        check(Scheme::Bearer, Some(&jkt), &[&good]),
        Err(BindingError::InvalidToken(_))
    ));
    for proofs in [&[][..], &[good.as_str(), good.as_str()][..]] {
        assert_eq!(
            check(Scheme::Dpop, Some(&jkt), proofs),
            Err(BindingError::InvalidProof(
                "exactly one DPoP header is required"
            ))
        );
    }
    assert_eq!(
        check(Scheme::Dpop, Some(&jkt), &[&stolen]),
        Err(BindingError::InvalidProof(
            "the proof is not signed by the key the access token is bound to"
        ))
    );
    let accepted = check(Scheme::Dpop, Some(&jkt), &[&good]).unwrap().unwrap();
    assert_eq!(accepted.jkt, jkt);
}
