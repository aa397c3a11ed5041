"""tokq's Parquet output opens as it is in pyarrow and DuckDB, with footer metadata and lineage.

    python tests/parity/output_check.py OUTPUT_DIR
"""
import glob, json, os, sys

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

out = sys.argv[1]
files = sorted(glob.glob(os.path.join(out, "*.parquet")))
assert files, f"no parquet files in {out}"
manifest = json.load(open(os.path.join(out, "_tokq_manifest.json")))
assert [f["path"] for f in manifest["files"]] == [os.path.basename(f) for f in files]

table = pq.read_table(out)
assert table.schema.field("input_ids").type == pa.list_(pa.field("item", pa.uint32(), nullable=False)), table.schema
for col in ("doc_id", "_source", "_row", "n_tokens"):
    assert col in table.column_names, col
meta = {k.decode(): v.decode() for k, v in pq.ParquetFile(files[0]).metadata.metadata.items()}
for key in ("tokq.format_version", "tokq.tokenizer", "tokq.recipe_sha256", "tokq.version"):
    assert key in meta, key
tok = json.loads(meta["tokq.tokenizer"])
assert tok and all(len(t["sha256"]) == 64 for t in tok), tok

rows, tokens, lens = duckdb.sql(
    f"SELECT count(*), sum(n_tokens), sum(len(input_ids)) FROM read_parquet('{out}/*.parquet')").fetchone()
assert rows == manifest["rows"] == table.num_rows, (rows, manifest["rows"])
assert tokens == lens == manifest["tokens"], (tokens, lens, manifest["tokens"])
print(f"ok output {out}: {rows} rows, {tokens} tokens; pyarrow and duckdb agree with the manifest; "
      f"metadata {sorted(meta)}")
