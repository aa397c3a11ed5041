-- Exact, then MinHash near-dedup, as datatrove's MinhashDedup decides it (word 5-grams, 14 bands
-- of 8 hashes, seed 1), in SQL: each step is a query that DataFusion plans and Ballista can
-- shuffle, and clustering runs as rounds of SQL (CREATE COMPONENTS), never in one process.
-- Kept rows go to `output`, removed ones to `rejects` with filter_reason 'exact_duplicate' or
-- 'minhash_duplicate', the cluster_id and the representative's doc_id. Every input row lands in
-- one of the two. The representative of a group is its smallest lineage key (source, row).
--   tokq run queries/dedup.sql

PARAMETERS (
  input     path    DEFAULT 'queries/data/*.jsonl*',  -- JSONL files: a file, folder or glob, local or s3://
  output    path    DEFAULT 'out/dedup/',
  rejects   path    DEFAULT 'out/dedup-rejects/',
  work      folder  DEFAULT 'out/dedup-work/',        -- scratch: signatures, groups, clustering rounds
  bands     integer DEFAULT 14,                       -- LSH bands; the signature has bands * rows hashes
  rows      integer DEFAULT 8,                        -- hashes per band
  verify    number  DEFAULT 0                         -- keep a candidate pair only at exact shingle Jaccard >= verify (0 trusts the bands, as datatrove)
);

CREATE VIEW docs AS
SELECT id AS doc_id, text, _source, _row
FROM read_jsonl('${input}');

-- The steps live in a part, which queries/pretrain.sql includes too.
INCLUDE 'parts/dedup.sql' WITH (
  docs = docs, work = '${work}', output = '${output}',
  rejects = '${rejects}', bands = ${bands}, rows = ${rows}, verify = ${verify}
);

