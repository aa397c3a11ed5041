-- Sentence dedup, as datatrove 0.10.1's SentenceDedup decides it (SentenceDedupSignature ->
-- SentenceFindDedups -> SentenceDedupFilter, default SentDedupConfig): every span of 3 sentences
-- seen before is removed from the text, its first occurrence (by lineage: source, row) stays.
-- A document that changed stays if it keeps 50 words and 3 sentences; the others go to `rejects`
-- with filter_reason 'sentence_dedup:few_words', 'sentence_dedup:few_sentences' or
-- 'sentence_dedup:empty'. Every input row lands in one of the two. unit='line' spans lines
-- instead (datatrove's split_sentences=False, the C4 paper's three-line spans of web text).
-- bloom=true counts spans through a Bloom filter first, for corpora whose spans outgrow memory:
-- the same rows (docs/guide/subdoc.md).
--   tokq run queries/sentence-dedup.sql

PARAMETERS (
  input             path    DEFAULT 'queries/data/*.jsonl*',       -- JSONL files: a file, folder or glob, local or s3://
  output            path    DEFAULT 'out/sentence-dedup/',
  rejects           path    DEFAULT 'out/sentence-dedup-rejects/',
  work              folder  DEFAULT 'out/sentence-dedup-work/',    -- scratch: span hashes, repeated spans
  n_sentences       integer DEFAULT 3,                             -- sentences (or lines) per span
  unit              text    DEFAULT 'sentence',                    -- 'sentence' or 'line'
  min_doc_words     integer DEFAULT 50,                            -- words a changed document keeps (0: off)
  min_num_sentences integer DEFAULT 3,                            -- sentences a changed document keeps (0: off)
  min_count         integer DEFAULT 2,                             -- a span repeats when the corpus holds it this many times
  keep_first        boolean DEFAULT true,                          -- keep its first occurrence (false: remove every copy)
  bloom             boolean DEFAULT false,                         -- count spans through a Bloom filter: same rows, less memory
  bloom_fpr         number  DEFAULT 0.01                           -- its false-positive rate
);

CREATE VIEW docs AS
SELECT id AS doc_id, text, _source, _row
FROM read_jsonl('${input}');

-- The steps live in a part, for recipes that dedup sentences after their own filters.
INCLUDE 'parts/sentence-dedup.sql' WITH (
  docs = docs, work = '${work}', output = '${output}', rejects = '${rejects}',
  n_sentences = ${n_sentences}, unit = '${unit}',
  min_doc_words = ${min_doc_words}, min_num_sentences = ${min_num_sentences},
  min_count = ${min_count}, keep_first = ${keep_first}, bloom = ${bloom}, bloom_fpr = ${bloom_fpr}
);
