-- Word-split parity input: every document's words with lineage.
-- Parameters: input, output.
COPY (SELECT _source, _row, split_words(text) AS words FROM read_jsonl('${input}'))
TO '${output}' STORED AS PARQUET;
