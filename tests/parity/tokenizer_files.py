"""Tokenizer files the parity and speed scripts build from the shared ones.

`neox_style` is the GPT-NeoX / OLMo shape: GPT-2's byte-level BPE behind an NFC normalizer, with
added tokens of both kinds: a special padding token matched on the raw text, OLMo's PII
placeholders and runs of spaces matched after normalization (`normalized: true`), as in
EleutherAI's gpt-neox-20b and allenai's OLMo tokenizer.json files.
"""
import json
import os

PII = ["|||EMAIL_ADDRESS|||", "|||PHONE_NUMBER|||", "|||IP_ADDRESS|||"]


def neox_style(shared, out_dir):
    """Writes the NeoX-style tokenizer.json under out_dir and returns its path."""
    with open(os.path.join(shared, "tokenizers/gpt2/tokenizer.json"), encoding="utf-8") as f:
        tok = json.load(f)
    tok["normalizer"] = {"type": "NFC"}
    next_id = max(tok["model"]["vocab"].values()) + 1
    added = [t for t in tok.get("added_tokens", [])]
    extra = [("<|padding|>", True, False)] + [(p, False, True) for p in PII] \
        + [(" " * n, False, True) for n in (24, 16, 8, 4, 2)]
    for content, special, normalized in extra:
        added.append({"id": next_id, "content": content, "single_word": False, "lstrip": False,
                      "rstrip": False, "normalized": normalized, "special": special})
        next_id += 1
    tok["added_tokens"] = added
    path = os.path.join(out_dir, "neox-style-tokenizer.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False)
    return path
