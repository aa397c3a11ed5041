"""WARC reading throughput on one core: tokq's `read_warc` against warcio and FastWARC (Python), in one
run on the same file.

The input is the shared 991-page WARC (one gzip member per record), repeated `--copies` times into
one file. Each reader goes through every response record and takes its decoded HTTP payload:
warcio with `content_stream().read()` (chunked and content-encoding undone, as tokq does);
FastWARC 2 (the Rust core of Resiliparse, through its Python binding) with `reader.read()` after
HTTP parsing. tokq runs `read_warc` in a whole `tokq run` with one partition, pinned to one core
with taskset when it is there, including start-up and a small Parquet write (URL, payload length
of every record). Prints records/s and compressed and payload MB/s per reader, and
tokq's ratio to each.

    python tests/bench/warc_read.py --tokq $CARGO_TARGET_DIR/release/tokq --shared ../shared
"""
import argparse
import os
import shutil
import subprocess
import tempfile
import time

import pyarrow.parquet as pq
from fastwarc.warc import ArchiveIterator as FastIterator
from fastwarc.warc import WarcRecordType
from warcio.archiveiterator import ArchiveIterator

# every column is decoded whatever the projection; only the URL and offset are written
SQL = """COPY (SELECT url, _offset FROM read_warc('${input}')) TO '${output}' STORED AS PARQUET;"""


def warcio_read(path):
    n = size = 0
    with open(path, "rb") as f:
        for rec in ArchiveIterator(f):
            if rec.rec_type == "response":
                size += len(rec.content_stream().read())
                n += 1
    return n, size


def fastwarc_read(path):
    n = size = 0
    with open(path, "rb") as f:
        for rec in FastIterator(f, record_types=WarcRecordType.response, parse_http=True):
            size += len(rec.reader.read())
            n += 1
    return n, size


def tokq_read(tokq, path, work):
    out = os.path.join(work, "out")
    recipe = os.path.join(work, "read.sql")
    open(recipe, "w").write(SQL)
    pin = ["taskset", "-c", "0"] if shutil.which("taskset") else []
    subprocess.run(pin + [tokq, "run", "--quiet", "--partitions", "1", recipe, "--set", f"input={path}", "--set", f"output={out}"], check=True)
    return pq.read_table(out).num_rows, None


def timed(fn, *args):
    start = time.perf_counter()
    got = fn(*args)
    return got, time.perf_counter() - start


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokq", required=True)
    ap.add_argument("--shared", required=True)
    ap.add_argument("--copies", type=int, default=4)
    args = ap.parse_args()
    if shutil.which("taskset"):
        os.sched_setaffinity(0, {0})
    src = os.path.join(args.shared, "corpora", "web-html", "trafilatura-eval.warc.gz")
    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "bench.warc.gz")
        with open(path, "wb") as out:
            for _ in range(args.copies):
                out.write(open(src, "rb").read())
        stored = os.path.getsize(path) / 1e6
        results = {}
        for name, fn, fargs in [
            ("warcio 1.8", warcio_read, (path,)),
            ("FastWARC 2 (Python)", fastwarc_read, (path,)),
            ("tokq read_warc", tokq_read, (args.tokq, path, work)),
        ]:
            (n, size), secs = timed(fn, *fargs)
            results[name] = (n, size, secs)
            size = size if size is not None else results["warcio 1.8"][1]
            print(f"{name:22} {n:6} records {secs:7.2f} s  {n / secs:8.0f} records/s  {stored / secs:7.1f} MB/s stored  {size / 1e6 / secs:7.1f} MB/s payload")
        t = results["tokq read_warc"][2]
        for name in ("warcio 1.8", "FastWARC 2 (Python)"):
            print(f"tokq / {name}: {results[name][2] / t:.1f}x")
        counts = {r[0] for r in results.values()}
        print("same record count:", len(counts) == 1, sorted(counts))


if __name__ == "__main__":
    main()
