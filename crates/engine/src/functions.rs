//! The table functions, documented, and the function reference generated from every tokq
//! function's documentation (`tokq functions`, `docs/reference/functions.md`).
//!
//! DataFusion 55 lists scalar functions in `information_schema.routines` from their
//! `documentation()`, but has no such hook for table functions, so theirs live here.

use std::fmt::Write;
use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{Field, Schema};
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::catalog::TableFunctionImpl;
use datafusion::error::Result;
use datafusion::logical_expr::Documentation;
use datafusion::prelude::SessionContext;
use tokq_udfs::kit::doc;

use crate::{lineage, pack};

/// A table function with its documentation.
pub struct TableFunction {
    /// The SQL name.
    pub name: &'static str,
    /// The implementation.
    pub function: Arc<dyn TableFunctionImpl>,
    /// What it does, as for scalar functions.
    pub doc: Documentation,
}

const LINEAGE: &str = "Every row carries _source (the file's URI) and _row (its 0-based row in that file), which tokq's \
                       writer keeps as lineage. The argument is a file, a folder (every file in it) or a glob, local, s3://, hf:// or https://; \
                       files are read in path order, and an empty match is an error.";

/// Every tokq table function: the lineage readers and `pack_tokens`.
pub fn table_functions() -> Vec<TableFunction> {
    let reader = |f: lineage::ReadFiles, what: &str, syntax: &str, example: &str| TableFunction {
        name: f.name(),
        doc: doc(&format!("{what} {LINEAGE}"), syntax)
            .with_argument("path", "A constant path, folder, glob, or s3://, hf:// or https:// URI.")
            .with_sql_example(format!("```sql\n{example}\n```"))
            .build(),
        function: Arc::new(f),
    };
    vec![
        reader(
            lineage::ReadFiles::jsonl(),
            "Reads JSON Lines, plain or compressed (.gz, .zst), with the schema inferred from the first file. \
             A malformed line fails the run with file:line, or is skipped and counted under SET tokq.on_bad_row = 'skip'. \
             An uncompressed file larger than tokq.split_bytes (64 MiB) is read as pieces cut at lines, in parallel, with the same _row.",
            "read_jsonl(path)",
            "SELECT _source, _row, text FROM read_jsonl('corpus/*.jsonl.gz') LIMIT 3;",
        ),
        reader(
            lineage::ReadFiles::csv(),
            "Reads CSV files (plain or compressed), with a header row unless has_header is false.",
            "read_csv(path [, has_header])",
            "SELECT _row, * FROM read_csv('data/docs.csv', true);",
        ),
        reader(
            lineage::ReadFiles::warc(),
            "Reads WARC files (.warc, or .warc.gz with one gzip member per record as Common Crawl writes them): one row \
             per record of the chosen types (response by default; types=response|resource|request|metadata|revisit|warcinfo|conversion, \
             or *), with url (WARC-Target-URI), warc_record_id, warc_date, warc_type, http_status and content_type (from the HTTP \
             header), and content (the HTTP payload with chunked transfer-encoding and gzip, deflate or br content-encoding undone, \
             as warcio reads it; the whole block for non-HTTP records). _offset is the byte offset of the record in the file as \
             stored (of its gzip member), so a reader can seek to it as Common Crawl's index does; _row is the record's index \
             among all records of the file. A truncated or corrupt record fails with file: offset N: cause, or is skipped and \
             counted under SET tokq.on_bad_row = 'skip'.",
            "read_warc(path [, 'types=response'])",
            "SELECT url, http_status, content_type FROM read_warc('crawl/*.warc.gz') LIMIT 3;",
        ),
        reader(
            lineage::ReadFiles::wet(),
            "Reads WET files (Common Crawl's extracted text): one row per conversion record, with url, warc_record_id, \
             warc_date, languages (WARC-Identified-Content-Language) and text, and _offset as read_warc gives it.",
            "read_wet(path)",
            "SELECT url, languages, text FROM read_wet('crawl/*.warc.wet.gz') LIMIT 3;",
        ),
        reader(
            lineage::ReadFiles::parquet(),
            "Reads Parquet files, tokq's own outputs included, keeping their columns. A file larger than tokq.split_bytes (64 MiB) \
             is read as pieces of whole row groups, in parallel, with the same _row.",
            "read_parquet(path)",
            "SELECT _source, count(*) FROM read_parquet('out/quickstart/') GROUP BY _source;",
        ),
        reader(
            lineage::ReadFiles::any(),
            "Reads files of the format their extension names, as read_jsonl (.jsonl, .json, .ndjson), read_parquet \
             (.parquet), read_csv with a header (.csv) or read_warc (.warc), each optionally .gz or .zst: for a recipe \
             parameter that may be either, such as decontaminate.sql's eval table. A folder or an unknown extension is \
             an error that says to name the files.",
            "read_files(path)",
            "SELECT task, count(*) FROM read_files('queries/data/eval.jsonl') GROUP BY task;",
        ),
        TableFunction {
            name: pack::table::NAME,
            doc: doc(
                "Padding-free sequence packing: the token lists of a table or view, each followed by an optional EOS, \
                 are concatenated in the view's order and cut into rows of exactly seq_len tokens. Each row records \
                 which documents it holds (doc_ids), where each starts (doc_offsets) and where the first one begins \
                 (first_offset), so every token traces back to its source. Each input partition is one stream \
                 (a view with ORDER BY is one partition); by=source makes each input file (_source) a stream of its \
                 own, in _row order, and packs the files in parallel. tail=drop drops a stream's last partial row, \
                 tail=pad pads it.",
                pack::table::USAGE,
            )
            .with_argument("view", "The name of a table or view with a list-of-ids column (input_ids unless ids= names another).")
            .with_argument("seq_len", "Constant row length, 1 to 2^31-1.")
            .with_argument("options", "Optional constant 'key=value' list: eos, tail, pad, segment_ids, ids, by, tokenizer. eos and pad take an id or a token string (eos=<|endoftext|>), looked up in tokenizer=SPEC or else in the one tokenizer the view calls tokenize() with.")
            .with_sql_example("```sql\nCREATE VIEW docs AS SELECT tokenize(text, 'tiktoken:cl100k_base') AS input_ids FROM read_jsonl('corpus/');\nSELECT * FROM pack_tokens('docs', 2048, 'eos=100257');\n```")
            .build(),
            function: Arc::new(pack::table::PackTokens),
        },
    ]
}

fn section(out: &mut String, name: &str, d: &Documentation, result: Option<String>) {
    let _ = writeln!(out, "### `{name}`\n\n{}\n\n```\n{}\n```\n", d.description, d.syntax_example);
    if let Some(args) = &d.arguments {
        out.push_str("| argument | meaning |\n|---|---|\n");
        for (a, m) in args {
            let _ = writeln!(out, "| `{a}` | {} |", m.replace('|', "\\|"));
        }
        out.push('\n');
    }
    if let Some(example) = &d.sql_example {
        let _ = writeln!(out, "{example}\n");
    }
    if let Some(result) = result {
        let _ = writeln!(out, "```text\n{result}\n```\n");
    }
    if let Some(related) = &d.related_udfs {
        let _ = writeln!(out, "See also: {}.\n", related.iter().map(|r| format!("`{r}`")).collect::<Vec<_>>().join(", "));
    }
}

/// The batches with each column that DataFusion named after its expression renamed `result`, so
/// the reference shows the value rather than a header as wide as the call.
fn readable(batches: Vec<RecordBatch>) -> Result<Vec<RecordBatch>> {
    batches
        .into_iter()
        .map(|b| {
            let fields: Vec<Field> =
                b.schema().fields().iter().map(|f| if f.name().contains('(') { f.as_ref().clone().with_name("result") } else { f.as_ref().clone() }).collect();
            Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), b.columns().to_vec())?)
        })
        .collect()
}

/// The SQL of a documentation example (between its ```sql fences).
pub fn example_sql(d: &Documentation) -> Option<String> {
    let e = d.sql_example.as_deref()?;
    let body = e.trim().strip_prefix("```sql")?.strip_suffix("```")?;
    Some(body.trim().to_string())
}

/// A documentation example's result, run on `ctx`. An example over a file the reader must bring
/// (a model) says so first, and is shown unrun.
async fn example_result(ctx: &SessionContext, d: &Documentation) -> Result<Option<String>> {
    match example_sql(d) {
        Some(sql) if !sql.starts_with(tokq_udfs::kit::NEEDS_FILE) => {
            Ok(Some(pretty_format_batches(&readable(ctx.sql(&sql).await?.collect().await?)?)?.to_string()))
        }
        _ => Ok(None),
    }
}

/// The function reference in Markdown. Each scalar function's example runs on `ctx` (which must
/// have tokq's functions) and its result is shown, so the reference cannot show a stale result.
pub async fn reference_markdown(ctx: &SessionContext) -> Result<String> {
    let mut out = String::from(
        "# tokq function reference\n\nGenerated from each function's `documentation()` by `tokq functions --markdown`; \
         do not edit by hand (`cargo test` fails when this file is stale). In SQL, \
         `SELECT routine_name, description FROM information_schema.routines` lists the scalar functions.\n\n",
    );
    let mut scalars = tokq_udfs::scalar_udfs();
    scalars.sort_by(|a, b| a.name().cmp(b.name()));
    out.push_str("## Scalar functions\n\n");
    for f in &scalars {
        let _ = writeln!(out, "- [`{0}`](#{0})", f.name());
    }
    out.push('\n');
    for f in &scalars {
        let Some(d) = f.documentation() else { continue };
        section(&mut out, f.name(), d, example_result(ctx, d).await?);
    }
    out.push_str("## Aggregate functions\n\n");
    for f in tokq_udfs::aggregate_udfs() {
        let Some(d) = f.documentation() else { continue };
        section(&mut out, f.name(), d, example_result(ctx, d).await?);
    }
    out.push_str("## Table functions\n\n");
    for t in table_functions() {
        section(&mut out, t.name, &t.doc, None);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use datafusion::arrow::array::{Array, AsArray};
    use datafusion::prelude::SessionConfig;

    use super::*;

    fn context() -> SessionContext {
        crate::local_context(SessionConfig::new()).unwrap()
    }

    #[tokio::test]
    async fn the_function_reference_is_current() {
        let generated = reference_markdown(&context()).await.unwrap();
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/reference/functions.md");
        if std::env::var_os("TOKQ_BLESS").is_some() {
            std::fs::write(&path, &generated).unwrap();
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == generated,
            "docs/reference/functions.md is stale: regenerate it with `tokq functions --markdown > docs/reference/functions.md`"
        );
    }

    #[tokio::test]
    async fn every_scalar_function_is_described_in_information_schema() {
        let ctx = context();
        let names: Vec<String> = tokq_udfs::scalar_udfs().iter().map(|f| f.name().to_string()).collect();
        let batches = ctx
            .sql("SELECT DISTINCT routine_name, description, syntax_example FROM information_schema.routines")
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        let mut described = std::collections::BTreeMap::new();
        for b in &batches {
            let (n, d) = (b.column(0).as_string::<i32>(), b.column(1).as_string::<i32>());
            for i in 0..b.num_rows() {
                if !d.is_null(i) {
                    described.insert(n.value(i).to_string(), d.value(i).to_string());
                }
            }
        }
        for name in names {
            let d = described.get(&name).unwrap_or_else(|| panic!("{name} has no description in information_schema.routines"));
            // More than a sentence: at least two of them.
            assert!(d.matches(". ").count() >= 1 && d.len() > 120, "{name}: '{d}' says too little");
        }
    }

    #[test]
    fn every_function_has_an_example() {
        for f in tokq_udfs::scalar_udfs() {
            assert!(f.documentation().and_then(example_sql).is_some(), "{} has no SQL example", f.name());
        }
        for t in table_functions() {
            assert!(example_sql(&t.doc).is_some(), "{} has no SQL example", t.name);
        }
        for f in tokq_udfs::aggregate_udfs() {
            assert!(f.documentation().and_then(example_sql).is_some(), "{} has no SQL example", f.name());
        }
    }
}
