-- Exact-substring dedup in tokens, as Lee et al. (2022) define it and Nemotron-CC runs it: every
-- span of at least `n_tokens` consecutive tokens that the corpus holds twice or more is struck out
-- of every document that holds it (keep_first=true keeps its first occurrence in lineage order:
-- source, row, token). The tokens are the tokenizer's (byte-level BPE: tiktoken specs, GPT-2's or
-- Llama-3's tokenizer.json); a character a struck token only partly spells goes whole. Lee et al.
-- find the spans with a suffix array over the corpus; this finds the same ones by hashing every
-- window of n_tokens tokens and counting the hashes, sharded by hash (docs/guide/subdoc.md). A
-- changed document left with fewer than min_doc_words words goes to `rejects` with
-- 'substring_dedup:few_words' (an empty one with 'substring_dedup:empty'); the others go to
-- `output` with removed_spans, the number of struck windows. Every input row lands in one of the two.
--   tokq run queries/substring-dedup.sql
--   tokq run queries/substring-dedup.sql --set tokenizer=../shared/tokenizers/gpt2/tokenizer.json --set n_tokens=100

PARAMETERS (
  input         path    DEFAULT 'queries/data/*.jsonl*',         -- JSONL files: a file, folder or glob, local or s3://
  output        path    DEFAULT 'out/substring-dedup/',
  rejects       path    DEFAULT 'out/substring-dedup-rejects/',
  work          folder  DEFAULT 'out/substring-dedup-work/',     -- scratch: window hashes, repeated windows
  tokenizer     text    DEFAULT 'tiktoken:cl100k_base',          -- a tokenizer whose tokens spell the text (see above)
  n_tokens      integer DEFAULT 50,                              -- the shortest repeat struck (Lee et al.: 50 tokens)
  min_doc_words integer DEFAULT 50,                              -- words a changed document keeps (datatrove's ESRangeRemover; 0: off)
  keep_first    boolean DEFAULT false,                           -- keep each repeat's first occurrence (Lee et al.: false)
  min_count     integer DEFAULT 2,                               -- a span repeats when the corpus holds it this many times
  bloom         boolean DEFAULT false,                           -- count windows through a Bloom filter: same rows, less memory
  bloom_fpr     number  DEFAULT 0.01                             -- its false-positive rate
);

CREATE VIEW docs AS
SELECT id AS doc_id, text, _source, _row
FROM read_jsonl('${input}');

-- Sentence dedup's steps with windows of tokens for spans.
INCLUDE 'parts/sentence-dedup.sql' WITH (
  docs = docs, work = '${work}', output = '${output}', rejects = '${rejects}',
  n_sentences = ${n_tokens}, unit = 'token:${tokenizer}',
  min_doc_words = ${min_doc_words}, min_num_sentences = 0,
  min_count = ${min_count}, keep_first = ${keep_first}, bloom = ${bloom}, bloom_fpr = ${bloom_fpr},
  reason = 'substring_dedup'
);
