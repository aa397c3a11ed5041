//! Process-wide packing counters for the run summary (tokens dropped and padded). Like the read
//! counters, they only see packing that runs in this process.

use std::sync::{LazyLock, Mutex};

use super::PackCounts;

static TOTAL: LazyLock<Mutex<PackCounts>> = LazyLock::new(Default::default);

pub fn add(c: &PackCounts) {
    let mut t = TOTAL.lock().unwrap_or_else(|p| p.into_inner());
    t.docs += c.docs;
    t.empty_docs += c.empty_docs;
    t.rows += c.rows;
    t.tokens += c.tokens;
    t.dropped_tokens += c.dropped_tokens;
    t.padding_tokens += c.padding_tokens;
}

pub fn snapshot() -> PackCounts {
    *TOTAL.lock().unwrap_or_else(|p| p.into_inner())
}

pub fn reset() {
    *TOTAL.lock().unwrap_or_else(|p| p.into_inner()) = PackCounts::default();
}
