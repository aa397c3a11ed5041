-- A Nemotron-CC-style classifier ensemble: a fastText quality classifier (DCLM's) and an encoder
-- classifier (FineWeb-Edu's) each score every document; each score is turned into one of
-- `buckets` percentile buckets over the whole input (0 = lowest; ties ordered by lineage, so the
-- buckets do not depend on partitions), and a document's quality_bucket is the higher of its two,
-- as Nemotron-CC combines its classifiers. Documents under `min_bucket` go to `rejects` with
-- filter_reason 'quality_bucket:N'; with the default 0 every document is kept with its buckets,
-- for weighting or splitting by quality later.
--   tokq run queries/nemotron-cc.sql --set quality_model=dclm.bin --set edu_model=models/fineweb-edu-classifier

PARAMETERS (
  input         path    DEFAULT 'queries/data/*.jsonl*',  -- JSONL files: a file, folder or glob, local or s3://
  quality_model path,                                     -- a fastText classifier (.bin or .ftz)
  label         text    DEFAULT 'hq',                     -- the fastText label whose probability is its score
  edu_model     path,                                     -- an encoder classifier folder with one logit
  buckets       integer DEFAULT 20,                       -- percentile buckets per classifier (Nemotron-CC: 20)
  min_bucket    integer DEFAULT 0,                        -- keep at quality_bucket >= min_bucket
  output        path    DEFAULT 'out/nemotron-cc/',
  rejects       path    DEFAULT 'out/nemotron-cc-rejects/',
  work          path    DEFAULT 'out/nemotron-cc-work/'   -- the scores, which the buckets rank
);

-- Each classifier once per document; the buckets rank the whole input, so the scores are kept.
COPY (
  SELECT id AS doc_id, _source, _row, text,
         CAST(fasttext_score(text, '${quality_model}', '${label}') AS DOUBLE) AS fasttext_score,
         CAST(model_logits(text, '${edu_model}')[1] AS DOUBLE) AS edu_score
  FROM read_jsonl('${input}')
) TO '${work}scored/' STORED AS PARQUET OPTIONS ('compression' 'lz4_raw');

CREATE VIEW bucketed AS
SELECT *, greatest(fasttext_bucket, edu_bucket) AS quality_bucket
FROM (
  SELECT *,
         CAST(ntile(${buckets}) OVER (ORDER BY fasttext_score, _source, _row) - 1 AS INT) AS fasttext_bucket,
         CAST(ntile(${buckets}) OVER (ORDER BY edu_score, _source, _row) - 1 AS INT) AS edu_bucket
  FROM read_parquet('${work}scored/')
);

COPY (
  SELECT doc_id, _source, _row, fasttext_score, edu_score, fasttext_bucket, edu_bucket, quality_bucket,
         CASE WHEN quality_bucket < ${min_bucket} THEN 'quality_bucket:' || CAST(quality_bucket AS VARCHAR) END AS filter_reason,
         text
  FROM bucketed
) TO '${output}' STORED AS PARQUET
  OPTIONS ('rejects' '${rejects}');

SELECT quality_bucket, count(*) AS documents
FROM (SELECT quality_bucket FROM read_parquet('${output}') UNION ALL SELECT quality_bucket FROM read_parquet('${rejects}'))
GROUP BY 1 ORDER BY 1;
