"""Dedup at scale: a corpus of >= 1 GB with a known number of planted near-duplicate families,
built from real text, run through `queries/dedup.sql` under a DataFusion memory limit.

Documents are made of sentences drawn at random from the real corpora in ../shared/corpora
(Wikipedia, Reuters, web text, speeches, SPDX), so unrelated documents share few 5-grams. Each
family is a base document and --copies mutated copies: every word is independently swapped with
its neighbour, deleted, or followed by an inserted word, each with probability --rate / 3. The
check: every family's copies land in one cluster with their base (recall), no cluster mixes two
families or a filler document (precision), and peak RSS is printed next to the memory limit.

    python tests/scale/dedup_scale.py --tokq $CARGO_TARGET_DIR/release/tokq --gb 1.0 --memory-limit 2G
"""
import argparse
import gzip
import json
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict

import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SOURCES = [
    "wikipedia-en-2015/wiki_en_2015_sample.jsonl.gz",
    "reuters-21578/reuters21578.jsonl.gz",
    "nltk-webtext/webtext.jsonl",
    "nltk-speeches/speeches.jsonl",
    "spdx-licenses/spdx_licenses.jsonl",
]


def sentences(shared):
    out = set()
    for rel in SOURCES:
        path = os.path.join(shared, "corpora", rel)
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    for s in re.split(r"(?<=[.!?])\s+", json.loads(line)["text"]):
                        s = " ".join(s.split())
                        if len(s.split()) >= 6:
                            out.add(s)
    return sorted(out)


def mutate(words, rate, rng):
    out = list(words)
    i = 0
    while i < len(out):
        r = rng.random()
        if r < rate / 3 and i + 1 < len(out):
            out[i], out[i + 1] = out[i + 1], out[i]
        elif r < 2 * rate / 3:
            del out[i]
            continue
        elif r < rate:
            out.insert(i + 1, rng.choice(words))
            i += 1
        i += 1
    return out


def generate(path, pool, gb, families, copies, rate, sample, seed):
    rng = random.Random(seed)
    target = int(gb * 1e9)
    written = n = 0
    truth, texts = {}, {}
    with open(path, "w") as f:
        def emit(doc_id, text):
            nonlocal written, n
            if doc_id in truth and truth[doc_id] < sample:
                texts[doc_id] = text
            line = json.dumps({"id": doc_id, "text": text}) + "\n"
            f.write(line)
            written += len(line)
            n += 1

        def document():
            return " ".join(rng.choice(pool) for _ in range(rng.randint(20, 60)))

        fam = 0
        while written < target or fam < families:
            if fam < families and rng.random() < 0.5:
                base = document()
                words = base.split()
                truth[f"fam{fam}-base"] = fam
                emit(f"fam{fam}-base", base)
                for c in range(copies):
                    truth[f"fam{fam}-copy{c}"] = fam
                    emit(f"fam{fam}-copy{c}", " ".join(mutate(words, rate, rng)))
                fam += 1
            else:
                emit(f"filler{n}", document())
    return n, written, truth, texts


def expected_recall(texts, families, copies):
    """Exact Jaccard of sampled base/copy pairs (datatrove's shingles), and the probability that
    14 x 8 LSH makes each a candidate: 1 - (1 - J^8)^14."""
    from datatrove.pipeline.dedup.minhash import MinhashDedupSignature

    sig = MinhashDedupSignature(tempfile.mkdtemp())
    shingles = lambda t: set(sig.get_shingles(t).reshape(-1).tolist())
    js = []
    for f in range(families):
        if f"fam{f}-base" in texts:
            base = shingles(texts[f"fam{f}-base"])
            js += [len(base & (c := shingles(texts[f"fam{f}-copy{i}"]))) / len(base | c) for i in range(copies)]
    return sum(js) / len(js), min(js), sum(1 - (1 - j ** 8) ** 14 for j in js) / len(js)


def read_dir(path, columns):
    rows = []
    for f in sorted(os.listdir(path)):
        if f.endswith(".parquet"):
            rows.extend(pq.read_table(os.path.join(path, f), columns=columns).to_pylist())
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokq", required=True)
    ap.add_argument("--shared", default=os.path.join(ROOT, "..", "shared"))
    ap.add_argument("--gb", type=float, default=1.0)
    ap.add_argument("--families", type=int, default=5000)
    ap.add_argument("--copies", type=int, default=4)
    ap.add_argument("--rate", type=float, default=0.01, help="edit probability per word")
    ap.add_argument("--sample", type=int, default=300, help="base/copy pairs whose exact Jaccard is measured")
    ap.add_argument("--memory-limit", default="2G")
    ap.add_argument("--min-recall", type=float, default=0.99)
    ap.add_argument("--keep", help="directory to keep the corpus and outputs in")
    a = ap.parse_args()
    tmp = a.keep or tempfile.mkdtemp()
    os.makedirs(tmp, exist_ok=True)
    try:
        t0 = time.perf_counter()
        pool = sentences(a.shared)
        corpus = os.path.join(tmp, "corpus.jsonl")
        n, size, truth, texts = generate(corpus, pool, a.gb, a.families, a.copies, a.rate, a.sample, seed=1)
        print(f"corpus: {n} docs, {size / 1e9:.2f} GB, {a.families} families of 1 + {a.copies} "
              f"(edit rate {a.rate} per word), sentences from {len(pool)} real ones; built in {time.perf_counter() - t0:.0f}s", flush=True)
        out = {k: os.path.join(tmp, k) + "/" for k in ("work", "output", "rejects")}
        args = [a.tokq, "run", os.path.join(ROOT, "queries/dedup.sql"), "--quiet", "--memory-limit", a.memory_limit,
                "--set", f"input={corpus}"] + [x for k, v in out.items() for x in ("--set", f"{k}={v}")]
        t0 = time.perf_counter()
        subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
        secs = time.perf_counter() - t0
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print(f"tokq dedup.sql: {secs:.0f}s ({size / 1e6 / secs:.1f} MB/s on {os.cpu_count()} cores), "
              f"peak RSS {peak:.0f} MB with --memory-limit {a.memory_limit}")
        cols = ["doc_id", "representative_doc_id"]
        rows = read_dir(out["output"], cols) + read_dir(out["rejects"], cols + ["filter_reason"])
        assert len(rows) == n, f"{len(rows)} rows out of {n} input rows"
        rep = {r["doc_id"]: r["representative_doc_id"] or r["doc_id"] for r in rows}

        def root(d):
            while rep[d] != d:
                d = rep[d]
            return d

        cluster_of = {d: root(d) for d in rep}
        members = defaultdict(set)
        for d, c in cluster_of.items():
            members[c].add(d)
        whole = sum(len({cluster_of[f"fam{f}-base"]} | {cluster_of[f"fam{f}-copy{c}"] for c in range(a.copies)}) == 1
                    for f in range(a.families))
        pairs = sum(cluster_of[f"fam{f}-copy{c}"] == cluster_of[f"fam{f}-base"] for f in range(a.families) for c in range(a.copies))
        mixed = sum(len({truth.get(d, d) for d in m}) > 1 for m in members.values())
        removed = sum(1 for r in rows if r.get("filter_reason"))
        recall = pairs / (a.families * a.copies)
        mean_j, min_j, p_link = expected_recall(texts, a.families, a.copies)
        print(f"sampled {len(texts)} planted docs: base/copy Jaccard mean {mean_j:.3f}, min {min_j:.3f}; "
              f"LSH makes a base/copy pair a candidate with probability {p_link:.4f} on average")
        print(f"families found whole: {whole}/{a.families}; copies clustered with their base: {pairs}/{a.families * a.copies} "
              f"({100 * recall:.2f}%); clusters mixing families or fillers: {mixed}; removed {removed} "
              f"(planted copies: {a.families * a.copies})")
        return 0 if recall >= a.min_recall and mixed == 0 else 1
    finally:
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
