//! The `world.terrain` service over the kit's state.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use crate::grid::{ChunkPos, Position};

use super::state::State;
use super::*;

/// The service handle.
pub(super) struct Handle(pub(super) Rc<RefCell<State>>);

impl TerrainService for Handle {
    fn height_at(&self, pos: Position) -> Option<u16> {
        let st = self.0.borrow();
        let (chunk, i, j) = st.cell_of(pos);
        Some(st.built.get(&chunk)?.height(i, j))
    }

    fn chunk(&self, chunk: ChunkPos) -> Option<Arc<ChunkData>> {
        self.0.borrow().built.get(&chunk).cloned()
    }

    fn is_built(&self, chunk: ChunkPos) -> bool {
        self.0.borrow().built.contains_key(&chunk)
    }

    fn on_built(&self, callback: BuiltCallback) {
        let list = self.0.borrow().subscribers.clone();
        list.borrow_mut().push(Rc::new(RefCell::new(callback)));
    }

    fn cells_per_chunk(&self) -> u32 {
        self.0.borrow().config.cells_per_chunk.get()
    }

    fn generating(&self) -> usize {
        let mut st = self.0.borrow_mut();
        if st.config.runs_inline() {
            return 0; // nothing is built off the tick: each job runs at its commit
        }
        st.submit(); // work dispatched outside a tick (a load) is outstanding too
        st.drain();
        st.drain_blocks();
        st.in_flight.len() - st.arrived + st.blocks.awaited
    }

    fn edit(&self, at: Position, height: u16, material: Option<u8>) -> Result<(), EditRefused> {
        let mut st = self.0.borrow_mut();
        let result = st.edit(at, height, material);
        if let Err(reason) = result {
            let (chunk, _, _) = st.cell_of(at);
            let refused = TerrainEvent::EditRefused { chunk, reason };
            st.outbox
                .borrow_mut()
                .push((EDIT_REFUSED.into(), refused.data()));
        }
        result
    }

    fn lod_block(&self, level: u32, x: i64, z: i64) -> Option<Arc<ChunkData>> {
        let st = self.0.borrow();
        st.blocks
            .built(&(level, ChunkPos::new(x, z)))
            .map(|(_, d)| d.clone())
    }

    fn version(&self, chunk: ChunkPos) -> Option<u64> {
        self.0.borrow().versions.get(&chunk).copied()
    }

    fn snapshot(&self, chunk: ChunkPos, skin: u32) -> Result<Snapshot, SnapshotError> {
        self.0.borrow().snapshot(chunk, skin)
    }

    fn is_modified(&self, chunk: ChunkPos) -> bool {
        self.0.borrow().diffs.contains_key(&chunk)
    }
}
