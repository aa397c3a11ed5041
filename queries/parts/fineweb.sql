-- Part (INCLUDE it): FineWeb's quality cascade on the view ${docs} (doc_id, text, _source, _row).
-- Kept rows (C4's rewritten text) go to `output`, rejected ones (original text) to `rejects` with
-- filter_reason 'filter:reason'. See queries/fineweb.sql.

PARAMETERS (
  docs    name DEFAULT docs,                      -- the view to filter: doc_id, text, _source, _row
  output  path DEFAULT 'out/fineweb/',            -- kept rows
  rejects path DEFAULT 'out/fineweb-rejects/'     -- rejected rows, with filter_reason
);

CREATE VIEW judged AS
SELECT doc_id, _source, _row, text, quality_chain(text, 'fineweb') AS verdict
FROM ${docs};

COPY (
  SELECT doc_id, _source, _row,
         verdict['filter_reason'] AS filter_reason,
         coalesce(verdict['text'], text) AS text
  FROM judged
) TO '${output}' STORED AS PARQUET
  OPTIONS ('rejects' '${rejects}');
