//! The service registry: how one kit reaches another by name and interface, never by concrete type.
//!
//! A service is stored as an `Rc<dyn Trait>`; [`Services::get`] hands out clones of that `Rc`.

use std::any::Any;
use std::rc::Rc;

use indexmap::IndexMap;

/// Services by name, in registration order.
#[derive(Default)]
pub struct Services {
    by_name: IndexMap<String, Box<dyn Any>>,
}

impl Services {
    /// Registers `service` under `name` (replacing any earlier one).
    ///
    /// ```
    /// use std::rc::Rc;
    /// use world_streaming::host::Services;
    /// trait Greeter { fn hello(&self) -> String; }
    /// struct En;
    /// impl Greeter for En { fn hello(&self) -> String { "hello".into() } }
    /// let mut services = Services::default();
    /// services.provide::<dyn Greeter>("greeter", Rc::new(En));
    /// assert_eq!(services.get::<dyn Greeter>("greeter").unwrap().hello(), "hello");
    /// ```
    pub fn provide<T: ?Sized + 'static>(&mut self, name: &str, service: Rc<T>) {
        self.by_name.insert(name.to_owned(), Box::new(service));
    }

    /// The service `name`, if it is registered with interface `T`.
    pub fn get<T: ?Sized + 'static>(&self, name: &str) -> Option<Rc<T>> {
        self.by_name.get(name)?.downcast_ref::<Rc<T>>().cloned()
    }

    /// The registered names.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.by_name.keys().map(String::as_str)
    }
}

#[cfg(feature = "lua")]
impl crate::script::ServiceLookup for Services {
    fn lookup(&self, name: &str) -> Option<&dyn Any> {
        self.by_name.get(name).map(|b| &**b)
    }
}
