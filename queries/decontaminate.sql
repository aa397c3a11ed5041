-- Decontamination against evaluation sets, as datatrove 0.10.1's NGramsDecontIndexer and
-- NGramsDecontFilter decide it (default NGramsDecontConfig: 12-grams of simplify_text's spaCy
-- words, find_overlap_ngrams=true, find_query_ngrams=false). A training document that shares
-- an n-gram with an evaluation item goes to `rejects` with filter_reason 'contaminated:<task>'
-- and contaminated_ngram, its first such n-gram; the others go to `output`.
--
-- The evaluation items are a table (`eval`: JSONL or Parquet, one row per gold answer) with
-- `text` (the gold answer), `query` (the prompt, or null) and `task`; docs/guide/decontamination.md
-- says how to export lighteval or Hugging Face evaluation sets into it. tokq downloads nothing.
--   tokq run queries/decontaminate.sql --set eval=evals/*.parquet

PARAMETERS (
  input               path    DEFAULT 'queries/data/*.jsonl*',            -- JSONL training documents
  eval                path    DEFAULT 'queries/data/eval/items.jsonl',    -- evaluation items: text, query, task
  output              path    DEFAULT 'out/decontaminated/',
  rejects             path    DEFAULT 'out/decontaminated-rejects/',
  work                folder  DEFAULT 'out/decontaminate-work/',          -- scratch: the n-gram index, the matches
  n_grams             integer DEFAULT 12,                                 -- words per n-gram
  find_query_ngrams   boolean DEFAULT false,                              -- also index the prompts' own n-grams
  find_overlap_ngrams boolean DEFAULT true                                -- also index n-grams across prompt and answer
);

CREATE VIEW docs AS
SELECT id AS doc_id, text, _source, _row
FROM read_jsonl('${input}');

CREATE VIEW eval AS
SELECT CAST(text AS VARCHAR) AS text, CAST(query AS VARCHAR) AS query, CAST(task AS VARCHAR) AS task
FROM read_files('${eval}');

-- 0. An empty evaluation table would decontaminate nothing without a word.
SELECT count(*) AS eval_items FROM eval
HAVING assert_true(count(*) > 0, 'the eval table ${eval} has no rows: decontaminating against it would remove nothing') IS NULL;

-- 1. The index: every n-gram hash of every item, named by one task. A hash two tasks share is
--    named by the last task in name order (datatrove: the last index file it loads).
COPY (
  SELECT hash, max(task) AS task
  FROM (SELECT task, unnest(eval_ngram_hashes(text, query, ${n_grams}, ${find_query_ngrams}, ${find_overlap_ngrams})) AS hash FROM eval)
  GROUP BY hash
) TO '${work}index/' STORED AS PARQUET OPTIONS ('compression' 'lz4_raw');

CREATE VIEW ngram_index AS SELECT hash, task FROM read_parquet('${work}index/');

-- 2. The documents that share a hash with the index, and which hashes: one join that streams
--    every document's n-grams past the index. Not named _source/_row: only a lookup table.
COPY (
  SELECT d._source AS source, d._row AS source_row, array_agg(DISTINCT d.hash) AS hashes
  FROM ngram_index i
  JOIN (SELECT _source, _row, unnest(ngram_hashes(text, ${n_grams})) AS hash FROM docs) d ON d.hash = i.hash
  GROUP BY d._source, d._row
) TO '${work}matches/' STORED AS PARQUET OPTIONS ('compression' 'lz4_raw');

CREATE VIEW matches AS SELECT source, source_row, hashes FROM read_parquet('${work}matches/');

-- 3. Every document once: a contaminated one is reported with its first matching n-gram.
CREATE VIEW flagged AS
SELECT d.doc_id, d._source, d._row, d.text, first_ngram(d.text, m.hashes, ${n_grams}) AS hit
FROM matches m RIGHT JOIN docs d ON d._source = m.source AND d._row = m.source_row;

COPY (
  SELECT f.doc_id, f._source, f._row, f.text,
         CASE WHEN f.hit IS NOT NULL THEN 'contaminated:' || i.task END AS filter_reason,
         f.hit['ngram'] AS contaminated_ngram
  FROM ngram_index i RIGHT JOIN flagged f ON i.hash = f.hit['hash']
) TO '${output}' STORED AS PARQUET
  OPTIONS ('rejects' '${rejects}');

SELECT filter_reason, count(*) AS documents, min(contaminated_ngram) AS example_ngram
FROM read_parquet('${rejects}')
GROUP BY filter_reason
ORDER BY filter_reason;
