"""`@tokq.udf`: a Python function over pyarrow arrays as a SQL function."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import pyarrow as pa

from . import _native

F = TypeVar("F", bound=Callable[..., object])


def udf(return_type: pa.DataType, name: str | None = None) -> Callable[[F], F]:
    """Register a function as a SQL function of this process, callable from `tokq.sql` and
    from recipes run with `tokq.run`.

    The function gets one `pyarrow.Array` per argument for a whole batch (thousands of rows)
    and returns an array of the same length and of `return_type` (or anything `pyarrow.array`
    takes). The GIL is held only while it runs. tokq treats it as pure: the same arguments give
    the same result. A cluster's executors cannot call it: `tokq.run(..., cluster=...)` of a
    recipe that calls one raises `tokq.ClusterError`.

        @tokq.udf(pa.int64())
        def n_chars(texts):
            return pa.compute.utf8_length(texts).cast(pa.int64())
    """

    def register(func: F) -> F:
        _native.register_udf(name or func.__name__, func, return_type)
        return func

    return register
