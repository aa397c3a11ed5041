"""FineWeb cascade throughput, tokq against datatrove, on one core and the same documents.

datatrove runs GopherRepetition -> GopherQuality -> C4 (filter_no_terminal_punct=False) ->
FineWebQuality in this process; tokq runs `quality_chain(text, 'fineweb')` with one partition
(`--partitions 1`, pinned to one core with taskset when available) on a JSONL copy of the same
documents. Prints MB/s and docs/s for each, the ratio, and whether the decisions agree.

    python tests/bench/fineweb_cascade.py --tokq $CARGO_TARGET_DIR/release/tokq \
        --corpus ../shared/corpora/wikipedia-en-2015/wiki_en_2015_sample.jsonl.gz --docs 1000
"""
import argparse
import gzip
import json
import os
import shutil
import subprocess
import tempfile
import time

import pyarrow.parquet as pq

SQL = """COPY (SELECT _row, quality_chain(text, 'fineweb')['filter_reason'] AS reason FROM read_jsonl('${input}'))
TO '${output}' STORED AS PARQUET;"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokq", required=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--docs", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3, help="tokq runs; the fastest counts")
    a = ap.parse_args()
    opener = gzip.open if a.corpus.endswith(".gz") else open
    texts = []
    with opener(a.corpus, "rt", encoding="utf-8") as f:
        for line in f:
            if line.strip():
                texts.append(json.loads(line)["text"])
                if len(texts) >= a.docs:
                    break
    mb = sum(len(t.encode()) for t in texts) / 1e6

    from datatrove.data import Document
    from datatrove.pipeline.filters import C4QualityFilter, FineWebQualityFilter, GopherQualityFilter, GopherRepetitionFilter

    cascade = [
        ("gopher_repetition", GopherRepetitionFilter()),
        ("gopher_quality", GopherQualityFilter()),
        ("c4_quality", C4QualityFilter(filter_no_terminal_punct=False)),
        ("fineweb_quality", FineWebQualityFilter()),
    ]
    cascade[0][1].filter(Document(text="warm up spaCy", id="0"))
    reference = []
    t0 = time.perf_counter()
    for i, text in enumerate(texts):
        doc = Document(text=text, id=str(i))
        reason = None
        for name, f in cascade:
            r = f.filter(doc)
            if r is not True:
                reason = f"{name}:{r[1] if isinstance(r, tuple) else 'dropped'}"
                break
        reference.append(reason)
    dt_s = time.perf_counter() - t0

    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "docs.jsonl")
        with open(data, "w", encoding="utf-8") as f:
            for t in texts:
                f.write(json.dumps({"text": t}) + "\n")
        recipe = os.path.join(tmp, "cascade.sql")
        with open(recipe, "w") as f:
            f.write(SQL)
        pin = ["taskset", "-c", "0"] if shutil.which("taskset") else []
        best = None
        for _ in range(a.repeat):
            t0 = time.perf_counter()
            subprocess.run(pin + [a.tokq, "run", recipe, "--quiet", "--partitions", "1", "--set", f"input={data}", "--set", f"output={tmp}/out/"], check=True)
            best = min(best or 1e9, time.perf_counter() - t0)
        rows = {}
        for name in os.listdir(os.path.join(tmp, "out")):
            if name.endswith(".parquet"):
                for r in pq.read_table(os.path.join(tmp, "out", name)).to_pylist():
                    rows[r["_row"]] = r["reason"]
    same = sum(rows.get(i) == r for i, r in enumerate(reference))
    n = len(texts)
    print(f"{n} documents, {mb:.1f} MB from {os.path.basename(a.corpus)}; decisions identical on {same}/{n}")
    print(f"datatrove: {dt_s:8.2f} s  {mb / dt_s:8.3f} MB/s  {n / dt_s:9.1f} docs/s  (one process)")
    print(f"tokq:      {best:8.2f} s  {mb / best:8.3f} MB/s  {n / best:9.1f} docs/s  (one partition{', one core' if pin else ''}; whole run incl. start-up and JSONL read)")
    print(f"ratio: tokq is {dt_s / best:.0f}x datatrove per core")


if __name__ == "__main__":
    main()
