-- The whole job on the bundled sample, in the order a pretraining pipeline runs it:
-- read -> clean -> quality filters -> exact dedup -> tokenize -> pack -> write, with rejects.
--   tokq run queries/pipeline.sql
-- MinHash near-dedup is queries/dedup.sql; run it first on large corpora.

PARAMETERS (
  input     path    DEFAULT 'queries/data/*.jsonl*',  -- JSONL files: a file, folder or glob, local or s3://
  tokenizer text    DEFAULT 'tiktoken:cl100k_base',   -- as tokenize() takes it: a tokenizer.json or tiktoken:NAME
  eos       text    DEFAULT '<|endoftext|>',          -- the tokenizer's end-of-text token
  seq_len   integer DEFAULT 512,                      -- tokens per packed row
  pack      text    DEFAULT 'tail=drop',              -- pack_tokens options: tail=pad,pad=ID keeps the last partial row
  output    path    DEFAULT 'out/pipeline/',
  rejects   path    DEFAULT 'out/pipeline-rejects/'
);

-- Read with lineage (_source, _row) and clean the text.
CREATE VIEW docs AS
SELECT id AS doc_id, _source, _row, clean_text(text) AS text
FROM read_jsonl('${input}');

-- FineWeb's filter cascade (datatrove's decisions and reason strings) in one pass.
CREATE VIEW judged AS
SELECT doc_id, _source, _row, text, quality_chain(text, 'fineweb') AS q FROM docs;

-- Exact dedup: of each group of identical kept texts, the first by lineage stays.
CREATE VIEW ranked AS
SELECT doc_id, _source, _row, text, q,
       row_number() OVER (PARTITION BY text_hash(q['text']) ORDER BY _source, _row) AS copy
FROM judged;

-- Every input row lands in the output or in the rejects, with a reason.
COPY (
  SELECT doc_id, _source, _row, coalesce(q['filter_reason'], 'exact_duplicate') AS filter_reason
  FROM ranked WHERE q['filter_reason'] IS NOT NULL OR copy > 1
) TO '${rejects}' STORED AS PARQUET;

CREATE VIEW tokenized AS
SELECT doc_id, _source, _row, tokenize(q['text'], '${tokenizer}', 'eos=${eos}') AS input_ids
FROM ranked WHERE q['filter_reason'] IS NULL AND copy = 1
ORDER BY _source, _row;

-- Rows of exactly seq_len tokens; each row lists the documents it holds.
COPY (
  SELECT * FROM pack_tokens('tokenized', ${seq_len}, '${pack}')
) TO '${output}' STORED AS PARQUET;

SELECT count(*) AS rows, sum(n_tokens) AS tokens FROM read_parquet('${output}');
