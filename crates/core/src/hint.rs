//! Hints to the CPU that change speed, never results.

/// Asks the CPU to bring the cache line at `at` in, ahead of a load whose address is known
/// early (a hash table's slot) but whose turn comes later; a prefetch reads nothing, whatever
/// the address.
#[inline(always)]
pub(crate) fn prefetch<T>(at: *const T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: SSE is part of x86_64, and a prefetch never faults, whatever the address.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(at.cast()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}
