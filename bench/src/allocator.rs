//! The allocator of each process of a run: the service side on mimalloc, as `statestore serve`
//! and `statestore-server` ship; the measuring process and the Rust drivers on the system's, as
//! a program that uses the `statestore` crate gets by default (a library cannot choose). One
//! binary plays every part, so the choice is made per process, from
//! [`SERVICE_ALLOCATOR_VAR`], which [`ServiceProcess::spawn`](crate::service::ServiceProcess::spawn)
//! sets on the service child.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU8, Ordering};

/// Set (to anything) on a process that allocates with mimalloc.
pub const SERVICE_ALLOCATOR_VAR: &str = "STATESTORE_BENCH_MIMALLOC";
/// The same name for `getenv`, which must not allocate.
const VAR: &std::ffi::CStr = c"STATESTORE_BENCH_MIMALLOC";

const UNDECIDED: u8 = 0;
const SYSTEM: u8 = 1;
const MIMALLOC: u8 = 2;

static CHOICE: AtomicU8 = AtomicU8::new(UNDECIDED);

/// The allocator this process chose at its first allocation, and keeps: a block is always freed
/// by the allocator that made it.
pub struct PerProcess;

impl PerProcess {
    fn mimalloc() -> bool {
        match CHOICE.load(Ordering::Relaxed) {
            UNDECIDED => {
                // SAFETY: the name is a NUL-terminated literal, and `getenv` neither allocates
                // nor keeps the pointer. The first allocation comes before any thread of this
                // program (a thread needs allocations to start), so no one changes the
                // environment meanwhile; a racing first call would read the same variable.
                let set = unsafe { !libc::getenv(VAR.as_ptr()).is_null() };
                CHOICE.store(if set { MIMALLOC } else { SYSTEM }, Ordering::Relaxed);
                set
            }
            choice => choice == MIMALLOC,
        }
    }
}

// SAFETY: every method forwards to one allocator, the same for the whole process (see
// `mimalloc()`), so each block is reallocated and freed by the allocator that made it; both
// allocators uphold `GlobalAlloc`'s contract themselves.
unsafe impl GlobalAlloc for PerProcess {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, forwarded.
        unsafe {
            match Self::mimalloc() {
                true => mimalloc::MiMalloc.alloc(layout),
                false => System.alloc(layout),
            }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, forwarded.
        unsafe {
            match Self::mimalloc() {
                true => mimalloc::MiMalloc.alloc_zeroed(layout),
                false => System.alloc_zeroed(layout),
            }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, forwarded to the allocator that made `ptr`.
        unsafe {
            match Self::mimalloc() {
                true => mimalloc::MiMalloc.dealloc(ptr, layout),
                false => System.dealloc(ptr, layout),
            }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract, forwarded to the allocator that made `ptr`.
        unsafe {
            match Self::mimalloc() {
                true => mimalloc::MiMalloc.realloc(ptr, layout, new_size),
                false => System.realloc(ptr, layout, new_size),
            }
        }
    }
}

/// Whether this process allocates with mimalloc.
pub fn is_mimalloc() -> bool {
    PerProcess::mimalloc()
}

#[cfg(test)]
mod tests {
    #[test]
    fn both_spellings_of_the_variable_agree() {
        assert_eq!(super::VAR.to_str(), Ok(super::SERVICE_ALLOCATOR_VAR));
    }

    #[test]
    fn a_process_keeps_the_allocator_it_chose() {
        // The test binary has no global allocator of this module; the choice logic alone.
        let first = super::is_mimalloc();
        assert_eq!(super::is_mimalloc(), first);
        assert_eq!(
            first,
            std::env::var_os(super::SERVICE_ALLOCATOR_VAR).is_some()
        );
    }
}
