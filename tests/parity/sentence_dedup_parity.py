"""Sentence dedup parity: queries/sentence-dedup.sql against datatrove 0.10.1's SentenceDedup.

datatrove runs its three stages (SentenceDedupSignature -> SentenceFindDedups ->
SentenceDedupFilter, one task, so its order of documents is the input's), tokq runs the recipe on
the same JSONL, and the kept documents must be the same ones with byte-identical text. Corpora:
Wikipedia, Reuters-21578 (natural duplicates: repeated boilerplate and re-sent stories),
nltk-webtext (forum lines, ten to a document), and planted repeats: Wikipedia documents with
spans of other documents' sentences (and lines) copied into them, whole copies, texts that end in
whitespace, empty texts. Default SentDedupConfig, then n_sentences=2 with split_sentences=False,
and queries/paragraph-dedup.sql against n_sentences=1, split_sentences=False and no thresholds;
then both recipes with bloom=true (the Bloom-filter mode), which must give the same result.

    python tests/parity/sentence_dedup_parity.py --tokq $CARGO_TARGET_DIR/release/tokq --shared ../shared
"""
import argparse
import gzip
import json
import os
import random
import subprocess
import sys
import tempfile
import time

import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def read_jsonl(path, limit=None):
    opener = gzip.open if path.endswith(".gz") else open
    docs = []
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            if line.strip():
                d = json.loads(line)
                docs.append((d["id"], d["text"]))
                if limit and len(docs) >= limit:
                    break
    return docs


def webtext(path):
    """Forum and chat lines, ten consecutive lines of a subset to a document."""
    out, group, subset = [], [], None
    for doc_id, text in read_jsonl(path):
        s = doc_id.rsplit("-", 1)[0]
        if group and (s != subset or len(group) == 10):
            out.append((f"{subset}-{len(out)}", "\n".join(group)))
            group = []
        subset = s
        group.append(text)
    if group:
        out.append((f"{subset}-{len(out)}", "\n".join(group)))
    return out


def planted(wiki, seed=7):
    """Wikipedia documents with spans of other documents copied in, and edge cases."""
    from datatrove.utils.text import split_into_sentences

    rng = random.Random(seed)
    base = [t for _, t in wiki[:400]]
    sents = [split_into_sentences(t) for t in base]
    docs = []
    for i, text in enumerate(base):
        kind = rng.randrange(6)
        if kind == 0:  # a span of 3-5 sentences of another document, at a sentence boundary
            src = sents[rng.randrange(len(base))]
            k = rng.randint(3, 5)
            at = rng.randrange(max(1, len(src) - k))
            mine = sents[i]
            cut = rng.randrange(len(mine) + 1)
            text = "".join(mine[:cut]) + " " + "".join(src[at:at + k]).strip() + " " + "".join(mine[cut:])
        elif kind == 1:  # lines of another document
            src = base[rng.randrange(len(base))].splitlines()
            text = "\n".join(src[: rng.randint(2, 6)]) + "\n" + text
        elif kind == 2:  # a whole copy, with trailing whitespace
            text = base[rng.randrange(len(base))] + rng.choice(["", "\n", "  ", " \n\n"])
        elif kind == 3:  # the start of another document, short: drops to too few words
            text = "".join(sents[rng.randrange(len(base))][:4]) + " Short tail."
        docs.append((f"planted-{i}", text))
    docs += [("empty", ""), ("spaces", "   \n "), ("punct", "!!! ... ??? !!! ... ??? !!! ... ???")]
    return docs


def reference(docs, n, split, **thresholds):
    """datatrove's kept documents, id -> text, and its seconds."""
    from datatrove.data import Document
    from datatrove.pipeline.dedup.sentence_dedup import (
        SentDedupConfig,
        SentenceDedupFilter,
        SentenceDedupSignature,
        SentenceFindDedups,
    )

    config = SentDedupConfig(n_sentences=n, split_sentences=split, **thresholds)
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        SentenceDedupSignature(f"{tmp}/sigs", config=config).run((Document(text=t, id=i) for i, t in docs), 0, 1)
        SentenceFindDedups(f"{tmp}/sigs", f"{tmp}/dups", config=config).run(None, 0, 1)
        kept = {d.id: d.text for d in SentenceDedupFilter(f"{tmp}/dups", config=config).run((Document(text=t, id=i) for i, t in docs), 0, 1)}
        return kept, time.perf_counter() - t0


def tokq(tokq_bin, docs, n, split, tmp, recipe="sentence-dedup.sql", bloom=None):
    path = os.path.join(tmp, "input.jsonl")
    with open(path, "w", encoding="utf-8") as f:
        for i, t in docs:
            f.write(json.dumps({"id": i, "text": t}) + "\n")
    t0 = time.perf_counter()
    shape = [] if recipe == "paragraph-dedup.sql" else ["--set", f"n_sentences={n}", "--set", f"unit={'sentence' if split else 'line'}"]
    if bloom is not None:
        shape += ["--set", "bloom=true", "--set", f"bloom_fpr={bloom}"]
    subprocess.run(
        [tokq_bin, "run", os.path.join(ROOT, "queries", recipe), "--quiet", "--set", f"input={path}",
         "--set", f"output={tmp}/out/", "--set", f"rejects={tmp}/rejects/", "--set", f"work={tmp}/work/", *shape],
        check=True, stdout=subprocess.DEVNULL,
    )
    seconds = time.perf_counter() - t0
    kept = {r["doc_id"]: r["text"] for r in pq.read_table(f"{tmp}/out").to_pylist()}
    rejected = pq.read_table(f"{tmp}/rejects").num_rows
    return kept, rejected, seconds


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokq", required=True)
    ap.add_argument("--shared", default="../shared")
    ap.add_argument("--wikipedia-docs", type=int, default=1000)
    ap.add_argument("--reuters-docs", type=int, default=6000)
    a = ap.parse_args()
    corpora = os.path.join(a.shared, "corpora")
    wiki = read_jsonl(os.path.join(corpora, "wikipedia-en-2015/wiki_en_2015_sample.jsonl.gz"), a.wikipedia_docs)
    sets = {
        "wikipedia": wiki,
        "reuters": read_jsonl(os.path.join(corpora, "reuters-21578/reuters21578.jsonl.gz"), a.reuters_docs),
        "webtext": webtext(os.path.join(corpora, "nltk-webtext/webtext.jsonl")),
        "planted": planted(wiki),
    }
    # queries/paragraph-dedup.sql is SentenceDedup over single lines without the length thresholds.
    paragraphs = dict(recipe="paragraph-dedup.sql", min_doc_words=0, min_num_sentences=0)
    runs = [(name, 3, True, {}) for name in sets] + [("planted", 2, False, {}), ("webtext", 2, False, {})]
    runs += [("planted", 1, False, paragraphs), ("reuters", 1, False, paragraphs)]
    # The Bloom-filter mode must not change a decision, even at a rate that lets many through.
    runs += [("reuters", 3, True, dict(bloom=0.2)), ("planted", 1, False, dict(paragraphs, bloom=0.01)),
             ("reuters", 1, False, dict(paragraphs, bloom=0.2))]
    failed = False
    for name, n, split, opts in runs:
        docs = sets[name]
        opts = dict(opts)
        recipe = opts.pop("recipe", "sentence-dedup.sql")
        bloom = opts.pop("bloom", None)
        with tempfile.TemporaryDirectory() as tmp:
            ref, ref_s = reference(docs, n, split, **opts)
            mine, rejected, tokq_s = tokq(a.tokq, docs, n, split, tmp, recipe, bloom)
        changed = sum(ref[i] != t for i, t in docs if i in ref)
        same_ids = set(ref) == set(mine)
        same_text = same_ids and all(ref[i] == mine[i] for i in ref)
        ok = same_ids and same_text and len(mine) + rejected == len(docs)
        failed |= not ok
        mode = "paragraphs" if recipe == "paragraph-dedup.sql" else f"n={n} {'sentences' if split else 'lines'}"
        mode += f" bloom {bloom}" if bloom is not None else ""
        print(f"{'ok' if ok else 'FAIL'} {name:<10} {mode:<24} kept {len(mine)}/{len(docs)} (datatrove {len(ref)}), "
              f"{changed} changed, text identical: {same_text}; datatrove {ref_s:.1f}s, tokq {tokq_s:.1f}s")
        if not ok:
            for i in sorted(set(ref) ^ set(mine))[:5]:
                print(f"   kept by {'datatrove' if i in ref else 'tokq'} only: {i}")
            for i in [i for i in ref if i in mine and ref[i] != mine[i]][:3]:
                print(f"   text differs: {i}\n     datatrove: {ref[i][:300]!r}\n     tokq:      {mine[i][:300]!r}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
