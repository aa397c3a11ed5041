-- FineWeb's quality cascade, as datatrove ran it for FineWeb: GopherRepetition -> GopherQuality ->
-- C4 (lines without terminal punctuation kept) -> FineWebQuality, each on the text the previous
-- one kept, in one pass over each document. Kept rows (C4's rewritten text) go to `output`,
-- every rejected row (original text) to `rejects` with `filter_reason` = 'filter:reason'.
-- The summary checks that every input row is in one of the two.
--   tokq run queries/fineweb.sql

PARAMETERS (
  input     path    DEFAULT 'queries/data/*.jsonl*',  -- JSONL files: a file, folder or glob, local or s3://
  output    path    DEFAULT 'out/fineweb/',
  rejects   path    DEFAULT 'out/fineweb-rejects/'
);

CREATE VIEW docs AS
SELECT id AS doc_id, text, _source, _row
FROM read_jsonl('${input}');

-- The cascade lives in a part, which queries/pretrain.sql includes too.
INCLUDE 'parts/fineweb.sql' WITH (docs = docs, output = '${output}', rejects = '${rejects}');
