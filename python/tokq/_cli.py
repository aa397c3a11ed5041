"""The `tokq` console script: the same command as the Rust binary, from the native module."""

from __future__ import annotations

import signal
import sys

from . import _native


def main() -> None:
    # The command handles Ctrl-C and a closed pipe as the binary does: by the default actions,
    # not by Python's handlers (which could not run while the command holds this thread).
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(_native.cli(["tokq", *sys.argv[1:]]))
