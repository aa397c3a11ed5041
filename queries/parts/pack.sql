-- Part (INCLUDE it): tokenize the view ${docs} (doc_id, text, _source, _row) and pack each raw
-- input file's token ids, in line order, into rows of exactly seq_len tokens, each document
-- followed by eos.

PARAMETERS (
  docs      name    DEFAULT docs,                   -- the view to pack: doc_id, text, _source, _row
  tokenizer text    DEFAULT 'tiktoken:cl100k_base', -- as tokenize() takes it: a tokenizer.json or tiktoken:NAME
  eos       text    DEFAULT '<|endoftext|>',        -- the token after each document: its string or id
  seq_len   integer DEFAULT 2048,                   -- tokens per packed row
  pack      text    DEFAULT 'tail=drop',            -- more pack_tokens options, such as tail=pad,pad=0
  output    path    DEFAULT 'out/packed/'
);

-- A row here holds a whole document's token ids (thousands), so DataFusion's 8,192 rows per batch
-- make batches of ~100 MB, and the sorts by lineage that packing by source asks for (below) copy
-- whole batches outside the memory pool. Measured when one ORDER BY over the view fed the packer
-- (1 GB of Wikipedia, --memory-limit 2G, the same packed rows each time): 1,024 rows per batch
-- took peak RSS from 2,470 to 1,368 MiB and time from 34.5 to 29.4 s; with --partitions 4, 1,024
-- failed one run in three (the four sorts filled the pool before the merge above them took its
-- next 40 MB batch) where 256 passed 11 of 11, peak RSS 1.6-1.8 GB. Packing by source has the
-- per-partition sorts without that merge; 256 stays (its peak: 1,747 MiB, docs/evidence.md).
-- A SET lasts for the rest of the recipe.
SET datafusion.execution.batch_size = 256;

CREATE VIEW tokenized AS
SELECT doc_id, _source, _row, tokenize(text, '${tokenizer}', 'eos=${eos}') AS input_ids
FROM ${docs};

-- by=source: each input file is a packing stream of its own, its documents in _row order and its
-- last partial row dropped or padded as `pack` says. DataFusion hashes the documents by _source
-- and sorts each partition, so all files pack in parallel (no single task packs every token of
-- the corpus, as one ORDER BY over the view would make it), and the rows do not depend on
-- --partitions or executors.
COPY (SELECT * FROM pack_tokens('tokenized', ${seq_len}, 'by=source,${pack}'))
TO '${output}' STORED AS PARQUET;
