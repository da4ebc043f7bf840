//! The counting global allocator of the benches and examples that report heap bytes: every call
//! goes unchanged to the system allocator, and two atomics (which do not allocate) keep the
//! bytes allocated and not yet freed, over every thread, and the most there were since
//! [`start_peak`]. Included with `#[path = "…/benches/common/counting.rs"] mod counting;`, it
//! installs itself as the program's global allocator.

#![allow(dead_code)] // each includer reads what it needs

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);

fn grow(by: isize) {
    let now = LIVE.fetch_add(by, Ordering::Relaxed) + by;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: every call is forwarded unchanged to the system allocator; the counters are atomics.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grow(layout.size() as isize);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let q = unsafe { System.realloc(ptr, layout, new_size) };
        if !q.is_null() {
            grow(new_size as isize - layout.size() as isize);
        }
        q
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The bytes allocated and not yet freed.
pub fn live() -> isize {
    LIVE.load(Ordering::Relaxed)
}

/// The most bytes there were since the last [`start_peak`].
pub fn peak() -> isize {
    PEAK.load(Ordering::Relaxed)
}

/// Starts counting the peak again from the bytes live now.
pub fn start_peak() {
    PEAK.store(live(), Ordering::Relaxed);
}
