//! GitHub's webhook signature: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body>`.

use hmac::{Hmac, Mac};
use secrecy::{ExposeSecret, SecretString};
use sha2::Sha256;
use subtle::ConstantTimeEq;

type HmacSha256 = Hmac<Sha256>;

/// The header value GitHub would send for `body` signed with `secret`.
pub fn sign(secret: &[u8], body: &[u8]) -> String {
    let mut mac = HmacSha256::new_from_slice(secret).expect("HMAC takes a key of any length");
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

/// Whether `header` is a valid signature of `body` under any of `secrets` (rotation).
/// The digest comparison is constant time.
pub(crate) fn verify(secrets: &[SecretString], header: Option<&str>, body: &[u8]) -> bool {
    let Some(hex_digest) = header.and_then(|h| h.trim().strip_prefix("sha256=")) else {
        return false;
    };
    let Ok(given) = hex::decode(hex_digest) else {
        return false;
    };
    if given.len() != 32 {
        return false;
    }
    secrets.iter().any(|secret| {
        let mut mac =
            HmacSha256::new_from_slice(secret.expose_secret().as_bytes()).expect("HMAC takes a key of any length");
        mac.update(body);
        bool::from(mac.finalize().into_bytes().as_slice().ct_eq(&given))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn github_documented_example() {
        // From GitHub's "Validating webhook deliveries" page.
        let header = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
        assert_eq!(sign(b"It's a Secret to Everybody", b"Hello, World!"), header);
        let secrets = [SecretString::from("It's a Secret to Everybody")];
        assert!(verify(&secrets, Some(header), b"Hello, World!"));
    }

    #[test]
    fn rejects() {
        let secrets = [SecretString::from("old"), SecretString::from("new")];
        let body = b"{}";
        let good = sign(b"new", body);
        assert!(verify(&secrets, Some(&good), body));
        for bad in [
            None,
            Some(""),
            Some("sha256="),
            Some("sha1=abc"),
            Some("sha256=zz"),
            Some(&good[..good.len() - 2]),
            Some(sign(b"other", body).as_str()),
        ] {
            assert!(!verify(&secrets, bad, body), "{bad:?}");
        }
        assert!(!verify(&secrets, Some(&good), b"{ }"));
    }
}
