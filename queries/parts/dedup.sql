-- Part (INCLUDE it): exact, then MinHash near-dedup of the view ${docs} (doc_id, text, _source,
-- _row), as datatrove's MinhashDedup decides it. See queries/dedup.sql for the whole recipe.

PARAMETERS (
  docs    name    DEFAULT docs,                 -- the view to dedup: doc_id, text, _source, _row
  work    folder  DEFAULT 'out/dedup-work/',    -- scratch tables, in folders under it
  output  path    DEFAULT 'out/dedup/',         -- every unique document, and each cluster's keeper
  rejects path    DEFAULT 'out/dedup-rejects/', -- duplicates, with filter_reason and cluster
  bands   integer DEFAULT 14,                   -- LSH bands (datatrove: 14)
  rows    integer DEFAULT 8,                    -- rows per band (datatrove: 8)
  verify  number  DEFAULT 0                     -- keep a link only at exact Jaccard >= verify (0: off)
);

-- 1. One pass over the input: each document's content hash and LSH band hashes, with lineage.
COPY (
  SELECT doc_id, _source, _row, text, text_hash(text) AS content_hash,
         minhash_bands(minhash(text, ${bands} * ${rows}), ${bands}, ${rows}) AS bands
  FROM ${docs}
) TO '${work}signed/' STORED AS PARQUET OPTIONS ('compression' 'lz4_raw');

CREATE VIEW signed AS SELECT * FROM read_parquet('${work}signed/');

-- 2. Node ids in lineage order: rank of the source URI * 2^40 + row.
COPY (
  SELECT _source AS source, CAST(row_number() OVER (ORDER BY _source) - 1 AS BIGINT) AS source_rank
  FROM (SELECT DISTINCT _source FROM signed)
) TO '${work}sources/' STORED AS PARQUET OPTIONS ('compression' 'lz4_raw');

CREATE VIEW sources AS SELECT source, source_rank FROM read_parquet('${work}sources/');

-- Small tables come first in every join: without row counts DataFusion builds its hash table from
-- the left side, and the document tables must stream.
CREATE VIEW keyed AS
SELECT s.*, src.source_rank * 1099511627776 + s._row AS node
FROM sources src JOIN signed s ON s._source = src.source;

CREATE VIEW nodes AS SELECT doc_id, text, content_hash, bands, node FROM keyed;

-- 3. Exact duplicates: each group of identical texts keeps its smallest node.
COPY (
  SELECT content_hash, min(node) AS keeper, first_value(doc_id ORDER BY node) AS keeper_doc_id, count(*) AS copies
  FROM nodes GROUP BY content_hash HAVING count(*) > 1
) TO '${work}exact/' STORED AS PARQUET OPTIONS ('compression' 'lz4_raw');

CREATE VIEW exact AS
SELECT content_hash, keeper, keeper_doc_id, copies FROM read_parquet('${work}exact/');

-- 4. MinHash candidates among the exact survivors: the documents of a band bucket link to its
--    smallest node. Documents under 5 words have no signature and stay out, as in datatrove.
CREATE VIEW band_rows AS
SELECT n.node, unnest(n.bands) AS band
FROM exact e RIGHT JOIN nodes n ON n.content_hash = e.content_hash
WHERE n.bands IS NOT NULL AND (e.keeper IS NULL OR e.keeper = n.node);

CREATE VIEW buckets AS
SELECT band, min(node) AS root FROM band_rows GROUP BY band HAVING count(*) > 1;

CREATE VIEW candidates AS
SELECT r.node AS a, b.root AS b FROM buckets b JOIN band_rows r ON r.band = b.band WHERE r.node <> b.root;

-- Optional verification: with verify > 0, a link stays only if the two texts' shingle sets
-- have exact Jaccard >= verify. The optimizer removes whichever branch does not apply.
CREATE VIEW links AS
SELECT a, b FROM candidates WHERE ${verify} <= 0
UNION ALL
SELECT c.a, c.b FROM candidates c JOIN nodes x ON c.a = x.node JOIN nodes y ON c.b = y.node
WHERE ${verify} > 0 AND shingle_jaccard(x.text, y.text) >= ${verify};

-- 5. Clusters: connected components of the links, in rounds of SQL.
CREATE COMPONENTS clusters FROM links (a, b) LOCATION '${work}components/';

-- The clusters meet the documents first: their size is known when the statement is planned, so
-- they are the hash table (on a cluster, sent to every task) and the documents stream past it.
COPY (
  SELECT c.node, c.component, n.doc_id AS representative_doc_id, s.cluster_size
  FROM clusters c
  JOIN nodes n ON c.component = n.node
  JOIN (SELECT component, count(*) AS cluster_size FROM clusters GROUP BY component) s
    ON c.component = s.component
) TO '${work}clustered/' STORED AS PARQUET OPTIONS ('compression' 'lz4_raw');

CREATE VIEW clustered AS
SELECT node, component, representative_doc_id, cluster_size FROM read_parquet('${work}clustered/');

-- 6. Every document once: kept, or rejected with its reason, cluster and representative.
--    cluster_size counts identical copies for an exact group, and exact-unique documents for a
--    MinHash cluster; it is NULL for a document with no duplicate.
COPY (
  SELECT n.doc_id, n._source, n._row, n.text,
         CASE WHEN e.keeper <> n.node THEN 'exact_duplicate'
              WHEN c.component <> n.node THEN 'minhash_duplicate' END AS filter_reason,
         CASE WHEN e.keeper <> n.node THEN e.keeper ELSE coalesce(c.component, e.keeper) END AS cluster_id,
         CASE WHEN e.keeper <> n.node THEN e.keeper_doc_id
              ELSE coalesce(c.representative_doc_id, e.keeper_doc_id) END AS representative_doc_id,
         CASE WHEN e.keeper <> n.node THEN e.copies ELSE coalesce(c.cluster_size, e.copies) END AS cluster_size
  FROM clustered c RIGHT JOIN (
    exact e RIGHT JOIN keyed n ON n.content_hash = e.content_hash
  ) ON n.node = c.node
) TO '${output}' STORED AS PARQUET
  OPTIONS ('rejects' '${rejects}');

SELECT filter_reason, count(*) AS documents, count(DISTINCT cluster_id) AS clusters
FROM read_parquet('${rejects}')
GROUP BY filter_reason
ORDER BY filter_reason;
