-- Training rows: tokenize the sample corpus and pack it into rows of exactly seq_len tokens,
-- documents separated by EOS, each row keeping the lineage of the documents it holds.
--   tokq run queries/pack.sql
-- Parameters (--set NAME=VALUE): input, tokenizer, seq_len, pack (pack_tokens options; the
-- default separates documents with cl100k's <|endoftext|> and drops the partial last row), output.

CREATE VIEW tokenized AS
SELECT id AS doc_id, _source, _row, tokenize(text, '${tokenizer:-tiktoken:cl100k_base}') AS input_ids
FROM read_jsonl('${input:-queries/data/*.jsonl*}');

COPY (
  SELECT * FROM pack_tokens('tokenized', ${seq_len:-2048}, '${pack:-eos=100257,tail=drop}')
) TO '${output:-out/packed/}' STORED AS PARQUET;

SELECT count(*) AS rows, sum(n_tokens) AS tokens, sum(cardinality(doc_id)) AS document_pieces
FROM read_parquet('${output:-out/packed/}');
