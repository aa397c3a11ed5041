//! What the lineage scans count: DataFusion metrics that `EXPLAIN ANALYZE` shows, and a run's own
//! counters in its stats.

use crate::util::{tokq_ok, write};

/// Three rows of JSONL with one malformed line between them.
const WITH_A_BAD_LINE: &str = "{\"text\": \"a\"}\n{\"text\": \"b\"}\nnot json\n{\"text\": \"c\"}\n";

#[test]
fn explain_analyze_shows_the_bytes_rows_and_bad_rows_of_a_lineage_scan() {
    let tmp = tempfile::tempdir().unwrap();
    let file = write(tmp.path(), "docs.jsonl", WITH_A_BAD_LINE);
    let sql = format!("EXPLAIN ANALYZE SELECT count(*) FROM read_jsonl('{}')", file.display());
    let out = tokq_ok(&["sql", "-c", &sql, "--on-bad-row", "skip", "--partitions", "1"]);
    let scan = out.lines().find(|l| l.contains("DataSourceExec") && l.contains("lineage_location")).unwrap_or_else(|| panic!("no lineage scan in:\n{out}"));
    let bytes = WITH_A_BAD_LINE.len();
    for want in [format!("bytes_scanned={bytes}"), "rows_read=3".to_string(), "bad_rows=1".to_string()] {
        assert!(scan.contains(&want), "{want} not in: {scan}");
    }
}

#[test]
fn a_run_counts_each_input_row_and_byte_once_in_its_stats() {
    let tmp = tempfile::tempdir().unwrap();
    let file = write(tmp.path(), "docs.jsonl", WITH_A_BAD_LINE);
    let stats = tmp.path().join("stats.json");
    let sql = format!("COPY (SELECT text, _source, _row FROM read_jsonl('{}')) TO '{}/out/' STORED AS PARQUET", file.display(), tmp.path().display());
    tokq_ok(&["sql", "-c", &sql, "--on-bad-row", "skip", "--quiet", "--stats-json", stats.to_str().unwrap()]);
    let stats: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    assert_eq!((stats["rows_read"].as_u64(), stats["bad_rows_skipped"].as_u64()), (Some(3), Some(1)), "{stats}");
    assert_eq!(stats["bytes_read"].as_u64(), Some(WITH_A_BAD_LINE.len() as u64), "{stats}");
    assert_eq!(stats["statements"][0]["rows_read"].as_u64(), Some(3), "{stats}");
    let cpu = &stats["statements"][0]["cpu"];
    assert!(cpu["cpu_seconds"].as_f64().is_some_and(|c| c >= 0.0) && cpu["cores_busy"].as_f64().is_some(), "{stats}");
    assert!(stats["partitions"].as_u64().is_some_and(|p| p >= 1) && stats["cores"].as_u64().is_some_and(|c| c >= 1), "{stats}");
    let uri = format!("file://{}", file.display());
    assert_eq!(stats["sources"][&uri], serde_json::json!({"rows": 3, "bad_rows": 1}), "{stats}");
}

#[test]
fn bytes_read_is_each_input_byte_once_over_pieces_gzip_and_parquet() {
    let tmp = tempfile::tempdir().unwrap();
    let body: String = (0..4000).map(|i| format!("{{\"id\": {i}, \"text\": \"{}\"}}\n", "word ".repeat(20 + i % 50))).collect();
    let plain = write(tmp.path(), "docs.jsonl", &body);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, body.as_bytes()).unwrap();
    let gz = write(tmp.path(), "docs.jsonl.gz", gz.finish().unwrap());
    let bytes_read = |name: &str, from: String| {
        let stats = tmp.path().join(format!("{name}.json"));
        // Pieces of 64 KiB: a piece reads past its end to finish its last line, and its start to
        // find its first, and the schema is inferred from the head; none of that counts twice.
        let sql = format!("SET tokq.split_bytes = 65536; COPY (SELECT id, text FROM {from}) TO '{}/{name}/' STORED AS PARQUET", tmp.path().display());
        tokq_ok(&["sql", "-c", &sql, "--partitions", "3", "--quiet", "--stats-json", stats.to_str().unwrap()]);
        let stats: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
        assert_eq!(stats["rows_read"].as_u64(), Some(4000), "{name}: {stats}");
        stats["bytes_read"].as_u64().unwrap()
    };
    let size = |p: &std::path::Path| std::fs::metadata(p).unwrap().len();
    assert_eq!(bytes_read("plain", format!("read_jsonl('{}')", plain.display())), size(&plain));
    assert_eq!(bytes_read("gz", format!("read_jsonl('{}')", gz.display())), size(&gz), "compressed bytes, as stored");
    let part = std::fs::read_dir(tmp.path().join("plain")).unwrap().map(|e| e.unwrap().path()).filter(|p| p.file_name().unwrap().to_str().unwrap().starts_with("part-")).map(|p| size(&p)).sum::<u64>();
    assert_eq!(bytes_read("again", format!("read_parquet('{}/plain/')", tmp.path().display())), part, "the part files, not the manifest");
}
