"""The open registry of RoPE scalings: rope type name -> factory, as transformers' ``ROPE_INIT_FUNCTIONS``.

:func:`register_scaling` makes :func:`posenc.from_hf_config` read a new
``rope_type`` in one place; the built-in types (:data:`posenc.rope.scaling.READERS`, each beside its class)
are registered the same way. A factory is called as ``factory(rope_dict,
config_dict)``: ``rope_dict`` is the model's (or one layer type's) rope dict,
``config_dict`` the language model's config with the family's legacy keys and
defaults already resolved (:mod:`posenc.hf.families`). It returns a
scaling (an object with ``scale(dim, base, seq_len)`` and
``cache_key(seq_len)``, hashable, as :mod:`posenc.rope.scaling`'s variants) or
None for plain RoPE, and raises :class:`~posenc.PosEncError` for keys it does
not understand.

What any scaling must offer (the gate of :func:`posenc.rope_frequencies`) is
:func:`is_scaling`: the built-ins and any object with those two methods.
What it gives is checked where it is used (:func:`scaled_by`): a ``scale``
that returns anything but a :class:`~posenc.rope.scaling.Scaled` of ``dim/2``
frequencies in range is refused naming the scaling, as is a factory whose
signature cannot take ``(rope_dict, config_dict)`` (when it is registered) or
one that raises anything but PosEncError (when it is used).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Hashable, Mapping
from decimal import Decimal
from typing import Any

from ..errors import PosEncError, show_value
from ..registry import Call, Registry, guarded, returned
from .scaling import READERS
from .scaling.scaled import Scaled, checked_scaled

__all__ = [
    "SCALING_FACTORIES",
    "ScalingFactory",
    "is_scaling",
    "register_scaling",
    "registered_rope_types",
    "scaled_by",
    "scaling_factory",
]

#: ``factory(rope_dict, config_dict) -> scaling | None``
ScalingFactory = Callable[[Mapping[str, Any], Mapping[str, Any]], Any]

#: How a scaling factory is called (checked against its signature when it is registered).
FACTORY_CALL = Call(("rope_dict", "config_dict"))

#: rope type -> (a zero-argument factory of) its scaling factory: posenc's one :class:`~posenc.registry.Registry`
SCALING_FACTORIES: Registry[ScalingFactory] = Registry("scaling factory", callable, calls=(FACTORY_CALL,))


def register_scaling(rope_type: str, factory: ScalingFactory, *, replace: bool = False) -> None:
    """Make :func:`posenc.from_hf_config` read ``rope_type`` with ``factory``.

    Args:
        rope_type: the name in a config's ``rope_type`` (or legacy ``type``).
        factory: ``factory(rope_dict, config_dict)`` returning a scaling or None.
        replace: allow replacing a registered type (the built-ins too).

    Raises:
        PosEncError: a name that is not a short printable word
            (:func:`posenc.registry.check_name`), a factory that is not
            callable or whose signature cannot take ``(rope_dict,
            config_dict)``, or a name already registered without ``replace``.

    >>> from posenc import Linear, from_hf_config
    >>> register_scaling("halved", lambda rope, cfg: Linear(2.0), replace=True)
    >>> from_hf_config({"head_dim": 8, "rope_parameters": {"rope_type": "halved"}}).scaling
    Linear(factor=2.0)
    """
    if not callable(factory) or isinstance(factory, type):
        raise PosEncError(f"factory must be callable as factory(rope_dict, config_dict), got {show_value(factory)}")
    if not isinstance(replace, bool):
        raise PosEncError(f"replace must be True or False, got {show_value(replace)}")
    try:
        SCALING_FACTORIES.register(rope_type, factory, replace=replace)
    except PosEncError as exc:
        if "already registered" not in str(exc):
            raise
        raise PosEncError(f"{exc}; pass replace=True to replace it") from None


def scaling_factory(rope_type: str) -> ScalingFactory | None:
    """The factory registered for ``rope_type`` (its raw errors PosEncError naming ``rope_type``), or None."""
    if not isinstance(rope_type, str) or rope_type not in SCALING_FACTORIES:
        return None
    return functools.partial(SCALING_FACTORIES.call, rope_type)


def scaled_by(scaling: Any, dim: int, base: Decimal, seq_len: int | None) -> Scaled:
    """``scaling.scale(dim, base, seq_len)``, checked: a :class:`Scaled` of ``dim/2`` Decimal frequencies in range.

    What :func:`posenc.rope_frequencies` reads from any scaling, a user's
    included: junk there is a PosEncError naming the scaling, never an
    AttributeError deep in the ladder or a ladder of the wrong length.
    """
    call = f"{show_value(scaling)}.scale({dim}, {show_value(float(base))}, {show_value(seq_len)})"
    out = returned(guarded(call, scaling.scale, dim, base, seq_len), Scaled, call)
    freqs, base_out, af = out.inv_freq, out.base, out.attention_factor
    if not isinstance(freqs, (list, tuple)) or len(freqs) != dim // 2 or not all(
            isinstance(w, Decimal) and w.is_finite() for w in freqs):
        raise PosEncError(f"{call} returned inv_freq {show_value(freqs)}: expected {dim // 2} finite Decimals "
                          "(one per rotary pair)")
    if not (isinstance(base_out, Decimal) and base_out.is_finite()) or isinstance(af, bool) or not (
            isinstance(af, (int, float, Decimal)) and math.isfinite(af)):
        raise PosEncError(f"{call} returned base {show_value(base_out)} and attention factor {show_value(af)}: "
                          "expected a finite Decimal and a finite real number")
    return checked_scaled(scaling, dim, list(freqs), out.base, out.attention_factor)


def registered_rope_types() -> tuple[str, ...]:
    """Every registered rope type, in registration order."""
    return tuple(SCALING_FACTORIES)


def is_scaling(obj: Any) -> bool:
    """True for an object :func:`posenc.rope_frequencies` can ask for frequencies (see the module doc)."""
    if not (callable(getattr(obj, "scale", None)) and callable(getattr(obj, "cache_key", None))):
        return False
    if isinstance(obj, type) or not isinstance(obj, Hashable):
        return False
    try:
        hash(obj)
    except TypeError:
        return False
    return True


for _name, _reader in READERS.items():  # the built-ins, registered as a user's factory would be
    register_scaling(_name, _reader)
