"""Read tokq's pretokenized Parquet output for training."""

from .reader import FORMAT_VERSION, TokqDataset, TokqFormatError, open_output, read_manifest

__all__ = ["FORMAT_VERSION", "TokqDataset", "TokqFormatError", "open_output", "read_manifest"]
