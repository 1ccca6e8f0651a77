"""``posenc.register(kind, name, obj)``: the one call that names a user's variant for every entry point of a family.

Each family keeps its own registry (:class:`posenc.registry.Registry`: names
checked by :func:`posenc.registry.check_name`, registered once, factories
checked by signature); this is the one door to all of them, so that a new
scaling, sinusoid convention, ALiBi variant, timestep or field preset is
added the same way. The kinds (:data:`KINDS`):

- ``"sinusoid"``: a sinusoid convention (:mod:`posenc.sinusoidal.conventions`)
  or an n-D one (:mod:`posenc.sinusoidal.conventions_nd`), for ``encode``,
  ``table``, ``grid``, ``encode_nd`` and the torch and JAX forms;
- ``"alibi"``: an ALiBi variant (:mod:`posenc.bias.alibi_variants`);
- ``"scaling"``: a reader of a Hugging Face ``rope_type`` for
  :func:`posenc.from_hf_config` (:mod:`posenc.rope.registry`);
- ``"timesteps"``: a timestep preset (:mod:`posenc.timesteps.conventions`);
- ``"field"``: a neural-field preset (:mod:`posenc.fields.conventions`).
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from .errors import PosEncError, show_value

__all__ = ["KINDS", "Kind", "register"]

#: What :func:`register` names.
Kind = Literal["sinusoid", "alibi", "scaling", "timesteps", "field"]

#: The kinds, in :data:`Kind`'s order.
KINDS: tuple[Kind, ...] = get_args(Kind)


def register(kind: Kind, name: str, obj: Any, *, replace: bool = False) -> None:
    """Make ``convention=name`` (or ``rope_type: name`` in a config, for scalings) mean ``obj``.

    Args:
        kind: one of :data:`KINDS`.
        name: 1 to 64 ASCII letters, digits, ``_ . + -``, a letter or digit first;
            a name is registered once per kind (the built-ins' included).
        obj: what the family's own registry takes: a frozen preset or variant
            (or a zero-argument factory of one); for ``"scaling"``, a
            ``factory(rope_dict, config_dict)`` returning a scaling.
        replace: ``"scaling"`` only: replace a registered rope type.

    Raises:
        PosEncError: an unknown kind (naming the kinds), ``replace`` for a kind
            that registers once, and each family's own refusals (the name,
            the object).

    >>> import posenc
    >>> from posenc.bias import Mpt
    >>> posenc.register("alibi", "doc-register-mpt", Mpt(alibi_bias_max=16))
    >>> posenc.alibi_slopes(2, convention="doc-register-mpt").tolist()
    [0.00390625, 1.52587890625e-05]
    >>> posenc.register("bias", "x", Mpt())
    Traceback (most recent call last):
    ...
    posenc.errors.PosEncError: kind must be one of 'sinusoid', 'alibi', 'scaling', 'timesteps', 'field', got 'bias'
    """
    if not isinstance(kind, str) or kind not in KINDS:
        raise PosEncError(f"kind must be one of {', '.join(map(repr, KINDS))}, got {show_value(kind)}")
    if not isinstance(replace, bool):
        raise PosEncError(f"replace must be True or False, got {show_value(replace)}")
    if replace and kind != "scaling":
        raise PosEncError(f"replace=True: a {kind} name is registered once (only scalings may be replaced)")
    if kind == "sinusoid":
        from .sinusoidal.conventions import register_convention

        register_convention(name, obj)
    elif kind == "alibi":
        from .bias.alibi_variants import register_alibi

        register_alibi(name, obj)
    elif kind == "scaling":
        from .rope.registry import register_scaling

        register_scaling(name, obj, replace=replace)
    elif kind == "timesteps":
        from .timesteps.conventions import register as register_timesteps

        register_timesteps(name, obj)
    else:
        from .fields.conventions import register as register_field

        register_field(name, obj)
