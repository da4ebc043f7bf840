//! Where the grid streams around (docs/reference/tick.md#focus-resolution,
//! docs/reference/streaming.md#tickets): the non-ticket foci (the player, or every anchor) and the
//! preload tickets, each a focus with its own radius for a number of ticks.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use crate::grid::Position;
use crate::host::{EntityId, World, PLAYER_TAG};

use super::config::MAX_RADIUS;

/// At most this many tickets are held at once.
pub const MAX_TICKETS: usize = 1024;
/// A ticket id is 1..=64 characters (code points).
pub const MAX_TICKET_ID: usize = 64;
/// The most ticks one request counts in: 2^31 - 1.
pub const MAX_TICKET_TICKS: u64 = (1 << 31) - 1;

/// Why a ticket request was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TicketError {
    /// The id is empty or longer than 64 characters.
    #[error("expected a ticket id of 1..=64 characters, got {0} characters")]
    Id(usize),
    /// The radius is out of range.
    #[error("expected a radius 0..=64, got {0}")]
    Radius(i64),
    /// The tick count is out of range.
    #[error("expected ticks 1..=2147483647, got {0}")]
    Ticks(i64),
    /// 1024 tickets are held and this id is not one of them.
    #[error("too many tickets: at most {MAX_TICKETS} are held at once")]
    Full,
    /// A coordinate of the position is not finite or beyond ±1e15 m (what every file accepts,
    /// so that a game never writes a save it would refuse to load).
    #[error("at.{0}")]
    Position(crate::json::Problem),
    /// The held tickets would want more chunks than `maxTicketChunks` allows
    /// (docs/many-foci.md#the-ticket-cap): the request is refused whole, nothing changes, and
    /// `world.ticket.refused` says so. Not a failure of the input or the mod that asked.
    #[error("the held tickets would want {wanted} chunks, more than maxTicketChunks {cap}")]
    OverCap {
        /// What the held tickets would want with this request (a re-requested id's old ticket
        /// left out).
        wanted: u64,
        /// `maxTicketChunks`.
        cap: u64,
    },
}

/// A preload ticket: a focus at `at` with its own radius, counting in ticks `from..=until`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Ticket {
    /// Where (its `y` is ignored in a flat world; with vertical sections it gives the ticket's
    /// section row).
    pub at: Position,
    /// Rings wanted around `at`'s chunk.
    pub radius: u32,
    /// The first tick it counts in.
    pub from: u64,
    /// The last tick it counts in; it is removed at the end of that tick.
    pub until: u64,
    /// Whether `world.ticket.ready` was emitted for it.
    #[serde(default)]
    pub announced: bool,
    /// Its priority (docs/reference/streaming.md#priorities; absent: 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub priority: u8,
}

fn is_zero(p: &u8) -> bool {
    *p == 0
}

impl Ticket {
    /// Checks a request and builds the ticket counting in `ticks` ticks from `from`.
    pub fn new(
        id: &str,
        at: Position,
        radius: i64,
        ticks: i64,
        from: u64,
    ) -> Result<Ticket, TicketError> {
        check_id(id)?;
        at.check().map_err(TicketError::Position)?;
        if !(0..=i64::from(MAX_RADIUS)).contains(&radius) {
            return Err(TicketError::Radius(radius));
        }
        if !(1..=MAX_TICKET_TICKS as i64).contains(&ticks) {
            return Err(TicketError::Ticks(ticks));
        }
        Ok(Ticket {
            at,
            radius: radius as u32,
            from,
            until: from + ticks as u64 - 1,
            announced: false,
            priority: 0,
        })
    }

    /// The same ticket with `priority`.
    pub fn with_priority(self, priority: u8) -> Ticket {
        Ticket { priority, ..self }
    }

    /// Whether it counts in the plan of `tick`.
    pub fn counts_in(&self, tick: u64) -> bool {
        (self.from..=self.until).contains(&tick)
    }

    /// How many chunks its own square holds, `(2·r + 1)²`.
    pub fn wanted_chunks(&self) -> u64 {
        let side = 2 * u64::from(self.radius) + 1;
        side * side
    }

    /// How many chunks it wants as the ticket cap counts them under `measure`
    /// (docs/reference/streaming.md#the-ticket-cap): the square of its radius plus the
    /// neighbours' rings, `(2·(r + k) + 1)²`, times `2·rv + 1` rows with vertical sections (the
    /// contract's count: `rv` without `k`, though a ticket wants `rv + k` rows each side); the
    /// square also for a disc, and whether or not the ground clips it or it counts yet.
    pub fn wanted_in(&self, measure: Measure) -> u64 {
        let side = 2 * (u64::from(self.radius) + u64::from(measure.rings)) + 1;
        side * side * (2 * u64::from(measure.rows) + 1)
    }
}

/// What the ticket cap counts a ticket's footprint in: the rings of neighbours kept for
/// complete chunks (`k`) and the rows each side with vertical sections (`rv`; 0 when flat). The
/// default is the flat square of the ticket's own radius.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Measure {
    /// The rings of neighbours (`neighbours`, `k`).
    pub rings: u32,
    /// Rows each side of the ticket's row (`vertical.radius`).
    pub rows: u32,
}

impl Measure {
    /// The measure of `settings`: its neighbours' rings, and its vertical radius when sections
    /// are on.
    pub fn of(settings: &super::config::Settings) -> Measure {
        Measure {
            rings: settings.neighbours,
            rows: settings.vertical.map_or(0, |v| v.radius),
        }
    }
}

/// Checks a ticket id: 1..=64 code points.
pub fn check_id(id: &str) -> Result<(), TicketError> {
    let n = id.chars().count();
    if (1..=MAX_TICKET_ID).contains(&n) {
        Ok(())
    } else {
        Err(TicketError::Id(n))
    }
}

/// The held tickets, in id order (code-point order: Rust's `str` order), with their first and
/// last ticks counted, so that a tick learns whether a ticket starts or ends in it without
/// looking at every ticket.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tickets {
    held: BTreeMap<String, Ticket>,
    /// The sum of the held tickets' [`Ticket::wanted_in`] under `measure`.
    wanted: u64,
    /// What the cap counts in (the flat square unless [`Tickets::set_measure`] said otherwise).
    measure: Measure,
    /// How many held tickets start (`from`) at each tick.
    starts: BTreeMap<u64, u32>,
    /// How many held tickets end (`until`) at each tick.
    ends: BTreeMap<u64, u32>,
    /// Some held ticket has not been announced ready.
    unannounced: bool,
}

fn add(counts: &mut BTreeMap<u64, u32>, tick: u64) {
    *counts.entry(tick).or_default() += 1;
}

fn sub(counts: &mut BTreeMap<u64, u32>, tick: u64) {
    if let Some(n) = counts.get_mut(&tick) {
        *n -= 1;
        if *n == 0 {
            counts.remove(&tick);
        }
    }
}

impl Tickets {
    /// Requests (or replaces) `id`. A ticket whose ticks are all spent by `now` (the tick that
    /// last ran) only removes `id`. Refused, changing nothing, when 1024 others are held
    /// ([`TicketError::Full`]) or when the held tickets would want more than `cap` chunks, `id`'s
    /// old ticket left out ([`TicketError::OverCap`]).
    pub fn request(
        &mut self,
        id: &str,
        ticket: Ticket,
        now: u64,
        cap: u64,
    ) -> Result<(), TicketError> {
        if ticket.until <= now {
            self.drop_ticket(id);
            return Ok(());
        }
        let old = self.held.get(id);
        if self.held.len() >= MAX_TICKETS && old.is_none() {
            return Err(TicketError::Full);
        }
        let m = self.measure;
        let wanted = self.wanted - old.map_or(0, |t| t.wanted_in(m)) + ticket.wanted_in(m);
        if wanted > cap {
            return Err(TicketError::OverCap { wanted, cap });
        }
        self.drop_ticket(id);
        add(&mut self.starts, ticket.from);
        add(&mut self.ends, ticket.until);
        self.unannounced |= !ticket.announced;
        self.wanted += ticket.wanted_in(m);
        self.held.insert(id.to_owned(), ticket);
        Ok(())
    }

    /// Removes `id`; returns whether it was held.
    pub fn drop_ticket(&mut self, id: &str) -> bool {
        let Some(t) = self.held.remove(id) else {
            return false;
        };
        self.wanted -= t.wanted_in(self.measure);
        sub(&mut self.starts, t.from);
        sub(&mut self.ends, t.until);
        true
    }

    /// The ticket `id`.
    pub fn get(&self, id: &str) -> Option<&Ticket> {
        self.held.get(id)
    }

    /// Every ticket, in id order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Ticket)> {
        self.held.iter().map(|(k, t)| (k.as_str(), t))
    }

    /// Whether a held ticket starts counting at `tick`.
    pub fn starts_at(&self, tick: u64) -> bool {
        self.starts.contains_key(&tick)
    }

    /// Marks ready, in id order, the tickets counting in `tick` not announced yet for which
    /// `ready` says so; returns their ids. Costs nothing once every ticket was announced.
    pub fn announce(&mut self, tick: u64, mut ready: impl FnMut(&Ticket) -> bool) -> Vec<String> {
        let mut out = Vec::new();
        if !self.unannounced {
            return out;
        }
        let mut left = false;
        for (id, t) in &mut self.held {
            if t.announced {
                continue;
            }
            if t.counts_in(tick) && ready(t) {
                t.announced = true;
                out.push(id.clone());
            } else {
                left = true;
            }
        }
        self.unannounced = left;
        out
    }

    /// Removes the tickets whose last tick is `tick` or earlier; returns whether any was.
    /// Costs a lookup when none ends.
    pub fn expire(&mut self, tick: u64) -> bool {
        if self
            .ends
            .first_key_value()
            .is_none_or(|(until, _)| *until > tick)
        {
            return false;
        }
        let gone: Vec<String> = self
            .held
            .iter()
            .filter(|(_, t)| t.until <= tick)
            .map(|(id, _)| id.clone())
            .collect();
        for id in &gone {
            self.drop_ticket(id);
        }
        true
    }

    /// How many chunks the held tickets want ([`Ticket::wanted_in`] summed).
    pub fn wanted_chunks(&self) -> u64 {
        self.wanted
    }

    /// Counts the held tickets' footprints in `measure` from now on (the shape or the rows in
    /// force changed): the sum is taken again, once.
    pub fn set_measure(&mut self, measure: Measure) {
        if measure != self.measure {
            self.measure = measure;
            self.wanted = self.held.values().map(|t| t.wanted_in(measure)).sum();
        }
    }

    /// How many are held.
    pub fn len(&self) -> usize {
        self.held.len()
    }

    /// Whether none is held.
    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// Drops them all (leaving a scene); the measure stays.
    pub fn clear(&mut self) {
        let measure = self.measure;
        *self = Tickets::default();
        self.measure = measure;
    }
}

/// What [`AnchorCache::refresh`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refresh {
    /// No anchor changed.
    Same,
    /// The same anchors; those listed by [`AnchorCache::moved`] have new positions.
    Moved,
    /// The anchors were listed again.
    Rebuilt,
}

/// An anchor as last listed.
#[derive(Debug, Clone)]
struct Anchor {
    id: EntityId,
    /// The `rides` link it had (its focus is that vehicle's position while it exists).
    rides: Option<EntityId>,
    /// Listed as the controlled character not tagged `player` (so: last).
    by_control: bool,
    /// Its spawn sequence number (a despawn and a spawn of the same id move it in the order).
    seq: Option<u64>,
}

/// The anchors of `focus: "players"`, kept between ticks: a tick in which no anchor (nor its
/// vehicle) changed costs nothing, one in which one anchor moved costs that anchor. Anything
/// that could change *which* entities are anchors, or their order, lists them again.
#[derive(Debug, Clone, Default)]
pub struct AnchorCache {
    anchors: Vec<Anchor>,
    /// Each anchor's focus (its vehicle's position, else its own), in anchor order.
    positions: Vec<Position>,
    /// Entity id (an anchor, or a vehicle one rides) → indices of the anchors it moves. Only
    /// looked up, never iterated.
    index: FxHashMap<EntityId, SmallVec<[u32; 2]>>,
    control: Option<EntityId>,
    listed: bool,
    moved: Vec<u32>,
}

impl AnchorCache {
    /// Forgets the list: the next refresh lists the anchors again.
    pub fn invalidate(&mut self) {
        self.listed = false;
    }

    /// Notes which anchors the changed entities move, or that the list must be rebuilt.
    pub fn entities_changed(&mut self, changed: &[EntityId], world: &World) {
        if !self.listed {
            return;
        }
        for id in changed {
            let Some(list) = self.index.get(id) else {
                // Not an anchor nor a ridden vehicle: it matters only if it became an anchor.
                if world.get(id).is_some_and(|e| e.has_tag(PLAYER_TAG))
                    || world.control() == Some(id)
                {
                    self.listed = false;
                    return;
                }
                continue;
            };
            for &i in list {
                let a = &self.anchors[i as usize];
                if a.id == *id {
                    let same = world.get(id).is_some_and(|e| {
                        e.rides == a.rides
                            && world.spawn_seq(id) == a.seq
                            && if a.by_control {
                                !e.has_tag(PLAYER_TAG) && world.control() == Some(id)
                            } else {
                                e.has_tag(PLAYER_TAG)
                            }
                    });
                    if !same {
                        self.listed = false;
                        return;
                    }
                }
                self.moved.push(i);
            }
            let is_anchor = list.iter().any(|&i| self.anchors[i as usize].id == *id);
            if !is_anchor && world.get(id).is_some_and(|e| e.has_tag(PLAYER_TAG)) {
                self.listed = false; // a vehicle that became a player
                return;
            }
        }
    }

    /// Brings the positions up to date; lists the anchors again when needed.
    pub fn refresh(&mut self, world: &World) -> Refresh {
        if world.control() != self.control.as_ref() {
            self.listed = false;
        }
        if !self.listed {
            self.list(world);
            return Refresh::Rebuilt;
        }
        if self.moved.is_empty() {
            return Refresh::Same;
        }
        self.moved.sort_unstable();
        self.moved.dedup();
        for &i in &self.moved {
            let a = &self.anchors[i as usize];
            if let Some(e) = world.get(&a.id) {
                self.positions[i as usize] = world.vehicle_of(e).unwrap_or(e).position;
            }
        }
        Refresh::Moved
    }

    fn list(&mut self, world: &World) {
        self.anchors.clear();
        self.positions.clear();
        self.index.clear();
        self.moved.clear();
        for (i, e) in world.anchors().enumerate() {
            self.anchors.push(Anchor {
                id: e.id.clone(),
                rides: e.rides.clone(),
                by_control: !e.has_tag(PLAYER_TAG),
                seq: world.spawn_seq(&e.id),
            });
            self.positions
                .push(world.vehicle_of(e).unwrap_or(e).position);
            self.index.entry(e.id.clone()).or_default().push(i as u32);
            if let Some(v) = &e.rides {
                self.index.entry(v.clone()).or_default().push(i as u32);
            }
        }
        self.control = world.control().cloned();
        self.listed = true;
    }

    /// The anchors' foci, in anchor order.
    pub fn positions(&self) -> &[Position] {
        &self.positions
    }

    /// The anchors' ids, in anchor order.
    pub fn ids(&self) -> impl Iterator<Item = &EntityId> {
        self.anchors.iter().map(|a| &a.id)
    }

    /// The anchors whose position the last [`Refresh::Moved`] updated.
    pub fn moved(&self) -> &[u32] {
        &self.moved
    }

    /// Forgets [`AnchorCache::moved`] once applied.
    pub fn clear_moved(&mut self) {
        self.moved.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(x: f64, z: f64) -> Position {
        Position::new(x, z)
    }

    #[test]
    fn a_ticket_counts_in_exactly_its_ticks() {
        let t = Ticket::new("tp", at(0.0, 0.0), 1, 3, 5).unwrap();
        assert_eq!((t.from, t.until), (5, 7));
        assert!(!t.counts_in(4) && t.counts_in(5) && t.counts_in(7) && !t.counts_in(8));
    }

    #[test]
    fn requests_are_checked() {
        let p = at(0.0, 0.0);
        assert_eq!(Ticket::new("", p, 1, 1, 1), Err(TicketError::Id(0)));
        assert_eq!(
            Ticket::new(&"é".repeat(65), p, 1, 1, 1),
            Err(TicketError::Id(65))
        );
        assert!(
            Ticket::new(&"é".repeat(64), p, 1, 1, 1).is_ok(),
            "code points, not bytes"
        );
        assert_eq!(Ticket::new("a", p, 65, 1, 1), Err(TicketError::Radius(65)));
        assert_eq!(Ticket::new("a", p, -1, 1, 1), Err(TicketError::Radius(-1)));
        assert_eq!(Ticket::new("a", p, 1, 0, 1), Err(TicketError::Ticks(0)));
        assert_eq!(
            Ticket::new("a", p, 1, 1 << 31, 1),
            Err(TicketError::Ticks(1 << 31))
        );
        assert!(Ticket::new("a", p, 64, (1 << 31) - 1, 1).is_ok());
        assert!(Ticket::new("a", at(1e15, -1e15), 64, 1, 1).is_ok());
        for (bad, name) in [
            (at(1e300, 0.0), "x"),
            (at(0.0, -2e15), "z"),
            (at(f64::NAN, 0.0), "x"),
        ] {
            match Ticket::new("a", bad, 1, 1, 1) {
                Err(TicketError::Position(p)) => assert_eq!(p.path, name, "{bad:?}"),
                other => panic!("{bad:?}: {other:?}"),
            }
        }
        assert_eq!(
            Ticket::new("a", at(2e15, 0.0), 1, 1, 1)
                .unwrap_err()
                .to_string(),
            "at.x: expected a finite number of metres within ±1e15, got 2000000000000000"
        );
    }

    /// No cap on the chunks tickets want (the tests of other rules).
    const NO_CAP: u64 = u64::MAX;

    #[test]
    fn the_1025th_ticket_is_refused_but_a_replacement_is_not() {
        let mut t = Tickets::default();
        let ticket = Ticket::new("x", at(0.0, 0.0), 0, 10, 1).unwrap();
        for i in 0..MAX_TICKETS {
            t.request(&format!("t{i:04}"), ticket, 0, NO_CAP).unwrap();
        }
        assert_eq!(
            t.request("one more", ticket, 0, NO_CAP),
            Err(TicketError::Full)
        );
        assert_eq!(t.request("t0000", ticket, 0, NO_CAP), Ok(()));
        assert_eq!(t.len(), MAX_TICKETS);
    }

    #[test]
    fn a_spent_request_only_removes_its_id_and_expiry_is_at_the_end_of_the_last_tick() {
        let mut t = Tickets::default();
        t.request(
            "a",
            Ticket::new("a", at(0.0, 0.0), 0, 3, 1).unwrap(),
            0,
            NO_CAP,
        )
        .unwrap();
        assert!(!t.is_empty() && t.get("a").is_some_and(|a| a.until == 3));
        t.request(
            "a",
            Ticket::new("a", at(0.0, 0.0), 0, 2, 1).unwrap(),
            5,
            NO_CAP,
        )
        .unwrap();
        assert!(
            t.is_empty() && t.get("a").is_none(),
            "ticks 1..=2 are spent at tick 5: the request removes `a`"
        );
        t.request(
            "b",
            Ticket::new("b", at(0.0, 0.0), 0, 2, 3).unwrap(),
            2,
            NO_CAP,
        )
        .unwrap();
        assert!(!t.expire(3));
        assert!(t.expire(4));
        assert!(t.is_empty());
    }

    #[test]
    fn starts_ends_and_announcements_are_tracked_without_scanning_every_ticket() {
        let mut t = Tickets::default();
        let p = at(0.0, 0.0);
        t.request("a", Ticket::new("a", p, 0, 3, 5).unwrap(), 0, NO_CAP)
            .unwrap();
        t.request("b", Ticket::new("b", p, 0, 1, 2).unwrap(), 0, NO_CAP)
            .unwrap();
        assert!(t.starts_at(5) && t.starts_at(2) && !t.starts_at(3));
        // Replacing `a` forgets its old window.
        t.request("a", Ticket::new("a", p, 0, 1, 9).unwrap(), 0, NO_CAP)
            .unwrap();
        assert!(!t.starts_at(5) && t.starts_at(9));
        // Only tickets counting in the tick are announced, once.
        assert_eq!(t.announce(2, |_| true), ["b"]);
        assert!(t.announce(2, |_| true).is_empty());
        assert!(!t.expire(1));
        assert!(t.expire(2), "b's last tick");
        assert_eq!(t.announce(9, |_| false), Vec::<String>::new());
        assert_eq!(t.announce(9, |_| true), ["a"]);
        t.drop_ticket("a");
        assert!(!t.starts_at(9) && t.is_empty());
    }

    #[test]
    fn tickets_are_listed_in_code_point_order() {
        let mut t = Tickets::default();
        for id in ["é", "z", "B", "a"] {
            t.request(
                id,
                Ticket::new(id, at(0.0, 0.0), 0, 5, 1).unwrap(),
                0,
                NO_CAP,
            )
            .unwrap();
        }
        let ids: Vec<&str> = t.iter().map(|(id, _)| id).collect();
        assert_eq!(ids, ["B", "a", "z", "é"]);
    }

    #[test]
    fn the_cap_counts_each_held_ticket_s_whole_square_and_a_refusal_changes_nothing() {
        let mut t = Tickets::default();
        let r = |id: &str, radius: i64| Ticket::new(id, at(0.0, 0.0), radius, 10, 1).unwrap();
        // Radius 64: 129² = 16 641 chunks; three fit in 50 000, a fourth does not.
        for id in ["a", "b", "c"] {
            t.request(id, r(id, 64), 0, 50_000).unwrap();
        }
        assert_eq!(t.wanted_chunks(), 3 * 16_641);
        let before = t.clone();
        assert_eq!(
            t.request("d", r("d", 64), 0, 50_000),
            Err(TicketError::OverCap {
                wanted: 4 * 16_641,
                cap: 50_000
            })
        );
        assert_eq!(t, before, "refused whole: nothing changes");
        assert_eq!(
            TicketError::OverCap {
                wanted: 66_564,
                cap: 50_000
            }
            .to_string(),
            "the held tickets would want 66564 chunks, more than maxTicketChunks 50000"
        );
        // A re-request is measured with the old ticket left out; refused, the old one stays.
        t.request("a", r("a", 63), 0, 50_000).unwrap();
        assert_eq!(t.wanted_chunks(), 2 * 16_641 + 127 * 127);
        t.request("c", r("c", 0), 0, 50_000).unwrap();
        t.request("d", r("d", 64), 0, 50_000).unwrap();
        assert!(matches!(
            t.request("c", r("c", 64), 0, 50_000),
            Err(TicketError::OverCap { .. })
        ));
        assert_eq!(
            t.get("c").map(|c| c.radius),
            Some(0),
            "the old ticket stays"
        );
        // Drops and expiry give the chunks back; a spent request only removes its id.
        assert!(t.drop_ticket("d"));
        assert_eq!(t.wanted_chunks(), 16_641 + 127 * 127 + 1);
        t.request("c", Ticket::new("c", at(0.0, 0.0), 64, 2, 1).unwrap(), 5, 0)
            .unwrap();
        assert_eq!(t.wanted_chunks(), 16_641 + 127 * 127);
        assert!(t.expire(10));
        assert_eq!((t.len(), t.wanted_chunks()), (0, 0));
        // Exactly at the cap is allowed.
        t.request("e", r("e", 2), 0, 25).unwrap();
        assert_eq!(
            t.request("f", r("f", 0), 0, 25),
            Err(TicketError::OverCap {
                wanted: 26,
                cap: 25
            })
        );
    }

    fn entity(id: &str, tags: &[&str], x: f64) -> crate::host::Entity {
        crate::host::Entity {
            id: EntityId::new(id),
            tags: tags.iter().map(|t| (*t).to_owned()).collect(),
            position: at(x, 0.0),
            rides: None,
            data: None,
        }
    }

    fn xs(cache: &AnchorCache) -> Vec<f64> {
        cache.positions().iter().map(|p| p.x).collect()
    }

    #[test]
    fn the_anchor_cache_moves_only_what_changed_and_relists_on_a_new_anchor() {
        let mut w = World::new();
        for (id, tags, x) in [
            ("a", &["player"][..], 1.0),
            ("car", &[][..], 50.0),
            ("b", &["player"][..], 2.0),
        ] {
            w.spawn(entity(id, tags, x)).unwrap();
        }
        w.ride(&EntityId::new("b"), &EntityId::new("car")).unwrap();
        w.take_changed();
        let mut cache = AnchorCache::default();
        assert_eq!(cache.refresh(&w), Refresh::Rebuilt);
        assert_eq!(xs(&cache), [1.0, 50.0], "b's focus is its car");
        assert_eq!(
            cache.refresh(&w),
            Refresh::Same,
            "nothing changed: nothing to do"
        );
        // The car moves: b (index 1) moves, a does not.
        w.move_to(&EntityId::new("car"), at(60.0, 0.0)).unwrap();
        let changed = w.take_changed();
        cache.entities_changed(&changed, &w);
        assert_eq!(cache.refresh(&w), Refresh::Moved);
        assert_eq!(cache.moved(), [1]);
        assert_eq!(xs(&cache), [1.0, 60.0]);
        cache.clear_moved();
        // An anchor moving on foot moves itself only.
        w.move_to(&EntityId::new("a"), at(5.0, 0.0)).unwrap();
        let changed = w.take_changed();
        cache.entities_changed(&changed, &w);
        assert_eq!(cache.refresh(&w), Refresh::Moved);
        assert_eq!(cache.moved(), [0]);
        assert_eq!(xs(&cache), [5.0, 60.0]);
        cache.clear_moved();
        // A crate that is not an anchor changes nothing.
        w.spawn(entity("crate", &["streamable"], 9.0)).unwrap();
        let changed = w.take_changed();
        cache.entities_changed(&changed, &w);
        assert_eq!(cache.refresh(&w), Refresh::Same);
        // A new player, a lost tag, a new rides link, a control change: listed again.
        for change in 0..4 {
            match change {
                0 => w.spawn(entity("c", &["player"], 3.0)).unwrap(),
                1 => w.untag(&EntityId::new("a"), PLAYER_TAG).unwrap(),
                2 => w.ride(&EntityId::new("c"), &EntityId::new("car")).unwrap(),
                _ => w.set_control(Some(EntityId::new("crate"))).unwrap(),
            }
            let changed = w.take_changed();
            cache.entities_changed(&changed, &w);
            assert_eq!(cache.refresh(&w), Refresh::Rebuilt, "change {change}");
        }
        // b, c (both in the car), then the controlled crate.
        assert_eq!(xs(&cache), [60.0, 60.0, 9.0]);
        // The controlled crate (not tagged `player`) moves: only its focus moves.
        w.move_to(&EntityId::new("crate"), at(10.0, 0.0)).unwrap();
        let changed = w.take_changed();
        cache.entities_changed(&changed, &w);
        assert_eq!(cache.refresh(&w), Refresh::Moved);
        assert_eq!(cache.moved(), [2]);
        assert_eq!(xs(&cache), [60.0, 60.0, 10.0]);
        cache.clear_moved();
        // b despawned and spawned again in one batch: now after c in spawn order.
        w.despawn(&EntityId::new("b")).unwrap();
        w.spawn(entity("b", &["player"], 70.0)).unwrap();
        let changed = w.take_changed();
        cache.entities_changed(&changed, &w);
        assert_eq!(cache.refresh(&w), Refresh::Rebuilt);
        let ids: Vec<&str> = cache.ids().map(EntityId::as_str).collect();
        assert_eq!(ids, ["c", "b", "crate"]);
    }
}
