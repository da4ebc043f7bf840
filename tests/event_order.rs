//! The engine delivers events in the order of a single queue
//! (docs/reference/engine.md#event-delivery): what a kit emits while an event is delivered comes
//! after every event already waiting; changed entities are told before the next event is delivered,
//! and what that emits waits its turn too. The log lists the events in delivery order.

use std::cell::RefCell;
use std::rc::Rc;

use serde_json::json;
use world_streaming::grid::Position;
use world_streaming::host::{
    Ctx, Engine, Entity, EntityId, Event, Kit, KitCatalog, KitEntry, KitManifest,
};

/// Emits `a1` and `a2` on its tick; `a1` makes it emit `b1` and move the entity, `a2` makes
/// it emit `b2`; an entity change makes it emit `c`. Records what it hears.
struct Echo(Rc<RefCell<Vec<String>>>);

impl Kit for Echo {
    fn id(&self) -> &str {
        "t.echo"
    }

    fn tick(&mut self, ctx: &mut Ctx<'_>) {
        ctx.events.emit("a1", json!({}));
        ctx.events.emit("a2", json!({}));
    }

    fn on_event(&mut self, event: &Event, ctx: &mut Ctx<'_>) {
        self.0.borrow_mut().push(event.event.to_string());
        match &*event.event {
            "a1" => {
                ctx.events.emit("b1", json!({}));
                let e = EntityId::new("e");
                ctx.world.move_to(&e, Position::new(40.0, 0.0)).unwrap();
            }
            "a2" => ctx.events.emit("b2", json!({})),
            _ => {}
        }
    }

    fn on_entities_changed(&mut self, _changed: &[EntityId], ctx: &mut Ctx<'_>) {
        self.0.borrow_mut().push("(changed)".into());
        ctx.events.emit("c", json!({}));
    }
}

#[test]
fn events_emitted_while_delivering_wait_behind_the_queue_and_entity_changes_come_first() {
    let heard = Rc::new(RefCell::new(Vec::new()));
    let mut catalog = KitCatalog::default();
    let h = heard.clone();
    catalog.add(
        KitManifest::simple("t.echo", "1.0.0"),
        Box::new(move |_| Ok(Box::new(Echo(h.clone())) as Box<dyn Kit>)),
    );
    let kits = [KitEntry {
        id: "t.echo".into(),
        config: None,
    }];
    let mut engine = Engine::new(&catalog, &kits, Vec::new()).unwrap();
    let entity: Entity =
        serde_json::from_value(json!({"id": "e", "position": {"x": 0, "z": 0}})).unwrap();
    engine.world_mut().spawn(entity).unwrap();
    engine.tick();
    let log: Vec<String> = engine
        .take_events()
        .iter()
        .map(|e| e.event.to_string())
        .collect();
    // The spawn is told at the first delivery point (its `c` first); a1's b1 and the move's c
    // wait behind a2; a2's b2 behind them.
    assert_eq!(log, ["c", "a1", "a2", "b1", "c", "b2"]);
    assert_eq!(
        *heard.borrow(),
        ["(changed)", "c", "a1", "(changed)", "a2", "b1", "c", "b2"]
    );
}
