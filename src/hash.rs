//! The crate's one stable hash: FNV-1a, 64 bits. It has no seed and no platform dependence, so
//! the same bytes hash the same on every machine and in every build — what recordings, the
//! terrain's built chunks and the district's files and records are stamped with.

/// The FNV-1a 64 offset basis: the hash of no bytes.
const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
/// The FNV-1a 64 prime.
const PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a 64 fed in pieces: `Fnv1a64::default()`, [`update`](Fnv1a64::update) any number of
/// times, then read `.0`. Feeding `a` then `b` hashes as feeding `a` and `b` joined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fnv1a64(pub u64);

impl Default for Fnv1a64 {
    fn default() -> Self {
        Fnv1a64(OFFSET_BASIS)
    }
}

impl Fnv1a64 {
    /// Adds `bytes`.
    pub fn update(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(PRIME);
        }
    }

    /// The hash of `bytes`.
    pub fn of(bytes: &[u8]) -> u64 {
        let mut h = Fnv1a64::default();
        h.update(bytes);
        h.0
    }
}

/// The FNV-1a 64 hash of `bytes`.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    Fnv1a64::of(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_values() {
        // The published FNV-1a 64 test vectors.
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn pieces_hash_as_the_whole() {
        let mut h = Fnv1a64::default();
        h.update(b"foo");
        h.update(b"");
        h.update(b"bar");
        assert_eq!(h.0, fnv1a64(b"foobar"));
    }
}
