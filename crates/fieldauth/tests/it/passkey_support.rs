//! A software authenticator for the passkey tests that need no browser: an ES256 key made
//! with aws-lc-rs, and the WebAuthn messages built by hand (CBOR, authenticator data, client
//! data JSON), so a test can also build the forged ones: another challenge, another
//! origin, a counter that goes back. And a server whose issuer is `localhost`, since a
//! WebAuthn RP ID must be a domain, never an IP address.

use aws_lc_rs::digest::{digest, SHA256};
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_ASN1_SIGNING};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::{json, Value};
use store::testing::TestDatabase;

use crate::helpers::TestApp;

/// A server on `db` whose issuer is `http://localhost:<port>` (the listener still binds
/// 127.0.0.1, so `app.issuer` keeps reaching it).
pub async fn spawn_on_localhost(db: TestDatabase) -> TestApp {
    TestApp::spawn_configured(db, oauth::ThrottlePolicy::default(), |config| {
        let issuer = format!("http://localhost:{}", config.auth_listen.port());
        config.issuer = oauth::Issuer::parse(&issuer).unwrap();
    })
    .await
}

/// The origin browsers use for the server of `app` (its issuer's).
pub fn origin_of(app: &TestApp) -> String {
    let port = url::Url::parse(&app.issuer).unwrap().port().unwrap();
    format!("http://localhost:{port}")
}

pub fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

fn unb64(text: &str) -> Vec<u8> {
    URL_SAFE_NO_PAD.decode(text).unwrap()
}

/// What an assertion changes from an honest one.
#[derive(Clone, Copy, Debug, Default)]
pub struct Forgery<'a> {
    pub origin: Option<&'a str>,
    pub challenge: Option<&'a str>,
    /// The signature counter to claim instead of the next one.
    pub counter: Option<u32>,
}

/// One discoverable ES256 credential, kept like an authenticator keeps it.
pub struct SoftPasskey {
    key: EcdsaKeyPair,
    pub credential_id: Vec<u8>,
    /// The user handle the relying party gave at registration.
    pub user_handle: Vec<u8>,
    counter: u32,
    origin: String,
    rp_id: String,
}

impl SoftPasskey {
    /// A new key for the relying party at `origin` (its host is the RP ID).
    pub fn new(origin: &str) -> SoftPasskey {
        let key = EcdsaKeyPair::generate(&ECDSA_P256_SHA256_ASN1_SIGNING).unwrap();
        let credential_id = digest(&SHA256, key.public_key().as_ref()).as_ref()[..16].to_vec();
        let rp_id = url::Url::parse(origin)
            .unwrap()
            .host_str()
            .unwrap()
            .to_owned();
        SoftPasskey {
            key,
            credential_id,
            user_handle: Vec::new(),
            counter: 0,
            origin: origin.to_owned(),
            rp_id,
        }
    }

    /// The answer to registration options (`{publicKey: …}`), attestation "none", user
    /// present and verified, not backup-eligible.
    pub fn register(&mut self, options: &Value) -> String {
        let public_key = &options["publicKey"];
        assert_eq!(public_key["rp"]["id"], self.rp_id.as_str());
        self.user_handle = unb64(public_key["user"]["id"].as_str().unwrap());
        let client_data = self.client_data(
            "webauthn.create",
            public_key["challenge"].as_str().unwrap(),
            &self.origin,
        );
        let point = self.key.public_key().as_ref();
        assert_eq!(point.len(), 65, "an uncompressed P-256 point");
        // RFC 9053 §7.1.1: {1: 2 (EC2), 3: -7 (ES256), -1: 1 (P-256), -2: x, -3: y}.
        let mut cose = vec![0xa5, 0x01, 0x02, 0x03, 0x26, 0x20, 0x01, 0x21];
        cose.extend(cbor_bytes(&point[1..33]));
        cose.push(0x22);
        cose.extend(cbor_bytes(&point[33..65]));
        let mut auth_data = self.auth_data(0x45, 0);
        auth_data.extend([0u8; 16]); // AAGUID
        auth_data.extend((self.credential_id.len() as u16).to_be_bytes());
        auth_data.extend(&self.credential_id);
        auth_data.extend(cose);
        let mut attestation = vec![0xa3];
        attestation.extend(cbor_text("fmt"));
        attestation.extend(cbor_text("none"));
        attestation.extend(cbor_text("attStmt"));
        attestation.push(0xa0);
        attestation.extend(cbor_text("authData"));
        attestation.extend(cbor_bytes(&auth_data));
        json!({
            "id": b64(&self.credential_id),
            "rawId": b64(&self.credential_id),
            "type": "public-key",
            "extensions": {},
            "response": {
                "attestationObject": b64(&attestation),
                "clientDataJSON": b64(client_data.as_bytes()),
            },
        })
        .to_string()
    }

    /// The answer to authentication options, changed as `forgery` says.
    pub fn assert(&mut self, options: &Value, forgery: Forgery<'_>) -> String {
        let public_key = &options["publicKey"];
        let challenge = forgery
            .challenge
            .unwrap_or_else(|| public_key["challenge"].as_str().unwrap());
        let origin = forgery.origin.unwrap_or(&self.origin).to_owned();
        let client_data = self.client_data("webauthn.get", challenge, &origin);
        self.counter += 1;
        let counter = forgery.counter.unwrap_or(self.counter);
        let auth_data = self.auth_data(0x05, counter);
        let mut signed = auth_data.clone();
        signed.extend(digest(&SHA256, client_data.as_bytes()).as_ref());
        let signature = self.key.sign(&SystemRandom::new(), &signed).unwrap();
        json!({
            "id": b64(&self.credential_id),
            "rawId": b64(&self.credential_id),
            "type": "public-key",
            "extensions": {},
            "response": {
                "authenticatorData": b64(&auth_data),
                "clientDataJSON": b64(client_data.as_bytes()),
                "signature": b64(signature.as_ref()),
                "userHandle": b64(&self.user_handle),
            },
        })
        .to_string()
    }

    /// SHA-256 of the RP ID, the flags, the signature counter.
    fn auth_data(&self, flags: u8, counter: u32) -> Vec<u8> {
        let mut data = digest(&SHA256, self.rp_id.as_bytes()).as_ref().to_vec();
        data.push(flags);
        data.extend(counter.to_be_bytes());
        data
    }

    fn client_data(&self, kind: &str, challenge: &str, origin: &str) -> String {
        json!({ "type": kind, "challenge": challenge, "origin": origin, "crossOrigin": false })
            .to_string()
    }
}

/// RFC 8949 major type 2: a byte string.
fn cbor_bytes(bytes: &[u8]) -> Vec<u8> {
    let mut out = cbor_head(0x40, bytes.len());
    out.extend(bytes);
    out
}

/// RFC 8949 major type 3: a text string.
fn cbor_text(text: &str) -> Vec<u8> {
    let mut out = cbor_head(0x60, text.len());
    out.extend(text.as_bytes());
    out
}

fn cbor_head(major: u8, len: usize) -> Vec<u8> {
    match len {
        0..=23 => vec![major | len as u8],
        24..=255 => vec![major | 24, len as u8],
        _ => vec![major | 25, (len >> 8) as u8, len as u8],
    }
}
