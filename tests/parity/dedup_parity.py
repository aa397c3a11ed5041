"""Dedup parity and recall: tokq's MinHash against datatrove 0.10.1 and against brute force.

Signatures alone are compared on the UDHR in ~380 languages. For each corpus (Reuters-21578
and the SPDX licenses):
1. Signatures: tokq's `minhash(text)` must equal datatrove's `MinhashDedupSignature` signature
   (shingles, permutations and minimums) on every document, and be NULL where datatrove writes none.
2. Ground truth: every document pair whose exact Jaccard similarity of datatrove's shingle sets is
   >= 0.8, found exhaustively (all-pairs with prefix filtering, which is exact for a threshold).
3. `queries/dedup.sql` runs; each document's cluster is followed through its representative.
   Recall (ground-truth pairs in one cluster) must be >= --min-recall. Precision is reported as
   the distribution of exact Jaccard between each removed document and its representative, and
   the removal count is compared with datatrove's (--expect-removed, measured with datatrove's
   four MinHash stages; rules.md section 5).

    python tests/parity/dedup_parity.py --tokq $CARGO_TARGET_DIR/release/tokq --shared ../shared
"""
import argparse
import math
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict

import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from filters_parity import documents  # noqa: E402

_SIG = None


def _signer():
    global _SIG
    if _SIG is None:
        from datatrove.pipeline.dedup.minhash import MinhashDedupSignature

        _SIG = MinhashDedupSignature(tempfile.mkdtemp())
    return _SIG


def reference(text):
    """datatrove's shingle set and flat signature (None when it writes no signature)."""
    s = _signer()
    shingles = s.get_shingles(text)
    if shingles.size == 0:
        return frozenset(), None
    sig = [h for bucket in s.get_signature(shingles) for h in bucket]
    return frozenset(shingles.reshape(-1).tolist()), sig


def read_dir(path):
    rows = []
    for f in sorted(os.listdir(path)):
        if f.endswith(".parquet"):
            rows.extend(pq.read_table(os.path.join(path, f)).to_pylist())
    return rows


def jaccard(a, b):
    return len(a & b) / len(a | b)


def similar_pairs(sets, t):
    """Every pair (i, j), i < j, with Jaccard >= t: prefix filtering over tokens in rarity order."""
    freq = Counter(x for s in sets for x in s)
    index = defaultdict(list)
    pairs = {}
    order = sorted(range(len(sets)), key=lambda i: len(sets[i]))
    for i in order:
        s = sets[i]
        if not s:
            continue
        tokens = sorted(s, key=lambda x: (freq[x], x))
        prefix = len(s) - math.ceil(t * len(s)) + 1
        seen = set()
        for x in tokens[:prefix]:
            for j in index[x]:
                if j not in seen:
                    seen.add(j)
                    if len(sets[j]) >= t * len(s):
                        sim = jaccard(s, sets[j])
                        if sim >= t:
                            pairs[(min(i, j), max(i, j))] = sim
            index[x].append(i)
    return pairs


def clusters(rows):
    """doc_id -> the doc_id at the end of its representative chain."""
    rep = {r["doc_id"]: (r.get("representative_doc_id") or r["doc_id"]) for r in rows}

    def root(d):
        seen = set()
        while rep[d] != d and d not in seen:
            seen.add(d)
            d = rep[d]
        return d

    return {d: root(d) for d in rep}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokq", required=True)
    ap.add_argument("--shared", default="../shared")
    ap.add_argument("--threshold", type=float, default=0.8)
    ap.add_argument("--min-recall", type=float, default=0.99)
    ap.add_argument("--jobs", type=int, default=os.cpu_count())
    a = ap.parse_args()
    corpora = {
        "reuters-21578": (os.path.join(a.shared, "corpora/reuters-21578/reuters21578.jsonl.gz"), 1046),
        "spdx-licenses": (os.path.join(a.shared, "corpora/spdx-licenses/spdx_licenses.jsonl"), 217),
    }
    failed = False
    # Signatures only, on text in ~380 languages: lowercasing, digits of every script, NFD.
    udhr = os.path.join(a.shared, "corpora/udhr-multilingual/udhr2.jsonl")
    with tempfile.TemporaryDirectory() as tmp:
        docs = list(documents(udhr))
        with multiprocessing.Pool(a.jobs) as pool:
            ref = pool.map(reference, [text for _, text in docs], chunksize=16)
        subprocess.run([a.tokq, "run", os.path.join(HERE, "minhash.sql"), "--quiet", "--set", f"input={udhr}", "--set", f"output={tmp}/sigs/"], check=True)
        mine = {r["_row"]: r["signature"] for r in read_dir(f"{tmp}/sigs")}
        same = sum(mine.get(line) == sig for (line, _), (_, sig) in zip(docs, ref))
        failed |= same != len(docs)
        print(f"{'ok' if same == len(docs) else 'FAIL'} {'udhr':<14} signatures identical to datatrove on {same}/{len(docs)} docs")
    for corpus, (path, datatrove_removed) in corpora.items():
        with tempfile.TemporaryDirectory() as tmp:
            docs = list(documents(path))
            ids = {}
            import gzip
            import json

            opener = gzip.open if path.endswith(".gz") else open
            with opener(path, "rt", encoding="utf-8") as f:
                for line, raw in enumerate(f):
                    if raw.strip():
                        ids[line] = json.loads(raw)["id"]
            t0 = time.perf_counter()
            with multiprocessing.Pool(a.jobs) as pool:
                ref = pool.map(reference, [text for _, text in docs], chunksize=64)
            ref_s = time.perf_counter() - t0

            # 1. Signatures, document by document.
            subprocess.run(
                [a.tokq, "run", os.path.join(HERE, "minhash.sql"), "--quiet", "--set", f"input={path}", "--set", f"output={tmp}/sigs/"],
                check=True,
            )
            mine = {r["_row"]: r["signature"] for r in read_dir(f"{tmp}/sigs")}
            same = sum(mine.get(line) == sig for (line, _), (_, sig) in zip(docs, ref))
            ok = same == len(docs)
            failed |= not ok
            print(f"{'ok' if ok else 'FAIL'} {corpus:<14} signatures identical to datatrove on {same}/{len(docs)} docs ({ref_s:.1f}s for datatrove)")

            # 2. Ground truth.
            sets = [s for s, _ in ref]
            truth = similar_pairs(sets, a.threshold)

            # 3. tokq's dedup recipe.
            t0 = time.perf_counter()
            subprocess.run(
                [a.tokq, "run", os.path.join(ROOT, "queries/dedup.sql"), "--quiet", "--set", f"input={path}",
                 "--set", f"work={tmp}/work/", "--set", f"output={tmp}/out/", "--set", f"rejects={tmp}/rejects/"],
                check=True,
            )
            tokq_s = time.perf_counter() - t0
            kept, rejected = read_dir(f"{tmp}/out"), read_dir(f"{tmp}/rejects")
            label = clusters(kept + rejected)
            by_line = {line: i for i, (line, _) in enumerate(docs)}
            index_of_id = {ids[line]: by_line[line] for line in by_line}
            found = sum(label[ids[docs[i][0]]] == label[ids[docs[j][0]]] for i, j in truth)
            recall = found / max(len(truth), 1)
            ok = recall >= a.min_recall and len(kept) + len(rejected) == len(docs)
            failed |= not ok
            reasons = Counter(r["filter_reason"] for r in rejected)
            print(f"{'ok' if ok else 'FAIL'} {corpus:<14} recall {found}/{len(truth)} pairs with Jaccard >= {a.threshold} "
                  f"in one cluster ({100 * recall:.2f}%); tokq {tokq_s:.1f}s")
            sims = [jaccard(sets[index_of_id[r["doc_id"]]], sets[index_of_id[r["representative_doc_id"]]])
                    for r in rejected if r["filter_reason"] == "minhash_duplicate"]
            sims.sort()
            if sims:
                bins = Counter(min(int(s * 10), 9) for s in sims)
                q = lambda p: sims[min(len(sims) - 1, int(p * len(sims)))]
                print(f"   precision: Jaccard of each minhash-removed doc with its representative: min {sims[0]:.3f}, "
                      f"p5 {q(0.05):.3f}, median {q(0.5):.3f}; share >= 0.8: {sum(s >= 0.8 for s in sims) / len(sims):.1%}; "
                      f"by tenth: {dict(sorted(bins.items()))}")
            no_sig = {ids[line] for (line, _), (_, sig) in zip(docs, ref) if sig is None}
            short_exact = sum(r["filter_reason"] == "exact_duplicate" and r["doc_id"] in no_sig for r in rejected)
            removed = len(rejected) - short_exact
            ok = removed == datatrove_removed
            failed |= not ok
            print(f"{'ok' if ok else 'FAIL'} {corpus:<14} removed {len(rejected)} ({dict(reasons)}); {removed} among docs with a signature, "
                  f"datatrove removes {datatrove_removed}; {short_exact} exact duplicates too short for a signature")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
