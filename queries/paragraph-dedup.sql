-- Paragraph (line) dedup as Dolma and DCLM run it exactly: a paragraph is a line of the text,
-- and a paragraph the corpus holds at least `min_count` times is removed from every document but
-- the first in lineage order (source, row); with keep_first=false from every document, which
-- strips boilerplate (menus, footers, cookie notices) everywhere. What is left of a document is
-- its other lines, joined by \n. A document left empty goes to `rejects` with
-- 'sentence_dedup:empty'; the others go to `output` with removed_spans, the lines removed.
-- This is queries/parts/sentence-dedup.sql with spans of one line and no length thresholds.
-- With bloom=true the lines are counted through a counting Bloom filter first, as Dolma's and
-- DCLM's bff hold them, but only to bound memory: what it lets through is counted exactly, so
-- the rows are the same as without it (docs/guide/subdoc.md).
--   tokq run queries/paragraph-dedup.sql --set min_count=3 --set keep_first=false
--   tokq run queries/paragraph-dedup.sql --set bloom=true --set bloom_fpr=0.01

PARAMETERS (
  input      path    DEFAULT 'queries/data/*.jsonl*',       -- JSONL files: a file, folder or glob, local or s3://
  output     path    DEFAULT 'out/paragraph-dedup/',
  rejects    path    DEFAULT 'out/paragraph-dedup-rejects/',
  work       folder  DEFAULT 'out/paragraph-dedup-work/',   -- scratch: line hashes, repeated lines
  min_count  integer DEFAULT 2,                             -- copies in the corpus that make a line repeated
  keep_first boolean DEFAULT true,                          -- keep a repeated line's first occurrence
  bloom      boolean DEFAULT false,                         -- count lines through a Bloom filter first (bff's memory, exact decisions)
  bloom_fpr  number  DEFAULT 0.01                           -- its false-positive rate
);

CREATE VIEW docs AS
SELECT id AS doc_id, text, _source, _row
FROM read_jsonl('${input}');

INCLUDE 'parts/sentence-dedup.sql' WITH (
  docs = docs, work = '${work}', output = '${output}', rejects = '${rejects}',
  n_sentences = 1, unit = 'line', min_doc_words = 0, min_num_sentences = 0,
  min_count = ${min_count}, keep_first = ${keep_first}, bloom = ${bloom}, bloom_fpr = ${bloom_fpr}
);
