-- Part (INCLUDE it): sentence (or line) dedup of the view ${docs} (doc_id, text, _source, _row),
-- as datatrove 0.10.1's SentenceDedup decides it, with unit 'ngram' bff's fuzzy paragraph dedup,
-- or with unit 'token:SPEC' Lee et al.'s exact-substring dedup. See queries/sentence-dedup.sql,
-- queries/ngram-dedup.sql and queries/substring-dedup.sql for the recipes.

PARAMETERS (
  docs              name    DEFAULT docs,                           -- the view to dedup: doc_id, text, _source, _row
  work              folder  DEFAULT 'out/sentence-dedup-work/',     -- scratch tables, in folders under it
  output            path    DEFAULT 'out/sentence-dedup/',          -- every kept document, its repeated spans removed
  rejects           path    DEFAULT 'out/sentence-dedup-rejects/',  -- documents left too short, with filter_reason
  n_sentences       integer DEFAULT 3,                              -- sentences (or lines) per span (datatrove: 3)
  unit              text    DEFAULT 'sentence',                     -- 'sentence' (spaCy's), 'line' (split_sentences=False), 'ngram' (bff's word n-grams) or 'token:SPEC' (a tokenizer's tokens)
  min_doc_words     integer DEFAULT 50,                             -- a changed document keeps at least this many words (0: off)
  min_num_sentences integer DEFAULT 3,                             -- and this many sentences (0: off)
  min_count         integer DEFAULT 2,                              -- a span repeats when the corpus holds it this many times
  keep_first        boolean DEFAULT true,                           -- keep a repeated span's first occurrence (false: remove every copy)
  bloom             boolean DEFAULT false,                          -- count only the spans a Bloom filter lets through: the same rows, less memory
  bloom_fpr         number  DEFAULT 0.01,                           -- the filter's false-positive rate (2.4 bytes per span at 0.01)
  min_ngram_size    integer DEFAULT 5,                              -- unit 'ngram': a shorter paragraph with this many words is one n-gram
  threshold         number  DEFAULT 0.8,                            -- unit 'ngram': a paragraph goes when more than this share of its n-grams was seen
  remove_documents  boolean DEFAULT false,                          -- unit 'ngram': so does a document, by the share of all its n-grams
  reason            text    DEFAULT 'sentence_dedup'                -- the rejects' reasons start with it
);

-- 1. One pass over the input: the hash of every span of n_sentences sentences, with lineage.
COPY (
  SELECT _source, _row, s['hash'] AS hash, s['start'] AS start
  FROM (SELECT _source, _row, unnest(span_hashes(text, ${n_sentences}, '${unit}', ${min_ngram_size})) AS s FROM ${docs})
) TO '${work}spans/' STORED AS PARQUET OPTIONS ('compression' 'lz4_raw');

-- 2. With bloom=true, the counting Bloom filter of every span, sized for the spans there are
--    (Parquet footers count them); without, one NULL, so that the statement after it plans alike.
--    Counters stop at min_count (255 at most: a count of 255 still lets every span through that
--    reaches a larger min_count, and step 3 counts those exactly).
COPY (
  SELECT bloom_counts(s.hash, n.spans, ${bloom_fpr}, least(${min_count}, 255)) AS filter
  FROM read_parquet('${work}spans/') s CROSS JOIN (SELECT count(*) AS spans FROM read_parquet('${work}spans/')) n
  WHERE ${bloom}
) TO '${work}bloom.parquet' STORED AS PARQUET OPTIONS ('compression' 'lz4_raw');

-- 3. Each input file's rank in name order, a table of its own: its footer's row count tells
--    the planner that it is small, so that it is sent whole to every partition instead of the
--    spans being shuffled by file to meet it.
COPY (
  -- Not named _source: a table with lineage has both _source and _row.
  SELECT _source AS source, row_number() OVER (ORDER BY _source) AS file
  FROM (SELECT DISTINCT _source FROM read_parquet('${work}spans/'))
) TO '${work}files.parquet' STORED AS PARQUET OPTIONS ('compression' 'lz4_raw');

-- 4. The repeated spans: every occurrence of a hash seen at least min_count times but its first
--    in lineage order (source, row, sentence), or every one of them without keep_first, gathered
--    per document. The order does not depend on partitions or executors. An n-gram's start is
--    its paragraph, which can hold it more than once: every occurrence outside the first
--    paragraph that holds it is seen, and none within that paragraph.
--    A place in lineage order is one number, so that the first one is a min() per hash: a
--    window ranking each hash's occurrences costs a partition per hash, 8x the time on a corpus
--    of near-duplicate paragraphs (docs/guide/subdoc.md).
--    The columns are not named _source and _row: the accounting counts the rows of tables that
--    carry lineage, and this one only looks documents up.
COPY (
  WITH spans AS (
    -- (file, row, start) as a number that orders as they do: rows below 10^10, starts below 2^32.
    SELECT s._source, s._row, s.start, s.hash,
           arrow_cast(f.file, 'Decimal128(38,0)') * arrow_cast('100000000000000000000', 'Decimal128(38,0)')
             + arrow_cast(s._row, 'Decimal128(38,0)') * 4294967296 + s.start AS place
    FROM read_parquet('${work}files.parquet') f JOIN read_parquet('${work}spans/') s ON s._source = f.source
  )
  -- In no order: drop_spans takes them as they come, and an ordered array_agg costs a sort per document.
  SELECT s._source AS source, s._row AS source_row, array_agg(s.start) AS starts
  -- Most spans occur once: the aggregate keeps a count and a first place per hash, and only the
  -- repeated hashes are joined back. With bloom, only the spans the filter counts min_count
  -- times are counted: the filter never counts a span below its copies, so the exact count
  -- decides as without it.
  FROM (SELECT hash, min(place) AS first FROM spans
        WHERE NOT ${bloom} OR bloom_count(hash, '${work}bloom.parquet') >= least(${min_count}, 255)
        GROUP BY hash HAVING count(*) >= ${min_count}) r
  JOIN spans s ON s.hash = r.hash
  WHERE s.place <> r.first OR NOT ${keep_first}
  GROUP BY s._source, s._row
) TO '${work}repeated/' STORED AS PARQUET OPTIONS ('compression' 'lz4_raw');

CREATE VIEW repeated AS SELECT source, source_row, starts FROM read_parquet('${work}repeated/');

-- 5. Every document once. A document with repeated spans loses them and stays if it keeps
--    min_doc_words words and min_num_sentences sentences; an unchanged one stays as it is. An
--    empty text never stays (datatrove drops it too). Rejects keep their original text.
CREATE VIEW deduped AS
SELECT d.doc_id, d._source, d._row, d.text AS original, r.starts,
       drop_spans(d.text, r.starts, ${n_sentences}, '${unit}', ${min_ngram_size}, ${threshold}, ${remove_documents}) AS kept
FROM repeated r RIGHT JOIN ${docs} d ON d._source = r.source AND d._row = r.source_row;

COPY (
  SELECT doc_id, _source, _row,
         CASE WHEN filter_reason IS NULL THEN kept ELSE original END AS text,
         filter_reason,
         coalesce(cardinality(starts), 0) AS removed_spans
  FROM (
    SELECT *,
           CASE WHEN kept IS NULL OR kept = '' THEN '${reason}:empty'
                WHEN starts IS NULL OR kept = original THEN NULL
                WHEN ${min_doc_words} > 0 AND cardinality(split_words(kept)) < ${min_doc_words}
                  THEN '${reason}:few_words'
                WHEN ${min_num_sentences} > 0 AND cardinality(split_sentences(kept)) < ${min_num_sentences}
                  THEN '${reason}:few_sentences'
           END AS filter_reason
    FROM deduped
  )
) TO '${output}' STORED AS PARQUET
  OPTIONS ('rejects' '${rejects}');

SELECT 'kept' AS outcome, count(*) AS documents, sum(removed_spans) AS spans_removed FROM read_parquet('${output}')
UNION ALL
SELECT filter_reason, count(*), sum(removed_spans) FROM read_parquet('${rejects}') GROUP BY filter_reason
ORDER BY outcome;
