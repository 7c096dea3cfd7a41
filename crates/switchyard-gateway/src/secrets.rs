//! Secret handling: generation of client keys and management tokens, hashing of
//! client keys for storage and lookup, and constant-time comparison.
//!
//! Client keys are high-entropy random strings, so one SHA-256 is a sound at-rest
//! form (no password-stretching needed) and lets the hot path look a presented key
//! up in a hash map in about a microsecond.

use rand::RngCore;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// SHA-256 digest of a client key, as stored and indexed.
pub type KeyHash = [u8; 32];

/// Hashes a presented or stored client key.
pub fn hash_key(key: &str) -> KeyHash {
    Sha256::digest(key.as_bytes()).into()
}

/// Hex form of a key hash, as stored in SQLite.
pub fn hash_key_hex(key: &str) -> String {
    hex::encode(hash_key(key))
}

/// Hex SHA-256 of raw bytes (a lease owner token, as stored).
pub fn hash_key_hex_bytes(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Parses a stored hex hash back into bytes.
pub fn parse_hash_hex(hex_hash: &str) -> Option<KeyHash> {
    let bytes = hex::decode(hex_hash).ok()?;
    bytes.try_into().ok()
}

/// A fresh random secret: `prefix` followed by 48 hex characters (192 bits).
pub fn generate_secret(prefix: &str) -> String {
    let mut bytes = [0u8; 24];
    rand::rng().fill_bytes(&mut bytes);
    format!("{prefix}{}", hex::encode(bytes))
}

/// Compares two secrets without leaking where they differ.
pub fn secrets_equal(presented: &str, expected: &str) -> bool {
    // Hash both first so the comparison is also independent of the lengths.
    hash_key(presented).ct_eq(&hash_key(expected)).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_secrets_are_unique_and_prefixed() {
        let a = generate_secret("sy-");
        let b = generate_secret("sy-");
        assert!(a.starts_with("sy-") && a.len() == 51);
        assert_ne!(a, b);
    }

    #[test]
    fn hash_round_trips_through_hex() {
        let h = hash_key_hex("sy-abc");
        assert_eq!(parse_hash_hex(&h), Some(hash_key("sy-abc")));
        assert_eq!(parse_hash_hex("zz"), None);
    }

    #[test]
    fn equality_is_exact() {
        assert!(secrets_equal("token-1", "token-1"));
        assert!(!secrets_equal("token-1", "token-2"));
        assert!(!secrets_equal("token-1", "token-10"));
    }
}
