//! The column events of vertical worlds (docs/reference/streaming.md#columns): the kit keeps the
//! derived column set ([`super::residency::Columns`]) while `vertical` is on and emits
//! `world.column.unloaded` / `world.column.loaded` at the points the tick's steps call for.

use crate::host::Ctx;

use super::{events, Settings, StreamingKit};

impl StreamingKit {
    /// The column set (docs/reference/streaming.md#columns) is kept while `vertical` is on.
    pub(super) fn follow_columns(&mut self, settings: Settings) {
        let st = &mut *self.state.borrow_mut();
        let on = settings.vertical.is_some();
        st.columns.set_on(on, || st.residency.loaded());
    }

    /// `world.column.unloaded {x, z}` (`loaded` false) or `world.column.loaded {x, z}` for the
    /// columns that changed since the last call, row order (z, x); nothing with `vertical` off.
    pub(super) fn announce_columns(&mut self, ctx: &mut Ctx<'_>, loaded: bool) {
        let mut st = self.state.borrow_mut();
        if !st.columns.has_noted() {
            return;
        }
        let mut list = std::mem::take(&mut self.batch_columns);
        match loaded {
            true => st.columns.take_loaded(&mut list),
            false => st.columns.take_unloaded(&mut list),
        }
        drop(st);
        let name = if loaded {
            events::COLUMN_LOADED
        } else {
            events::COLUMN_UNLOADED
        };
        for c in list.drain(..) {
            ctx.events.emit(name, crate::host::chunk_data(c));
        }
        self.batch_columns = list;
    }
}
