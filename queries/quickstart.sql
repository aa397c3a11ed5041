-- Quickstart: tokenize the bundled sample corpus into pretokenized Parquet with lineage.
--   tokq run queries/quickstart.sql
-- Parameters (--set NAME=VALUE): input, tokenizer, output.

CREATE VIEW docs AS
SELECT id AS doc_id, text, _source, _row
FROM read_jsonl('${input:-queries/data/*.jsonl*}');

CREATE VIEW tokenized AS
SELECT doc_id, _source, _row,
       tokenize(text, '${tokenizer:-tiktoken:cl100k_base}', 'eos=<|endoftext|>') AS input_ids
FROM docs;

COPY (
  SELECT doc_id, _source, _row, input_ids, CAST(cardinality(input_ids) AS BIGINT) AS n_tokens
  FROM tokenized
) TO '${output:-out/quickstart/}' STORED AS PARQUET;

SELECT count(*) AS documents, sum(n_tokens) AS tokens, count(DISTINCT _source) AS sources
FROM read_parquet('${output:-out/quickstart/}');
