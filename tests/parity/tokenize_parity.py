"""Token-id parity: tokq's `tokenize` UDF against the Python `tokenizers` package and tiktoken.

For each tokenizer and corpus, tokq writes pretokenized Parquet; every output row is looked up
in the corpus by its lineage (`_source`, `_row`) and re-encoded by the reference. Exits non-zero
on any mismatch, a missing row, or a row that lineage does not resolve.

    python tests/parity/tokenize_parity.py --tokq $CARGO_TARGET_DIR/release/tokq --shared ../shared
"""
import argparse, gzip, hashlib, json, os, shutil, subprocess, sys, tempfile, time

import pyarrow.parquet as pq


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
    return lambda text: enc.encode_ordinary(text)


def hf(path):
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(path)
    return lambda text: tok.encode(text, add_special_tokens=False).ids


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokq", required=True)
    ap.add_argument("--shared", default="../shared")
    ap.add_argument("--recipe", default=os.path.join(os.path.dirname(__file__), "tokenize.sql"))
    a = ap.parse_args()
    s = a.shared
    corpora = {
        "wikipedia-en-2015": os.path.join(s, "corpora/wikipedia-en-2015/wiki_en_2015_sample.jsonl.gz"),
        "udhr-multilingual": os.path.join(s, "corpora/udhr-multilingual/udhr2.jsonl"),
    }
    tokenizers = {
        "gpt2": (os.path.join(s, "tokenizers/gpt2/tokenizer.json"), None),
        "llama3": (os.path.join(s, "tokenizers/llama3/tokenizer.json"), None),
        "qwen": (os.path.join(s, "tokenizers/qwen/tokenizer.json"), None),
        "mistral-v1": (os.path.join(s, "tokenizers/mistral/tokenizer.v1.json"), None),
        "cl100k_base": ("tiktoken:cl100k_base", "cl100k_base"),
    }
    failed = False
    for name, (spec, tk) in tokenizers.items():
        ref = tiktoken_offline(s, tk) if tk else hf(spec)
        for corpus, path in corpora.items():
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
            docs = same = 0
            bad = []
            for i, doc in lines(path):
                docs += 1
                key = (os.path.basename(path), i)
                want = ref(doc["text"])
                if got.get(key) == want:
                    same += 1
                else:
                    bad.append((doc.get("id"), key in got))
            t_ref = time.time() - t0
            extra = len(got) - docs
            status = "ok" if same == docs and extra == 0 else "FAIL"
            failed |= status != "ok"
            print(f"{status} {name:12s} {corpus:18s} identical {same}/{docs} docs  "
                  f"(tokq {t_tokq:.1f}s, reference {t_ref:.1f}s)")
            for doc_id, present in bad[:20]:
                print(f"    mismatch: doc {doc_id}" + ("" if present else " (missing from output)"))
            shutil.rmtree(out, ignore_errors=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
