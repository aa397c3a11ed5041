-- Reading and writing alone, for tests/bench/scaling.py --recipe: every document is read with its
-- lineage and one row per document written, with the text's length standing in for a stage.
PARAMETERS (
  input  path DEFAULT 'queries/data/*.jsonl*',
  output path DEFAULT 'out/read-write/'
);

COPY (SELECT id AS doc_id, _source, _row, length(text) AS chars FROM read_jsonl('${input}'))
TO '${output}' STORED AS PARQUET;
