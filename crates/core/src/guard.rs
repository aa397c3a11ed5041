//! Turning a dependency's panic into an error, without the panic message on stderr.
//!
//! tiktoken-rs unwraps its regex engine's result, and fancy-regex gives up on some pathological
//! inputs (a megabyte-long run of one character). That is bad input, not a bug of ours, so it
//! must end as one clear error line rather than a panic.

use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Once;

thread_local! {
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

static HOOK: Once = Once::new();

/// Runs `f`; a panic inside it becomes `Err(message)` and prints nothing.
pub fn quietly<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(Cell::get) {
                previous(info);
            }
        }));
    });
    QUIET.with(|q| q.set(true));
    let result = catch_unwind(AssertUnwindSafe(f));
    QUIET.with(|q| q.set(false));
    result.map_err(|payload| {
        payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "unknown panic".to_string())
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn panic_becomes_an_error() {
        assert_eq!(super::quietly(|| 7), Ok(7));
        let e = super::quietly(|| -> u8 { panic!("boom {}", 1) }).unwrap_err();
        assert_eq!(e, "boom 1");
    }
}
