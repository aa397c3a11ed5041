-- Part (INCLUDE it): tokenize the view ${docs} (doc_id, text, _source, _row) in lineage order and
-- pack the token ids into rows of exactly seq_len tokens, each document followed by eos.
-- Parameters: docs (a view), tokenizer, eos (a token string or id), seq_len, pack (pack_tokens
-- options, such as tail=pad,pad=0), output.

CREATE VIEW tokenized AS
SELECT doc_id, _source, _row, tokenize(text, '${tokenizer:-tiktoken:cl100k_base}', 'eos=${eos:-<|endoftext|>}') AS input_ids
FROM ${docs:-docs}
ORDER BY _source, _row;

COPY (SELECT * FROM pack_tokens('tokenized', ${seq_len:-2048}, '${pack:-tail=drop}'))
TO '${output:-out/packed/}' STORED AS PARQUET;
