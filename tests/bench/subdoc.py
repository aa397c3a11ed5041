"""Sentence dedup and decontamination: tokq's recipes against datatrove 0.10.1's stages.

One core: datatrove's SentenceDedupSignature -> SentenceFindDedups -> SentenceDedupFilter, and
its n-gram decontamination (index from NGramsDecontIndexer's hashing, NGramsDecontFilter per
document), in this process, against `tokq run queries/sentence-dedup.sql` and
`queries/decontaminate.sql` with `--partitions 1`, pinned to one core with taskset when it is
there, on the same Wikipedia documents. Then tokq alone on a larger input at 1 and 2 partitions.
MB/s are of the documents' text; ratios are from this run.

    python tests/bench/subdoc.py --tokq $CARGO_TARGET_DIR/release/tokq --shared ../shared
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests/parity"))
from decont_parity import eval_items, reference as decont_reference  # noqa: E402
from sentence_dedup_parity import read_jsonl, reference as sd_reference  # noqa: E402


def write_jsonl(path, docs):
    with open(path, "w", encoding="utf-8") as f:
        for i, t in docs:
            f.write(json.dumps({"id": i, "text": t}) + "\n")


def tokq_run(tokq, recipe, sets, partitions, pin=True):
    cmd = (["taskset", "-c", "0"] if pin and partitions == 1 and shutil.which("taskset") else []) + [
        tokq, "run", os.path.join(ROOT, "queries", recipe), "--quiet", "--partitions", str(partitions)]
    for k, v in sets.items():
        cmd += ["--set", f"{k}={v}"]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokq", required=True)
    ap.add_argument("--shared", default="../shared")
    ap.add_argument("--ref-docs", type=int, default=600, help="Wikipedia documents datatrove and tokq both run")
    ap.add_argument("--copies", type=int, default=4, help="the scaling input: the whole sample this many times, each copy edited")
    a = ap.parse_args()
    wiki = read_jsonl(os.path.join(a.shared, "corpora/wikipedia-en-2015/wiki_en_2015_sample.jsonl.gz"))
    docs = wiki[:a.ref_docs]
    mb = sum(len(t.encode()) for _, t in docs) / 1e6
    items = eval_items(docs, wiki[a.ref_docs:a.ref_docs + 40], random.Random(11))
    print(f"{len(docs)} Wikipedia documents, {mb:.1f} MB of text; {len(items)} eval items")
    with tempfile.TemporaryDirectory() as tmp:
        write_jsonl(f"{tmp}/docs.jsonl", docs)
        with open(f"{tmp}/eval.jsonl", "w") as f:
            for task, query, text in items:
                f.write(json.dumps({"task": task, "query": query, "text": text}) + "\n")

        def out(name):
            return {"output": f"{tmp}/{name}/out/", "rejects": f"{tmp}/{name}/rej/", "work": f"{tmp}/{name}/work/"}

        t0 = time.perf_counter()
        sd_reference(docs, 3, True)
        dt_sd = time.perf_counter() - t0
        t0 = time.perf_counter()
        decont_reference(items, docs)
        dt_dc = time.perf_counter() - t0
        tk_sd = tokq_run(a.tokq, "sentence-dedup.sql", {"input": f"{tmp}/docs.jsonl", **out("sd1")}, 1)
        tk_dc = tokq_run(a.tokq, "decontaminate.sql", {"input": f"{tmp}/docs.jsonl", "eval": f"{tmp}/eval.jsonl", **out("dc1")}, 1)
        print("one core            datatrove         tokq          ratio")
        print(f"sentence dedup   {dt_sd:6.1f}s {mb / dt_sd:5.2f} MB/s  {tk_sd:5.2f}s {mb / tk_sd:5.1f} MB/s  {dt_sd / tk_sd:5.1f}x")
        print(f"decontamination  {dt_dc:6.1f}s {mb / dt_dc:5.2f} MB/s  {tk_dc:5.2f}s {mb / tk_dc:5.1f} MB/s  {dt_dc / tk_dc:5.1f}x")

        # Scaling: the whole sample, copies with one word changed per paragraph so that the
        # spans differ, in as many files as copies.
        rng = random.Random(3)
        total = 0
        os.makedirs(f"{tmp}/big")
        for c in range(a.copies):
            edited = []
            for i, t in wiki:
                paras = [p + f" {rng.randrange(10**6)}" if p else p for p in t.split("\n")]
                edited.append((f"{c}-{i}", "\n".join(paras)))
            write_jsonl(f"{tmp}/big/part-{c}.jsonl", edited)
            total += sum(len(t.encode()) for _, t in edited)
        total /= 1e6
        print(f"\nscaling input: {a.copies} files, {total:.0f} MB")
        # What this machine gives two busy cores: one 1-partition run on half the files alone,
        # then two such runs on the two halves at once. Their ratio bounds any 2-partition speed-up.
        half = max(1, a.copies // 2)
        halves = [f"{tmp}/big/part-[0-{half - 1}].jsonl", f"{tmp}/big/part-[{half}-{a.copies - 1}].jsonl"]

        def sets(i):
            return {"input": halves[i], **out(f"ceiling-{i}")}

        alone = tokq_run(a.tokq, "sentence-dedup.sql", sets(0), 1, pin=False)
        t0 = time.perf_counter()
        procs = [subprocess.Popen([a.tokq, "run", os.path.join(ROOT, "queries/sentence-dedup.sql"), "--quiet", "--partitions", "1",
                                   *[x for k, v in sets(i).items() for x in ("--set", f"{k}={v}")]], stdout=subprocess.DEVNULL) for i in (0, 1)]
        assert all(p.wait() == 0 for p in procs)
        both = time.perf_counter() - t0
        print(f"this machine's ceiling: two 1-partition runs at once {both:.1f}s vs one alone {alone:.1f}s: at most {2 * alone / both:.2f}x")
        for recipe, extra in [("sentence-dedup.sql", {}), ("decontaminate.sql", {"eval": f"{tmp}/eval.jsonl"})]:
            times = {}
            for p in (1, 2):
                times[p] = tokq_run(a.tokq, recipe, {"input": f"{tmp}/big/*.jsonl", **extra, **out(f"{recipe}-{p}")}, p, pin=False)
            print(f"{recipe:<20} 1 partition {times[1]:5.1f}s ({total / times[1]:5.1f} MB/s), "
                  f"2 partitions {times[2]:5.1f}s ({total / times[2]:5.1f} MB/s): {times[1] / times[2]:.2f}x")


if __name__ == "__main__":
    main()
