"""Token-id parity: tokq's `tokenize` UDF against the Python `tokenizers` package and tiktoken.

For each tokenizer and corpus, tokq writes pretokenized Parquet; every output row is looked up
in the corpus by its lineage (`_source`, `_row`) and re-encoded by the reference. Exits non-zero
on any mismatch, a missing row, a row that lineage does not resolve, or a spec that is not on
the encoder it should be on (`tokq tokenizer SPEC`).

Besides the shared corpora, an adversarial corpus is generated: long runs of one character,
whitespace runs, digits, emoji and ZWJ sequences, combining marks, contractions in every case,
special-token text, every code point of planes 0-3 and 14 in several contexts, lone surrogates,
all written with JSON surrogate-pair escapes, and one 10 MB document. A lone surrogate escape is
read as U+FFFD (what tiktoken encodes for such a string; Python tokenizers refuses it, so its
reference gets the same text). A second, large corpus (1 MB of whitespace, 10 MB of one
character) is compared with tokenizers only: Python tiktoken's split regex overflows its stack on
1 MB of whitespace (a panic).

    python tests/parity/tokenize_parity.py --tokq $CARGO_TARGET_DIR/release/tokq --shared ../shared

with a Python that has tests/parity/requirements-tokenizers.txt (tokenizers 1.0, tiktoken).
"""
import argparse, gzip, hashlib, json, os, shutil, subprocess, sys, tempfile, time

import pyarrow.parquet as pq

from tokenizer_files import PII, neox_style


def lines(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        for i, line in enumerate(f):
            if line.strip():
                yield i, json.loads(line)


def tiktoken_offline(shared, name):
    """tiktoken.get_encoding without a download: seed its cache with the local rank file."""
    cache = tempfile.mkdtemp(prefix="tiktoken-cache-")
    url = f"https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
    shutil.copy(os.path.join(shared, "tokenizers/openai-tiktoken", f"{name}.tiktoken"),
                os.path.join(cache, hashlib.sha1(url.encode()).hexdigest()))
    os.environ["TIKTOKEN_CACHE_DIR"] = cache
    import tiktoken
    enc = tiktoken.get_encoding(name)
    return lambda texts: enc.encode_ordinary_batch(texts, num_threads=2)


def hf(path):
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(path)
    return lambda texts: [e.ids for e in tok.encode_batch(texts, add_special_tokens=False)]


def as_utf8(text):
    """What a text with lone surrogates is as UTF-8: each one U+FFFD, as tiktoken reads it."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def adversarial_large(path):
    """Writes the large adversarial corpus and returns its path."""
    docs = [" " * 1_000_000 + "x", "\n" * 1_000_000, "a" * 10_000_000, "\u00e9" * 2_000_000]
    with open(path, "w") as f:
        for i, text in enumerate(docs):
            f.write(json.dumps({"id": f"large-{i}", "text": text}, ensure_ascii=True) + "\n")
    return path


def adversarial(path, wikipedia):
    """Writes the adversarial corpus (ensure_ascii: every non-ASCII character is a \\u escape,
    astral ones as surrogate pairs) and returns its path."""
    docs = [
        "a" * 40_000,
        " " * 100_000,
        "\n" * 50_000,
        "\t \n\r\u3000\xa0 \x0b\x0c\x85\u2028" * 5_000,
        "1234567890" * 20_000 + " \u0661\u0662\u0663 \u216b \u00bd 3.14159 1,000,000",
        "\U0001F600" * 8_000 + " \U0001F469\u200d\U0001F469\u200d\U0001F467 \U0001F3F3\ufe0f\u200d\U0001F308 " * 500,
        ("e\u0301" + "A\u0301B" + " \u0301x" + "\u0915\u094d\u0937") * 3_000,
        "'s'S'\u017f'll'LL'Re 've ']'d don't DON'T Don'T we'VE" * 2_000,
        "<|endoftext|> x<|im_start|>user\n<|begin_of_text|><|end_of_text|><|endoftext|><|endoftext" * 50,
        # Added tokens inside words, after normalization, and overlapping runs of spaces.
        "".join(f"a{p}b {p}{p}  c{p[:-1]} \u0065\u0301{p}" for p in PII) * 200 + " " * 37 + "x" + " " * 5,
        "<s>[INST] x</s><unk>[/INST]<s><s>  </s>" * 100,
        "emoji \U0001F600 and \U0001D518\U0001D52B\U0001D526 \U00020706 mixed",
        # Lone surrogates: high alone, low alone, two highs, reversed, at the end.
        "x\ud800y \udc00 \ud800\ud800 \udc00\ud800 z\ud83d\ud83d\ude00 end\ud83d",
    ]
    points = [c for c in list(range(0, 0x32400)) + list(range(0xE0000, 0xE01F0)) if not 0xD800 <= c < 0xE000]
    for i in range(0, len(points), 8192):
        docs.append("".join(f"x{c}{c}y {c}7 {c}\u0301A{c}a'{c} \n" for c in map(chr, points[i:i + 8192])))
    big, size = [], 0
    for _, doc in lines(wikipedia):
        big.append(doc["text"])
        size += len(doc["text"].encode())
        if size >= 10_000_000:
            break
    docs.append("\n\n".join(big))
    with open(path, "w") as f:
        for i, text in enumerate(docs):
            f.write(json.dumps({"id": f"adversarial-{i}", "text": text}, ensure_ascii=True) + "\n")
    return path


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokq", required=True)
    ap.add_argument("--shared", default="../shared")
    ap.add_argument("--recipe", default=os.path.join(os.path.dirname(__file__), "tokenize.sql"))
    ap.add_argument("--only", nargs="*", help="tokenizer names to check (default: all)")
    a = ap.parse_args()
    s = a.shared
    work = tempfile.mkdtemp(prefix="tokq-parity-corpora-")
    wikipedia = os.path.join(s, "corpora/wikipedia-en-2015/wiki_en_2015_sample.jsonl.gz")
    corpora = {
        "wikipedia-en-2015": wikipedia,
        "udhr-multilingual": os.path.join(s, "corpora/udhr-multilingual/udhr2.jsonl"),
        "nltk-webtext": os.path.join(s, "corpora/nltk-webtext/webtext.jsonl"),
        "spdx-licenses": os.path.join(s, "corpora/spdx-licenses/spdx_licenses.jsonl"),
        "adversarial": adversarial(os.path.join(work, "adversarial.jsonl"), wikipedia),
        "adversarial-large": adversarial_large(os.path.join(work, "adversarial-large.jsonl")),
    }
    # name: (spec, tiktoken encoding or None for Python tokenizers, the encoder tokq must use)
    tokenizers = {
        "gpt2": (os.path.join(s, "tokenizers/gpt2/tokenizer.json"), None, "tokq-bpe"),
        "llama3": (os.path.join(s, "tokenizers/llama3/tokenizer.json"), None, "tokq-bpe"),
        "qwen": (os.path.join(s, "tokenizers/qwen/tokenizer.json"), None, "tokq-bpe"),
        "neox-style": (neox_style(s, work), None, "tokq-bpe"),
        "mistral-v1": (os.path.join(s, "tokenizers/mistral/tokenizer.v1.json"), None, "tokq-bpe"),
        "mistral-v3": (os.path.join(s, "tokenizers/mistral/tokenizer.v3.json"), None, "tokq-bpe"),
        "llama2-pii": (os.path.join(s, "tokenizers/llama2-pii/tokenizer.json"), None, "tokq-bpe"),
        "cl100k_base": ("tiktoken:cl100k_base", "cl100k_base", "tokq-bpe"),
        "o200k_base": ("tiktoken:o200k_base", "o200k_base", "tokq-bpe"),
    }
    failed = False
    for name, (spec, tk, encoder) in tokenizers.items():
        if a.only and name not in a.only:
            continue
        info = subprocess.run([a.tokq, "tokenizer", spec], capture_output=True, text=True)
        used = next((l.split()[1] for l in info.stdout.splitlines() if l.startswith("encoder")), None)
        if used != encoder:
            print(f"FAIL {name}: encoder {used!r}, expected {encoder!r}: {info.stdout.strip()} {info.stderr.strip()}")
            failed = True
        ref = tiktoken_offline(s, tk) if tk else hf(spec)
        for corpus, path in corpora.items():
            if tk and corpus == "adversarial-large":
                continue
            out = tempfile.mkdtemp(prefix="tokq-parity-")
            t0 = time.time()
            r = subprocess.run([a.tokq, "run", a.recipe, "--quiet", "--set", f"input={path}",
                                "--set", f"tokenizer={spec}", "--set", f"output={out}/"],
                               capture_output=True, text=True)
            if r.returncode != 0:
                print(f"FAIL {name} {corpus}: tokq failed: {r.stderr.strip()}")
                failed = True
                continue
            t_tokq = time.time() - t0
            table = pq.read_table(out, columns=["_source", "_row", "input_ids"])
            got = {(src.split("/")[-1], row): ids for src, row, ids in
                   zip(table["_source"].to_pylist(), table["_row"].to_pylist(), table["input_ids"].to_pylist())}
            t0 = time.time()
            keys, texts, ids = [], [], []
            for i, doc in lines(path):
                keys.append((os.path.basename(path), i))
                texts.append(as_utf8(doc["text"]))
                ids.append(doc.get("id"))
            wants = ref(texts)
            docs = len(keys)
            same = sum(got.get(k) == w for k, w in zip(keys, wants))
            bad = [(d, k in got) for k, w, d in zip(keys, wants, ids) if got.get(k) != w]
            t_ref = time.time() - t0
            extra = len(got) - docs
            status = "ok" if same == docs and extra == 0 else "FAIL"
            failed |= status != "ok"
            print(f"{status} {name:12s} {corpus:18s} [{used}] identical {same}/{docs} docs  "
                  f"(tokq {t_tokq:.1f}s, reference {t_ref:.1f}s)")
            for doc_id, present in bad[:20]:
                print(f"    mismatch: doc {doc_id}" + ("" if present else " (missing from output)"))
            shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(work, ignore_errors=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
