//! The session handshake: each link proves, in both directions, that both ends hold the
//! session's secret, without the secret ever crossing the network.
//!
//! The front end draws a random 256-bit key per session and hands it to the commnodes and
//! daemons it launches out of band (the environment variable [`KEY_ENV`], never the
//! command line, which every user can read in `ps`). On a link:
//!
//! 1. child -> parent: `Hello { role, index, nonce_c }`
//! 2. parent -> child: `Challenge { nonce_p, HMAC(key, "parent" | role | index | nonce_c | nonce_p) }`
//! 3. child -> parent: `Proof { HMAC(key, "child" | role | index | nonce_c | nonce_p) }`
//!
//! Both nonces are fresh random values, so a recorded handshake replayed against a new
//! connection fails (the other side's nonce differs); the direction label keeps one side's
//! proof from being reflected as the other's; the role and index bind the proof to the
//! place in the tree the child claims. Comparisons are constant-time.
//!
//! What this does not give: confidentiality or integrity of the stream after the
//! handshake (that needs TLS); see docs/ARCHITECTURE.md.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use thiserror::Error;

use crate::overlay::Hello;

/// The environment variable that carries the session key (hex) to launched processes.
pub const KEY_ENV: &str = "STRATA_SESSION_KEY";
pub const KEY_LEN: usize = 32;
pub const NONCE_LEN: usize = 32;

type HmacSha256 = Hmac<Sha256>;

/// A session key that cannot be had: not handed over, or not one.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum AuthError {
    #[error("a session key is {} hex digits", KEY_LEN * 2)]
    Malformed,
    #[error(
        "{} is not set: this role is started by `strata attach`, not by hand",
        KEY_ENV
    )]
    NotSet,
    #[error("{}: {}", KEY_ENV, AuthError::Malformed)]
    MalformedInEnv,
}

/// A session's secret.
#[derive(Clone)]
pub struct SessionKey([u8; KEY_LEN]);

impl std::fmt::Debug for SessionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionKey(..)")
    }
}

impl SessionKey {
    /// A fresh random key from the operating system.
    pub fn generate() -> std::io::Result<SessionKey> {
        let mut k = [0u8; KEY_LEN];
        getrandom::fill(&mut k).map_err(std::io::Error::other)?;
        Ok(SessionKey(k))
    }

    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    pub fn from_hex(text: &str) -> Result<SessionKey, AuthError> {
        let t = text.trim();
        if t.len() != KEY_LEN * 2 || !t.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(AuthError::Malformed);
        }
        let mut k = [0u8; KEY_LEN];
        for (i, b) in k.iter_mut().enumerate() {
            *b = u8::from_str_radix(&t[2 * i..2 * i + 2], 16).expect("checked hex");
        }
        Ok(SessionKey(k))
    }

    /// The key the launching front end put in [`KEY_ENV`].
    pub fn from_env() -> Result<SessionKey, AuthError> {
        let v = std::env::var(KEY_ENV).map_err(|_| AuthError::NotSet)?;
        SessionKey::from_hex(&v).map_err(|_| AuthError::MalformedInEnv)
    }

    fn mac(&self, label: &[u8], hello: &Hello, parent_nonce: &[u8]) -> HmacSha256 {
        let mut m = <HmacSha256 as KeyInit>::new_from_slice(&self.0).expect("any key length");
        m.update(b"strata/1 ");
        m.update(label);
        m.update(&hello.role.to_le_bytes());
        m.update(&hello.index.to_le_bytes());
        // Lengths first, so that no two (nonce_c, nonce_p) splits hash alike.
        m.update(&(hello.nonce.len() as u32).to_le_bytes());
        m.update(&hello.nonce);
        m.update(&(parent_nonce.len() as u32).to_le_bytes());
        m.update(parent_nonce);
        m
    }

    /// The parent's proof in [`crate::overlay::Challenge`].
    pub fn parent_proof(&self, hello: &Hello, parent_nonce: &[u8]) -> Vec<u8> {
        self.mac(b"parent", hello, parent_nonce)
            .finalize()
            .into_bytes()
            .to_vec()
    }

    /// The child's proof in [`crate::overlay::Proof`].
    pub fn child_proof(&self, hello: &Hello, parent_nonce: &[u8]) -> Vec<u8> {
        self.mac(b"child", hello, parent_nonce)
            .finalize()
            .into_bytes()
            .to_vec()
    }

    pub fn verify_parent(&self, hello: &Hello, parent_nonce: &[u8], mac: &[u8]) -> bool {
        self.mac(b"parent", hello, parent_nonce)
            .verify_slice(mac)
            .is_ok()
    }

    pub fn verify_child(&self, hello: &Hello, parent_nonce: &[u8], mac: &[u8]) -> bool {
        self.mac(b"child", hello, parent_nonce)
            .verify_slice(mac)
            .is_ok()
    }
}

/// A fresh random nonce.
pub fn nonce() -> Vec<u8> {
    let mut n = vec![0u8; NONCE_LEN];
    getrandom::fill(&mut n).expect("the operating system's random source");
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hello(index: u32) -> Hello {
        Hello {
            protocol_version: 1,
            role: 1,
            index,
            nonce: nonce(),
            host: "h".into(),
            pid: 1,
        }
    }

    #[test]
    fn both_sides_verify_with_the_same_key() {
        let k = SessionKey::generate().unwrap();
        let h = hello(3);
        let np = nonce();
        assert!(k.verify_parent(&h, &np, &k.parent_proof(&h, &np)));
        assert!(k.verify_child(&h, &np, &k.child_proof(&h, &np)));
    }

    #[test]
    fn another_key_a_reflected_proof_or_a_new_nonce_fail() {
        let k = SessionKey::generate().unwrap();
        let other = SessionKey::generate().unwrap();
        let h = hello(3);
        let np = nonce();
        let proof = k.child_proof(&h, &np);
        assert!(!other.verify_child(&h, &np, &proof), "wrong key");
        assert!(
            !k.verify_parent(&h, &np, &proof),
            "reflected as the parent's"
        );
        assert!(
            !k.verify_child(&h, &nonce(), &proof),
            "replayed on a new nonce"
        );
        let mut moved = h.clone();
        moved.index = 4;
        assert!(
            !k.verify_child(&moved, &np, &proof),
            "other place in the tree"
        );
        assert!(!k.verify_child(&h, &np, &[]), "empty proof");
    }

    #[test]
    fn hex_round_trips_and_rejects_garbage() {
        let k = SessionKey::generate().unwrap();
        let back = SessionKey::from_hex(&k.to_hex()).unwrap();
        assert_eq!(back.0, k.0);
        assert!(SessionKey::from_hex("abc").is_err());
        assert!(SessionKey::from_hex(&"zz".repeat(32)).is_err());
        assert!(!format!("{k:?}").contains(&k.to_hex()));
    }
}
