//! The journal's bytes: every new image of a write that rewrites several region files of a kind
//! whose files change together ([`super::StoreKind::JOURNAL`]).

/// Magic of a journal.
pub const JOURNAL_MAGIC: [u8; 4] = *b"WSJN";

/// The journal format version this build writes and reads.
pub const JOURNAL_VERSION: u16 = 1;

/// Encodes a journal: magic, version u16, flags u16 (0), the entry count u32, then each entry
/// (its file name's length u16 and UTF-8 bytes, its image's length u32 and bytes; an empty
/// image: the file is removed), then the CRC-32 of everything before it. Little-endian.
pub fn encode_journal(entries: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&JOURNAL_MAGIC);
    out.extend_from_slice(&JOURNAL_VERSION.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(&(entries.len() as u32).to_le_bytes());
    for (name, image) in entries {
        out.extend_from_slice(&(name.len() as u16).to_le_bytes());
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(&(image.len() as u32).to_le_bytes());
        out.extend_from_slice(image);
    }
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Decodes a journal: its entries, every length checked against the file.
pub fn decode_journal(b: &[u8]) -> Result<Vec<(String, Vec<u8>)>, String> {
    if b.len() < 16 {
        return Err(format!("{} bytes, a journal has at least 16", b.len()));
    }
    let body = &b[..b.len() - 4];
    let crc = u32::from_le_bytes(b[b.len() - 4..].try_into().expect("4 bytes"));
    let actual = crc32fast::hash(body);
    if crc != actual {
        return Err(format!(
            "CRC-32 mismatch: stored {crc:08x}, journal is {actual:08x}"
        ));
    }
    if body[..4] != JOURNAL_MAGIC {
        return Err(format!("expected magic WSJN, got {:02x?}", &body[..4]));
    }
    let version = u16::from_le_bytes([body[4], body[5]]);
    if version != JOURNAL_VERSION {
        return Err(format!(
            "journal version {version}, this build reads {JOURNAL_VERSION}"
        ));
    }
    if body[6..8] != [0, 0] {
        return Err("unknown journal flags".into());
    }
    let count = u32::from_le_bytes(body[8..12].try_into().expect("4 bytes"));
    let mut at = 12usize;
    let mut take = |n: usize| -> Result<&[u8], String> {
        let end = at
            .checked_add(n)
            .filter(|&e| e <= body.len())
            .ok_or_else(|| format!("entry past the end of the journal at byte {at}"))?;
        let out = &body[at..end];
        at = end;
        Ok(out)
    };
    let mut out = Vec::new();
    for _ in 0..count {
        let n = u16::from_le_bytes(take(2)?.try_into().expect("2 bytes")) as usize;
        let name = String::from_utf8(take(n)?.to_vec()).map_err(|e| format!("a name: {e}"))?;
        let len = u32::from_le_bytes(take(4)?.try_into().expect("4 bytes")) as usize;
        let image = take(len)?.to_vec();
        out.push((name, image));
    }
    if at != body.len() {
        return Err(format!("{} bytes after the last entry", body.len() - at));
    }
    Ok(out)
}
