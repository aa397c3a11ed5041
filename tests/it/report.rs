//! `tokq report`: the page from a run's stats, checked by its content and rendered in headless
//! Chromium (Debian's `chromium`; CI installs it).

use std::process::Command;

use crate::util::*;

/// Chromium's binary: TOKQ_TEST_CHROMIUM, or `chromium` on the PATH. CI must have it.
fn chromium() -> Option<String> {
    let found = std::env::var("TOKQ_TEST_CHROMIUM").ok().or_else(|| {
        let out = Command::new("sh").args(["-c", "command -v chromium || command -v chromium-browser"]).output().ok()?;
        let path = String::from_utf8(out.stdout).ok()?.trim().to_string();
        (!path.is_empty()).then_some(path)
    });
    if found.is_none() {
        assert!(std::env::var_os("CI").is_none(), "CI must install chromium for the report test");
        eprintln!("skipped: no chromium");
    }
    found
}

/// Width and height from a PNG's header.
fn png_size(png: &[u8]) -> (u32, u32) {
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    let be = |at: usize| u32::from_be_bytes(png[at..at + 4].try_into().unwrap());
    (be(16), be(20))
}

#[test]
fn the_report_of_the_pretrain_run_shows_every_section_and_renders_in_chromium() {
    let tmp = tempfile::tempdir().unwrap();
    let stats = run_pretrain(tmp.path(), &["--set", "seq_len=128"]);
    let page = tmp.path().join("report.html");
    tokq_ok(&["report", stats.to_str().unwrap(), "-o", page.to_str().unwrap()]);
    let html = std::fs::read_to_string(&page).unwrap();
    for want in [
        "queries/pretrain.sql",
        "200 documents from 2 input files",
        "<span class=ok>every row accounted for</span>",
        "<b>gopher_quality</b>",
        "gopher_short_doc",
        "<b>minhash_duplicate</b>",
        "Document length in characters",
        "Duplicate clusters by size",
        "Tokens per row",
        "queries/parts/dedup.sql:",
        "<th>cores busy</th>",
        "<svg class=cores",
    ] {
        assert!(html.contains(want), "the page lacks {want:?}");
    }
    assert!(!html.contains("http://") && !html.contains("https://") && !html.contains("<script"), "the page is self-contained");
    let err = tokq_err(&["report", page.to_str().unwrap()]);
    assert!(err.contains("is not JSON"), "{err}");

    let Some(chromium) = chromium() else { return };
    let url = format!("file://{}", page.display());
    let headless = |extra: &[&str]| {
        let profile = format!("--user-data-dir={}", tmp.path().join("profile").display());
        let mut args = vec!["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", &profile];
        args.extend_from_slice(extra);
        args.push(&url);
        let out = Command::new(&chromium).args(&args).output().expect("run chromium");
        assert!(out.status.success(), "chromium failed: {}", String::from_utf8_lossy(&out.stderr));
        out.stdout
    };
    // The rendered DOM has the content.
    let dom = String::from_utf8(headless(&["--dump-dom"])).unwrap();
    assert!(dom.contains("Accounting") && dom.contains("minhash_duplicate") && dom.contains("Tokens per row"), "{dom}");
    // And a screenshot of the page: the size asked for, and far from blank.
    let shot = tmp.path().join("report.png");
    headless(&[&format!("--screenshot={}", shot.display()), "--window-size=1200,2400"]);
    let png = std::fs::read(&shot).unwrap();
    assert_eq!(png_size(&png), (1200, 2400));
    assert!(png.len() > 40_000, "a {} byte screenshot is nearly blank", png.len());
    if let Ok(keep) = std::env::var("TOKQ_TEST_REPORT_SCREENSHOT") {
        std::fs::copy(&shot, keep).unwrap();
    }
}
