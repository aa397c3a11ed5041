"""The repeated-spans step of sentence and paragraph dedup, exact against bloom=true.

queries/parts/sentence-dedup.sql finds the span hashes the corpus holds at least min_count times.
The exact mode counts every distinct hash in a GROUP BY; the Bloom-filter mode first builds a
counting Bloom filter of all of them (one statement), then counts only the hashes it lets
through. This script makes a table of N span hashes with a share of them repeated (the shape of
web text after document dedup), runs both modes' counts by hash as the part runs them (the part
also keeps each hash's first place in lineage order, 16 bytes more a hash), checks that
they find the same hashes, and prints wall time and peak RSS of each process at 1 and 2
partitions. Peak RSS is the whole process's (GNU time), so it includes tokq's own ~60 MB.

    python tests/bench/bloom_dedup.py --tokq $CARGO_TARGET_DIR/release/tokq [--spans 20000000]
"""
import argparse
import os
import subprocess
import tempfile
import time

import pyarrow.parquet as pq


def tokq_sql(tokq, sql, partitions):
    """Runs `tokq sql -c SQL` under GNU time; returns (seconds, peak RSS in MB). A child's peak RSS
    as Linux reports it to its parent starts at the parent's size when it forks, so a small
    process (time) measures it, not this Python with its tables."""
    with tempfile.NamedTemporaryFile("r") as rss:
        t0 = time.perf_counter()
        subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rss.name, tokq, "sql", "--quiet", "--partitions", str(partitions), "-c", sql],
                       check=True, stdout=subprocess.DEVNULL)
        seconds = time.perf_counter() - t0
        return seconds, int(rss.read().split()[-1]) / 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokq", required=True)
    ap.add_argument("--spans", type=int, default=20_000_000, help="distinct span hashes")
    ap.add_argument("--repeat-every", type=int, default=20, help="one hash in this many appears twice")
    ap.add_argument("--fpr", type=float, default=0.01)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        # Hashes spread as xxhash64's are: the values times an odd constant, wrapping.
        spread = "arrow_cast(v, 'UInt64') * arrow_cast(11400714819323198485, 'UInt64')"
        tokq_sql(a.tokq, f"COPY (SELECT {spread} AS hash FROM unnest(range({a.spans})) AS t(v) UNION ALL "
                         f"SELECT {spread} FROM unnest(range(0, {a.spans}, {a.repeat_every})) AS t(v)) "
                         f"TO '{tmp}/spans/' STORED AS PARQUET", 2)
        rows = pq.read_table(f"{tmp}/spans").num_rows
        repeated = -(-a.spans // a.repeat_every)
        print(f"{rows:,} span hashes, {a.spans:,} distinct, {repeated:,} of them twice; bloom_fpr {a.fpr}")
        spans = f"read_parquet('{tmp}/spans/')"
        print("partitions  mode    statement             wall      peak RSS")
        for p in (1, 2):
            exact = tokq_sql(a.tokq, f"COPY (SELECT hash FROM {spans} GROUP BY hash HAVING count(*) >= 2) "
                                     f"TO '{tmp}/exact-{p}.parquet' STORED AS PARQUET", p)
            build = tokq_sql(a.tokq, f"COPY (SELECT bloom_counts(s.hash, n.spans, {a.fpr}, 2) AS filter FROM {spans} s "
                                     f"CROSS JOIN (SELECT count(*) AS spans FROM {spans}) n) TO '{tmp}/bloom.parquet' STORED AS PARQUET", p)
            probe = tokq_sql(a.tokq, f"COPY (SELECT hash FROM {spans} WHERE bloom_count(hash, '{tmp}/bloom.parquet') >= 2 "
                                     f"GROUP BY hash HAVING count(*) >= 2) TO '{tmp}/bloom-{p}.parquet' STORED AS PARQUET", p)
            found = [set(pq.read_table(f"{tmp}/{mode}-{p}.parquet").column("hash").to_pylist()) for mode in ("exact", "bloom")]
            if found[0] != found[1] or len(found[0]) != repeated:
                raise SystemExit(f"the modes differ: exact {len(found[0])}, bloom {len(found[1])}, expected {repeated}")
            filter_mb = os.path.getsize(f"{tmp}/bloom.parquet") / 1e6
            print(f"{p:>10}  exact   count all             {exact[0]:5.2f} s  {exact[1]:7.0f} MB")
            print(f"{p:>10}  bloom   build ({filter_mb:4.0f} MB file)  {build[0]:5.2f} s  {build[1]:7.0f} MB")
            print(f"{p:>10}  bloom   count candidates      {probe[0]:5.2f} s  {probe[1]:7.0f} MB")
            print(f"{p:>10}  bloom/exact: time {(build[0] + probe[0]) / exact[0]:.2f}x, "
                  f"peak RSS {max(build[1], probe[1]) / exact[1]:.2f}x; same {len(found[0]):,} hashes")


if __name__ == "__main__":
    main()
