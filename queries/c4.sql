-- C4's heuristics with the paper's defaults: keep English pages (detect_language), then C4's line
-- and page rules (terminal punctuation, >= 3 words per line, >= 5 sentences, no "lorem ipsum",
-- no curly brackets, no javascript or cookie-policy lines). Kept rows carry the rewritten text;
-- rejected rows go to `rejects` with `filter_reason`.
--   tokq run queries/c4.sql

PARAMETERS (
  input     path    DEFAULT 'queries/data/*.jsonl*',  -- JSONL files: a file, folder or glob, local or s3://
  output    path    DEFAULT 'out/c4/',
  rejects   path    DEFAULT 'out/c4-rejects/',
  lang      text    DEFAULT 'en'                      -- the ISO 639-1 code to keep
);

CREATE VIEW docs AS
SELECT id AS doc_id, text, _source, _row
FROM read_jsonl('${input}');

CREATE VIEW judged AS
SELECT doc_id, _source, _row, text,
       detect_language(text)['lang'] AS lang,
       quality_chain(text, 'c4_quality') AS verdict
FROM docs;

COPY (
  SELECT doc_id, _source, _row, lang, filter_reason,
         CASE WHEN filter_reason IS NULL THEN coalesce(kept_text, text) ELSE text END AS text
  FROM (
    SELECT *,
           CASE WHEN lang IS DISTINCT FROM '${lang}' THEN 'detect_language:not_${lang}'
                ELSE verdict['filter_reason'] END AS filter_reason,
           verdict['text'] AS kept_text
    FROM judged
  )
) TO '${output}' STORED AS PARQUET
  OPTIONS ('rejects' '${rejects}');

SELECT filter_reason, count(*) AS documents
FROM read_parquet('${rejects}')
GROUP BY filter_reason
ORDER BY documents DESC, filter_reason;
