"""tokq's functions on a stock `datafusion.SessionContext` (`pip install datafusion`, version 55),
through DataFusion's FFI: no tokq runner involved."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from . import _native


def register(ctx: Any, *, table_functions: bool = True) -> list[str]:
    """Register every tokq scalar function (`token_count`, `quality_chain`, `minhash`...) and,
    unless told otherwise, every table function (`read_jsonl`...) on `ctx`, a
    `datafusion.SessionContext`. Returns the names registered.

    The functions run in tokq's compiled code, called by the datafusion package through its
    FFI; the two must agree on DataFusion's major version (55).
    """
    from datafusion import ScalarUDF, TableFunction

    names = []
    for f in _native.scalar_functions():
        ctx.register_udf(ScalarUDF.from_pycapsule(f))
        names.append(f.name)
    if table_functions:
        for t in _native.table_functions():
            # datafusion takes any object with __datafusion_table_function__; its stubs name callables.
            ctx.register_udtf(TableFunction(t.name, cast(Callable[..., Any], t), ctx))
            names.append(t.name)
    return names
