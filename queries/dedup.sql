-- Exact, then MinHash near-dedup, as datatrove's MinhashDedup decides it (word 5-grams, 14 bands
-- of 8 hashes, seed 1), in SQL: each step is a query that DataFusion plans and Ballista can
-- shuffle, and clustering runs as rounds of SQL (CREATE COMPONENTS), never in one process.
-- Kept rows go to `output`, removed ones to `rejects` with filter_reason 'exact_duplicate' or
-- 'minhash_duplicate', the cluster_id and the representative's doc_id. Every input row lands in
-- one of the two. The representative of a group is its smallest lineage key (source, row).
--   tokq run queries/dedup.sql
-- Parameters (--set NAME=VALUE): input, output, rejects, work (scratch directory for signatures,
-- groups and clustering rounds), bands, rows (LSH: 14 x 8; the signature gets bands * rows
-- permutations), verify (keep only candidate pairs with exact shingle Jaccard >= verify; 0,
-- the default, trusts the bands as datatrove does).

CREATE VIEW docs AS
SELECT id AS doc_id, text, _source, _row
FROM read_jsonl('${input:-queries/data/*.jsonl*}');

-- The steps live in a part, which queries/pretrain.sql includes too.
INCLUDE 'parts/dedup.sql' WITH (
  docs = docs, work = '${work:-out/dedup-work/}', output = '${output:-out/dedup/}',
  rejects = '${rejects:-out/dedup-rejects/}', bands = ${bands:-14}, rows = ${rows:-8}, verify = ${verify:-0}
);

