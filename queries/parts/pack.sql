-- Part (INCLUDE it): tokenize the view ${docs} (doc_id, text, _source, _row) in lineage order and
-- pack the token ids into rows of exactly seq_len tokens, each document followed by eos.

PARAMETERS (
  docs      name    DEFAULT docs,                   -- the view to pack: doc_id, text, _source, _row
  tokenizer text    DEFAULT 'tiktoken:cl100k_base', -- as tokenize() takes it: a tokenizer.json or tiktoken:NAME
  eos       text    DEFAULT '<|endoftext|>',        -- the token after each document: its string or id
  seq_len   integer DEFAULT 2048,                   -- tokens per packed row
  pack      text    DEFAULT 'tail=drop',            -- pack_tokens options, such as tail=pad,pad=0
  output    path    DEFAULT 'out/packed/'
);

CREATE VIEW tokenized AS
SELECT doc_id, _source, _row, tokenize(text, '${tokenizer}', 'eos=${eos}') AS input_ids
FROM ${docs}
ORDER BY _source, _row;

COPY (SELECT * FROM pack_tokens('tokenized', ${seq_len}, '${pack}'))
TO '${output}' STORED AS PARQUET;
