"""The open registry of RoPE scalings: rope type name -> factory, as transformers' ``ROPE_INIT_FUNCTIONS``.

:func:`register_scaling` makes :func:`posenc.from_hf_config` read a new
``rope_type`` in one place; the built-in types (:mod:`posenc.rope.hf_scalings`)
are registered the same way. A factory is called as ``factory(rope_dict,
config_dict)``: ``rope_dict`` is the model's (or one layer type's) rope dict,
``config_dict`` the language model's config with the family's legacy keys and
defaults already resolved (:mod:`posenc.rope.hf_families`). It returns a
scaling (an object with ``scale(dim, base, seq_len)`` and
``cache_key(seq_len)``, hashable, as :mod:`posenc.rope.scaling`'s variants) or
None for plain RoPE, and raises :class:`~posenc.PosEncError` for keys it does
not understand.

What any scaling must offer (the gate of :func:`posenc.rope_frequencies`) is
:func:`is_scaling`: the built-ins and any object with those two methods.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import Any

from .._compile import outside_compile
from ..errors import PosEncError, show_value
from ..registry import Registry

__all__ = [
    "SCALING_FACTORIES",
    "ScalingFactory",
    "is_scaling",
    "register_scaling",
    "registered_rope_types",
    "scaling_factory",
]

#: ``factory(rope_dict, config_dict) -> scaling | None``
ScalingFactory = Callable[[Mapping[str, Any], Mapping[str, Any]], Any]

#: rope type -> (a zero-argument factory of) its scaling factory: posenc's one :class:`~posenc.registry.Registry`
SCALING_FACTORIES: Registry[ScalingFactory] = Registry("rope_type")


@outside_compile("register_scaling")
def register_scaling(rope_type: str, factory: ScalingFactory, *, replace: bool = False) -> None:
    """Make :func:`posenc.from_hf_config` read ``rope_type`` with ``factory``.

    Args:
        rope_type: the name in a config's ``rope_type`` (or legacy ``type``).
        factory: ``factory(rope_dict, config_dict)`` returning a scaling or None.
        replace: allow replacing a registered type (the built-ins too).

    Raises:
        PosEncError: a name that is not a non-empty string, a factory that is
            not callable, or a name already registered without ``replace``.

    >>> from posenc import Linear, from_hf_config
    >>> register_scaling("halved", lambda rope, cfg: Linear(2.0), replace=True)
    >>> from_hf_config({"head_dim": 8, "rope_parameters": {"rope_type": "halved"}}).scaling
    Linear(factor=2.0)
    """
    if not isinstance(rope_type, str) or not rope_type:
        raise PosEncError(f"rope_type must be a non-empty string, got {show_value(rope_type)}")
    if not callable(factory):
        raise PosEncError(f"factory must be callable as factory(rope_dict, config_dict), got {show_value(factory)}")
    if not isinstance(replace, bool):
        raise PosEncError(f"replace must be True or False, got {show_value(replace)}")
    try:
        SCALING_FACTORIES.add(rope_type, lambda: factory, key=factory, replace=replace)
    except PosEncError as exc:
        raise PosEncError(f"{exc}; pass replace=True to replace it") from None


def scaling_factory(rope_type: str) -> ScalingFactory | None:
    """The factory registered for ``rope_type``, or None."""
    if not isinstance(rope_type, str) or rope_type not in SCALING_FACTORIES:
        return None
    return SCALING_FACTORIES[rope_type]()


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
