//! What only the wasm build exports (docs/reference/web.md#the-wasm-allocator): memory for the
//! strings and buffers JavaScript passes in, and a count of live allocations so a test can prove
//! that nothing leaks.
//!
//! JavaScript cannot allocate in the module's memory by itself: to pass a NUL-terminated string it
//! calls [`ws_alloc`] for `len + 1` bytes, writes the UTF-8 bytes and the NUL there, calls the C
//! ABI, then gives the bytes back with [`ws_dealloc`] and the same `len`. Strings the library
//! hands out (messages, JSON) are still freed with `ws_string_free`, never with `ws_dealloc`.
//!
//! The module's global allocator is the system one (Rust's allocator for wasm32) wrapped in a
//! counter: [`ws_live_allocations`] is the number of blocks allocated and not yet freed, by
//! anyone (the library, its registries, the caller's [`ws_alloc`]s). Lazily made registries
//! (the first game's table, the first string handed out) stay allocated, so a leak test takes its
//! baseline after a first round trip and checks that a second one returns to it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The system allocator, counting the blocks it has live.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded to `System` with the caller's arguments unchanged; the count
// is only bookkeeping.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE.fetch_add(1, Ordering::Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            LIVE.fetch_add(1, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's guarantees (`ptr` is a live block of `layout`).
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(1, Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees. A block moved is still one block; a
        // failed realloc leaves the old one live.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Allocates `len` bytes (alignment 1) in the module's memory for the caller to write a string or
/// buffer into; null when `len` is 0 or the memory cannot grow. Give them back with
/// [`ws_dealloc`] and the same `len`.
#[no_mangle]
pub extern "C" fn ws_alloc(len: usize) -> *mut u8 {
    match Layout::from_size_align(len, 1) {
        // SAFETY: the layout has a non-zero size.
        Ok(layout) if len > 0 => unsafe { std::alloc::alloc(layout) },
        _ => std::ptr::null_mut(),
    }
}

/// Frees `len` bytes that [`ws_alloc`] returned for the same `len`. Null (or `len` 0) does nothing.
///
/// # Safety
/// `ptr` is null or came from `ws_alloc(len)` and was not freed since.
#[no_mangle]
pub unsafe extern "C" fn ws_dealloc(ptr: *mut u8, len: usize) {
    if ptr.is_null() || len == 0 {
        return;
    }
    if let Ok(layout) = Layout::from_size_align(len, 1) {
        // SAFETY: the caller passes a live block from `ws_alloc(len)`, whose layout this is.
        unsafe { std::alloc::dealloc(ptr, layout) };
    }
}

/// The number of memory blocks allocated in the module and not yet freed (by the library and by
/// the caller's [`ws_alloc`]s): a leak test compares it before and after a round trip.
#[no_mangle]
pub extern "C" fn ws_live_allocations() -> usize {
    LIVE.load(Ordering::Relaxed)
}
