"""What a traced program holds: every primitive and abstract value of a jaxpr, sub-jaxprs included.

Shared by the tests that assert a graph has no float64 and no dot (tests/jax/test_jax_rows.py,
tests/jax/test_jax_xpos.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import jax.extend

import jax


def jaxpr_items(jaxpr: Any) -> Iterator[Any]:
    """Every primitive name and abstract value of ``jaxpr`` and its sub-jaxprs (pjit, custom_jvp, cond, …)."""
    for v in (*jaxpr.invars, *jaxpr.outvars, *jaxpr.constvars):
        yield v.aval
    for eqn in jaxpr.eqns:
        yield eqn.primitive.name
        for v in (*eqn.invars, *eqn.outvars):
            yield v.aval
        for sub in jax.extend.core.jaxprs_in_params(eqn.params):
            yield from jaxpr_items(sub)
