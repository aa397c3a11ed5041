-- Rehydration, as FineWeb-2 describes it: dedup keeps one document per duplicate cluster, and the
-- cluster's size says how often the kept document is worth repeating. This recipe runs
-- queries/dedup.sql's steps (kept documents under work/kept/, duplicates to `rejects`), then gives
-- each kept document upsampling_weight, the weight of the largest min_cluster_size of the
-- `weights` table at or below its cluster_size (a document without duplicates has size 1).
-- The default table is FineWeb-2's published example (1 -> 1, 2 -> 2, 3-4 -> 3, 5-99 -> 5,
-- 100-999 -> 8, 1000 and more -> 1: very large clusters tend to be boilerplate); FineWeb-2 also
-- publishes weights per language, which go into the same two columns. Packing repeats each
-- document upsampling_weight times (docs/guide/subdoc.md shows the SQL); a weight of 0 drops it.
-- An output dedup.sql already wrote gets its weights from the part alone:
--   INCLUDE 'parts/rehydrate.sql' WITH (kept = 'out/dedup/', output = 'out/rehydrated/');
--   tokq run queries/rehydrate.sql

PARAMETERS (
  input   path    DEFAULT 'queries/data/*.jsonl*',                  -- JSONL files: a file, folder or glob, local or s3://
  output  path    DEFAULT 'out/rehydrated/',                        -- kept documents with upsampling_weight
  rejects path    DEFAULT 'out/rehydrated-rejects/',                -- the duplicates dedup removed
  work    folder  DEFAULT 'out/rehydrate-work/',                    -- scratch: dedup's tables and its kept documents
  weights path    DEFAULT 'queries/data/rehydration-weights.csv',   -- min_cluster_size, weight (CSV, JSONL or Parquet)
  bands   integer DEFAULT 14,                                       -- LSH bands, as dedup.sql
  rows    integer DEFAULT 8                                         -- hashes per band, as dedup.sql
);

CREATE VIEW docs AS
SELECT id AS doc_id, text, _source, _row
FROM read_jsonl('${input}');

INCLUDE 'parts/dedup.sql' WITH (
  docs = docs, work = '${work}', output = '${work}kept/', rejects = '${rejects}',
  bands = ${bands}, rows = ${rows}, verify = 0
);

INCLUDE 'parts/rehydrate.sql' WITH (kept = '${work}kept/', weights = '${weights}', output = '${output}');
