//! Every statement kind a recipe may hold, in one recipe.

use crate::common::*;

#[test]
fn external_table_ctas_set_and_copy_from_a_table_name() {
    let d = tempfile::tempdir().unwrap();
    write(d.path(), "docs.jsonl", "{\"id\":\"a\",\"text\":\"alpha beta\"}\nnot json\n{\"id\":\"b\",\"text\":\"gamma\"}\n");
    let recipe = write(
        d.path(),
        "r.sql",
        format!(
            "SET tokq.on_bad_row = 'skip';\n\
             SET datafusion.execution.batch_size = 1;\n\
             CREATE EXTERNAL TABLE meta (id VARCHAR, lang VARCHAR) STORED AS CSV LOCATION '{d}/meta.csv' \
               OPTIONS ('format.has_header' 'true');\n\
             CREATE TABLE tokenized AS\n\
               SELECT r.id AS doc_id, r._source, r._row, m.lang, tokenize(r.text, 'tiktoken:o200k_base') AS input_ids\n\
               FROM read_jsonl('{d}/docs.jsonl') r JOIN meta m ON r.id = m.id;\n\
             COPY tokenized TO '{d}/out/' STORED AS PARQUET;\n\
             SELECT doc_id, lang, _row FROM tokenized ORDER BY doc_id;",
            d = d.path().display()
        ),
    );
    write(d.path(), "meta.csv", "id,lang\na,en\nb,fr\n");
    let out = tokq_ok(&["run", recipe.to_str().unwrap(), "--quiet"]);
    assert!(out.contains("| a      | en   | 0    |"), "{out}");
    assert!(out.contains("| b      | fr   | 2    |"), "{out}");
    let rows = rows(&read_output(&d.path().join("out")).batch);
    assert_eq!(rows.iter().map(|r| (r.0.as_str(), r.2)).collect::<Vec<_>>(), vec![("a", 0), ("b", 2)]);
}
