"""Writes spaCy's blank English tokenizer rules (spaCy is MIT-licensed) for tokq's word splitter.

    python tests/parity/gen_spacy_en.py   # needs spacy==3.8.*; rewrites crates/core/src/text/spacy_en/

The files are the exact prefix, suffix, infix and URL patterns and the special cases, so that
tokq splits words as datatrove's spaCy tokenizer does.
"""

import json
import pathlib

import spacy

OUT = pathlib.Path(__file__).resolve().parents[2] / "crates/core/src/text/spacy_en"


def main():
    nlp = spacy.blank("en")
    t = nlp.tokenizer
    assert t.token_match is None, "tokq assumes English has no token_match"
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "prefix.re").write_text(t.prefix_search.__self__.pattern)
    (OUT / "suffix.re").write_text(t.suffix_search.__self__.pattern)
    (OUT / "infix.re").write_text(t.infix_finditer.__self__.pattern)
    (OUT / "url.re").write_text(t.url_match.__self__.pattern)
    rules = {k: [tok[65] for tok in v] for k, v in sorted(t.rules.items())}  # 65 is spacy.attrs.ORTH
    (OUT / "specials.json").write_text(json.dumps(rules, ensure_ascii=False, indent=0) + "\n")
    (OUT / "VERSION").write_text(f"spacy {spacy.__version__}\n")


if __name__ == "__main__":
    main()
