-- A DCLM-style model-based quality filter: a fastText classifier scores each document and only
-- documents whose `label` probability reaches `threshold` are kept. DCLM's own classifier
-- (OpenHermes + ELI5 as `hq`) kept documents with `__label__hq` >= 0.018112, its top 10%.
-- Every row carries `quality_score`; rejected rows go to `rejects` with 'dclm:low_quality'.
--   tokq run queries/dclm.sql --set quality_model=PATH/model.bin

PARAMETERS (
  input     path    DEFAULT 'queries/data/*.jsonl*',  -- JSONL files: a file, folder or glob, local or s3://
  quality_model path,                                 -- a fastText classifier (.bin or .ftz)
  label     text    DEFAULT 'hq',                     -- the label whose probability is the score
  threshold number  DEFAULT 0.018112,                 -- keep at score >= threshold (DCLM's top 10%)
  output    path    DEFAULT 'out/dclm/',
  rejects   path    DEFAULT 'out/dclm-rejects/'
);

CREATE VIEW scored AS
SELECT id AS doc_id, _source, _row, text,
       fasttext_score(text, '${quality_model}', '${label}') AS quality_score
FROM read_jsonl('${input}');

COPY (
  SELECT doc_id, _source, _row, quality_score,
         CASE WHEN quality_score < ${threshold} THEN 'dclm:low_quality' END AS filter_reason,
         text
  FROM scored
) TO '${output}' STORED AS PARQUET
  OPTIONS ('rejects' '${rejects}');

SELECT 'kept' AS documents, count(*) AS n, round(avg(quality_score), 4) AS mean_score
FROM read_parquet('${output}')
UNION ALL
SELECT 'rejected', count(*), round(avg(quality_score), 4)
FROM read_parquet('${rejects}');
