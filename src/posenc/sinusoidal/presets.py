"""The sinusoid presets by name: the built-ins and those :func:`register_convention` adds; :func:`resolve`.

Every entry point taking ``convention=`` looks a name up here, so a
registered preset works wherever a built-in does (``encode``, ``table``,
``grid``, the torch module).
"""

from __future__ import annotations

from typing import Any

from .._compile import outside_compile
from ..arguments import default, passed
from ..errors import PosEncError
from ..registry import Registry
from .conventions import Convention, Fairseq, HFMarian, Keras, PositionalEncodings, Tensor2Tensor, Vaswani

__all__ = ["NAMES", "get", "register_convention", "resolve"]

#: The presets :func:`get` knows by name: the built-ins, then any :func:`register_convention` adds.
_PRESETS = Registry[Convention]("a posenc.conventions preset", Convention,
                                {c.name: c for c in (Vaswani, Tensor2Tensor, Fairseq, HFMarian, Keras,
                                                     PositionalEncodings)})

#: The built-in preset names (:func:`get` also knows those registered since).
NAMES = tuple(_PRESETS)


@outside_compile("register_convention")
def register_convention(name: str, preset: Any) -> None:
    """Make ``encode(..., convention=name)`` (and every entry point taking a convention) use ``preset``.

    Args:
        name: the new name, 1 to 64 ASCII letters, digits, ``_ . + -``, a letter or
            digit first (:func:`posenc.registry.check_name`); a name is registered
            once (the built-ins' included).
        preset: a :class:`Convention` (frozen, so one instance serves every
            call), or a callable returning one (a preset class at its
            defaults); or an n-D preset
            (:class:`~posenc.sinusoidal.conventions_nd.NdConvention`, or its
            class), which ``encode_nd`` and ``grid`` then find by ``name``.

    >>> register_convention("doc-base-100", Vaswani(base=100.0))
    >>> get("doc-base-100")
    Vaswani(base=100.0, layout='interleaved')
    """
    from .conventions_nd import NdConvention, register_nd  # the n-D family sits above this one

    if isinstance(preset, NdConvention) or (isinstance(preset, type) and issubclass(preset, NdConvention)):
        register_nd(name, preset)
        return
    _PRESETS.register(name, preset)


@outside_compile("conventions.get")
def get(convention: Any) -> Convention:
    """A preset by name (its default settings), or the given preset unchanged.

    >>> get("keras")
    Keras(max_wavelength=10000.0)
    >>> get(Fairseq(padding_idx=0)).padding_idx
    0
    """
    return _PRESETS.get(convention, "convention")


def resolve(convention: Any = None, *, base: Any = default(10000.0),
            layout: Any = default("interleaved")) -> Convention:
    """The convention an entry point with (base, layout, convention) arguments means.

    ``convention=None`` is the seed's formula with ``base`` and ``layout``.
    A preset carries its own base and layout, so passing ``base`` or
    ``layout`` alongside one (even at the default value) is an error rather
    than silently ignored.

    >>> resolve(None, base=100.0, layout="split")
    Vaswani(base=100.0, layout='split')
    """
    if convention is None:
        return Vaswani(base, layout)
    conv = get(convention)
    given = passed(base=base, layout=layout)
    if given:
        raise PosEncError(
            f"base and layout are part of the convention {conv!r}; got {given} (pass the convention alone, "
            "or set them on the preset, e.g. Vaswani(base=..., layout=...))"
        )
    return conv
