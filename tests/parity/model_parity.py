"""Neural model parity: tokq's `model_logits`, `model_predict` and `model_embed` against
transformers (PyTorch, fp32, CPU) on the same model folders.

Models (nothing is downloaded): built here with seeded random weights, drawn so that every
activation is of order one (a fresh model's 0.02-scale weights would give logits near zero, which
any encoder matches), with tokenizers trained on the fly on the Wikipedia sample:
- BERT (`BertForSequenceClassification`, WordPiece, lower-casing normalizer), three labels;
- XLM-RoBERTa (`XLMRobertaForSequenceClassification`, byte-level BPE, positions after the padding
  id), one label (a regression, as FineWeb-Edu's classifier).
Both truncate at 128 tokens, so most documents are cut.

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
import subprocess
import sys
import tempfile

import pyarrow.parquet as pq
import torch
import transformers
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
            if "LayerNorm.weight" in name:
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
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
                                                       special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                                sep_token="[SEP]", mask_token="[MASK]", model_max_length=MAX_LENGTH)
    config = transformers.BertConfig(vocab_size=tok.get_vocab_size(), hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=128, max_position_embeddings=MAX_LENGTH, num_labels=3,
                                     id2label={0: "low", 1: "mid", 2: "high"}, label2id={"low": 0, "mid": 1, "high": 2})
    return save(folder, transformers.BertForSequenceClassification(config), fast)


def xlm_roberta(folder, texts):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    tok.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=3000, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok.post_processor = processors.RobertaProcessing(("</s>", tok.token_to_id("</s>")), ("<s>", tok.token_to_id("<s>")))
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>", pad_token="<pad>",
                                                cls_token="<s>", sep_token="</s>", mask_token="<mask>", model_max_length=MAX_LENGTH)
    config = transformers.XLMRobertaConfig(vocab_size=tok.get_vocab_size(), hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                           intermediate_size=128, max_position_embeddings=MAX_LENGTH + 2, pad_token_id=1, num_labels=1)
    return save(folder, transformers.XLMRobertaForSequenceClassification(config), fast)


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


def worst(a, b):
    if len(a) != len(b):
        return float("inf")
    return max((abs(x - y) for x, y in zip(a, b)), default=0.0)


def compare(name, folder, tokq, tmp, docs_path, docs):
    want = reference(folder, docs)
    has_pooler = want[docs[0]["id"]]["pooler"] is not None
    sql = SQL.replace("${pooler}", f", model_embed(text, '{folder}', 'pooler') AS pooler" if has_pooler else "")
    recipe = os.path.join(tmp, f"{name}.sql")
    with open(recipe, "w") as f:
        f.write(sql.replace("${model}", folder))
    out = os.path.join(tmp, f"{name}-out")
    subprocess.run([tokq, "run", recipe, "--quiet", "--set", f"input={docs_path}", "--set", f"output={out}/"], check=True, stdout=subprocess.DEVNULL)
    got = {}
    for file in sorted(os.listdir(out)):
        if file.endswith(".parquet"):
            got.update({r["id"]: r for r in pq.read_table(os.path.join(out, file)).to_pylist()})
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
    print(f"{name}: {len(docs)} documents, worst difference {largest:.2e} (logits, mean, cls{', pooler' if has_pooler else ''}), "
          f"{len(failures)} failure(s)")
    for f in failures[:10]:
        print("   ", f)
    return not failures


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokq", required=True)
    ap.add_argument("--shared", required=True)
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
        for name, build in [("bert", bert), ("xlm-roberta", xlm_roberta)]:
            folder = build(os.path.join(tmp, name), texts)
            ok &= compare(name, folder, args.tokq, tmp, docs_path, docs)
    print("model parity:", "all within tolerance" if ok else "FAILED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
