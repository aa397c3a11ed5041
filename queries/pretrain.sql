-- The whole pretraining job, built from the parts in queries/parts/: read -> clean -> FineWeb's
-- quality cascade -> exact and MinHash dedup -> tokenize -> pack. Each stage writes its output
-- (under `work`) and its rejects with reasons (under `rejects`), so every input row is accounted
-- for stage by stage, and a rerun after a crash resumes at the stage it stopped in.
--   tokq run queries/pretrain.sql --set tokenizer=../shared/tokenizers/llama3/tokenizer.json \
--     --set 'eos=<|end_of_text|>' --set seq_len=2048

PARAMETERS (
  input     path    DEFAULT 'queries/data/*.jsonl*',  -- JSONL files: a file, folder or glob, local or s3://
  work      folder  DEFAULT 'out/pretrain-work/',     -- each stage's output, in a folder under it
  rejects   folder  DEFAULT 'out/pretrain-rejects/',  -- each stage's rejects, in a folder under it
  tokenizer text    DEFAULT 'tiktoken:cl100k_base',   -- as tokenize() takes it: a tokenizer.json or tiktoken:NAME
  eos       text    DEFAULT '<|endoftext|>',          -- the token after each document: its string or id
  seq_len   integer DEFAULT 2048,                     -- tokens per packed row
  pack      text    DEFAULT 'tail=drop',              -- pack_tokens options, such as tail=pad,pad=0
  output    path    DEFAULT 'out/pretrain/'
);

-- Read with lineage (_source, _row) and clean the text.
CREATE VIEW raw AS
SELECT id AS doc_id, clean_text(text) AS text, _source, _row
FROM read_jsonl('${input}');

INCLUDE 'parts/fineweb.sql' WITH (
  docs = raw, output = '${work}filtered/', rejects = '${rejects}quality/'
);

CREATE VIEW filtered AS SELECT doc_id, text, _source, _row FROM read_parquet('${work}filtered/');

INCLUDE 'parts/dedup.sql' WITH (
  docs = filtered, work = '${work}dedup/', output = '${work}unique/', rejects = '${rejects}dedup/'
);

CREATE VIEW unique_docs AS SELECT doc_id, text, _source, _row FROM read_parquet('${work}unique/');

INCLUDE 'parts/pack.sql' WITH (
  docs = unique_docs, tokenizer = '${tokenizer}', eos = '${eos}',
  seq_len = ${seq_len}, pack = '${pack}', output = '${output}'
);
