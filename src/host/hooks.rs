//! Cancellable hooks: a kit declares a hook, mods answer it. Handlers run in mod order with a
//! read-only payload; the first cancel wins and later handlers are not asked. A handler that fails
//! is reported as a `mod.error` event and counts as not cancelling.

use std::fmt;
use std::sync::Arc;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::events::{EventBus, MOD_ERROR};

/// The id of a mod (a JSON mod's `id`, a Lua mod's file stem).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ModId(Arc<str>);

impl ModId {
    /// The id `name`.
    pub fn new(name: &str) -> Self {
        ModId(Arc::from(name))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ModId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One read-only field of a hook's payload.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum HookValue {
    /// An integer, such as a chunk coordinate.
    Int(i64),
    /// A number.
    Number(f64),
    /// A flag.
    Bool(bool),
}

/// The payload of one hook ask: named fields, in declaration order.
#[derive(Debug, Clone, Copy)]
pub struct HookArgs<'a> {
    /// The hook's name.
    pub hook: &'a str,
    /// Its read-only fields.
    pub fields: &'a [(&'static str, HookValue)],
}

impl HookArgs<'_> {
    /// The integer field `name`, if present.
    pub fn int(&self, name: &str) -> Option<i64> {
        self.fields.iter().find_map(|(k, v)| match v {
            HookValue::Int(i) if *k == name => Some(*i),
            _ => None,
        })
    }
}

/// A mod's decision to cancel a hook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cancel {
    /// The mod that cancelled.
    pub by: ModId,
    /// Its reason (may be empty).
    pub reason: String,
}

/// A mod that failed while answering a hook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModFailure {
    /// The mod.
    pub by: ModId,
    /// What went wrong.
    pub message: String,
}

/// What one handler answers.
pub type HookAnswer = Result<Option<Cancel>, ModFailure>;

/// Something that answers hooks: one Lua handler, or a group of consecutive JSON mods.
pub trait HookHandler {
    /// Answers one ask. `Ok(None)` lets the change happen.
    fn ask(&self, args: &HookArgs<'_>) -> HookAnswer;

    /// A name for profiles, e.g. the mod's id.
    fn label(&self) -> String {
        "handler".to_owned()
    }

    /// Which loaded mod this handler is of, when one mod may have several (a Lua mod's `on`):
    /// equal for the handlers of one mod only (two mods may share an id, so not the id; an
    /// address, compared within one ask and never shown, so nothing depends on its value).
    fn owner(&self) -> Option<usize> {
        None
    }

    /// Whether its last answer failed because it ran away (spent its instruction budget).
    fn ran_away(&self) -> bool {
        false
    }

    /// Whether its mod spent its budget for this tick: then it is not asked (and counts as not
    /// cancelling) until the next tick.
    fn silenced(&self) -> bool {
        false
    }
}

/// Calls and total wall-clock time of one handler, for `run --profile`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct HookStat {
    /// How many asks it answered.
    pub calls: u64,
    /// Time spent answering.
    pub total: std::time::Duration,
}

/// Handler statistics by `hook: label`, shared with whoever enabled profiling.
pub type HookProfile = std::rc::Rc<std::cell::RefCell<IndexMap<String, HookStat>>>;

/// Why a hook could not be registered.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum HookError {
    /// No kit declared a hook of that name.
    #[error(
        "unknown hook `{}`; expected one of: {known}",
        crate::escape::escape(hook)
    )]
    UnknownHook {
        /// The name asked for.
        hook: String,
        /// The declared hooks, comma-separated.
        known: String,
    },
}

/// The declared hooks and their handlers, in mod order.
#[derive(Default)]
pub struct Hooks {
    /// By hook name; FxHash (unseeded) because every load and release looks its hook up.
    handlers: IndexMap<String, Vec<Box<dyn HookHandler>>, rustc_hash::FxBuildHasher>,
    profile: Option<HookProfile>,
}

impl Hooks {
    /// Declares a cancellable hook (done by the kit that asks it).
    pub fn declare(&mut self, hook: &str) {
        self.handlers.entry(hook.to_owned()).or_default();
    }

    /// Whether `hook` was declared.
    pub fn is_declared(&self, hook: &str) -> bool {
        self.handlers.contains_key(hook)
    }

    /// The declared hook names.
    pub fn declared(&self) -> impl Iterator<Item = &str> {
        self.handlers.keys().map(String::as_str)
    }

    /// Appends a handler to `hook` (handlers are asked in registration order).
    pub fn register(&mut self, hook: &str, handler: Box<dyn HookHandler>) -> Result<(), HookError> {
        match self.handlers.get_mut(hook) {
            Some(list) => {
                list.push(handler);
                Ok(())
            }
            None => Err(HookError::UnknownHook {
                hook: hook.to_owned(),
                known: self.handlers.keys().cloned().collect::<Vec<_>>().join(", "),
            }),
        }
    }

    /// Starts timing every handler (wall clock, for reports only: answers never depend on it).
    /// Not on the wasm build, which has no clock (docs/reference/web.md#no-clock).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn enable_profiling(&mut self) -> HookProfile {
        self.profile
            .get_or_insert_with(HookProfile::default)
            .clone()
    }

    /// Whether anyone answers `hook`.
    pub fn has_handlers(&self, hook: &str) -> bool {
        self.handlers.get(hook).is_some_and(|l| !l.is_empty())
    }

    /// Asks `args.hook`: the first cancel wins; failures are emitted as `mod.error` and count as
    /// not cancelling.
    ///
    /// A handler that runs away stops its mod's later handlers for this ask (they are not
    /// asked): a mod's runaway costs one budget an ask, not one for each of its handlers. A
    /// handler whose mod spent its tick budget ([`HookHandler::silenced`]) is not asked.
    pub fn ask(&self, args: &HookArgs<'_>, events: &mut EventBus) -> Option<Cancel> {
        let list = self.handlers.get(args.hook)?;
        let mut stopped: Vec<usize> = Vec::new();
        for handler in list {
            if !stopped.is_empty() && handler.owner().is_some_and(|m| stopped.contains(&m)) {
                continue;
            }
            if handler.silenced() {
                continue;
            }
            let answer = match &self.profile {
                None => handler.ask(args),
                Some(profile) => {
                    let start = std::time::Instant::now();
                    let answer = handler.ask(args);
                    let spent = start.elapsed();
                    let mut p = profile.borrow_mut();
                    let stat = p
                        .entry(format!("{}: {}", args.hook, handler.label()))
                        .or_default();
                    stat.calls += 1;
                    stat.total += spent;
                    answer
                }
            };
            match answer {
                Ok(Some(cancel)) => return Some(cancel),
                Ok(None) => {}
                Err(failure) => {
                    events.emit(
                        MOD_ERROR,
                        json!({ "mod": failure.by.as_str(), "hook": args.hook, "message": failure.message }),
                    );
                    if handler.ran_away() {
                        stopped.extend(handler.owner());
                    }
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed(HookAnswer);
    impl HookHandler for Fixed {
        fn ask(&self, _: &HookArgs<'_>) -> HookAnswer {
            self.0.clone()
        }
    }

    fn cancel(by: &str) -> HookAnswer {
        Ok(Some(Cancel {
            by: ModId::new(by),
            reason: "r".into(),
        }))
    }

    #[test]
    fn the_first_cancel_wins_and_failures_are_reported() {
        let mut hooks = Hooks::default();
        hooks.declare("h");
        let fail = Err(ModFailure {
            by: ModId::new("bad"),
            message: "boom".into(),
        });
        hooks.register("h", Box::new(Fixed(fail))).unwrap();
        hooks.register("h", Box::new(Fixed(Ok(None)))).unwrap();
        hooks
            .register("h", Box::new(Fixed(cancel("first"))))
            .unwrap();
        hooks
            .register("h", Box::new(Fixed(cancel("second"))))
            .unwrap();
        let mut bus = EventBus::default();
        let got = hooks.ask(
            &HookArgs {
                hook: "h",
                fields: &[],
            },
            &mut bus,
        );
        assert_eq!(got.unwrap().by.as_str(), "first");
        let e = bus.deliver_next().unwrap();
        assert_eq!(e.event, MOD_ERROR);
        assert_eq!(
            e.data,
            json!({"mod": "bad", "hook": "h", "message": "boom"})
        );
    }

    struct Counting(std::rc::Rc<std::cell::Cell<u32>>, HookAnswer);
    impl HookHandler for Counting {
        fn ask(&self, _: &HookArgs<'_>) -> HookAnswer {
            self.0.set(self.0.get() + 1);
            self.1.clone()
        }
    }

    /// A handler of mod `m` that counts its asks, and runs away when told to.
    struct Owned {
        m: ModId,
        owner: usize,
        runaway: bool,
        asked: std::rc::Rc<std::cell::Cell<u32>>,
    }
    impl HookHandler for Owned {
        fn ask(&self, _: &HookArgs<'_>) -> HookAnswer {
            self.asked.set(self.asked.get() + 1);
            if self.runaway {
                return Err(ModFailure {
                    by: self.m.clone(),
                    message: "instruction budget exceeded".into(),
                });
            }
            Ok(None)
        }
        fn owner(&self) -> Option<usize> {
            Some(self.owner)
        }
        fn ran_away(&self) -> bool {
            self.runaway
        }
    }

    #[test]
    fn a_runaway_stops_its_mod_s_later_handlers_for_the_ask_only() {
        let mut hooks = Hooks::default();
        hooks.declare("h");
        let asked = std::rc::Rc::new(std::cell::Cell::new(0));
        let other = std::rc::Rc::new(std::cell::Cell::new(0));
        let handler = |m: &str, runaway: bool, asked: &std::rc::Rc<std::cell::Cell<u32>>| {
            Box::new(Owned {
                m: ModId::new(m),
                owner: usize::from(runaway),
                runaway,
                asked: asked.clone(),
            })
        };
        hooks.register("h", handler("hog", true, &asked)).unwrap();
        for _ in 0..999 {
            hooks.register("h", handler("hog", true, &asked)).unwrap();
        }
        hooks.register("h", handler("fine", false, &other)).unwrap();
        let mut events = EventBus::default();
        let args = HookArgs {
            hook: "h",
            fields: &[],
        };
        for _ in 0..2 {
            assert_eq!(hooks.ask(&args, &mut events), None);
        }
        assert_eq!(asked.get(), 2, "one runaway an ask, each ask afresh");
        assert_eq!(other.get(), 2, "another mod's handlers are still asked");
        let mut errors = 0;
        while events.deliver_next().is_some() {
            errors += 1;
        }
        assert_eq!(errors, 2, "one mod.error an ask");
    }

    /// A handler whose mod spent its tick budget, and that would cancel if asked.
    struct Silenced(std::rc::Rc<std::cell::Cell<u32>>);
    impl HookHandler for Silenced {
        fn ask(&self, _: &HookArgs<'_>) -> HookAnswer {
            self.0.set(self.0.get() + 1);
            cancel("silenced")
        }
        fn silenced(&self) -> bool {
            true
        }
    }

    #[test]
    fn a_silenced_handler_is_not_asked_and_does_not_cancel() {
        let mut hooks = Hooks::default();
        hooks.declare("h");
        let asked = std::rc::Rc::new(std::cell::Cell::new(0));
        let after = std::rc::Rc::new(std::cell::Cell::new(0));
        hooks
            .register("h", Box::new(Silenced(asked.clone())))
            .unwrap();
        hooks
            .register("h", Box::new(Counting(after.clone(), Ok(None))))
            .unwrap();
        let mut bus = EventBus::default();
        let args = HookArgs {
            hook: "h",
            fields: &[],
        };
        assert_eq!(hooks.ask(&args, &mut bus), None);
        assert_eq!((asked.get(), after.get()), (0, 1));
        assert!(bus.deliver_next().is_none(), "no mod.error for it");
    }

    #[test]
    fn handlers_after_the_first_cancel_are_not_asked() {
        let mut hooks = Hooks::default();
        hooks.declare("h");
        let before = std::rc::Rc::new(std::cell::Cell::new(0));
        let after = std::rc::Rc::new(std::cell::Cell::new(0));
        let failing = Err(ModFailure {
            by: ModId::new("late"),
            message: "boom".into(),
        });
        hooks
            .register("h", Box::new(Counting(before.clone(), Ok(None))))
            .unwrap();
        hooks
            .register("h", Box::new(Fixed(cancel("first"))))
            .unwrap();
        hooks
            .register("h", Box::new(Counting(after.clone(), failing)))
            .unwrap();
        hooks
            .register("h", Box::new(Counting(after.clone(), cancel("second"))))
            .unwrap();
        let mut bus = EventBus::default();
        let args = HookArgs {
            hook: "h",
            fields: &[],
        };
        for _ in 0..3 {
            assert_eq!(hooks.ask(&args, &mut bus).unwrap().by.as_str(), "first");
        }
        assert_eq!((before.get(), after.get()), (3, 0));
        assert!(
            bus.deliver_next().is_none(),
            "no mod.error from a handler not asked"
        );
    }

    #[test]
    fn profiling_counts_each_handlers_calls_under_hook_and_label() {
        struct Named;
        impl HookHandler for Named {
            fn ask(&self, _: &HookArgs<'_>) -> HookAnswer {
                Ok(None)
            }
            fn label(&self) -> String {
                "named".into()
            }
        }
        let mut hooks = Hooks::default();
        hooks.declare("h");
        hooks.register("h", Box::new(Fixed(Ok(None)))).unwrap();
        hooks.register("h", Box::new(Named)).unwrap();
        let profile = hooks.enable_profiling();
        let mut bus = EventBus::default();
        let args = HookArgs {
            hook: "h",
            fields: &[],
        };
        for _ in 0..3 {
            assert_eq!(hooks.ask(&args, &mut bus), None);
        }
        let p = profile.borrow();
        let calls: Vec<(&str, u64)> = p.iter().map(|(k, s)| (k.as_str(), s.calls)).collect();
        assert_eq!(calls, [("h: handler", 3), ("h: named", 3)]);
        assert!(
            std::rc::Rc::ptr_eq(&profile, &hooks.enable_profiling()),
            "one profile, shared"
        );
    }

    #[test]
    fn declared_hooks_are_listed_in_declaration_order_and_answered_only_when_registered() {
        let mut hooks = Hooks::default();
        hooks.declare("b");
        hooks.declare("a");
        hooks.declare("b");
        assert_eq!(hooks.declared().collect::<Vec<_>>(), ["b", "a"]);
        assert!(hooks.is_declared("a") && !hooks.is_declared("c"));
        assert!(!hooks.has_handlers("a"), "declared, nobody answers");
        hooks.register("a", Box::new(Fixed(Ok(None)))).unwrap();
        assert!(hooks.has_handlers("a") && !hooks.has_handlers("b") && !hooks.has_handlers("c"));
    }

    #[test]
    fn hook_args_read_integer_fields_by_name() {
        let fields = [
            ("x", HookValue::Int(3)),
            ("flag", HookValue::Bool(true)),
            ("z", HookValue::Int(-4)),
            ("w", HookValue::Number(1.5)),
        ];
        let args = HookArgs {
            hook: "h",
            fields: &fields,
        };
        assert_eq!((args.int("x"), args.int("z")), (Some(3), Some(-4)));
        assert_eq!(
            (args.int("flag"), args.int("w"), args.int("y")),
            (None, None, None)
        );
    }

    #[test]
    fn a_mod_id_shows_as_its_name() {
        let id = ModId::new("keep_home");
        assert_eq!(
            (id.as_str(), id.to_string().as_str()),
            ("keep_home", "keep_home")
        );
    }

    #[test]
    fn registering_an_undeclared_hook_names_the_known_ones() {
        let mut hooks = Hooks::default();
        hooks.declare("a");
        let err = hooks.register("b", Box::new(Fixed(Ok(None)))).unwrap_err();
        assert_eq!(err.to_string(), "unknown hook `b`; expected one of: a");
    }
}
