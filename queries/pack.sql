-- Training rows: tokenize the sample corpus and pack it into rows of exactly seq_len tokens,
-- documents separated by EOS, each row keeping the lineage of the documents it holds.
--   tokq run queries/pack.sql

PARAMETERS (
  input     path    DEFAULT 'queries/data/*.jsonl*',  -- JSONL files: a file, folder or glob, local or s3://
  tokenizer text    DEFAULT 'tiktoken:cl100k_base',   -- as tokenize() takes it: a tokenizer.json or tiktoken:NAME
  seq_len   integer DEFAULT 2048,                     -- tokens per packed row
  pack      text    DEFAULT 'eos=100257,tail=drop',   -- pack_tokens options: cl100k's <|endoftext|> between documents, the partial last row dropped
  output    path    DEFAULT 'out/packed/'
);

CREATE VIEW tokenized AS
SELECT id AS doc_id, _source, _row, tokenize(text, '${tokenizer}') AS input_ids
FROM read_jsonl('${input}');

COPY (
  SELECT * FROM pack_tokens('tokenized', ${seq_len}, '${pack}')
) TO '${output}' STORED AS PARQUET;

SELECT count(*) AS rows, sum(n_tokens) AS tokens, sum(cardinality(doc_id)) AS document_pieces
FROM read_parquet('${output}');
