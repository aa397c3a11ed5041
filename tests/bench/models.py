"""Neural classifiers: tokq's `model_logits` against transformers on PyTorch's CPU, one core.

Two BERT-shaped sequence classifiers with random weights and a WordPiece tokenizer trained here
(vocabulary 30,522, truncation at 512 tokens): a small one (4 layers, hidden 384, 6 heads; where
per-document overhead counts) and a BERT-base one (12 layers, hidden 768, 12 heads, 110M
parameters). The same Wikipedia documents go through
- transformers, `torch.set_num_threads(1)`, batch 1 (tokenize and forward per document), and
  batch 32 sorted by length and padded to the longest (FineWeb-Edu's way);
- `tokq run` of a COPY of `model_logits` with `--partitions 1`, pinned to one core with taskset
  when it is there: the whole run, process start and model load included;
then tokq at 2 partitions. Documents per second and ratios are from this run; tokq's logits are
checked against the batch-1 run (1e-4). Last, a Model2Vec static model (256 dimensions over the
same vocabulary) on 2,000 documents: `model2vec`'s `encode` on one thread against `tokq run` of
`model_embed`, checked the same way.

    python tests/bench/models.py --tokq $CARGO_TARGET_DIR/release/tokq --shared ../shared
"""
import argparse
import gzip
import itertools
import json
import os
import shutil
import subprocess
import tempfile
import time

import numpy as np
import pyarrow.parquet as pq
import torch
import transformers
from model2vec import StaticModel
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers

SQL = """COPY (SELECT id, model_logits(text, '${model}') AS logits FROM read_jsonl('${input}'))
TO '${output}' STORED AS PARQUET;"""
EMBED_SQL = SQL.replace("model_logits", "model_embed")

SHAPES = {
    "small (4 layers, hidden 384)": dict(hidden_size=384, num_hidden_layers=4, num_attention_heads=6, intermediate_size=1536),
    "BERT-base (12 layers, hidden 768)": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072),
}


def wordpiece(texts):
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.train_from_iterator(texts, trainers.WordPieceTrainer(vocab_size=30522, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]))
    return tok


def build(folder, tok, shape):
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                                sep_token="[SEP]", mask_token="[MASK]", model_max_length=512)
    config = transformers.BertConfig(vocab_size=tok.get_vocab_size(), max_position_embeddings=512, num_labels=1, **shape)
    transformers.BertForSequenceClassification(config).eval().save_pretrained(folder)
    fast.save_pretrained(folder)


def transformers_run(folder, texts, batch):
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(folder).eval()
    order = sorted(range(len(texts)), key=lambda i: len(texts[i])) if batch > 1 else list(range(len(texts)))
    logits = [None] * len(texts)
    t0 = time.perf_counter()
    with torch.no_grad():
        for start in range(0, len(order), batch):
            idx = order[start:start + batch]
            enc = tokenizer([texts[i] for i in idx], truncation=True, padding="longest", return_tensors="pt")
            out = model(**enc).logits
            for i, row in zip(idx, out):
                logits[i] = row.tolist()
    return time.perf_counter() - t0, logits


def tokq_run(tokq, tmp, folder, docs_path, partitions, sql=SQL):
    recipe = os.path.join(tmp, "score.sql")
    with open(recipe, "w") as f:
        f.write(sql.replace("${model}", folder))
    out = os.path.join(tmp, f"out-{partitions}")
    shutil.rmtree(out, ignore_errors=True)
    # One core per partition: this process is pinned to core 0, and a child would inherit that.
    pin = ["taskset", "-c", f"0-{partitions - 1}"] if shutil.which("taskset") else []
    t0 = time.perf_counter()
    subprocess.run(pin + [tokq, "run", recipe, "--quiet", "--partitions", str(partitions), "--set", f"input={docs_path}",
                          "--set", f"output={out}/"], check=True, stdout=subprocess.DEVNULL)
    took = time.perf_counter() - t0
    rows = {}
    for name in sorted(os.listdir(out)):
        if name.endswith(".parquet"):
            rows.update({r["id"]: r["logits"] for r in pq.read_table(os.path.join(out, name)).to_pylist()})
    return took, rows


def write_docs(folder, texts, files=4):
    """The documents in `files` JSONL files, as tokq spreads whole files over partitions; their glob."""
    os.makedirs(folder, exist_ok=True)
    for part in range(files):
        with open(os.path.join(folder, f"part-{part}.jsonl"), "w", encoding="utf-8") as f:
            for i in range(part, len(texts), files):
                f.write(json.dumps({"id": str(i), "text": texts[i]}) + "\n")
    return os.path.join(folder, "*.jsonl")


def static(args, tmp, tok, texts):
    """Model2Vec: the package's encode on one thread against tokq's model_embed."""
    folder = os.path.join(tmp, "static")
    vectors = np.random.default_rng(0).normal(size=(tok.get_vocab_size(), 256)).astype(np.float32)
    StaticModel(vectors=vectors, tokenizer=tok, normalize=True).save_pretrained(folder)
    docs_path = write_docs(os.path.join(tmp, "static-docs"), texts)
    model = StaticModel.from_pretrained(folder)
    t0 = time.perf_counter()
    want = model.encode(texts, use_multiprocessing=False)
    ref = time.perf_counter() - t0
    one, got = tokq_run(args.tokq, tmp, folder, docs_path, 1, EMBED_SQL)
    two, _ = tokq_run(args.tokq, tmp, folder, docs_path, 2, EMBED_SQL)
    worst = max(abs(a - b) for i, w in enumerate(want) for a, b in zip(w.tolist(), got[str(i)]))
    assert worst < 1e-4, f"model2vec: tokq's embeddings differ by {worst}"
    print(f"\nModel2Vec (256 dims), {len(texts)} documents: model2vec encode {len(texts) / ref:.0f} docs/s, "
          f"tokq 1 partition {len(texts) / one:.0f} docs/s ({ref / one:.2f}x, whole run), 2 partitions {one / two:.2f}x")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokq", required=True)
    ap.add_argument("--shared", required=True)
    ap.add_argument("--docs", type=int, default=64, help="documents per model (default 64)")
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    # One core for the references: the tokenizers library would otherwise encode batches on every core.
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {0})
    wiki = os.path.join(args.shared, "corpora/wikipedia-en-2015/wiki_en_2015_sample.jsonl.gz")
    with gzip.open(wiki, "rt", encoding="utf-8") as f:
        corpus = [json.loads(line)["text"] for line in itertools.islice(f, 2000)]
    texts = corpus[:args.docs]
    print(f"{len(texts)} Wikipedia documents ({sum(map(len, texts)) / 1e6:.1f} MB), truncated at 512 tokens; one core; "
          f"torch {torch.__version__}, transformers {transformers.__version__}")
    print(f"{'model':36} {'transformers b1':>16} {'transformers b32':>17} {'tokq 1 partition':>17} {'vs faster':>10} {'tokq 2 partitions':>18}")
    tok = wordpiece(corpus)
    with tempfile.TemporaryDirectory() as tmp:
        docs_path = write_docs(os.path.join(tmp, "docs"), texts)
        for name, shape in SHAPES.items():
            folder = os.path.join(tmp, "model")
            shutil.rmtree(folder, ignore_errors=True)
            build(folder, tok, shape)
            b1, want = transformers_run(folder, texts, 1)
            b32, _ = transformers_run(folder, texts, 32)
            one, got = tokq_run(args.tokq, tmp, folder, docs_path, 1)
            two, _ = tokq_run(args.tokq, tmp, folder, docs_path, 2)
            worst = max(abs(a - b) for i, w in enumerate(want) for a, b in zip(w, got[str(i)]))
            assert worst < 1e-4, f"{name}: tokq's logits differ from transformers' by {worst}"
            rate = lambda s: f"{len(texts) / s:.2f} docs/s"  # noqa: E731
            print(f"{name:36} {rate(b1):>16} {rate(b32):>17} {rate(one):>17} {min(b1, b32) / one:>9.2f}x "
                  f"{rate(two):>13} {one / two:.2f}x")
        static(args, tmp, tok, corpus)


if __name__ == "__main__":
    main()
