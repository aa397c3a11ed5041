-- Quickstart: tokenize the bundled sample corpus into pretokenized Parquet with lineage.
--   tokq run queries/quickstart.sql

PARAMETERS (
  input     path    DEFAULT 'queries/data/*.jsonl*',  -- JSONL files: a file, folder or glob, local or s3://
  tokenizer text    DEFAULT 'tiktoken:cl100k_base',   -- as tokenize() takes it: a tokenizer.json or tiktoken:NAME
  output    path    DEFAULT 'out/quickstart/'
);

CREATE VIEW docs AS
SELECT id AS doc_id, text, _source, _row
FROM read_jsonl('${input}');

CREATE VIEW tokenized AS
SELECT doc_id, _source, _row,
       tokenize(text, '${tokenizer}', 'eos=<|endoftext|>') AS input_ids
FROM docs;

COPY (
  SELECT doc_id, _source, _row, input_ids, CAST(cardinality(input_ids) AS BIGINT) AS n_tokens
  FROM tokenized
) TO '${output}' STORED AS PARQUET;

SELECT count(*) AS documents, sum(n_tokens) AS tokens, count(DISTINCT _source) AS sources
FROM read_parquet('${output}');
