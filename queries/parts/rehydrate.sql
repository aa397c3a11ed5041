-- Part (INCLUDE it): rehydration of dedup's kept documents (Parquet with cluster_size), as
-- FineWeb-2 describes it. See queries/rehydrate.sql for the recipe that dedups first.

PARAMETERS (
  kept    path DEFAULT 'out/dedup/',                             -- dedup's kept documents (Parquet, with cluster_size)
  weights path DEFAULT 'queries/data/rehydration-weights.csv',   -- min_cluster_size, weight (CSV, JSONL or Parquet)
  output  path DEFAULT 'out/rehydrated/'                         -- the kept documents with upsampling_weight
);

CREATE VIEW kept AS SELECT * FROM read_parquet('${kept}');

CREATE VIEW weights AS
SELECT CAST(min_cluster_size AS BIGINT) AS min_size, CAST(weight AS BIGINT) AS weight
FROM read_files('${weights}');

-- A table without size 1, with a negative weight or with a size twice would decide silently wrong.
SELECT count(*) AS weight_rows FROM weights
HAVING assert_true(min(min_size) = 1 AND min(weight) >= 0 AND count(*) = count(DISTINCT min_size),
  'the weights table ${weights} must start at min_cluster_size 1, name each size once, and have no negative weight') IS NULL;

-- Each row of the table covers the sizes up to the next row's.
CREATE VIEW ranges AS
SELECT min_size, lead(min_size) OVER (ORDER BY min_size) AS next_size, weight FROM weights;

COPY (
  SELECT k.*, r.weight AS upsampling_weight
  FROM ranges r
  JOIN kept k ON coalesce(k.cluster_size, 1) >= r.min_size
             AND (r.next_size IS NULL OR coalesce(k.cluster_size, 1) < r.next_size)
) TO '${output}' STORED AS PARQUET;

SELECT upsampling_weight, count(*) AS documents, sum(upsampling_weight) AS rows_after
FROM read_parquet('${output}')
GROUP BY upsampling_weight
ORDER BY upsampling_weight;
