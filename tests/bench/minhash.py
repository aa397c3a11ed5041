"""MinHash dedup speed per core: tokq against datatrove's four MinHash stages and datasketch,
on the same corpus, in one script run.

- Signatures: datatrove's `MinhashDedupSignature` (stage 1) and datasketch's `MinHash`
  (112 permutations over the same shingles as bytes) against tokq's `minhash()` in a recipe that
  computes every signature and its bands and writes them (`--partitions 1`, pinned to one core
  with taskset when it is there; the fastest of `--repeat` runs).
- End to end: datatrove's stages 1-4 (signatures, buckets, clustering, filter; one task each)
  against `queries/dedup.sql` with `--partitions 1` (exact dedup included, reading JSONL and
  writing Parquet). Removal counts are printed for both.
All rates are MB of input text per second per core.

    python tests/bench/minhash.py --tokq $CARGO_TARGET_DIR/release/tokq \
        --corpus ../shared/corpora/reuters-21578/reuters21578.jsonl.gz
"""
import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

SIGNATURES_SQL = """
COPY (
  SELECT doc_id, _source, _row, minhash_bands(minhash(text)) AS bands
  FROM (SELECT id AS doc_id, text, _source, _row FROM read_jsonl('${input}'))
) TO '${output}' STORED AS PARQUET;
"""


def load(path, limit):
    opener = gzip.open if path.endswith(".gz") else open
    docs = []
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            if line.strip():
                docs.append(json.loads(line))
                if limit and len(docs) >= limit:
                    break
    return docs


def timed(f):
    t0 = time.perf_counter()
    out = f()
    return time.perf_counter() - t0, out


def tokq(binary, recipe, sets):
    pin = ["taskset", "-c", "0"] if shutil.which("taskset") else []
    args = pin + [binary, "run", recipe, "--quiet", "--partitions", "1"]
    for k, v in sets.items():
        args += ["--set", f"{k}={v}"]
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokq", required=True)
    ap.add_argument("--corpus", default="../shared/corpora/reuters-21578/reuters21578.jsonl.gz")
    ap.add_argument("--docs", type=int, default=0, help="first N documents (0: all)")
    ap.add_argument("--skip-datatrove-e2e", action="store_true")
    ap.add_argument("--repeat", type=int, default=3, help="tokq runs of each recipe; the fastest counts")
    a = ap.parse_args()
    docs = load(a.corpus, a.docs)
    mb = sum(len(d["text"].encode()) for d in docs) / 1e6
    print(f"corpus {a.corpus}: {len(docs)} docs, {mb:.1f} MB of text; one core each")
    tmp = tempfile.mkdtemp()
    try:
        corpus = os.path.join(tmp, "corpus.jsonl")
        with open(corpus, "w") as f:
            for d in docs:
                f.write(json.dumps({"id": d["id"], "text": d["text"]}) + "\n")
        rows = []

        from datatrove.pipeline.dedup.minhash import MinhashDedupSignature

        sig = MinhashDedupSignature(os.path.join(tmp, "dt-sigs-mem"))

        def datatrove_signatures_once():
            n = 0
            for d in docs:
                s = sig.get_shingles(d["text"])
                if s.size:
                    sig.get_signature(s)
                    n += 1
            return n

        t_dt, _ = timed(datatrove_signatures_once)
        rows.append(("datatrove MinhashDedupSignature (shingles + signature)", t_dt))

        from datasketch import MinHash

        from datatrove.utils.text import simplify_text

        words = [sig.word_tokenizer.word_tokenize(simplify_text(d["text"])) for d in docs]
        shingled = [[" ".join(w[i:i + 5]).encode() for i in range(len(w) - 4)] for w in words]

        def datasketch_signatures():
            for sh in shingled:
                m = MinHash(num_perm=112, seed=1)
                m.update_batch(sh)

        t_ds, _ = timed(datasketch_signatures)
        rows.append(("datasketch MinHash(112).update_batch (shingles given)", t_ds))

        recipe = os.path.join(tmp, "signatures.sql")
        with open(recipe, "w") as f:
            f.write(SIGNATURES_SQL)
        t_tq = min(timed(lambda: tokq(a.tokq, recipe, {"input": corpus, "output": os.path.join(tmp, f"tq-sigs-{k}/")}))[0]
                   for k in range(a.repeat))
        rows.append(("tokq minhash + minhash_bands, JSONL in, Parquet out", t_tq))

        print("\nsignatures")
        for name, t in rows:
            print(f"  {name:<58} {mb / t:8.2f} MB/s  {t:7.2f} s  tokq {t / t_tq:6.1f}x faster" if "tokq" not in name else f"  {name:<58} {mb / t:8.2f} MB/s  {t:7.2f} s")

        print("\nend to end (dedup decided and applied)")
        def dedup_once(k):
            for d in ("tq-work", "tq-out", "tq-rejects"):
                shutil.rmtree(os.path.join(tmp, d), ignore_errors=True)
            return timed(lambda: tokq(a.tokq, os.path.join(ROOT, "queries/dedup.sql"), {
                "input": corpus, "work": os.path.join(tmp, "tq-work/"), "output": os.path.join(tmp, "tq-out/"),
                "rejects": os.path.join(tmp, "tq-rejects/")}))[0]

        t_e2e = min(dedup_once(k) for k in range(a.repeat))
        import pyarrow.parquet as pq

        removed = sum(pq.read_table(os.path.join(tmp, "tq-rejects", f)).num_rows
                      for f in os.listdir(os.path.join(tmp, "tq-rejects")) if f.endswith(".parquet"))
        print(f"  {'tokq queries/dedup.sql (exact + MinHash)':<58} {mb / t_e2e:8.2f} MB/s  {t_e2e:7.2f} s  removed {removed}")
        if not a.skip_datatrove_e2e:
            from datatrove.executor import LocalPipelineExecutor
            from datatrove.pipeline.dedup.minhash import (MinhashDedupBuckets, MinhashDedupCluster,
                                                          MinhashDedupFilter)
            from datatrove.pipeline.readers import JsonlReader
            from datatrove.pipeline.writers import JsonlWriter

            def d(name):
                return os.path.join(tmp, "dt", name)

            def reader():
                return JsonlReader(tmp, glob_pattern="corpus.jsonl")

            stages = [
                ("1 signatures", [reader(), MinhashDedupSignature(d("sigs"))]),
                ("2 buckets", [MinhashDedupBuckets(d("sigs"), d("buckets"))]),
                ("3 cluster", [MinhashDedupCluster(d("buckets"), d("remove"))]),
                ("4 filter", [reader(), MinhashDedupFilter(d("remove")), JsonlWriter(d("out"))]),
            ]
            total = 0
            for name, steps in stages:
                tasks = 14 if name.startswith("2") else 1
                t, _ = timed(lambda: LocalPipelineExecutor(steps, tasks=tasks, workers=1, logging_dir=d(f"logs-{name[0]}")).run())
                total += t
                print(f"    datatrove stage {name:<41} {mb / t:8.2f} MB/s  {t:7.2f} s")
            kept = 0
            for f in os.listdir(d("out")):
                with gzip.open(os.path.join(d("out"), f), "rt") as fh:
                    kept += sum(1 for _ in fh)
            print(f"  {'datatrove stages 1-4':<58} {mb / total:8.2f} MB/s  {total:7.2f} s  removed {len(docs) - kept}  "
                  f"tokq {total / t_e2e:.1f}x faster")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
