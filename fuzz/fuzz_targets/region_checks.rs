//! Shared by the region fuzz targets and `tests/fuzz_regressions.rs`: decode hostile bytes as a
//! region file (or one record) and check what the decoder claims about what it kept.
#![allow(dead_code)]

use std::collections::BTreeMap;

use world_streaming::grid::ChunkPos;
use world_streaming::kits::terrain::region::{self, Damage, Diff, Region, RegionPos, Stamp};

/// Stamps compare by their bits: a diff applies to chunks generated exactly the same way.
fn same(a: Stamp, b: Stamp) -> bool {
    a.generator == b.generator
        && a.seed == b.seed
        && a.cells == b.cells
        && a.chunk_size.to_bits() == b.chunk_size.to_bits()
}

fn key(s: Stamp) -> (u32, u64, u32, u64) {
    (s.generator, s.seed, s.cells, s.chunk_size.to_bits())
}

/// Every cell of `diff` lies in a `cells`×`cells` chunk.
fn check_cells(chunk: ChunkPos, stamp: Stamp, diff: &Diff) {
    let limit = u64::from(stamp.cells) * u64::from(stamp.cells);
    for &i in diff.cells.keys() {
        assert!(
            u64::from(i) < limit,
            "chunk {chunk}: cell {i} outside a {0}×{0} chunk",
            stamp.cells
        );
    }
}

/// The region a fuzz input is decoded as: bit 0 of `mode` clear, the one its header names (so
/// mutations reach past the region check); set, one of 128 small regions.
fn region_of(mode: u8, file: &[u8]) -> RegionPos {
    if mode & 1 == 0 {
        if file.len() >= 48 {
            let x = i64::from_le_bytes(file[32..40].try_into().unwrap());
            let z = i64::from_le_bytes(file[40..48].try_into().unwrap());
            return RegionPos { x, z };
        }
        return RegionPos { x: 0, z: 0 };
    }
    RegionPos {
        x: i64::from((mode >> 1) & 7) - 4,
        z: i64::from(mode >> 4) - 8,
    }
}

/// The `region_decode` target: `data` is one mode byte (see [`region_of`]) and a region file.
pub fn region_decode(data: &[u8]) {
    let Some((&mode, file)) = data.split_first() else {
        return;
    };
    let pos = region_of(mode, file);
    let d = region::decode(file, pos);

    // What the decoder says it kept is consistent with what it says is damaged.
    let headers = d
        .damage
        .iter()
        .filter(|x| matches!(x, Damage::Header(_)))
        .count();
    match d.stamp {
        Some(stamp) => {
            assert_eq!(headers, 0, "a sound header and a header damage");
            let records = d.damage.len();
            assert_eq!(
                d.chunks.len() + records,
                d.entries.len(),
                "every table entry is kept or damaged"
            );
            for (c, (s, _)) in &d.chunks {
                assert!(same(*s, stamp), "chunk {c} kept with another stamp");
            }
            for x in &d.damage {
                let Damage::Record { chunk, offset, .. } = x else {
                    unreachable!()
                };
                assert!(d.entries.iter().any(|e| e.0 == *chunk && e.1 == *offset));
                assert!(!d.chunks.contains_key(chunk));
            }
        }
        None => assert!(
            matches!(&d.damage[..], [Damage::Header(_)]),
            "no stamp but {:?}",
            d.damage
        ),
    }
    for (c, (s, diff)) in &d.chunks {
        assert_eq!(RegionPos::of(*c), pos, "chunk {c} kept in region {pos:?}");
        check_cells(*c, *s, diff);
        assert!(
            d.entries.iter().any(|e| e.0 == *c),
            "chunk {c} has no entry"
        );
    }

    // Re-encoding what was kept (one region per stamp) decodes to the same chunks, soundly,
    // and encoding is a fixed point.
    let mut by_stamp: BTreeMap<_, (Stamp, BTreeMap<ChunkPos, Diff>)> = BTreeMap::new();
    for (c, (s, diff)) in &d.chunks {
        by_stamp
            .entry(key(*s))
            .or_insert_with(|| (*s, BTreeMap::new()))
            .1
            .insert(*c, diff.clone());
    }
    for (_, (stamp, chunks)) in by_stamp {
        let r = Region { pos, stamp, chunks };
        let bytes = region::encode(&r);
        assert_eq!(bytes, region::encode(&r), "encoding is deterministic");
        let again = region::decode(&bytes, pos);
        assert_eq!(again.damage, vec![], "a re-encoded region is damaged");
        assert!(again.stamp.is_some_and(|s| same(s, stamp)));
        let order: Vec<ChunkPos> = again.entries.iter().map(|e| e.0).collect();
        assert_eq!(order, r.chunks.keys().copied().collect::<Vec<_>>());
        assert_eq!(again.chunks.len(), r.chunks.len());
        for (c, diff) in &r.chunks {
            let (s, d2) = &again.chunks[c];
            assert!(same(*s, stamp));
            assert_eq!(d2, diff, "chunk {c} changed in a round trip");
        }
        let fixed = region::encode(&Region {
            pos,
            stamp,
            chunks: again.chunks.into_iter().map(|(c, (_, d))| (c, d)).collect(),
        });
        assert_eq!(fixed, bytes, "encode ∘ decode ∘ encode = encode");
    }
}

/// The `region_record` target: `data` is one mode byte and bytes holding a record. The mode's
/// low 5 bits are the offset; bits 5..7 say which length the caller claims: none, the rest of
/// the bytes, one less, one more.
pub fn region_record(data: &[u8]) {
    let Some((&mode, bytes)) = data.split_first() else {
        return;
    };
    let offset = usize::from(mode & 0x1f);
    let remaining = bytes.len().saturating_sub(offset);
    let len = match (mode >> 5) & 3 {
        0 => None,
        1 => Some(remaining),
        2 => Some(remaining.saturating_sub(1)),
        _ => Some(remaining + 1),
    };
    let Ok((chunk, stamp, diff, total)) = region::decode_record(bytes, offset, len) else {
        return;
    };
    assert!(total >= region::RECORD_HEADER_LEN);
    assert!(offset + total <= bytes.len(), "a record past the end");
    if let Some(len) = len {
        assert_eq!(len, total, "the record is not the length the caller gave");
    }
    check_cells(chunk, stamp, &diff);
    // The same record with its exact length decodes the same.
    let exact = region::decode_record(bytes, offset, Some(total)).expect("exact length");
    assert_eq!((exact.0, exact.2, exact.3), (chunk, diff.clone(), total));
    assert!(same(exact.1, stamp));
    // Re-encoding gives a record that decodes to the same chunk, stamp and cells.
    let rec = region::encode_record(chunk, stamp, &diff);
    let (c2, s2, d2, t2) =
        region::decode_record(&rec, 0, Some(rec.len())).expect("a re-encoded record decodes");
    assert_eq!((c2, &d2, t2), (chunk, &diff, rec.len()));
    assert!(same(s2, stamp));
    assert_eq!(region::encode_record(c2, s2, &d2), rec, "fixed point");
}

/// The seed corpus: a few regions as the game writes them, `(file name, fuzz input)`; the first
/// byte of each input is the mode byte of its target. `tests/fuzz_regressions.rs` keeps
/// `fuzz/seeds/region_decode` and `fuzz/seeds/region_record` equal to this.
pub fn seeds() -> Vec<(String, Vec<u8>)> {
    let stamp = Stamp {
        generator: 1,
        seed: 2026,
        cells: 32,
        chunk_size: 32.0,
    };
    let diff = |cells: &[(u32, u16, u8)]| Diff {
        cells: cells.iter().map(|&(i, h, m)| (i, (h, m))).collect(),
    };
    let mut regions = Vec::new();
    // Empty (every chunk of it back to its baseline).
    regions.push(Region {
        pos: RegionPos { x: 0, z: 0 },
        stamp,
        chunks: BTreeMap::new(),
    });
    // One edit.
    regions.push(Region {
        pos: RegionPos { x: 0, z: 0 },
        stamp,
        chunks: [(ChunkPos::new(3, 4), diff(&[(517, 40000, 3)]))].into(),
    });
    // Negative coordinates, a sparse chunk and a flattened (LZ4) one.
    regions.push(Region {
        pos: RegionPos { x: -1, z: 0 },
        stamp,
        chunks: [
            (ChunkPos::new(-1, 0), diff(&[(0, 1, 2)])),
            (ChunkPos::new(-32, 5), diff(&[(7, 65535, 4), (1023, 9, 0)])),
            (
                ChunkPos::new(-3, 31),
                diff(&(0..1024).map(|i| (i, 1000, 2)).collect::<Vec<_>>()),
            ),
        ]
        .into(),
    });
    // Many chunks with scattered edits (a deterministic xorshift), 8 cells per side.
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let small = Stamp {
        generator: 1,
        seed: 7,
        cells: 8,
        chunk_size: 16.0,
    };
    let mut chunks = BTreeMap::new();
    for _ in 0..12 {
        let c = ChunkPos::new(64 + (next() % 32) as i64, -96 + (next() % 32) as i64);
        let cells: Vec<(u32, u16, u8)> = (0..1 + next() % 6)
            .map(|_| ((next() % 64) as u32, next() as u16, (next() % 8) as u8))
            .collect();
        chunks.insert(c, diff(&cells));
    }
    regions.push(Region {
        pos: RegionPos { x: 2, z: -3 },
        stamp: small,
        chunks,
    });

    let mut out = Vec::new();
    for (k, r) in regions.iter().enumerate() {
        let mut input = vec![0u8];
        input.extend(region::encode(r));
        out.push((format!("region_decode/{k}.bin"), input));
    }
    for (k, (c, d)) in regions[2].chunks.iter().enumerate() {
        let mut input = vec![1u8 << 5];
        input.extend(region::encode_record(*c, stamp, d));
        out.push((format!("region_record/{k}.bin"), input));
    }
    out
}
