-- FineWeb-2's language routing: a GlotLID-style model labels each document `lang_Script`
-- (eng_Latn, rus_Cyrl, ...), and each language keeps documents whose score reaches its own
-- threshold, given as a small table (CSV: lang_script,threshold). A language without a row is
-- not routed. Kept rows go to `output` with `lang_script` (partition by it downstream); rejected
-- rows to `rejects` with 'language:below_threshold' or 'language:unrouted'.
--   tokq run queries/fineweb2-lid.sql --set lid_model=PATH/glotlid.bin

PARAMETERS (
  input     path    DEFAULT 'queries/data/*.jsonl*',  -- JSONL files: a file, folder or glob, local or s3://
  lid_model path,                                     -- a fastText model with lang_Script labels (GlotLID)
  thresholds path   DEFAULT 'queries/data/fineweb2-thresholds.csv', -- CSV: lang_script,threshold
  output    path    DEFAULT 'out/fineweb2-lid/',
  rejects   path    DEFAULT 'out/fineweb2-lid-rejects/'
);

CREATE EXTERNAL TABLE thresholds (lang_script VARCHAR NOT NULL, threshold DOUBLE NOT NULL)
STORED AS CSV LOCATION '${thresholds}'
OPTIONS ('format.has_header' 'true');

CREATE VIEW identified AS
SELECT id AS doc_id, _source, _row, text, detect_language(text, 'fasttext:${lid_model}') AS language
FROM read_jsonl('${input}');

CREATE VIEW routed AS
SELECT doc_id, _source, _row, text,
       concat(language['lang'], '_', coalesce(language['script'], 'Zyyy')) AS lang_script,
       language['score'] AS language_score
FROM identified;

COPY (
  SELECT r.doc_id, r._source, r._row, r.lang_script, r.language_score,
         CASE
           WHEN t.threshold IS NULL THEN 'language:unrouted'
           WHEN r.language_score < t.threshold THEN 'language:below_threshold'
         END AS filter_reason,
         r.text
  FROM routed r LEFT JOIN thresholds t ON r.lang_script = t.lang_script
) TO '${output}' STORED AS PARQUET
  OPTIONS ('rejects' '${rejects}');

SELECT lang_script, count(*) AS documents
FROM read_parquet('${output}')
GROUP BY lang_script
ORDER BY documents DESC, lang_script
LIMIT 20;
