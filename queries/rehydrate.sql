-- Rehydration, as FineWeb-2 describes it: dedup keeps one document per duplicate cluster, and the
-- cluster's size says how often the kept document is worth repeating. Each kept document of
-- queries/dedup.sql gets upsampling_weight, the weight of the largest min_cluster_size of the
-- `weights` table at or below its cluster_size (a document without duplicates has size 1).
-- The default table is FineWeb-2's published example (1 -> 1, 2 -> 2, 3-4 -> 3, 5-99 -> 5,
-- 100-999 -> 8, 1000 and more -> 1: very large clusters tend to be boilerplate); FineWeb-2 also
-- publishes weights per language, which go into the same two columns. Packing repeats each
-- document upsampling_weight times (docs/guide/subdoc.md shows the SQL); a weight of 0 drops it.
--   tokq run queries/dedup.sql && tokq run queries/rehydrate.sql

PARAMETERS (
  input   path DEFAULT 'out/dedup/',                             -- dedup.sql's kept documents (Parquet, with cluster_size)
  weights path DEFAULT 'queries/data/rehydration-weights.csv',   -- min_cluster_size, weight (CSV, JSONL or Parquet)
  output  path DEFAULT 'out/rehydrated/'
);

CREATE VIEW kept AS SELECT * FROM read_parquet('${input}');

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
