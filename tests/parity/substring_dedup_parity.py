"""Exact-substring dedup parity: queries/substring-dedup.sql against Lee et al.'s suffix array.

The reference does what Lee et al. (2022)'s deduplicate-text-datasets does with `--tokenize`,
`self-similar --length-threshold N` and `collect`, at token granularity: it tokenizes every
document with Hugging Face tokenizers (GPT-2's tokenizer.json), joins them into one sequence with
a unique separator before each document, builds the suffix array of that sequence (prefix
doubling), marks every suffix whose first N tokens equal its neighbour's in the suffix array, and
strikes the union of the marked ranges [p, p + N) from each document: a token's bytes go, and a
character that struck bytes only partly spell goes whole. With keep_first, each group of equal
N-token prefixes keeps its first occurrence. tokq runs the recipe on the same JSONL with the
same tokenizer file; every kept document must have byte-identical text, and a document the
reference empties must be a reject (min_doc_words=0, so nothing else is).

Corpora: Reuters-21578 (natural duplicates: re-sent stories, boilerplate), nltk-webtext, and
planted repeats: Wikipedia documents with runs of another document's text (30-400 characters,
cut anywhere, some inside a multi-byte character) copied in, whole copies, texts repeated
within themselves, emoji and CJK.

    python tests/parity/substring_dedup_parity.py --tokq $CARGO_TARGET_DIR/release/tokq --shared ../shared
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow.parquet as pq
from tokenizers import Tokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from sentence_dedup_parity import read_jsonl, webtext  # noqa: E402


def byte_decoder():
    """GPT-2's byte-level alphabet, character -> byte."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


def suffix_array(seq):
    """The suffix array of an int64 sequence, by prefix doubling."""
    n = len(seq)
    rank = np.unique(seq, return_inverse=True)[1].astype(np.int64)
    k = 1
    while True:
        second = np.full(n, -1, np.int64)
        second[: n - k] = rank[k:]
        sa = np.lexsort((second, rank))
        a, b = rank[sa], second[sa]
        new = np.empty(n, np.int64)
        new[0] = 0
        new[1:] = np.cumsum((a[1:] != a[:-1]) | (b[1:] != b[:-1]))
        rank = np.empty(n, np.int64)
        rank[sa] = new
        if new[-1] == n - 1:
            return sa
        k *= 2


def reference(docs, tokenizer, n, keep_first):
    """Lee et al.'s decisions: id -> text after striking, and its seconds."""
    t0 = time.perf_counter()
    spell = byte_decoder()
    vocab = {i: bytes(spell[c] for c in t) for t, i in tokenizer.get_vocab().items()}
    encodings = tokenizer.encode_batch([t for _, t in docs], add_special_tokens=False)
    ids = [e.ids for e in encodings]
    # One sequence: a separator no token equals before each document, so no repeat crosses one.
    parts, starts, at = [], [], 0
    for d, doc_ids in enumerate(ids):
        parts.append(np.array([1 << 20 | d] + doc_ids, np.int64))
        starts.append(at + 1)
        at += 1 + len(doc_ids)
    seq = np.concatenate(parts)
    sa = suffix_array(seq)
    # Neighbours in the suffix array that share their first n tokens (a suffix shorter than n
    # shares nothing: the padding is unique per position).
    padded = np.concatenate([seq, -1 - np.arange(n, dtype=np.int64)])
    windows = np.lib.stride_tricks.sliding_window_view(padded, n)[: len(seq)]
    same = np.zeros(len(seq), bool)  # same[i]: sa[i] and sa[i + 1] share n tokens
    for lo in range(0, len(seq) - 1, 1 << 18):
        hi = min(lo + (1 << 18), len(seq) - 1)
        same[lo:hi] = (windows[sa[lo:hi]] == windows[sa[lo + 1 : hi + 1]]).all(axis=1)
    # Groups of equal prefixes are runs of `same`; every member of a group of two or more is a
    # repeat's start, but its first occurrence with keep_first.
    struck_starts = []
    i = 0
    while i < len(seq) - 1:
        if not same[i]:
            i += 1
            continue
        j = i
        while j < len(seq) - 1 and same[j]:
            j += 1
        group = sa[i : j + 1]
        if keep_first:
            group = group[group != group.min()]
        struck_starts.append(group)
        i = j + 1
    positions = np.concatenate(struck_starts) if struck_starts else np.array([], np.int64)
    starts = np.array(starts)
    doc_of = np.searchsorted(starts, positions, side="right") - 1
    struck = [np.zeros(len(d) + 1, np.int64) for d in ids]
    for doc, pos in zip(doc_of, positions):
        t = pos - starts[doc]
        struck[doc][t] += 1
        struck[doc][min(t + n, len(ids[doc]))] -= 1
    lengths = {i: len(b) for i, b in vocab.items()}
    out = {doc_id: strike(text, doc_ids, lengths, np.flatnonzero(np.cumsum(marks[:-1]) > 0))
           for (doc_id, text), doc_ids, marks in zip(docs, ids, struck)}
    return out, time.perf_counter() - t0


def strike(text, ids, lengths, struck):
    """`text` without the bytes of the struck tokens (indices into `ids`); a character goes whole
    when any of its bytes goes. `lengths`: each id's length in bytes."""
    raw = text.encode()
    offsets = np.concatenate([[0], np.cumsum([lengths[i] for i in ids], dtype=np.int64)])
    assert offsets[-1] == len(raw), "the tokens do not spell the text"
    gone = np.zeros(len(raw), bool)
    for t in struck:
        gone[offsets[t] : offsets[t + 1]] = True
    keep, k = [], 0
    while k < len(raw):
        w = 1 if raw[k] < 0x80 else 2 if raw[k] < 0xE0 else 3 if raw[k] < 0xF0 else 4
        if not gone[k : k + w].any():
            keep.append(raw[k : k + w])
        k += w
    return b"".join(keep).decode()


def planted(wiki, seed=11):
    """Wikipedia documents with runs of other documents' text copied in, and edge cases."""
    rng = random.Random(seed)
    base = [t for _, t in wiki[:300]]
    docs = []
    for i, text in enumerate(base):
        kind = rng.randrange(5)
        if kind == 0:  # a run of another document, cut anywhere
            src = base[rng.randrange(len(base))]
            k = rng.randint(30, 400)
            at = rng.randrange(max(1, len(src) - k))
            cut = rng.randrange(len(text) + 1)
            text = text[:cut] + src[at : at + k] + text[cut:]
        elif kind == 1:  # a whole copy
            text = base[rng.randrange(len(base))]
        elif kind == 2:  # repeated within itself
            half = text[: len(text) // 3]
            text = half + " and again: " + half
        elif kind == 3:  # multi-byte characters on both sides of a repeat
            src = base[rng.randrange(len(base))][:600]
            text = "🙂 " + src + " 東京都 " + text[:500] + " ünïcødé " + src[100:] + " 😀😀"
        docs.append((f"planted-{i}", text))
    docs += [("empty", ""), ("one-emoji", "🙂"), ("dots", "." * 500)]
    return docs


def tokq(tokq_bin, docs, tokenizer_file, n, keep_first, tmp, bloom=None):
    path = os.path.join(tmp, "input.jsonl")
    with open(path, "w", encoding="utf-8") as f:
        for i, t in docs:
            f.write(json.dumps({"id": i, "text": t}) + "\n")
    extra = ["--set", "bloom=true", "--set", f"bloom_fpr={bloom}"] if bloom is not None else []
    t0 = time.perf_counter()
    subprocess.run(
        [tokq_bin, "run", os.path.join(ROOT, "queries", "substring-dedup.sql"), "--quiet", "--set", f"input={path}",
         "--set", f"output={tmp}/out/", "--set", f"rejects={tmp}/rejects/", "--set", f"work={tmp}/work/",
         "--set", f"tokenizer={tokenizer_file}", "--set", f"n_tokens={n}", "--set", f"keep_first={str(keep_first).lower()}",
         "--set", "min_doc_words=0", *extra],
        check=True, stdout=subprocess.DEVNULL,
    )
    seconds = time.perf_counter() - t0
    kept = {r["doc_id"]: r["text"] for r in pq.read_table(f"{tmp}/out").to_pylist()}
    rejected = {r["doc_id"]: r["filter_reason"] for r in pq.read_table(f"{tmp}/rejects").to_pylist()}
    return kept, rejected, seconds


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokq", required=True)
    ap.add_argument("--shared", default="../shared")
    ap.add_argument("--reuters-docs", type=int, default=8000)
    a = ap.parse_args()
    corpora = os.path.join(a.shared, "corpora")
    tokenizer_file = os.path.join(a.shared, "tokenizers", "gpt2", "tokenizer.json")
    tokenizer = Tokenizer.from_file(tokenizer_file)
    wiki = read_jsonl(os.path.join(corpora, "wikipedia-en-2015/wiki_en_2015_sample.jsonl.gz"), 300)
    sets = {
        "reuters": read_jsonl(os.path.join(corpora, "reuters-21578/reuters21578.jsonl.gz"), a.reuters_docs),
        "webtext": webtext(os.path.join(corpora, "nltk-webtext/webtext.jsonl")),
        "planted": planted(wiki),
    }
    runs = [("reuters", 50, False, None), ("webtext", 20, False, None), ("planted", 50, False, None),
            ("planted", 10, True, None), ("reuters", 50, True, None), ("planted", 20, False, 0.2)]
    failed = False
    for name, n, keep_first, bloom in runs:
        docs = sets[name]
        with tempfile.TemporaryDirectory() as tmp:
            ref, ref_s = reference(docs, tokenizer, n, keep_first)
            kept, rejected, tokq_s = tokq(a.tokq, docs, tokenizer_file, n, keep_first, tmp, bloom)
        emptied = {i for i, t in ref.items() if t == ""}
        same_rejects = set(rejected) == emptied and all(r == "substring_dedup:empty" for r in rejected.values())
        same_text = set(kept) == set(ref) - emptied and all(kept[i] == ref[i] for i in kept)
        ok = same_rejects and same_text and len(kept) + len(rejected) == len(docs)
        failed |= not ok
        changed = sum(ref[i] != t for i, t in docs)
        mode = f"n={n}{' keep_first' if keep_first else ''}{f' bloom {bloom}' if bloom else ''}"
        print(f"{'ok' if ok else 'FAIL'} {name:<8} {mode:<22} {changed} of {len(docs)} documents changed, {len(emptied)} emptied; "
              f"text identical: {same_text}, rejects identical: {same_rejects}; suffix array {ref_s:.1f}s, tokq {tokq_s:.1f}s")
        if not ok:
            for i in sorted(set(rejected) ^ emptied)[:5]:
                print(f"   rejected by {'tokq' if i in rejected else 'the reference'} only: {i}")
            for i in [i for i in kept if i in ref and kept[i] != ref[i]][:3]:
                print(f"   text differs: {i}\n     reference: {ref[i][:300]!r}\n     tokq:      {kept[i][:300]!r}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
