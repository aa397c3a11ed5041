-- A DCLM-style model-based quality filter: a fastText classifier scores each document and only
-- documents whose `label` probability reaches `threshold` are kept. DCLM's own classifier
-- (OpenHermes + ELI5 as `hq`) kept documents with `__label__hq` >= 0.018112, its top 10%.
-- Every row carries `quality_score`; rejected rows go to `rejects` with 'dclm:low_quality'.
--   tokq run queries/dclm.sql --set quality_model=PATH/model.bin
-- Parameters (--set NAME=VALUE): input, quality_model (a fastText .bin or .ftz), label,
-- threshold, output, rejects.

CREATE VIEW scored AS
SELECT id AS doc_id, _source, _row, text,
       fasttext_score(text, '${quality_model}', '${label:-hq}') AS quality_score
FROM read_jsonl('${input:-queries/data/*.jsonl*}');

COPY (
  SELECT doc_id, _source, _row, quality_score,
         CASE WHEN quality_score < ${threshold:-0.018112} THEN 'dclm:low_quality' END AS filter_reason,
         text
  FROM scored
) TO '${output:-out/dclm/}' STORED AS PARQUET
  OPTIONS ('rejects' '${rejects:-out/dclm-rejects/}');

SELECT 'kept' AS documents, count(*) AS n, round(avg(quality_score), 4) AS mean_score
FROM read_parquet('${output:-out/dclm/}')
UNION ALL
SELECT 'rejected', count(*), round(avg(quality_score), 4)
FROM read_parquet('${rejects:-out/dclm-rejects/}');
