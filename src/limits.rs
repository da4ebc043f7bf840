//! The ground floor's limits and name rules: what several rooms check the same way (a scene file
//! and a save, a JSON mod and a Lua mod, the streaming kit's save section), declared once here so
//! that no room reaches up into another for a number.

/// Longest name (entity id, tag, scene id, mod id), in bytes.
pub const MAX_ID_LEN: usize = 256;
/// Longest `reason` a mod may give, in bytes (refusals are held and saved with the game).
pub const MAX_REASON_LEN: usize = 1024;
/// Most entities a scene file (and so a save) may hold.
pub const MAX_ENTITIES: usize = 1_000_000;
/// Largest `data` of an entity (SPEC §15), in bytes of its compact JSON serialization.
pub const MAX_DATA_BYTES: usize = 4096;
/// Largest district file (SPEC §15): read once, sequentially, never held whole.
pub const MAX_DISTRICT_BYTES: u64 = 1024 * 1024 * 1024;
/// Largest tick an input may carry, and the largest `--ticks`: a run is bounded.
pub const MAX_TICK: u64 = 10_000_000;

/// Checks a name (entity id, tag, scene id, mod id): 1..=[`MAX_ID_LEN`] bytes.
pub fn check_name(name: &str) -> Result<(), String> {
    let max = MAX_ID_LEN;
    if name.is_empty() || name.len() > max {
        return Err(format!(
            "expected a name of 1..={max} bytes, got {} bytes",
            name.len()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_one_to_256_bytes() {
        assert!(check_name("").is_err());
        assert!(check_name("a").is_ok());
        assert!(check_name(&"a".repeat(MAX_ID_LEN)).is_ok());
        assert_eq!(
            check_name(&"a".repeat(MAX_ID_LEN + 1)).unwrap_err(),
            "expected a name of 1..=256 bytes, got 257 bytes"
        );
    }
}
