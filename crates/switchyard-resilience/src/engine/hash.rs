//! The hasher of the engine's key maps: FNV-1a. Keys are short ids chosen by the
//! operator (provider and connection ids), looked up on every request; SipHash's
//! flooding resistance buys nothing there and costs about half the lookup.

use std::hash::{BuildHasherDefault, Hasher};

/// FNV-1a, 64 bit.
#[derive(Debug, Clone, Copy)]
pub(super) struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// Builds [`Fnv`] hashers.
pub(super) type FnvBuild = BuildHasherDefault<Fnv>;

#[cfg(test)]
mod tests {
    use std::hash::BuildHasher;

    use super::*;

    #[test]
    fn distinct_keys_hash_apart() {
        let h = |s: &str| FnvBuild::default().hash_one(s);
        assert_ne!(h("connection-01"), h("connection-10"));
        assert_eq!(h("glm"), h("glm"));
    }
}
