-- Parity recipe: tokenize every document of a corpus with lineage, for comparison in Python.
COPY (
  SELECT id AS doc_id, _source, _row, tokenize(text, '${tokenizer}') AS input_ids
  FROM read_jsonl('${input}')
) TO '${output}' STORED AS PARQUET;
