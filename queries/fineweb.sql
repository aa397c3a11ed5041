-- FineWeb's quality cascade, as datatrove ran it for FineWeb: GopherRepetition -> GopherQuality ->
-- C4 (lines without terminal punctuation kept) -> FineWebQuality, each on the text the previous
-- one kept, in one pass over each document. Kept rows (C4's rewritten text) go to `output`,
-- every rejected row (original text) to `rejects` with `filter_reason` = 'filter:reason'.
-- The summary checks that every input row is in one of the two.
--   tokq run queries/fineweb.sql
-- Parameters (--set NAME=VALUE): input, output, rejects.

CREATE VIEW docs AS
SELECT id AS doc_id, text, _source, _row
FROM read_jsonl('${input:-queries/data/*.jsonl*}');

CREATE VIEW judged AS
SELECT doc_id, _source, _row, text, quality_chain(text, 'fineweb') AS verdict
FROM docs;

COPY (
  SELECT doc_id, _source, _row,
         verdict['filter_reason'] AS filter_reason,
         coalesce(verdict['text'], text) AS text
  FROM judged
) TO '${output:-out/fineweb/}' STORED AS PARQUET
  OPTIONS ('rejects' '${rejects:-out/fineweb-rejects/}');

SELECT filter_reason, count(*) AS documents
FROM read_parquet('${rejects:-out/fineweb-rejects/}')
GROUP BY filter_reason
ORDER BY documents DESC, filter_reason;
