-- Fuzzy paragraph dedup as DCLM runs Dolma's bff (--min-ngram-size 13 --max-ngram-size 13
-- --filtering-threshold 0.8 --remove-type old-both): a paragraph (the text between two \n) is
-- removed when more than `threshold` of its 13-word n-grams occur in an earlier paragraph of the
-- corpus, earlier in lineage order (source, row, paragraph), and a whole document when more than
-- `threshold` of all its n-grams do. Unlike bff's shared Bloom filter, the decision is exact and
-- the same on any partitions or cluster (docs/guide/subdoc.md says where they differ). A document
-- left without a word goes to `rejects` with 'ngram_dedup:empty'; the others go to `output` with
-- removed_spans, the count of their n-grams seen before. bloom=true counts the n-grams through a
-- Bloom filter first, to bound memory: the same rows.
--   tokq run queries/ngram-dedup.sql
--   tokq run queries/ngram-dedup.sql --set min_ngram_size=5 --set remove_documents=false   # bff's defaults

PARAMETERS (
  input            path    DEFAULT 'queries/data/*.jsonl*',     -- JSONL files: a file, folder or glob, local or s3://
  output           path    DEFAULT 'out/ngram-dedup/',
  rejects          path    DEFAULT 'out/ngram-dedup-rejects/',
  work             folder  DEFAULT 'out/ngram-dedup-work/',     -- scratch: n-gram hashes, seen n-grams
  ngram_size       integer DEFAULT 13,                          -- words per n-gram (bff's --max-ngram-size)
  min_ngram_size   integer DEFAULT 13,                          -- a shorter paragraph with this many words is one n-gram
  threshold        number  DEFAULT 0.8,                         -- remove past this share of seen n-grams
  remove_documents boolean DEFAULT true,                        -- whole documents too (old-both; false: paragraphs only)
  bloom            boolean DEFAULT false,                       -- count n-grams through a Bloom filter: same rows, less memory
  bloom_fpr        number  DEFAULT 0.01                         -- its false-positive rate
);

CREATE VIEW docs AS
SELECT id AS doc_id, text, _source, _row
FROM read_jsonl('${input}');

-- Sentence dedup's steps with n-grams for spans: hash them, find the ones an earlier paragraph
-- holds, cut what passes the threshold.
INCLUDE 'parts/sentence-dedup.sql' WITH (
  docs = docs, work = '${work}', output = '${output}', rejects = '${rejects}',
  n_sentences = ${ngram_size}, unit = 'ngram', min_ngram_size = ${min_ngram_size},
  threshold = ${threshold}, remove_documents = ${remove_documents},
  min_doc_words = 0, min_num_sentences = 0, min_count = 2, keep_first = true,
  bloom = ${bloom}, bloom_fpr = ${bloom_fpr}, reason = 'ngram_dedup'
);
