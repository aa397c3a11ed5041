-- FineWeb-Edu: FineWeb's quality cascade, then the educational-value classifier on what the cascade
-- keeps. The classifier is a BERT regression model (HuggingFaceFW/fineweb-edu-classifier: a
-- Snowflake arctic-embed-m encoder with one logit); FineWeb-Edu keeps a page when
-- int(round(max(0, min(score, 5)))) >= 3, Python's round sending halves to the even integer.
-- Every row carries edu_score (the logit, NULL where the cascade rejected the page first) and
-- edu_int_score; rows under the threshold go to `rejects` with filter_reason 'edu_score:N'.
--   hf download HuggingFaceFW/fineweb-edu-classifier --local-dir models/fineweb-edu-classifier
--   tokq run queries/fineweb-edu.sql --set edu_model=models/fineweb-edu-classifier

PARAMETERS (
  input     path    DEFAULT 'queries/data/*.jsonl*',  -- JSONL files: a file, folder or glob, local or s3://
  edu_model path,                                     -- the classifier's folder (config.json, model.safetensors, tokenizer.json)
  threshold integer DEFAULT 3,                        -- keep at edu_int_score >= threshold (FineWeb-Edu: 3; FineWeb-Edu-score-2: 2)
  output    path    DEFAULT 'out/fineweb-edu/',
  rejects   path    DEFAULT 'out/fineweb-edu-rejects/'
);

CREATE VIEW judged AS
SELECT id AS doc_id, _source, _row, text, quality_chain(text, 'fineweb') AS verdict
FROM read_jsonl('${input}');

-- The classifier reads the text the cascade kept (C4's rewrite); rejected pages are not scored.
CREATE VIEW scored AS
SELECT doc_id, _source, _row, verdict['filter_reason'] AS cascade_reason,
       coalesce(verdict['text'], text) AS text,
       CASE WHEN verdict['filter_reason'] IS NULL
            THEN CAST(model_logits(coalesce(verdict['text'], text), '${edu_model}')[1] AS DOUBLE) END AS edu_score
FROM judged;

-- greatest and least skip NULLs, so an unscored page must stay NULL explicitly.
CREATE VIEW graded AS
SELECT *, CASE WHEN edu_score IS NOT NULL THEN greatest(least(edu_score, 5.0), 0.0) END AS clamped FROM scored;

COPY (
  SELECT doc_id, _source, _row, edu_score, edu_int_score,
         coalesce(cascade_reason, CASE WHEN edu_int_score < ${threshold} THEN 'edu_score:' || CAST(edu_int_score AS VARCHAR) END) AS filter_reason,
         text
  FROM (
    SELECT *,
           -- Python's round: a half goes to the even integer.
           CAST(CASE WHEN clamped - floor(clamped) = 0.5 THEN 2 * round(clamped / 2) ELSE round(clamped) END AS INT) AS edu_int_score
    FROM graded
  )
) TO '${output}' STORED AS PARQUET
  OPTIONS ('rejects' '${rejects}');

SELECT coalesce(CAST(edu_int_score AS VARCHAR), 'cascade') AS edu_int_score, count(*) AS documents
FROM (SELECT edu_int_score FROM read_parquet('${output}') UNION ALL SELECT edu_int_score FROM read_parquet('${rejects}'))
GROUP BY 1 ORDER BY 1;
