"""Writes datatrove's character sets, which tokq's filters use verbatim, to
crates/core/src/text/datatrove/sets.json (code points; the sets hold control characters).

    python tests/parity/gen_datatrove_sets.py   # in a venv with requirements.txt
"""
import json
import pathlib

import datatrove
from datatrove.utils.text import PUNCTUATION, TERMINAL_PUNCTUATION

out = pathlib.Path(__file__).resolve().parents[2] / "crates/core/src/text/datatrove/sets.json"
sets = {
    "datatrove_version": datatrove.__version__ if hasattr(datatrove, "__version__") else "0.10.1",
    "punctuation": sorted({ord(c) for c in PUNCTUATION}),
    "terminal_punctuation": sorted(ord(c) for c in TERMINAL_PUNCTUATION),
}
out.write_text(json.dumps(sets) + "\n")
print(f"wrote {out}: {len(sets['punctuation'])} punctuation, {len(sets['terminal_punctuation'])} terminal")
