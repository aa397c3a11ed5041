-- Filter parity input: every document's words, each filter's decision, C4's kept text and the
-- FineWeb cascade, with lineage. Parameters: input, output.
COPY (
  SELECT _source, _row,
         split_words(text) AS words,
         gopher_repetition(text) AS gopher_repetition,
         gopher_quality(text) AS gopher_quality,
         c4_quality(text) AS c4_paper,
         c4_filter_lines(text) AS c4_paper_text,
         c4_quality(text, false) AS c4_fineweb,
         c4_filter_lines(text, false) AS c4_fineweb_text,
         fineweb_quality(text) AS fineweb_quality,
         quality_chain(text, 'fineweb') AS fineweb_chain
  FROM read_jsonl('${input}')
) TO '${output}' STORED AS PARQUET;
