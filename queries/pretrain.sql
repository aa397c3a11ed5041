-- The whole pretraining job, built from the parts in queries/parts/: read -> clean -> FineWeb's
-- quality cascade -> exact and MinHash dedup -> tokenize -> pack. Each stage writes its output
-- (under `work`) and its rejects with reasons (under `rejects`), so every input row is accounted
-- for stage by stage, and a rerun after a crash resumes at the stage it stopped in.
--   tokq run queries/pretrain.sql --set tokenizer=../shared/tokenizers/llama3/tokenizer.json \
--     --set 'eos=<|end_of_text|>' --set seq_len=2048
-- Parameters: input, work (stage outputs, ending in /), rejects (ending in /), tokenizer, eos,
-- seq_len, pack, output.

-- Read with lineage (_source, _row) and clean the text.
CREATE VIEW raw AS
SELECT id AS doc_id, clean_text(text) AS text, _source, _row
FROM read_jsonl('${input:-queries/data/*.jsonl*}');

INCLUDE 'parts/fineweb.sql' WITH (
  docs = raw, output = '${work:-out/pretrain-work/}filtered/', rejects = '${rejects:-out/pretrain-rejects/}quality/'
);

CREATE VIEW filtered AS SELECT doc_id, text, _source, _row FROM read_parquet('${work}filtered/');

INCLUDE 'parts/dedup.sql' WITH (
  docs = filtered, work = '${work}dedup/', output = '${work}unique/', rejects = '${rejects}dedup/'
);

CREATE VIEW unique_docs AS SELECT doc_id, text, _source, _row FROM read_parquet('${work}unique/');

INCLUDE 'parts/pack.sql' WITH (
  docs = unique_docs, tokenizer = '${tokenizer:-tiktoken:cl100k_base}', eos = '${eos:-<|endoftext|>}',
  seq_len = ${seq_len:-2048}, pack = '${pack:-tail=drop}', output = '${output:-out/pretrain/}'
);
