"""Decontamination parity: queries/decontaminate.sql against datatrove 0.10.1's n-gram
decontamination (NGramsDecontIndexer.compute_hashes for the index, NGramsDecontFilter.filter for
each document, default NGramsDecontConfig; datatrove's indexer needs lighteval only to download
tasks, so its hashing is called directly on the items).

Training documents: Wikipedia and Reuters-21578. Evaluation items, cut from shared texts: gold
answers of 12-40 words taken from training documents (some with a query taken from the words
before them, so overlap n-grams match across the cut), answers from Wikipedia documents that are
not in the training set, short answers whose only n-grams cross from the query, and tasks that
share items. The same documents must be removed, each with datatrove's task and n-gram.

    python tests/parity/decont_parity.py --tokq $CARGO_TARGET_DIR/release/tokq --shared ../shared
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import types

import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from sentence_dedup_parity import read_jsonl  # noqa: E402


def eval_items(train, held_out, rng):
    """(task, query, text) items cut from the documents."""
    items = []

    def cut(text, k):
        words = text.split()
        if len(words) < k + 10:
            return None, None
        at = rng.randrange(5, len(words) - k)
        return " ".join(words[max(0, at - 15):at]), " ".join(words[at:at + k])

    for i, (_, text) in enumerate(rng.sample(train, 60)):
        query, answer = cut(text, rng.randint(12, 40))
        if answer:
            items.append((f"wiki_qa_{i % 3}", query if i % 2 else None, answer))
    for _, text in rng.sample(train, 20):  # short answers: only the n-grams across the query match
        query, answer = cut(text, rng.randint(1, 6))
        if answer:
            items.append(("short_answers", query, answer))
    for _, text in held_out[:40]:  # not in the training set
        query, answer = cut(text, 20)
        if answer:
            items.append(("held_out", query, answer))
    items += [("zz_shared", q, a) for _, q, a in items[:10]]  # a task that repeats others' items
    return items


def reference(items, docs, n=12):
    """datatrove's decision per document id: None (kept) or (task, n-gram)."""
    from datatrove.data import Document
    from datatrove.pipeline.decont.n_grams import NGramsDecontConfig, NGramsDecontFilter, NGramsDecontIndexer
    from datatrove.utils.hashing import create_hash_func
    from datatrove.utils.word_tokenizers import load_word_tokenizer

    config = NGramsDecontConfig(n_grams=n)
    step = types.SimpleNamespace(config=config, tokenizer=load_word_tokenizer("en"), hash_func=create_hash_func(config.hash_config),
                                 stat_update=lambda *a, **k: None)
    per_task = {}
    for task, query, text in items:
        per_task.setdefault(task, set()).update(NGramsDecontIndexer.compute_hashes(step, text, query))
    # load_index_hashes: files in name order, a later file's task wins.
    step._index_hashes = {h: task for task in sorted(per_task) for h in per_task[task]}
    out = {}
    for doc_id, text in docs:
        doc = Document(text=text, id=doc_id)
        kept = NGramsDecontFilter.filter(step, doc)
        out[doc_id] = None if kept is True else (doc.metadata["contaminated_task"], doc.metadata["contaminated_ngram"])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokq", required=True)
    ap.add_argument("--shared", default="../shared")
    ap.add_argument("--wikipedia-docs", type=int, default=800)
    ap.add_argument("--reuters-docs", type=int, default=3000)
    a = ap.parse_args()
    corpora = os.path.join(a.shared, "corpora")
    wiki = read_jsonl(os.path.join(corpora, "wikipedia-en-2015/wiki_en_2015_sample.jsonl.gz"), a.wikipedia_docs + 40)
    train = wiki[:a.wikipedia_docs] + read_jsonl(os.path.join(corpora, "reuters-21578/reuters21578.jsonl.gz"), a.reuters_docs)
    rng = random.Random(11)
    items = eval_items(train, wiki[a.wikipedia_docs:], rng)
    t0 = time.perf_counter()
    ref = reference(items, train)
    ref_s = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        with open(f"{tmp}/train.jsonl", "w") as f:
            for doc_id, text in train:
                f.write(json.dumps({"id": doc_id, "text": text}) + "\n")
        with open(f"{tmp}/eval.jsonl", "w") as f:
            for i, (task, query, text) in enumerate(items):
                f.write(json.dumps({"id": f"item-{i}", "task": task, "query": query, "text": text}) + "\n")
        t0 = time.perf_counter()
        subprocess.run(
            [a.tokq, "run", os.path.join(ROOT, "queries/decontaminate.sql"), "--quiet", "--set", f"input={tmp}/train.jsonl",
             "--set", f"eval={tmp}/eval.jsonl", "--set", f"output={tmp}/out/", "--set", f"rejects={tmp}/rejects/",
             "--set", f"work={tmp}/work/"],
            check=True, stdout=subprocess.DEVNULL,
        )
        tokq_s = time.perf_counter() - t0
        kept = {r["doc_id"] for r in pq.read_table(f"{tmp}/out").to_pylist()}
        rejected = {r["doc_id"]: (r["filter_reason"].removeprefix("contaminated:"), r["contaminated_ngram"])
                    for r in pq.read_table(f"{tmp}/rejects").to_pylist()}
    ref_removed = {d: v for d, v in ref.items() if v is not None}
    same_docs = set(rejected) == set(ref_removed) and kept == {d for d, v in ref.items() if v is None}
    same_reasons = all(rejected.get(d) == v for d, v in ref_removed.items())
    ok = same_docs and same_reasons and len(ref_removed) > 0
    print(f"{'ok' if ok else 'FAIL'} decontamination: {len(items)} eval items in {len(set(t for t, _, _ in items))} tasks, "
          f"{len(train)} documents: removed {len(rejected)} (datatrove {len(ref_removed)}), same documents: {same_docs}, "
          f"same task and n-gram: {same_reasons}; datatrove {ref_s:.1f}s, tokq {tokq_s:.1f}s")
    if not ok:
        for d in sorted(set(rejected) ^ set(ref_removed))[:5]:
            print(f"   removed by {'tokq' if d in rejected else 'datatrove'} only: {d} {rejected.get(d) or ref_removed.get(d)}")
        for d in [d for d, v in ref_removed.items() if d in rejected and rejected[d] != v][:5]:
            print(f"   differs: {d}: datatrove {ref_removed[d]}, tokq {rejected[d]}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
