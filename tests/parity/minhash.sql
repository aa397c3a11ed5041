-- Signatures for the dedup parity check (tests/parity/dedup_parity.py).
COPY (
  SELECT _row, minhash(text) AS signature FROM read_jsonl('${input}')
) TO '${output}' STORED AS PARQUET;
