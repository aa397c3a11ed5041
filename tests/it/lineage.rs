use std::io::{BufRead, BufReader, Read};

use tokq_core::tokenize::{cached, DEFAULT_CHUNK_BYTES};

use crate::util::*;

/// The exact line `_row` of the file `_source`, decompressed by extension.
pub fn source_line(source: &str, row: i64) -> String {
    let path = source.strip_prefix("file://").expect("local source");
    let file = std::fs::File::open(path).unwrap();
    let reader: Box<dyn Read> =
        if path.ends_with(".gz") { Box::new(flate2::read::MultiGzDecoder::new(file)) } else { Box::new(file) };
    BufReader::new(reader).lines().nth(row as usize).expect("line exists").unwrap()
}

#[test]
fn source_and_row_retrieve_the_text_that_gives_the_ids() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("o");
    tokq_ok(&["run", "queries/quickstart.sql", "--quiet", "--set", &format!("output={}/", out.display())]);
    let all = rows(&read_output(&out).batch);
    let tok = cached("tiktoken:cl100k_base").unwrap();
    let opts = tok.parse_options("eos=<|endoftext|>").unwrap();
    // Every row here (200 >= 100), spread over both files, one of them gzip.
    for (doc_id, source, row, ids) in &all {
        let doc: serde_json::Value = serde_json::from_str(&source_line(source, *row)).unwrap();
        assert_eq!(doc["id"].as_str().unwrap(), doc_id);
        let mut again = vec![];
        tok.encode_into(doc["text"].as_str().unwrap(), &opts, DEFAULT_CHUNK_BYTES, &mut again).unwrap();
        assert_eq!(&again, ids, "{doc_id}");
    }
    assert!(all.iter().any(|r| r.1.ends_with(".gz")));
}

#[test]
fn csv_and_parquet_inputs_carry_lineage() {
    let ws = Workspace::new();
    ws.file("a.csv", "id,text\nx,\"hello, world\"\ny,\"two\nlines\"\nz,last\n");
    let recipe = ws.recipe(
        "r.sql",
        "COPY (SELECT id AS doc_id, _source, _row, tokenize(text, 'tiktoken:cl100k_base') AS input_ids \
         FROM read_csv('{ws}/a.csv')) TO '{ws}/p/' STORED AS PARQUET;\n\
         SELECT doc_id, _row, _source FROM read_parquet('{ws}/p/') ORDER BY doc_id;",
    );
    let out = ws.run(&recipe, &["--partitions", "1"]).stdout;
    let r = rows(&ws.output("p").batch);
    let got: Vec<(String, i64)> = r.iter().map(|x| (x.0.clone(), x.2)).collect();
    assert_eq!(got, vec![("x".into(), 0), ("y".into(), 1), ("z".into(), 2)]);
    assert!(r.iter().all(|x| x.1.ends_with("/a.csv")));
    // Re-reading tokq's output keeps the raw source's lineage instead of adding its own.
    for (i, id) in ["x", "y", "z"].iter().enumerate() {
        assert!(out.lines().any(|l| l.contains(&format!("| {id} ")) && l.contains(&format!("| {i} ")) && l.contains("a.csv")), "{out}");
    }
}

#[test]
fn columns_come_out_in_the_order_the_query_names_them() {
    // A scan's projection names lineage columns before data columns; it failed with "column types
    // must match schema types" while the scan put columns in table order.
    let tmp = tempfile::tempdir().unwrap();
    let input = write(tmp.path(), "a.jsonl", "{\"id\":\"a\",\"text\":\"x\"}\n{\"id\":\"b\",\"text\":\"y\"}\n");
    let recipe = write(
        tmp.path(),
        "r.sql",
        "COPY (SELECT _row, text, _source, id FROM read_jsonl('${input}')) TO '${output}' STORED AS PARQUET;\n",
    );
    let out = tmp.path().join("o");
    tokq_ok(&["run", "--quiet", recipe.to_str().unwrap(), "--set", &format!("input={}", input.display()), "--set", &format!("output={}", out.display())]);
    let b = read_output(&out).batch;
    let names: Vec<_> = b.schema().fields().iter().map(|f| f.name().clone()).collect();
    assert_eq!(names, ["_row", "text", "_source", "id"]);
    let text = b.column(1).as_any().downcast_ref::<datafusion::arrow::array::StringArray>().unwrap();
    assert_eq!((text.value(0), text.value(1)), ("x", "y"));
}

#[test]
fn bytes_read_counts_each_input_byte_once() {
    let d = tempfile::tempdir().unwrap();
    let input = synthetic_corpus(&d.path().join("in"), 3, 40);
    let size: u64 = std::fs::read_dir(d.path().join("in")).unwrap().map(|e| e.unwrap().metadata().unwrap().len()).sum();
    let r = write(
        d.path(),
        "r.sql",
        format!("COPY (SELECT id, _source, _row, text FROM read_jsonl('{input}')) TO '{}/o/' STORED AS PARQUET;", d.path().display()),
    );
    let stats = d.path().join("s.json");
    tokq_ok(&["run", r.to_str().unwrap(), "--quiet", "--stats-json", stats.to_str().unwrap()]);
    let s: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
    assert_eq!(s["bytes_read"].as_u64(), Some(size), "the schema inference's look at the first file is not counted again");
}

#[test]
fn odd_file_names_read_and_write_as_they_are() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("in put");
    std::fs::create_dir_all(&dir).unwrap();
    let names = ["a#1.jsonl", "b%20c.jsonl", "sp ace.jsonl", "br[1].jsonl", "pct%.jsonl"];
    for n in names {
        write(&dir, n, format!("{{\"id\":\"{n}\",\"text\":\"x\"}}\n"));
    }
    let read = |location: &str| {
        let r = write(d.path(), "r.sql", format!("SELECT id, _source FROM read_jsonl('{location}') ORDER BY id;"));
        tokq_ok(&["run", r.to_str().unwrap(), "--quiet"])
    };
    // Each file named as it is, glob characters included; `_source` reads back as the file.
    for n in names {
        let out = read(&format!("{}/{n}", dir.display()));
        assert!(out.contains(&format!("file://{}/{n}", dir.display())), "{n}: {out}");
        assert_eq!(source_line(&format!("file://{}/{n}", dir.display()), 0), format!("{{\"id\":\"{n}\",\"text\":\"x\"}}"));
    }
    // The folder, a glob, and a glob with its brackets escaped.
    assert_eq!(read(&dir.display().to_string()).matches("file://").count(), 5);
    assert_eq!(read(&format!("{}/*.jsonl", dir.display())).matches("file://").count(), 5);
    assert_eq!(read(&format!("{}/br\\[1\\]*", dir.display())).matches("file://").count(), 1);
    // An output folder with '#' is written where it says, and read back.
    let r = write(
        d.path(),
        "w.sql",
        format!(
            "COPY (SELECT id, _source, _row FROM read_jsonl('{}')) TO '{}/o#1/' STORED AS PARQUET;\nSELECT count(*) AS n FROM read_parquet('{}/o#1/');",
            dir.display(),
            d.path().display(),
            d.path().display()
        ),
    );
    let out = tokq_ok(&["run", r.to_str().unwrap(), "--quiet"]);
    assert!(out.contains("| 5 "), "{out}");
    assert!(d.path().join("o#1/_tokq_manifest.parquet").exists());
}

/// Every row of a directory as sorted debug lines, whatever the files are called.
fn sorted_rows(dir: &std::path::Path) -> Vec<String> {
    let b = read_output(dir).batch;
    let mut lines: Vec<String> = (0..b.num_rows())
        .map(|i| b.columns().iter().map(|c| format!("{:?}", c.slice(i, 1))).collect::<Vec<_>>().join("|"))
        .collect();
    lines.sort();
    lines
}

#[test]
fn tokq_output_read_again_is_written_again_in_every_layout() {
    // Reading tokq's output and writing it again is what users do most; it failed with "a row's
    // _source is not one of this partition's input files" because the rows keep the raw source.
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().display();
    let recipe = write(
        tmp.path(),
        "r.sql",
        format!(
            "CREATE VIEW t AS SELECT id AS doc_id, _source, _row, tokenize(text, 'tiktoken:cl100k_base') AS input_ids \
             FROM read_jsonl('queries/data/*.jsonl*');\n\
             COPY (SELECT * FROM t) TO '{d}/source/' STORED AS PARQUET;\n\
             COPY (SELECT * FROM t ORDER BY doc_id) TO '{d}/partition/' STORED AS PARQUET;\n\
             COPY (SELECT * FROM pack_tokens('t', 256, 'eos=100257,tail=drop')) TO '{d}/packed/' STORED AS PARQUET;\n\
             COPY (SELECT doc_id, _source, _row, CAST(cardinality(input_ids) AS BIGINT) AS n FROM read_parquet('{d}/source/')) TO '{d}/again-source/' STORED AS PARQUET;\n\
             COPY (SELECT doc_id, _source, _row, CAST(cardinality(input_ids) AS BIGINT) AS n FROM read_parquet('{d}/partition/')) TO '{d}/again-partition/' STORED AS PARQUET;\n\
             COPY (SELECT * FROM read_parquet('{d}/packed/') WHERE n_tokens > 0) TO '{d}/again-packed/' STORED AS PARQUET;\n"
        ),
    );
    for _ in 0..2 {
        // The second run finds everything committed and must leave it as it is.
        tokq_ok(&["run", recipe.to_str().unwrap(), "--quiet"]);
    }
    let again = sorted_rows(&tmp.path().join("again-source"));
    assert_eq!(again.len(), 200);
    assert_eq!(again, sorted_rows(&tmp.path().join("again-partition")));
    assert!(again.iter().all(|l| l.contains("queries/data/sample")), "{}", again[0]);
    assert_eq!(sorted_rows(&tmp.path().join("again-packed")), sorted_rows(&tmp.path().join("packed")));
}

#[test]
fn files_with_different_columns_merge_by_name_and_a_type_conflict_names_both_files() {
    // Reading Reuters and Wikipedia together turned Wikipedia's metadata.title and url into NULL.
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    std::fs::create_dir_all(d.join("in")).unwrap();
    write(&d.join("in"), "a.jsonl", "{\"id\":\"r1\",\"text\":\"x\",\"metadata\":{\"date\":\"1987\"},\"n\":1}\n");
    write(&d.join("in"), "b.jsonl", "{\"id\":\"w1\",\"text\":\"y\",\"url\":\"http://u\",\"metadata\":{\"title\":\"T\"},\"n\":1.5}\n");
    let recipe = write(
        d,
        "r.sql",
        format!(
            "COPY (SELECT id, url, metadata['title'] AS title, metadata['date'] AS date, n, _source, _row FROM read_jsonl('{}/in/*.jsonl')) TO '{}/o/' STORED AS PARQUET;",
            d.display(),
            d.display()
        ),
    );
    tokq_ok(&["run", recipe.to_str().unwrap(), "--quiet"]);
    let b = read_output(&d.join("o")).batch;
    let mut got: Vec<Vec<Option<String>>> = (0..b.num_rows()).map(|i| ["id", "url", "title", "date", "n"].iter().map(|c| strings(&b, c)[i].clone()).collect()).collect();
    got.sort();
    let s = |v: &str| Some(v.to_string());
    assert_eq!(got, vec![vec![s("r1"), None, None, s("1987"), s("1.0")], vec![s("w1"), s("http://u"), s("T"), None, s("1.5")]]);
    // The same column as text in one file and a number in another.
    write(&d.join("in"), "c.jsonl", "{\"id\":7,\"text\":\"z\"}\n");
    let err = tokq_err(&["run", recipe.to_str().unwrap(), "--quiet"]);
    assert!(err.contains("column 'id' is Utf8 in file://") && err.contains("/in/a.jsonl and Int64 in file://") && err.contains("/in/c.jsonl"), "{err}");
}

#[test]
fn bz2_and_xz_inputs_are_read_and_other_compressions_are_named() {
    use std::io::Write;
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    std::fs::create_dir_all(d.join("in")).unwrap();
    let lines = "{\"id\":\"a\",\"text\":\"one\"}\n{\"id\":\"b\",\"text\":\"two\"}\n";
    let mut bz = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::default());
    bz.write_all(lines.as_bytes()).unwrap();
    write(&d.join("in"), "x.jsonl.bz2", bz.finish().unwrap());
    let mut xz = liblzma::write::XzEncoder::new(Vec::new(), 6);
    xz.write_all(lines.as_bytes()).unwrap();
    write(&d.join("in"), "y.jsonl.xz", xz.finish().unwrap());
    let recipe = write(d, "r.sql", format!("SELECT count(*) AS n, count(DISTINCT _source) AS files FROM read_jsonl('{}/in/*');", d.display()));
    let out = tokq_ok(&["run", recipe.to_str().unwrap(), "--quiet"]);
    assert!(out.lines().any(|l| l.contains("| 4 ") && l.contains("| 2 ")), "{out}");
    write(&d.join("in"), "z.jsonl.lz4", "not really lz4");
    let err = tokq_err(&["run", recipe.to_str().unwrap(), "--quiet"]);
    assert!(err.contains("z.jsonl.lz4: '.lz4' compression is not supported (tokq reads .gz, .zst, .bz2 and .xz)"), "{err}");
}

#[test]
fn subqueries_over_different_files_of_the_same_columns_each_read_their_own() {
    let tmp = tempfile::tempdir().unwrap();
    let a = write(tmp.path(), "a.jsonl", "{\"text\":\"one\"}\n");
    let b = write(tmp.path(), "b.jsonl", "{\"text\":\"two\"}\n{\"text\":\"three\"}\n");
    // Every read_* call is named `read_jsonl()`; DataFusion took two such subqueries for one
    // common subexpression, and both answered a.jsonl's figures.
    let sql = format!(
        "SELECT (SELECT count(*) FROM read_jsonl('{a}')) AS a, (SELECT count(*) FROM read_jsonl('{b}')) AS b, \
         (SELECT max(text) FROM read_jsonl('{a}')) AS ma, (SELECT max(text) FROM read_jsonl('{b}')) AS mb, \
         (SELECT count(*) FROM read_jsonl('{a}')) + (SELECT count(*) FROM read_jsonl('{a}')) AS twice_a",
        a = a.display(),
        b = b.display()
    );
    let out = tokq_ok(&["sql", "--format", "csv", "-c", &sql]);
    assert_eq!(out.lines().nth(1), Some("1,2,one,two,2"), "{out}");
}
