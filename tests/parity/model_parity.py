"""Neural model parity: tokq's `model_logits`, `model_predict` and `model_embed` against
transformers (PyTorch, fp32, CPU) on the same model folders.

Models (nothing is downloaded): built here with seeded random weights, drawn so that every
activation is of order one (a fresh model's 0.02-scale weights would give logits near zero, which
any encoder matches), with tokenizers trained on the fly on the Wikipedia sample:
- BERT (`BertForSequenceClassification`, WordPiece, lower-casing normalizer), three labels;
- XLM-RoBERTa (`XLMRobertaForSequenceClassification`, byte-level BPE, positions after the padding
  id), one label (a regression, as FineWeb-Edu's classifier);
- ModernBERT (`ModernBertForSequenceClassification`, byte-level BPE with `[CLS] $A [SEP]` as the
  hub's ModernBERT tokenizer, rotary positions, every third layer global and the others within a
  sliding window of 16 tokens either side, so windows bite at 128 tokens), two labels, mean pooling,
  and its biases on (norms, attention, feed-forward, head) so that every weight counts.
- DeBERTa-v3 (`DebertaV2ForSequenceClassification`, a SentencePiece-style Unigram tokenizer with
  `[CLS] $A [SEP]`): relative attention with both terms and shared keys, 32 log buckets over 128
  positions (so distances past 16 fold), normed relative embeddings, no absolute positions, three
  labels;
- DeBERTa-v2 in its other settings: separate position projections, content-to-position only (the
  old `"c2p"` string form), no buckets (distances clamp at 48), absolute positions and token
  types, narrower word embeddings projected up, and the convolution after the first layer; one label.
All truncate at 128 tokens, so most documents are cut. And two Model2Vec static models
(`model2vec.StaticModel`, random embeddings) against the package's own `encode`:
- over the BERT folder's WordPiece tokenizer, normalized, with per-token weights, cut at the
  default 512 tokens (unknown tokens, frequent in the UDHR's scripts, are dropped), and a
  two-layer softmax head over three classes (`StaticModelPipeline`);
- over the XLM-RoBERTa folder's byte-level BPE, vocabulary-quantized (a token-to-row mapping into
  500 rows), not normalized, cut at 64 tokens, and a one-layer regression head.
`model_embed` is compared with `encode`, `model_logits` with the head's outputs and
`model_predict` with `predict_proba`.

Documents: Wikipedia (300, long), the UDHR (300, many scripts), nltk-webtext (300), and edge
cases (empty text, special tokens written in the text, 50,000 words). For every model and
document: the logits, the mean, first-token and (BERT) pooler embeddings within 1e-4 of
transformers' (the worst difference is reported), and `model_predict`'s labels in the order of
transformers' probabilities with the same scores.

    python tests/parity/model_parity.py --tokq $CARGO_TARGET_DIR/release/tokq --shared ../shared
"""
import argparse
import gzip
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import pyarrow.parquet as pq
import torch
import transformers
from model2vec import StaticModel
from model2vec.inference import StaticModelPipeline
from model2vec.inference.mlp import Activation, Layer, MLPHead
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

TOLERANCE = 1e-4
MAX_LENGTH = 128

SQL = """COPY (SELECT id, model_logits(text, '${model}') AS logits, model_predict(text, '${model}', -1) AS predicted,
  model_embed(text, '${model}') AS mean, model_embed(text, '${model}', 'cls') AS cls ${pooler}
FROM read_jsonl('${input}')) TO '${output}' STORED AS PARQUET;"""


def randomize(model):
    """Weights of order one: unit-variance embeddings, fan-in-scaled matrices, layer norms near 1."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "LayerNorm.weight" in name or "norm.weight" in name:
                p.normal_(1.0, 0.2)
            elif p.dim() == 1:
                p.normal_(0.0, 0.2)
            elif "embeddings" in name:
                p.normal_(0.0, 1.0)
            else:
                p.normal_(0.0, 1.0 / p.shape[1] ** 0.5)


def bert(folder, texts):
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok.train_from_iterator(texts, trainers.WordPieceTrainer(vocab_size=3000, special_tokens=specials))
    cls_sep(tok)
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                                sep_token="[SEP]", mask_token="[MASK]", model_max_length=MAX_LENGTH)
    config = transformers.BertConfig(vocab_size=tok.get_vocab_size(), hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=128, max_position_embeddings=MAX_LENGTH, num_labels=3,
                                     id2label={0: "low", 1: "mid", 2: "high"}, label2id={"low": 0, "mid": 1, "high": 2})
    return save(folder, transformers.BertForSequenceClassification(config), fast)


def byte_level_bpe(texts, specials):
    """A byte-level BPE tokenizer (GPT-2's pre-tokenizer, no prefix space) trained on `texts`."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=3000, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    return tok


def cls_sep(tok):
    """BERT's `[CLS] $A [SEP]` template on `tok`; the two ids."""
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
                                                       special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    return cls, sep


def xlm_roberta(folder, texts):
    tok = byte_level_bpe(texts, ["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    tok.post_processor = processors.RobertaProcessing(("</s>", tok.token_to_id("</s>")), ("<s>", tok.token_to_id("<s>")))
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>", pad_token="<pad>",
                                                cls_token="<s>", sep_token="</s>", mask_token="<mask>", model_max_length=MAX_LENGTH)
    config = transformers.XLMRobertaConfig(vocab_size=tok.get_vocab_size(), hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                           intermediate_size=128, max_position_embeddings=MAX_LENGTH + 2, pad_token_id=1, num_labels=1)
    return save(folder, transformers.XLMRobertaForSequenceClassification(config), fast)


def modernbert(folder, texts):
    tok = byte_level_bpe(texts, ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"])
    cls, sep = cls_sep(tok)
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                                sep_token="[SEP]", mask_token="[MASK]", model_max_length=MAX_LENGTH,
                                                model_input_names=["input_ids", "attention_mask"])
    config = transformers.ModernBertConfig(vocab_size=tok.get_vocab_size(), hidden_size=64, num_hidden_layers=4, num_attention_heads=4,
                                           intermediate_size=96, max_position_embeddings=MAX_LENGTH, local_attention=32,
                                           global_attn_every_n_layers=3, pad_token_id=tok.token_to_id("[PAD]"),
                                           cls_token_id=cls, sep_token_id=sep, bos_token_id=cls, eos_token_id=sep,
                                           classifier_pooling="mean", norm_bias=True, attention_bias=True, mlp_bias=True,
                                           classifier_bias=True, num_labels=2, id2label={0: "no", 1: "yes"}, label2id={"no": 0, "yes": 1})
    return save(folder, transformers.ModernBertForSequenceClassification(config), fast)


def deberta(folder, texts, v3=True):
    tok = Tokenizer(models.Unigram())
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    specials = ["[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]"]
    tok.train_from_iterator(texts, trainers.UnigramTrainer(vocab_size=3000, special_tokens=specials, unk_token="[UNK]"))
    cls_sep(tok)
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                                sep_token="[SEP]", mask_token="[MASK]", model_max_length=MAX_LENGTH)
    common = dict(vocab_size=tok.get_vocab_size(), hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                  max_position_embeddings=MAX_LENGTH, relative_attention=True)
    if v3:
        config = transformers.DebertaV2Config(**common, position_buckets=32, max_relative_positions=MAX_LENGTH, norm_rel_ebd="layer_norm",
                                              share_att_key=True, pos_att_type=["p2c", "c2p"], position_biased_input=False,
                                              type_vocab_size=0, num_labels=3)
    else:
        config = transformers.DebertaV2Config(**common, max_relative_positions=48, share_att_key=False, pos_att_type="c2p",
                                              position_biased_input=True, type_vocab_size=2, embedding_size=48,
                                              conv_kernel_size=3, conv_act="gelu", hidden_act="gelu_new", num_labels=1)
    return save(folder, transformers.DebertaV2ForSequenceClassification(config), fast)


def save(folder, model, tokenizer):
    randomize(model)
    model.eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def documents(shared):
    wiki = os.path.join(shared, "corpora/wikipedia-en-2015/wiki_en_2015_sample.jsonl.gz")
    with gzip.open(wiki, "rt", encoding="utf-8") as f:
        docs = [json.loads(line) for line in itertools.islice(f, 300)]
    for name in ["udhr-multilingual/udhr2.jsonl", "nltk-webtext/webtext.jsonl"]:
        with open(os.path.join(shared, "corpora", name), encoding="utf-8") as f:
            docs += [json.loads(line) for line in itertools.islice(f, 300)]
    edges = ["", "[SEP] a [CLS] <s> b </s> <pad>", "word " * 50_000, "  \n\t ", "é" * 3000]
    docs += [{"id": f"edge-{i}", "text": t} for i, t in enumerate(edges)]
    return [{"id": str(d["id"]), "text": d["text"]} for d in docs]


def reference(folder, docs):
    """transformers' outputs, one unpadded document at a time."""
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(folder).eval()
    base = getattr(model, model.base_model_prefix)
    out = {}
    with torch.no_grad():
        for d in docs:
            enc = tokenizer(d["text"], truncation=True, return_tensors="pt")
            logits = model(**enc).logits[0]
            hidden = base(**enc) if getattr(base, "pooler", None) is not None else None
            states = (hidden.last_hidden_state if hidden is not None else base(**enc).last_hidden_state)[0]
            out[d["id"]] = {
                "logits": logits.tolist(),
                "mean": states.mean(0).tolist(),
                "cls": states[0].tolist(),
                "pooler": hidden.pooler_output[0].tolist() if hidden is not None else None,
                "problem": model.config.problem_type or ("regression" if model.config.num_labels == 1 else "single_label_classification"),
                "labels": [model.config.id2label[i] for i in range(model.config.num_labels)],
            }
    return out


def static(folder, tokenizer_folder, quantized):
    """A Model2Vec classifier over another model's tokenizer, with seeded random vectors and head."""
    tok = Tokenizer.from_file(os.path.join(tokenizer_folder, "tokenizer.json"))
    rng = np.random.default_rng(7)
    size, dim = tok.get_vocab_size(), 48

    def layer(inputs, outputs):
        return Layer(weight=rng.normal(size=(outputs, inputs)).astype(np.float32) / inputs**0.5,
                     bias=rng.normal(size=outputs).astype(np.float32))

    if quantized:
        model = StaticModel(vectors=rng.normal(size=(500, dim)).astype(np.float32), tokenizer=tok, normalize=False, max_length=64,
                            token_mapping=rng.integers(0, 500, size=size, dtype=np.int64))
        head = MLPHead(layers=[layer(dim, 1)], activation=Activation.IDENTITY)
    else:
        model = StaticModel(vectors=rng.normal(size=(size, dim)).astype(np.float32), tokenizer=tok, normalize=True,
                            weights=rng.uniform(0.1, 2.0, size=size).astype(np.float32))
        head = MLPHead(layers=[layer(dim, 32), layer(32, 3)], activation=Activation.SOFTMAX, classes=np.array(["low", "mid", "high"]))
    StaticModelPipeline(model, head).save_pretrained(folder)
    return folder


def static_compare(name, folder, tokq, tmp, docs_path, docs):
    pipeline = StaticModelPipeline.from_pretrained(folder)
    texts = [d["text"] for d in docs]
    embeddings = pipeline.model.encode(texts, use_multiprocessing=False)
    logits = pipeline.head._logits(embeddings)
    probs = logits if pipeline.head.activation == Activation.IDENTITY else pipeline.head.predict_proba(embeddings)
    got = run_tokq(name, f"""COPY (SELECT id, model_embed(text, '{folder}') AS mean, model_logits(text, '{folder}') AS logits,
                               model_predict(text, '{folder}', -1) AS predicted
                             FROM read_jsonl('${{input}}')) TO '${{output}}' STORED AS PARQUET;""", tokq, tmp, docs_path)
    labels = list(pipeline.classes_) if pipeline.classes_ is not None else [f"LABEL_{i}" for i in range(logits.shape[1])]
    failures, largest = [], 0.0
    for i, d in enumerate(docs):
        g = got.get(d["id"])
        if g is None:
            failures.append(f"{d['id']}: no row")
            continue
        for key, want in [("mean", embeddings[i]), ("logits", logits[i])]:
            diff = worst(want.tolist(), g[key])
            largest = max(largest, diff)
            if diff > TOLERANCE:
                failures.append(f"{d['id']}: {key} differs by {diff:.3g}")
        best = int(np.argmax(probs[i]))
        top = g["predicted"][0]
        if abs(top["score"] - probs[i][best]) > TOLERANCE or (top["label"] != labels[best] and sorted(probs[i])[-2] < probs[i][best] - TOLERANCE):
            failures.append(f"{d['id']}: predicted {top}, model2vec {labels[best]} {probs[i][best]:.6f}")
    return report(name, len(docs), largest, "model_embed against model2vec's encode, model_logits against its head", failures)


def run_tokq(name, sql, tokq, tmp, docs_path):
    """Runs one recipe over the documents; its rows by id."""
    recipe = os.path.join(tmp, f"{name}.sql")
    with open(recipe, "w") as f:
        f.write(sql)
    out = os.path.join(tmp, f"{name}-out")
    subprocess.run([tokq, "run", recipe, "--quiet", "--set", f"input={docs_path}", "--set", f"output={out}/"], check=True, stdout=subprocess.DEVNULL)
    got = {}
    for file in sorted(os.listdir(out)):
        if file.endswith(".parquet"):
            got.update({r["id"]: r for r in pq.read_table(os.path.join(out, file)).to_pylist()})
    return got


def report(name, documents, largest, what, failures):
    """Prints a model's line and its first failures; whether it passed."""
    print(f"{name}: {documents} documents, worst difference {largest:.2e} ({what}), {len(failures)} failure(s)")
    for f in failures[:10]:
        print("   ", f)
    return not failures


def worst(a, b):
    if len(a) != len(b):
        return float("inf")
    return max((abs(x - y) for x, y in zip(a, b)), default=0.0)


def compare(name, folder, tokq, tmp, docs_path, docs):
    want = reference(folder, docs)
    has_pooler = want[docs[0]["id"]]["pooler"] is not None
    sql = SQL.replace("${pooler}", f", model_embed(text, '{folder}', 'pooler') AS pooler" if has_pooler else "")
    got = run_tokq(name, sql.replace("${model}", folder), tokq, tmp, docs_path)
    failures, largest = [], 0.0
    for d in docs:
        w, g = want[d["id"]], got.get(d["id"])
        if g is None:
            failures.append(f"{d['id']}: no row")
            continue
        for key in ["logits", "mean", "cls"] + (["pooler"] if has_pooler else []):
            diff = worst(w[key], g[key])
            largest = max(largest, diff)
            if diff > TOLERANCE:
                failures.append(f"{d['id']}: {key} differs by {diff:.3g}")
        probs = torch.tensor(w["logits"])
        if w["problem"] == "single_label_classification":
            probs = probs.softmax(-1)
        elif w["problem"] == "multi_label_classification":
            probs = probs.sigmoid()
        order = sorted(range(len(probs)), key=lambda i: -probs[i].item())
        got_labels = [p["label"] for p in g["predicted"]]
        if got_labels != [w["labels"][i] for i in order] and worst(sorted(probs.tolist()), sorted(p["score"] for p in g["predicted"])) > TOLERANCE:
            failures.append(f"{d['id']}: predicted {got_labels}, transformers {[w['labels'][i] for i in order]}")
        elif worst([probs[i].item() for i in order], [p["score"] for p in g["predicted"]]) > TOLERANCE:
            failures.append(f"{d['id']}: prediction scores differ")
    return report(name, len(docs), largest, f"logits, mean, cls{', pooler' if has_pooler else ''}", failures)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokq", required=True)
    ap.add_argument("--shared", required=True)
    ap.add_argument("--only", help="comma-separated model names to run (bert, xlm-roberta, modernbert, deberta-v3, deberta-v2, "
                                   "model2vec-wordpiece, model2vec-bpe-quantized); default all")
    ap.add_argument("--keep", help="a folder to copy the models into, for later checks (the one-logit model is FineWeb-Edu's shape)")
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    docs = documents(args.shared)
    texts = [d["text"] for d in docs[:300]]
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        docs_path = os.path.join(tmp, "docs.jsonl")
        with open(docs_path, "w", encoding="utf-8") as f:
            for d in docs:
                f.write(json.dumps(d, ensure_ascii=False) + "\n")
        builders = [("bert", bert), ("xlm-roberta", xlm_roberta), ("modernbert", modernbert), ("deberta-v3", deberta),
                    ("deberta-v2", lambda folder, texts: deberta(folder, texts, v3=False))]
        wanted = set(args.only.split(",")) if args.only else None
        for name, build in builders:
            if wanted is not None and name not in wanted:
                continue
            folder = build(os.path.join(tmp, name), texts)
            ok &= compare(name, folder, args.tokq, tmp, docs_path, docs)
            if args.keep:
                shutil.copytree(folder, os.path.join(args.keep, name), dirs_exist_ok=True)
        for name, source, quantized in [("model2vec-wordpiece", "bert", False), ("model2vec-bpe-quantized", "xlm-roberta", True)]:
            if wanted is not None and (name not in wanted or source not in wanted):
                continue
            folder = static(os.path.join(tmp, name), os.path.join(tmp, source), quantized)
            ok &= static_compare(name, folder, args.tokq, tmp, docs_path, docs)
    print("model parity:", "all within tolerance" if ok else "FAILED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
