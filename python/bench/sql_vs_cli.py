"""tokq.sql against the tokq command on the same query and text, and a Python UDF's cost per batch.

    python python/bench/sql_vs_cli.py --shared ../shared --mb 1000

Builds an uncompressed JSONL corpus of about --mb megabytes from the shared Wikipedia sample
(repeated, each copy in its own file), then in one run:
  1. the same query, `SELECT sum(token_count(text, 'tiktoken:cl100k_base'))` over it, through
     the `tokq` command (`tokq sql -c ...`, the binary from this package) and through
     `tokq.sql` in this process, best of --repeat each: MB/s and the ratio;
  2. `tokq.sql` returning every document's token ids as a pyarrow Table (GB of results) against
     `tokq run` writing the same ids to Parquet;
  3. an identity Python UDF (`@tokq.udf`) over 10 M short strings against the same query
     without it: rows/s, and the cost per batch of calling Python.
"""

from __future__ import annotations

import argparse
import gzip
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

import pyarrow as pa

import tokq


def corpus(shared: pathlib.Path, mb: int, folder: pathlib.Path) -> int:
    sample = gzip.decompress((shared / "corpora/wikipedia-en-2015/wiki_en_2015_sample.jsonl.gz").read_bytes())
    copies = max(1, round(mb * 1e6 / len(sample)))
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(copies):
        (folder / f"wiki-{i:04}.jsonl").write_bytes(sample)
    return copies * len(sample)


def best(repeat: int, fn) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default="../shared")
    ap.add_argument("--mb", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--partitions", type=int, default=os.cpu_count())
    args = ap.parse_args()
    cmd = shutil.which("tokq", path=os.path.dirname(sys.executable)) or "tokq"
    with tempfile.TemporaryDirectory(prefix="tokq-bench-") as tmp:
        data = pathlib.Path(tmp) / "in"
        size = corpus(pathlib.Path(args.shared), args.mb, data)
        mb = size / 1e6
        glob = f"{data}/*.jsonl"
        query = f"SELECT sum(token_count(text, 'tiktoken:cl100k_base')) AS tokens FROM read_jsonl('{glob}')"
        print(f"corpus: {mb:.0f} MB of Wikipedia JSONL, {args.partitions} partitions, best of {args.repeat}")

        cli_out = []
        t_cli = best(args.repeat, lambda: cli_out.append(subprocess.run(
            [cmd, "sql", "-c", query, "--format", "csv", "--partitions", str(args.partitions)],
            capture_output=True, text=True, check=True).stdout))
        py_out = []
        t_py = best(args.repeat, lambda: py_out.append(tokq.sql(query, partitions=args.partitions)))
        tokens = py_out[-1].column("tokens")[0].as_py()
        assert cli_out[-1].splitlines()[1] == str(tokens), (cli_out[-1], tokens)
        print(f"1. token_count, sum:  tokq command {mb / t_cli:7.1f} MB/s ({t_cli:.2f} s)   tokq.sql {mb / t_py:7.1f} MB/s "
              f"({t_py:.2f} s)   tokq.sql / command = {t_cli / t_py:.3f}x speed   ({tokens:,} tokens)")

        ids_query = f"SELECT _source, _row, tokenize(text, 'tiktoken:cl100k_base') AS input_ids FROM read_jsonl('{glob}')"
        recipe = pathlib.Path(tmp) / "ids.sql"
        recipe.write_text(f"COPY ({ids_query}) TO '{tmp}/ids/' STORED AS PARQUET;\n")
        t_copy = best(1, lambda: subprocess.run([cmd, "run", str(recipe), "--quiet", "--partitions", str(args.partitions)], check=True))
        held = []
        t_table = best(1, lambda: held.append(tokq.sql(ids_query, partitions=args.partitions)))
        table = held.pop()
        print(f"2. token ids:         tokq run to Parquet {mb / t_copy:7.1f} MB/s   tokq.sql to a pyarrow Table {mb / t_table:7.1f} MB/s "
              f"({table.nbytes / 1e9:.2f} GB in memory, {table.num_rows:,} rows)")
        del table

        @tokq.udf(pa.string())
        def identity(texts: pa.Array) -> pa.Array:
            return texts

        # Short rows from generate_series, so that the query around the UDF costs little and
        # what is measured is the call: export to pyarrow, Python, import back.
        rows = 10_000_000
        source = f"(SELECT CAST(value AS VARCHAR) AS s FROM generate_series(1, {rows}))"
        t_base = best(args.repeat, lambda: tokq.sql(f"SELECT count(s) AS n FROM {source}", partitions=1))
        t_udf = best(args.repeat, lambda: tokq.sql(f"SELECT count(identity(s)) AS n FROM {source}", partitions=1))
        n_batches = len(tokq.sql(f"SELECT s FROM {source}", partitions=1, stream=True).read_all().to_batches())
        per_batch = (t_udf - t_base) / max(n_batches, 1)
        print(f"3. identity Python UDF, one partition, {rows:,} short strings: {rows / t_udf / 1e6:.1f} M rows/s against "
              f"{rows / t_base / 1e6:.1f} M without it; {n_batches} batches of {rows // n_batches} rows, "
              f"{per_batch * 1e6:.0f} µs per batch for calling Python")


if __name__ == "__main__":
    main()
