//! The raw web end to end: `read_warc` rows and their lineage (`_source` + `_offset` seek to the
//! record), bad records, and the shared 991-page WARC. Record-by-record parity with warcio and
//! url_filter parity with datatrove are in tests/parity/web_parity.py.

use std::io::{Read, Seek, SeekFrom, Write};

use datafusion::arrow::array::{Array, BinaryArray, Int64Array, StringArray};

use crate::util::*;

fn gz(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// The record id of the record that starts at `offset` of a gzip-per-record WARC.
fn record_id_at(path: &str, offset: i64) -> String {
    let mut f = std::fs::File::open(path.strip_prefix("file://").unwrap()).unwrap();
    f.seek(SeekFrom::Start(offset as u64)).unwrap();
    let mut head = [0u8; 4096];
    let n = flate2::read::GzDecoder::new(f).read(&mut head).unwrap();
    let text = String::from_utf8_lossy(&head[..n]);
    let line = text.lines().find(|l| l.starts_with("WARC-Record-ID:")).expect("a record id");
    line["WARC-Record-ID:".len()..].trim().to_string()
}

const READ: &str = "COPY (SELECT url, warc_record_id, warc_type, http_status, content, _source, _row, _offset FROM read_warc('${input}', '${types}')) TO '${output}' STORED AS PARQUET;\n";

#[test]
fn warc_rows_decode_payloads_and_their_offsets_seek_to_the_record() {
    let tmp = tempfile::tempdir().unwrap();
    let body = gz(b"<p>compressed page</p>");
    let mut chunked = format!("{:x}\r\n", body.len()).into_bytes();
    chunked.extend_from_slice(&body);
    chunked.extend_from_slice(b"\r\n0\r\n\r\n");
    let mut http = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\nContent-Encoding: gzip\r\n\r\n".to_vec();
    http.extend_from_slice(&chunked);
    let records = [
        warc_record("warcinfo", "", 1, b"software: test\r\n"),
        warc_record("response", "https://a.example/", 2, &http),
        warc_record("request", "https://a.example/", 3, b"GET / HTTP/1.1\r\nHost: a.example\r\n\r\n"),
        warc_record("response", "https://b.example/x y", 4, b"HTTP/1.1 404 Not Found\r\n\r\nmissing"),
    ];
    let file: Vec<u8> = records.iter().flat_map(|r| gz(r)).collect();
    let input = write(tmp.path(), "t.warc.gz", &file);
    let recipe = write(tmp.path(), "r.sql", READ);
    let out = tmp.path().join("out");
    let set = |k: &str, v: &str| format!("{k}={v}");
    tokq_ok(&["run", "--quiet", recipe.to_str().unwrap(), "--set", &set("input", input.to_str().unwrap()), "--set", &set("types", "types=response"), "--set", &set("output", out.to_str().unwrap())]);
    let b = read_output(&out).batch;
    let s = |n: &str| b.column_by_name(n).unwrap().as_any().downcast_ref::<StringArray>().unwrap().clone();
    let i = |n: &str| b.column_by_name(n).unwrap().as_any().downcast_ref::<Int64Array>().unwrap().clone();
    let content = b.column_by_name("content").unwrap().as_any().downcast_ref::<BinaryArray>().unwrap().clone();
    assert_eq!(b.num_rows(), 2, "response records only");
    assert_eq!((s("url").value(0), s("url").value(1)), ("https://a.example/", "https://b.example/x%20y"));
    assert_eq!(content.value(0), b"<p>compressed page</p>", "chunked and gzip undone");
    assert_eq!(content.value(1), b"missing");
    assert_eq!((i("_row").value(0), i("_row").value(1)), (1, 3), "_row counts every record of the file");
    for r in 0..2 {
        assert_eq!(record_id_at(s("_source").value(r), i("_offset").value(r)), s("warc_record_id").value(r));
    }

    // Every type; then a truncated last record: one line naming it, or skipped and counted.
    let all = tmp.path().join("all");
    tokq_ok(&["run", "--quiet", recipe.to_str().unwrap(), "--set", &set("input", input.to_str().unwrap()), "--set", &set("types", "types=*"), "--set", &set("output", all.to_str().unwrap())]);
    assert_eq!(read_output(&all).batch.num_rows(), 4);
    let last = gz(&records[3]);
    let cut = write(tmp.path(), "cut.warc.gz", &file[..file.len() - last.len() / 2]);
    let offset = file.len() - last.len();
    let err = tokq_err(&["run", "--quiet", recipe.to_str().unwrap(), "--set", &set("input", cut.to_str().unwrap()), "--set", &set("types", "types=*"), "--set", &set("output", tmp.path().join("x").to_str().unwrap())]);
    assert!(err.contains(&format!("cut.warc.gz: offset {offset}: ")), "{err}");
    let skipped = tmp.path().join("skipped");
    tokq_ok(&["run", "--quiet", "--on-bad-row", "skip", recipe.to_str().unwrap(), "--set", &set("input", cut.to_str().unwrap()), "--set", &set("types", "types=*"), "--set", &set("output", skipped.to_str().unwrap())]);
    assert_eq!(read_output(&skipped).batch.num_rows(), 3);
}

#[test]
fn every_record_of_the_shared_warc_seeks_back_to_itself() {
    let Some(warc) = shared("corpora/web-html/trafilatura-eval.warc.gz") else { return };
    let tmp = tempfile::tempdir().unwrap();
    let recipe = write(tmp.path(), "r.sql", READ);
    let out = tmp.path().join("out");
    let set = |k: &str, v: &str| format!("{k}={v}");
    tokq_ok(&["run", "--quiet", recipe.to_str().unwrap(), "--set", &set("input", warc.to_str().unwrap()), "--set", &set("types", "types=response"), "--set", &set("output", out.to_str().unwrap())]);
    let b = read_output(&out).batch;
    assert_eq!(b.num_rows(), 991);
    let s = |n: &str| b.column_by_name(n).unwrap().as_any().downcast_ref::<StringArray>().unwrap().clone();
    let offsets = b.column_by_name("_offset").unwrap().as_any().downcast_ref::<Int64Array>().unwrap().clone();
    let status = b.column_by_name("http_status").unwrap();
    assert!(status.null_count() < 991);
    for r in 0..b.num_rows() {
        assert_eq!(record_id_at(s("_source").value(r), offsets.value(r)), s("warc_record_id").value(r), "row {r}");
    }
}

#[test]
fn wet_files_give_text_and_languages() {
    let tmp = tempfile::tempdir().unwrap();
    let mut conversion = warc_record("conversion", "https://a.example/", 2, "Grüße aus Köln\nzweite Zeile".as_bytes());
    let at = conversion.windows(16).position(|w| w == b"Content-Length: ").unwrap();
    conversion.splice(at..at, b"WARC-Identified-Content-Language: deu,eng\r\n".iter().copied());
    let file: Vec<u8> = [warc_record("warcinfo", "", 1, b"x: y\r\n"), conversion].iter().flat_map(|r| gz(r)).collect();
    let input = write(tmp.path(), "t.warc.wet.gz", &file);
    let recipe = write(tmp.path(), "r.sql", "COPY (SELECT url, languages, text, _row, _offset FROM read_wet('${input}')) TO '${output}' STORED AS PARQUET;\n");
    let out = tmp.path().join("out");
    tokq_ok(&["run", "--quiet", recipe.to_str().unwrap(), "--set", &format!("input={}", input.display()), "--set", &format!("output={}", out.display())]);
    let b = read_output(&out).batch;
    let s = |n: &str| b.column_by_name(n).unwrap().as_any().downcast_ref::<StringArray>().unwrap().clone();
    let i = |n: &str| b.column_by_name(n).unwrap().as_any().downcast_ref::<Int64Array>().unwrap().clone();
    assert_eq!(b.num_rows(), 1, "conversion records only");
    assert_eq!((s("url").value(0), s("languages").value(0), s("text").value(0)), ("https://a.example/", "deu,eng", "Grüße aus Köln\nzweite Zeile"));
    assert_eq!((i("_row").value(0), i("_offset").value(0)), (1, gz(&warc_record("warcinfo", "", 1, b"x: y\r\n")).len() as i64));
}

/// datatrove's assets folder and a public suffix list (from the tldextract package), as CI sets
/// them from its Python environment; skipped elsewhere when they are not set.
pub fn url_lists() -> Option<(String, String)> {
    let (lists, psl) = (std::env::var("TOKQ_TEST_DATATROVE_ASSETS").ok(), std::env::var("TOKQ_TEST_PSL").ok());
    if lists.is_none() || psl.is_none() {
        assert!(std::env::var_os("CI").is_none(), "CI must set TOKQ_TEST_DATATROVE_ASSETS and TOKQ_TEST_PSL");
        eprintln!("skipped: TOKQ_TEST_DATATROVE_ASSETS or TOKQ_TEST_PSL not set");
    }
    Some((lists?, psl?))
}

#[cfg(feature = "slow-tests")]
#[test]
fn fineweb_from_warc_on_a_cluster_equals_the_local_run_and_every_row_seeks_to_its_record() {
    let Some(warc) = shared("corpora/web-html/trafilatura-eval.warc.gz") else { return };
    let (Some((lists, psl)), Some(lid)) = (url_lists(), crate::classify::lid176()) else { return };
    let recipe = repo_root().join("queries/fineweb-cc.sql");
    let tmp = tempfile::tempdir().unwrap();
    // The shared pages all have text; one more file holds a page without any, so that every
    // reason of the recipe is exercised.
    let input = tmp.path().join("in");
    std::fs::create_dir_all(&input).unwrap();
    std::fs::copy(&warc, input.join("trafilatura-eval.warc.gz")).unwrap();
    let page = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<html><body><script>var x;</script></body></html>";
    std::fs::write(input.join("empty.warc.gz"), gz(&warc_record("response", "https://example.com/empty", 1, page))).unwrap();
    let run = |dir: &str, cluster: Option<&str>| -> String {
        let mut args = vec!["run".to_string(), recipe.display().to_string()];
        if let Some(url) = cluster {
            args.extend(["--cluster".to_string(), url.to_string()]);
        }
        for (k, v) in [
            ("input", format!("{}/", input.display())),
            ("url_lists", lists.clone()),
            ("psl", psl.clone()),
            ("lid_model", lid.clone()),
            ("output", format!("{}/{dir}/kept/", tmp.path().display())),
            ("rejects", format!("{}/{dir}/rejected/", tmp.path().display())),
        ] {
            args.extend(["--set".to_string(), format!("{k}={v}")]);
        }
        let out = tokq(&args.iter().map(String::as_str).collect::<Vec<_>>());
        let log = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{log}");
        log
    };
    let summary = run("local", None);
    assert!(summary.contains("992 input rows -> ") && summary.contains("every input row accounted for"), "{summary}");
    let cluster = crate::cluster::start(2);
    run("cluster", Some(&cluster.url()));
    for part in ["kept", "rejected"] {
        let (a, b) = (read_output(&tmp.path().join("local").join(part)).batch, read_output(&tmp.path().join("cluster").join(part)).batch);
        assert_eq!(a.num_rows(), b.num_rows(), "{part}");
        for f in a.schema().fields() {
            assert_eq!(a.column_by_name(f.name()), b.column_by_name(f.name()), "{part}: the cluster gives the local {}", f.name());
        }
    }
    let kept = read_output(&tmp.path().join("local/kept")).batch;
    let rejected = read_output(&tmp.path().join("local/rejected")).batch;
    assert!(kept.num_rows() > 50, "English pages pass: {}", kept.num_rows());
    assert_eq!(kept.num_rows() + rejected.num_rows(), 992);
    let s = |b: &datafusion::arrow::array::RecordBatch, n: &str| b.column_by_name(n).unwrap().as_any().downcast_ref::<StringArray>().unwrap().clone();
    let reasons = s(&rejected, "filter_reason");
    assert_eq!(reasons.null_count(), 0, "every rejected record says why");
    for reason in ["warc:not_html", "html:empty", "language:de", "url:domain"] {
        assert!(reasons.iter().any(|r| r == Some(reason)), "{reason} among the reasons");
    }
    // Every kept row, and every 9th rejected one (about 100 in all), seeks back to its record.
    for (b, step) in [(&kept, 1), (&rejected, 9)] {
        let offsets = b.column_by_name("_offset").unwrap().as_any().downcast_ref::<Int64Array>().unwrap().clone();
        let (sources, ids) = (s(b, "_source"), s(b, "warc_record_id"));
        for r in (0..b.num_rows()).step_by(step) {
            assert_eq!(record_id_at(sources.value(r), offsets.value(r)), ids.value(r), "row {r}");
        }
    }
    let text = s(&kept, "text");
    assert!(text.iter().all(|t| t.is_some_and(|t| !t.is_empty() && !t.contains("<div"))), "kept rows are text");
}
