"""Word-split parity: tokq's `split_words` against datatrove's spaCy English word tokenizer, the
splitter behind the Gopher and FineWeb rules.

tokq writes every document's words with lineage; each row is looked up by (`_source`, `_row`) and
split again by `datatrove.utils.word_tokenizers.load_word_tokenizer("en")`. Prints agreement per
corpus, the first differences, and exits non-zero below --min-agreement (default: every document).

    python tests/parity/words_parity.py --tokq $CARGO_TARGET_DIR/release/tokq --shared ../shared
"""
import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time

import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))


def lines(path, limit=None):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        n = 0
        for i, line in enumerate(f):
            if line.strip():
                yield i, json.loads(line)["text"]
                n += 1
                if limit is not None and n >= limit:
                    return


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i, a[max(0, i - 3) : i + 4], b[max(0, i - 3) : i + 4]
    return min(len(a), len(b)), a[-3:], b[-3:]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokq", required=True)
    ap.add_argument("--shared", default="../shared")
    ap.add_argument("--min-agreement", type=float, default=1.0)
    ap.add_argument("--show", type=int, default=5, help="differences to print per corpus")
    ap.add_argument("--wikipedia-docs", type=int, default=None, help="only the first N Wikipedia documents")
    a = ap.parse_args()
    from datatrove.utils.word_tokenizers import load_word_tokenizer

    reference = load_word_tokenizer("en")
    s = a.shared
    corpora = {
        "reuters-21578": (os.path.join(s, "corpora/reuters-21578/reuters21578.jsonl.gz"), None),
        "nltk-webtext": (os.path.join(s, "corpora/nltk-webtext/webtext.jsonl"), None),
        "wikipedia-en-2015": (os.path.join(s, "corpora/wikipedia-en-2015/wiki_en_2015_sample.jsonl.gz"), a.wikipedia_docs),
        "spdx-licenses": (os.path.join(s, "corpora/spdx-licenses/spdx_licenses.jsonl"), None),
    }
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        for name, (path, limit) in corpora.items():
            out = os.path.join(tmp, name)
            t0 = time.perf_counter()
            subprocess.run(
                [a.tokq, "run", os.path.join(HERE, "words.sql"), "--quiet", "--set", f"input={path}", "--set", f"output={out}/"],
                check=True,
            )
            tokq_s = time.perf_counter() - t0
            got = {}
            for f in sorted(os.listdir(out)):
                if f.endswith(".parquet"):
                    t = pq.read_table(os.path.join(out, f)).to_pydict()
                    got.update({row: words for row, words in zip(t["_row"], t["words"])})
            same = total = 0
            shown = 0
            t0 = time.perf_counter()
            for row, text in lines(path, limit):
                total += 1
                want = reference.word_tokenize(text)
                mine = got.get(row)
                if mine == want:
                    same += 1
                elif shown < a.show:
                    shown += 1
                    if mine is None:
                        print(f"  {name} line {row}: missing from tokq's output")
                    else:
                        i, x, y = first_difference(mine, want)
                        print(f"  {name} line {row} word {i}: tokq {x} spaCy {y}")
            ref_s = time.perf_counter() - t0
            rate = same / max(total, 1)
            ok = rate >= a.min_agreement and len(got) >= total
            failed |= not ok
            print(
                f"{'ok' if ok else 'FAIL'} {name:<18} identical words on {same}/{total} docs ({100 * rate:.2f}%)"
                f"  (tokq {tokq_s:.1f}s, spaCy {ref_s:.1f}s)",
                flush=True,
            )
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
