//! The ground floor's limits and name rules: what several rooms check the same way (a scene file
//! and a save, a JSON mod and a Lua mod, the streaming kit's save section), declared once here so
//! that no room reaches up into another for a number.

/// Longest name (entity id, tag, scene id, mod id), in bytes.
pub const MAX_ID_LEN: usize = 256;
/// Longest `reason` a mod may give, in bytes (refusals are held and saved with the game).
pub const MAX_REASON_LEN: usize = 1024;
/// Most entities a scene file (and so a save) may hold.
pub const MAX_ENTITIES: usize = 1_000_000;
/// Largest `data` of an entity (docs/reference/engine.md#entity-data), in bytes of its compact JSON
/// serialization.
pub const MAX_DATA_BYTES: usize = 4096;
/// Largest district file (docs/reference/district.md#district-files): read once, sequentially,
/// never held whole.
pub const MAX_DISTRICT_BYTES: u64 = 1024 * 1024 * 1024;
/// How many times its compact JSON a common writer may make of a text: a space after each `:`
/// and `,` (one byte becomes two) and every non-ASCII or control character as `\uXXXX` (a
/// two-byte character becomes six bytes, a four-byte one twelve, `\n` becomes `\u000a`).
pub const JSON_TEXT_FACTOR: usize = 3;
/// The names a district line is given room for at [`MAX_ID_LEN`] bytes each: its id, its
/// `rides` and six tags (more tags fit when they are shorter).
pub const DISTRICT_LINE_NAMES: usize = 8;
/// A district line's compact text besides its `data` and names: the keys, the quotes, commas
/// and brackets, and the position's three numbers (at most 24 characters each as the shortest
/// text of an `f64`), 155 bytes with six tags, rounded up.
pub const DISTRICT_LINE_FRAME: usize = 256;
/// Longest district line (newline excluded), in bytes: an entity with `data` at
/// [`MAX_DATA_BYTES`] and [`DISTRICT_LINE_NAMES`] names at [`MAX_ID_LEN`], plus its frame, as any
/// common writer writes it ([`JSON_TEXT_FACTOR`]): 19 200 bytes. A longer line is refused
/// without being held: the index reads lines through this cap.
pub const MAX_DISTRICT_LINE_BYTES: usize =
    JSON_TEXT_FACTOR * (MAX_DATA_BYTES + DISTRICT_LINE_NAMES * MAX_ID_LEN + DISTRICT_LINE_FRAME);
/// Most district entities one chunk of one scene may be home to: a chunk's entities are all
/// spawned in the tick it loads (and stored in the tick it is released), so this bounds that
/// tick (see docs/district.md, "One chunk's cost").
pub const MAX_DISTRICT_CHUNK_ENTITIES: usize = 10_000;
/// Most bytes the district lines homed in one chunk of one scene may come to (their newlines
/// excluded): with [`MAX_DISTRICT_CHUNK_ENTITIES`], what bounds the cost of a chunk's load.
pub const MAX_DISTRICT_CHUNK_BYTES: u64 = 2 * 1024 * 1024;
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
    fn a_district_line_is_at_most_19_200_bytes() {
        assert_eq!(MAX_DISTRICT_LINE_BYTES, 19_200);
    }

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
