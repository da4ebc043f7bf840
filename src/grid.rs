//! Grid math of docs/reference/grid.md: positions, chunk coordinates, ring distance, the
//! nearest-first order and ground bounds. Plain values and functions, no host types, so the planner
//! can be tested and benchmarked alone.

use std::cmp::Ordering;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::json::Problem;

/// Largest absolute chunk coordinate the grid produces. `chunk_of` clamps to it so that integer
/// arithmetic on neighbours (`x + 1`, `x - radius`) can never overflow, and so that a chunk centre
/// is still exactly representable as `f64`.
pub const MAX_CHUNK_COORD: i64 = 1 << 52;

/// Largest absolute coordinate, in metres, accepted in any file or input.
pub const MAX_COORDINATE: f64 = 1e15;

/// A point in metres. `y` is carried but never used for streaming.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Position {
    /// East-west coordinate in metres.
    #[schemars(range(min = -1e15, max = 1e15))]
    pub x: f64,
    /// Height in metres; optional in files (default 0) and never used for streaming.
    #[serde(default)]
    #[schemars(range(min = -1e15, max = 1e15))]
    pub y: f64,
    /// North-south coordinate in metres.
    #[schemars(range(min = -1e15, max = 1e15))]
    pub z: f64,
}

impl Position {
    /// A position on the ground plane (`y = 0`).
    pub const fn new(x: f64, z: f64) -> Self {
        Position { x, y: 0.0, z }
    }

    /// A problem at the offending key (`x`) when a coordinate is not finite or absurdly large.
    pub fn check(&self) -> Result<(), Problem> {
        for (name, v) in [("x", self.x), ("y", self.y), ("z", self.z)] {
            if !v.is_finite() || v.abs() > MAX_COORDINATE {
                return Err(Problem::new(
                    name,
                    format!("expected a finite number of metres within ±1e15, got {v}"),
                ));
            }
        }
        Ok(())
    }
}

/// A chunk of the XZ grid, or with vertical sections (docs/vertical.md) a section `(x, y, z)`.
/// Ordered in *row order*: by `y`, then `z`, then `x`; in a flat world every chunk has `y = 0`,
/// so the order is `z`, then `x`, and `y` is never written (an absent `y` reads as 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChunkPos {
    /// Column (east-west).
    pub x: i64,
    /// Section row (vertical, docs/vertical.md); 0 in a flat world, and then not written.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub y: i64,
    /// Row (north-south).
    pub z: i64,
}

fn is_zero(y: &i64) -> bool {
    *y == 0
}

impl ChunkPos {
    /// The chunk `(x, z)` (section row 0).
    pub const fn new(x: i64, z: i64) -> Self {
        ChunkPos { x, y: 0, z }
    }

    /// The section `(x, y, z)` (docs/vertical.md).
    pub const fn section(x: i64, y: i64, z: i64) -> Self {
        ChunkPos { x, y, z }
    }

    /// The column `(x, z)` this section stands in (the chunk itself in a flat world).
    pub const fn column(self) -> Self {
        ChunkPos::new(self.x, self.z)
    }

    /// `max(|dx|, |dz|)`: the ring this chunk lies on around `centre`.
    pub fn ring_distance(self, centre: ChunkPos) -> u64 {
        self.x.abs_diff(centre.x).max(self.z.abs_diff(centre.z))
    }
}

impl Ord for ChunkPos {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.y, self.z, self.x).cmp(&(other.y, other.z, other.x))
    }
}

impl PartialOrd for ChunkPos {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl std::fmt::Display for ChunkPos {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.y == 0 {
            write!(f, "({}, {})", self.x, self.z)
        } else {
            write!(f, "({}, {}, {})", self.x, self.y, self.z)
        }
    }
}

/// The size of a chunk's side in metres, and the math that depends on it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Grid {
    size: f64,
}

impl Grid {
    /// A grid of `size`-metre chunks. `size` must be finite and positive (checked by the config).
    pub fn new(size: f64) -> Self {
        debug_assert!(size.is_finite() && size > 0.0);
        Grid { size }
    }

    /// The side of a chunk in metres.
    pub fn size(&self) -> f64 {
        self.size
    }

    /// `(floor(x / size), floor(z / size))`, clamped to ±[`MAX_CHUNK_COORD`].
    pub fn chunk_of(&self, pos: Position) -> ChunkPos {
        ChunkPos::new(self.coord(pos.x), self.coord(pos.z))
    }

    /// The section of `pos` with sections `height` metres tall (docs/vertical.md): `x` and `z`
    /// as [`Grid::chunk_of`], `y = floor(pos.y / height)`, clamped like them.
    pub fn section_of(&self, pos: Position, height: f64) -> ChunkPos {
        ChunkPos::section(self.coord(pos.x), coord(pos.y, height), self.coord(pos.z))
    }

    fn coord(&self, v: f64) -> i64 {
        coord(v, self.size)
    }

    /// Squared distance from `focus` to the centre of `chunk`, computed exactly as
    /// docs/reference/grid.md#nearest-first-order says: plain multiplications and additions, no
    /// `sqrt`, no fused multiply-add.
    pub fn distance_sq(&self, focus: Position, chunk: ChunkPos) -> f64 {
        let dx = (chunk.x as f64 + 0.5) * self.size - focus.x;
        let dz = (chunk.z as f64 + 0.5) * self.size - focus.z;
        dx * dx + dz * dz
    }

    /// Squared 3-D distance from `focus` to the centre `((x+½)s, (y+½)h, (z+½)s)` of section
    /// `c` with sections `height` metres tall (docs/vertical.md): `dx*dx + dy*dy + dz*dz`, plain
    /// multiplications and additions in that order, no `sqrt`, no fused multiply-add.
    pub fn distance_sq_section(&self, focus: Position, c: ChunkPos, height: f64) -> f64 {
        let dx = (c.x as f64 + 0.5) * self.size - focus.x;
        let dy = (c.y as f64 + 0.5) * height - focus.y;
        let dz = (c.z as f64 + 0.5) * self.size - focus.z;
        dx * dx + dy * dy + dz * dz
    }

    /// The 3-D nearest-first order of sections: [`Grid::distance_sq_section`], then `z`, then
    /// `x`, then `y`.
    pub fn nearest_first_section(
        &self,
        focus: Position,
        a: ChunkPos,
        b: ChunkPos,
        height: f64,
    ) -> Ordering {
        self.distance_sq_section(focus, a, height)
            .total_cmp(&self.distance_sq_section(focus, b, height))
            .then((a.z, a.x, a.y).cmp(&(b.z, b.x, b.y)))
    }

    /// The nearest-first order: squared distance to the chunk centre, then `z`, then `x`.
    pub fn nearest_first(&self, focus: Position, a: ChunkPos, b: ChunkPos) -> Ordering {
        self.distance_sq(focus, a)
            .total_cmp(&self.distance_sq(focus, b))
            .then(a.cmp(&b))
    }

    /// Whether `chunk`'s square overlaps `bounds` (always true without bounds).
    pub fn overlaps(&self, chunk: ChunkPos, bounds: Option<&Bounds>) -> bool {
        let Some(b) = bounds else { return true };
        let s = self.size;
        // `x + 1` on integers (docs/reference/grid.md#ground-bounds), saturating for chunk
        // coordinates read from files.
        let (x0, x1) = (chunk.x as f64 * s, chunk.x.saturating_add(1) as f64 * s);
        let (z0, z1) = (chunk.z as f64 * s, chunk.z.saturating_add(1) as f64 * s);
        x0 < b.max_x && b.min_x < x1 && z0 < b.max_z && b.min_z < z1
    }

    /// The wanted square around `focus` (ring distance `<= radius`, minus chunks entirely outside
    /// `bounds`), in row order.
    pub fn square(
        &self,
        focus: ChunkPos,
        radius: u32,
        bounds: Option<&Bounds>,
    ) -> impl Iterator<Item = ChunkPos> + '_ {
        let r = i64::from(radius);
        let bounds = bounds.copied();
        (focus.z - r..=focus.z + r).flat_map(move |z| {
            (focus.x - r..=focus.x + r)
                .map(move |x| ChunkPos::new(x, z))
                .filter(move |c| self.overlaps(*c, bounds.as_ref()))
        })
    }

    /// [`Grid::square`] sorted nearest-first from the focus *position*.
    pub fn around(&self, focus: Position, radius: u32, bounds: Option<&Bounds>) -> Vec<ChunkPos> {
        let mut chunks: Vec<ChunkPos> = self.square(self.chunk_of(focus), radius, bounds).collect();
        chunks.sort_unstable_by(|a, b| self.nearest_first(focus, *a, *b));
        chunks
    }
}

/// `floor(v / side)`, clamped to ±[`MAX_CHUNK_COORD`].
fn coord(v: f64, side: f64) -> i64 {
    let c = (v / side).floor();
    let limit = MAX_CHUNK_COORD as f64;
    // `as` saturates; the clamp keeps neighbours in range. NaN cannot reach here (checked input).
    c.clamp(-limit, limit) as i64
}

/// The half-open rectangle `[minX, maxX) × [minZ, maxZ)` of `world.ground`, in metres.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Bounds {
    /// West edge (inclusive).
    pub min_x: f64,
    /// North edge (inclusive).
    pub min_z: f64,
    /// East edge (exclusive).
    pub max_x: f64,
    /// South edge (exclusive).
    pub max_z: f64,
}

impl Bounds {
    /// `Err` naming the offending key when the rectangle is not finite or is empty.
    pub fn check(&self) -> Result<(), (String, String)> {
        for (k, v) in [
            ("minX", self.min_x),
            ("minZ", self.min_z),
            ("maxX", self.max_x),
            ("maxZ", self.max_z),
        ] {
            if !v.is_finite() || v.abs() > MAX_COORDINATE {
                return Err((
                    k.into(),
                    format!("expected a finite number of metres within ±1e15, got {v}"),
                ));
            }
        }
        if self.min_x >= self.max_x {
            return Err((
                "maxX".into(),
                format!("expected maxX > minX ({}), got {}", self.min_x, self.max_x),
            ));
        }
        if self.min_z >= self.max_z {
            return Err((
                "maxZ".into(),
                format!("expected maxZ > minZ ({}), got {}", self.min_z, self.max_z),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_of_floors_negative_coordinates() {
        let g = Grid::new(32.0);
        assert_eq!(g.chunk_of(Position::new(8.0, 8.0)), ChunkPos::new(0, 0));
        assert_eq!(g.chunk_of(Position::new(-0.1, 31.99)), ChunkPos::new(-1, 0));
        assert_eq!(g.chunk_of(Position::new(32.0, -32.0)), ChunkPos::new(1, -1));
    }

    #[test]
    fn chunk_of_clamps_absurd_positions() {
        let g = Grid::new(1e-9);
        assert_eq!(g.chunk_of(Position::new(1e15, -1e15)).x, MAX_CHUNK_COORD);
        assert_eq!(g.chunk_of(Position::new(1e15, -1e15)).z, -MAX_CHUNK_COORD);
    }

    #[test]
    fn row_order_is_z_then_x() {
        let mut v = vec![
            ChunkPos::new(1, 0),
            ChunkPos::new(0, 1),
            ChunkPos::new(-5, 0),
        ];
        v.sort();
        assert_eq!(
            v,
            [
                ChunkPos::new(-5, 0),
                ChunkPos::new(1, 0),
                ChunkPos::new(0, 1)
            ]
        );
        // The comparison operators agree with the order.
        assert!(ChunkPos::new(1, 0) < ChunkPos::new(0, 1));
        assert!(ChunkPos::new(-5, 0) < ChunkPos::new(1, 0));
        assert!(ChunkPos::new(0, 1) > ChunkPos::new(9, 0));
        assert_eq!(
            ChunkPos::new(2, 3).partial_cmp(&ChunkPos::new(2, 3)),
            Some(Ordering::Equal)
        );
        assert_eq!(ChunkPos::new(2, 3).to_string(), "(2, 3)");
    }

    #[test]
    fn nearest_first_breaks_ties_by_z_then_x() {
        let g = Grid::new(32.0);
        let order = g.around(Position::new(8.0, 8.0), 1, None);
        assert_eq!(order[0], ChunkPos::new(0, 0));
        assert_eq!(order[1], ChunkPos::new(0, -1));
        assert_eq!(order[2], ChunkPos::new(-1, 0));
        assert_eq!(order.len(), 9);
    }

    #[test]
    fn ring_distance_never_overflows() {
        let a = ChunkPos::new(i64::MAX, 0);
        let b = ChunkPos::new(i64::MIN, 0);
        assert_eq!(a.ring_distance(b), u64::MAX);
    }

    #[test]
    fn a_chunk_partly_inside_the_bounds_overlaps() {
        let g = Grid::new(32.0);
        let b = Bounds {
            min_x: -10.0,
            min_z: 0.0,
            max_x: 40.0,
            max_z: 32.0,
        };
        assert!(g.overlaps(ChunkPos::new(-1, 0), Some(&b)));
        assert!(g.overlaps(ChunkPos::new(1, 0), Some(&b)));
        assert!(
            !g.overlaps(ChunkPos::new(0, 1), Some(&b)),
            "touching the half-open edge"
        );
        assert!(!g.overlaps(ChunkPos::new(2, 0), Some(&b)));
    }

    #[test]
    fn positions_up_to_1e15_metres_are_accepted_and_beyond_or_not_finite_refused() {
        for v in [1e15, -1e15, 0.0, 123.5] {
            assert!(Position { x: v, y: v, z: v }.check().is_ok(), "{v}");
        }
        let beyond = 1e15 * (1.0 + f64::EPSILON);
        for (bad, name) in [
            (
                Position {
                    x: beyond,
                    y: 0.0,
                    z: 0.0,
                },
                "x",
            ),
            (
                Position {
                    x: 0.0,
                    y: -beyond,
                    z: 0.0,
                },
                "y",
            ),
            (
                Position {
                    x: 0.0,
                    y: 0.0,
                    z: f64::NAN,
                },
                "z",
            ),
            (
                Position {
                    x: f64::INFINITY,
                    y: 0.0,
                    z: 0.0,
                },
                "x",
            ),
        ] {
            assert_eq!(bad.check().unwrap_err().path, name, "{bad:?}");
        }
    }

    #[test]
    fn bounds_must_be_finite_within_1e15_and_not_empty() {
        let ok = Bounds {
            min_x: -1e15,
            min_z: 0.0,
            max_x: 1e15,
            max_z: 0.5,
        };
        assert_eq!(ok.check(), Ok(()));
        let key = |f: fn(&mut Bounds)| {
            let mut b = ok;
            f(&mut b);
            b.check().unwrap_err().0
        };
        assert_eq!(key(|b| b.min_x = f64::NAN), "minX");
        assert_eq!(key(|b| b.max_z = f64::INFINITY), "maxZ");
        assert_eq!(key(|b| b.min_z = -2e15), "minZ");
        assert_eq!(key(|b| b.max_x = b.min_x), "maxX", "empty in x");
        assert_eq!(key(|b| b.max_z = b.min_z), "maxZ", "empty in z");
        assert_eq!(key(|b| b.max_z = -1.0), "maxZ", "reversed in z");
    }

    #[test]
    fn distance_is_to_the_chunk_centre_squared() {
        let g = Grid::new(32.0);
        assert_eq!(g.size(), 32.0);
        // Centre of (1, -2) is (48, -48): dx = 40, dz = -56 from (8, 8).
        assert_eq!(
            g.distance_sq(Position::new(8.0, 8.0), ChunkPos::new(1, -2)),
            1600.0 + 3136.0
        );
        let g = Grid::new(3.0);
        // Centre of (-1, 2) is (-1.5, 7.5): dx = -2.5, dz = 7.5 - 0.25 = 7.25 from (1, 0.25).
        assert_eq!(
            g.distance_sq(Position::new(1.0, 0.25), ChunkPos::new(-1, 2)),
            6.25 + 52.5625
        );
    }

    #[test]
    fn every_edge_of_the_bounds_is_half_open() {
        let g = Grid::new(10.0);
        // [0, 30) x [-20, 10): chunks 0..=2 in x and -2..=0 in z overlap, their neighbours only
        // touch an edge.
        let b = Bounds {
            min_x: 0.0,
            min_z: -20.0,
            max_x: 30.0,
            max_z: 10.0,
        };
        let inside: Vec<ChunkPos> = (-4..=4)
            .flat_map(|z| (-4..=4).map(move |x| ChunkPos::new(x, z)))
            .filter(|c| g.overlaps(*c, Some(&b)))
            .collect();
        let expected: Vec<ChunkPos> = (-2..=0)
            .flat_map(|z| (0..=2).map(move |x| ChunkPos::new(x, z)))
            .collect();
        assert_eq!(inside, expected);
        assert_eq!(
            g.square(ChunkPos::new(1, -1), 3, Some(&b))
                .collect::<Vec<_>>(),
            expected
        );
        assert!(g.overlaps(ChunkPos::new(99, 99), None));
    }

    #[test]
    fn the_square_is_the_rings_up_to_the_radius_in_row_order() {
        let g = Grid::new(32.0);
        let sq: Vec<(i64, i64)> = g
            .square(ChunkPos::new(5, -3), 1, None)
            .map(|c| (c.x, c.z))
            .collect();
        assert_eq!(
            sq,
            [
                (4, -4),
                (5, -4),
                (6, -4),
                (4, -3),
                (5, -3),
                (6, -3),
                (4, -2),
                (5, -2),
                (6, -2)
            ]
        );
    }

    #[test]
    fn section_of_floors_y_by_the_section_height_and_clamps() {
        let g = Grid::new(32.0);
        let at = |x, y, z| Position { x, y, z };
        assert_eq!(
            g.section_of(at(8.0, 15.9, -0.5), 16.0),
            ChunkPos::section(0, 0, -1)
        );
        assert_eq!(
            g.section_of(at(8.0, 16.0, 8.0), 16.0),
            ChunkPos::section(0, 1, 0)
        );
        assert_eq!(
            g.section_of(at(8.0, -0.1, 8.0), 16.0),
            ChunkPos::section(0, -1, 0)
        );
        assert_eq!(g.section_of(at(1e15, -1e15, 0.0), 1e-9).y, -MAX_CHUNK_COORD);
        // x and z are chunk_of's.
        let p = at(-70.0, 3.0, 100.0);
        assert_eq!(g.section_of(p, 5.0).column(), g.chunk_of(p));
    }

    #[test]
    fn the_section_distance_is_to_the_centre_in_3d_and_the_order_breaks_ties_z_x_y() {
        let g = Grid::new(32.0);
        let focus = Position {
            x: 8.0,
            y: 4.0,
            z: 8.0,
        };
        // Centre of (1, -1, -2) with h = 8: (48, -4, -48): dx 40, dy -8, dz -56.
        assert_eq!(
            g.distance_sq_section(focus, ChunkPos::section(1, -1, -2), 8.0),
            1600.0 + 64.0 + 3136.0
        );
        // A focus on a centre: the six neighbours at equal distance in x and z, y apart.
        let focus = Position {
            x: 16.0,
            y: 16.0,
            z: 16.0,
        };
        let mut v = vec![
            ChunkPos::section(0, 1, 0),
            ChunkPos::section(0, -1, 0),
            ChunkPos::section(1, 0, 0),
            ChunkPos::section(-1, 0, 0),
            ChunkPos::section(0, 0, 1),
            ChunkPos::section(0, 0, -1),
            ChunkPos::section(0, 0, 0),
        ];
        v.sort_by(|a, b| g.nearest_first_section(focus, *a, *b, 32.0));
        assert_eq!(
            v,
            [
                ChunkPos::section(0, 0, 0),
                ChunkPos::section(0, 0, -1),
                ChunkPos::section(-1, 0, 0),
                ChunkPos::section(0, -1, 0),
                ChunkPos::section(0, 1, 0),
                ChunkPos::section(1, 0, 0),
                ChunkPos::section(0, 0, 1),
            ]
        );
    }
}
