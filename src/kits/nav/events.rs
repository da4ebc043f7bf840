//! The nav kit's vocabulary: the names of the events it emits, their payloads as the kit writes
//! them, and reading an event back as typed data ([`NavEvent`]); the JSON is the outward,
//! logged record (docs/reference/nav.md).

use serde_json::{json, Value};

use super::search::{Answer, Cell, Outcome};
use super::service::answer_data;
use crate::grid::ChunkPos;
use crate::host::{Event, EventData};

/// Event: the answer to a `path {id, from, to}` input: `{id, status, nodes}` plus `path` (a
/// list of `{x, z}` cells, start to goal) when `found`, or `x`, `z` (the chunk not built) when
/// `indeterminate`.
pub const NAV_PATH: &str = "world.nav.path";
/// Event: an agent's search met a chunk that is not built `{id, x, z}` (once per wait).
pub const AGENT_WAITING: &str = "world.agent.waiting";
/// Event: an agent stands on its goal's cell `{id}` (once per goal).
pub const AGENT_ARRIVED: &str = "world.agent.arrived";
/// Event: an agent's goal is proven unreachable or out of one query's budget `{id, status}`
/// (`none` or `budget`; once, then retried only after terrain is built, changed or released).
pub const AGENT_STUCK: &str = "world.agent.stuck";

/// Every event name of the kit.
pub const NAMES: &[&str] = &[NAV_PATH, AGENT_WAITING, AGENT_ARRIVED, AGENT_STUCK];

/// One event of the nav kit, typed.
#[derive(Debug, Clone, PartialEq)]
pub enum NavEvent {
    /// `world.nav.path`: the answer to the `path` input `id`.
    Path {
        /// The query's id.
        id: String,
        /// Its answer and cost.
        outcome: Outcome,
    },
    /// `world.agent.waiting`: agent `id` waits for `chunk` to be built.
    Waiting {
        /// The agent.
        id: String,
        /// The chunk not built.
        chunk: ChunkPos,
    },
    /// `world.agent.arrived`: agent `id` stands on its goal's cell.
    Arrived {
        /// The agent.
        id: String,
    },
    /// `world.agent.stuck`: agent `id`'s goal is unreachable ([`Answer::None`]) or out of one
    /// query's budget ([`Answer::Budget`]).
    Stuck {
        /// The agent.
        id: String,
        /// [`Answer::None`] or [`Answer::Budget`].
        answer: Answer,
    },
}

impl NavEvent {
    /// The event as typed data when it is one of the kit's; `None` for any other event.
    pub fn from_event(event: &Event) -> Option<NavEvent> {
        let data = &event.data;
        let id = || Some(data.get("id")?.as_str()?.to_owned());
        let at = || data.xz();
        let status = || data.get("status")?.as_str();
        Some(match &*event.event {
            NAV_PATH => {
                let answer = match status()? {
                    "found" => {
                        let cells = data.get("path")?.as_array()?;
                        let cell = |c: &Value| Some(Cell::new(c["x"].as_i64()?, c["z"].as_i64()?));
                        Answer::Found(cells.iter().map(cell).collect::<Option<_>>()?)
                    }
                    "indeterminate" => Answer::Indeterminate(at()?),
                    other => stuck(other)?,
                };
                NavEvent::Path {
                    id: id()?,
                    outcome: Outcome {
                        answer,
                        nodes: data.get("nodes")?.as_u64()?,
                    },
                }
            }
            AGENT_WAITING => NavEvent::Waiting {
                id: id()?,
                chunk: at()?,
            },
            AGENT_ARRIVED => NavEvent::Arrived { id: id()? },
            AGENT_STUCK => NavEvent::Stuck {
                id: id()?,
                answer: stuck(status()?)?,
            },
            _ => return None,
        })
    }

    /// The event's name.
    pub fn name(&self) -> &'static str {
        match self {
            NavEvent::Path { .. } => NAV_PATH,
            NavEvent::Waiting { .. } => AGENT_WAITING,
            NavEvent::Arrived { .. } => AGENT_ARRIVED,
            NavEvent::Stuck { .. } => AGENT_STUCK,
        }
    }

    /// The payload the kit emits it with.
    pub fn data(&self) -> EventData {
        match self {
            NavEvent::Path { id, outcome } => path_event(id, outcome),
            NavEvent::Waiting { id, chunk } => json!({ "id": id, "x": chunk.x, "z": chunk.z }),
            NavEvent::Arrived { id } => json!({ "id": id }),
            NavEvent::Stuck { id, answer } => json!({ "id": id, "status": answer.status() }),
        }
        .into()
    }
}

/// [`Answer::None`] for `none`, [`Answer::Budget`] for `budget`.
fn stuck(status: &str) -> Option<Answer> {
    match status {
        "none" => Some(Answer::None),
        "budget" => Some(Answer::Budget),
        _ => None,
    }
}

/// The `world.nav.path` payload of query `id`: `{id, status, nodes, path | x, z}`.
pub fn path_event(id: &str, outcome: &Outcome) -> Value {
    let mut m = serde_json::Map::new();
    m.insert("id".into(), json!(id));
    m.extend(answer_data(outcome));
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_reads_back_as_itself() {
        let id = || "a1".to_owned();
        let outcome = |answer| Outcome { answer, nodes: 12 };
        for e in [
            NavEvent::Path {
                id: id(),
                outcome: outcome(Answer::Found(vec![Cell::new(0, 0), Cell::new(1, -1)])),
            },
            NavEvent::Path {
                id: id(),
                outcome: outcome(Answer::Indeterminate(ChunkPos::new(2, 3))),
            },
            NavEvent::Path {
                id: id(),
                outcome: outcome(Answer::None),
            },
            NavEvent::Path {
                id: id(),
                outcome: outcome(Answer::Budget),
            },
            NavEvent::Waiting {
                id: id(),
                chunk: ChunkPos::new(-1, 5),
            },
            NavEvent::Arrived { id: id() },
            NavEvent::Stuck {
                id: id(),
                answer: Answer::Budget,
            },
        ] {
            let event = Event {
                tick: 9,
                event: e.name().into(),
                data: e.data(),
            };
            assert_eq!(NavEvent::from_event(&event), Some(e));
        }
        let bad = Event {
            tick: 9,
            event: AGENT_STUCK.into(),
            data: json!({"id": "a1", "status": "found"}).into(),
        };
        assert_eq!(NavEvent::from_event(&bad), None);
    }
}
