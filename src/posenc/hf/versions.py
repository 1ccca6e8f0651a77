"""Which transformers releases :func:`posenc.hf.patch` is tested with, and where each release holds a family's rows.

Data, not detection: :func:`posenc.hf.patch` finds a model's RoPE by what
its modules hold (an ``inv_freq`` buffer and a forward that takes
``position_ids``; an ``embed_positions`` table; RoFormer's sinusoidal
embedding) and then asks :func:`expected_holder` whether that is where this
transformers release keeps the family's rows. A holder posenc has not
verified for the family and release is refused by name (the family and the
transformers version), never guessed.

The facts, from each release's ``models/<family>/modeling_<family>.py``
(every release named here is installed and tested by ``make test``: the
matrix of ``requirements-hf/``):

- GPT-J and CodeGen up to 5.23 keep the ``[sin | cos]`` table on the
  attention (``embed_positions``: a plain tensor before 5.x, a buffer in
  5.23). GPT-J's attention reads it through ``_get_embed_positions``; CodeGen's
  indexes it directly. GPT-J casts the gathered rows to the key's dtype
  from 4.57 on (4.45 does not); CodeGen never casts.
- From 5.24 both keep it on a ``GPTJRotaryEmbedding`` /
  ``CodeGenRotaryEmbedding`` module (buffer ``embed_positions``, no
  ``inv_freq``) whose forward ``(x, position_ids)`` returns ``(sin, cos)``;
  GPT-J's casts them to ``x``'s dtype, CodeGen's does not.
- RoFormer keeps a ``RoFormerSinusoidalPositionalEmbedding`` (an
  ``nn.Embedding`` ``[n, head_dim]`` of ``[sin | cos]``, computed in float64
  by NumPy) called as ``(input_ids_shape, past_key_values_length)`` in every
  tested release (4.57 adds an optional ``position_ids``; 5.24 renames the
  second parameter ``cache_length``).
- Every other family posenc reads: a rotary module holding ``inv_freq``,
  called as ``(x, position_ids[, layer_type])``. transformers 4.45's Phi-3,
  Gemma, Gemma 2 and DBRX modules also take ``seq_len`` (Phi-3's LongRoPE
  picks its factors by it); 4.45's Mixtral module takes ``(x, seq_len)``
  and no ``position_ids``. 4.57's Gemma 3 keeps two modules (``rotary_emb``,
  ``rotary_emb_local``: told apart by their ``inv_freq``), and its Qwen2-VL,
  Qwen2.5-VL and GLM-4.1V modules return each position axis's rows
  ``[3, b, s, d]``, the attention picking the sections (5.x picks them in
  the module).
- BLOOM's ALiBi slopes: inside ``build_alibi_tensor`` in 4.x, in
  ``_get_alibi_slopes`` in 5.x (:mod:`posenc.hf.alibi` patches either).
"""

from __future__ import annotations

import re

from ..errors import PosEncError

__all__ = ["ATTENTION_BUFFER", "ATTENTION_TABLE", "ROTARY", "ROTARY_TABLE", "SINUSOIDAL", "TESTED", "check_release",
           "expected_holder", "release", "span_in_words"]

#: the transformers releases ``make test`` runs the patch's tests under (``requirements-hf/``; 5.23.0 is the
#: main environment's, ``requirements-dev.txt``)
TESTED = ("4.45.0", "4.57.6", "5.23.0", "5.24.0", "5.25.0")

# forward(x, position_ids[, layer_type]) -> (cos, sin) or complex rows
ROTARY = "a rotary module (inv_freq)"
ATTENTION_TABLE = "the attention's table, read through _get_embed_positions"  # GPT-J <= 5.23
ATTENTION_BUFFER = "the attention's table, indexed directly"  # CodeGen <= 5.23
# GPT-J, CodeGen >= 5.24: embed_positions only; forward(x, position_ids) -> (sin, cos)
ROTARY_TABLE = "a rotary module holding the table (embed_positions)"
SINUSOIDAL = "a sinusoidal embedding"  # RoFormer: nn.Embedding of [sin | cos]

_FLOOR = (4, 45)
_NEWEST = (5, 25)  # the newest tested release series: 5.25.x

# model_type -> ((first release, holder), ...) in release order; a family not named here holds a ROTARY module
_HOLDERS: dict[str, tuple[tuple[tuple[int, int, int], str], ...]] = {
    "gptj": (((4, 45, 0), ATTENTION_TABLE), ((5, 24, 0), ROTARY_TABLE)),
    "codegen": (((4, 45, 0), ATTENTION_BUFFER), ((5, 24, 0), ROTARY_TABLE)),
    "roformer": (((4, 45, 0), SINUSOIDAL),),
}


def release(version: str) -> tuple[int, int, int]:
    """``"5.24.0"`` -> ``(5, 24, 0)`` (a suffix such as ``.dev0`` or ``+local`` is dropped).

    >>> release("4.57.6"), release("5.26.0.dev0")
    ((4, 57, 6), (5, 26, 0))
    """
    m = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", str(version))
    if m is None:
        raise PosEncError(f"transformers version {version!r} is not a release number (expected like '5.24.0')")
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


def span_in_words() -> str:
    """The releases posenc.hf is tested with, in words."""
    return f"{TESTED[0]} through the {_NEWEST[0]}.{_NEWEST[1]} series"


def check_release(version: str, model_type: str) -> None:
    """Refuse (by name) a transformers release outside the tested span: before 4.45 or after the 5.25 series.

    >>> check_release("5.24.0", "llama")
    >>> check_release("5.26.0", "llama")
    Traceback (most recent call last):
        ...
    posenc.errors.PosEncError: model_type 'llama' under transformers 5.26.0: posenc.hf is tested with transformers \
4.45.0 through the 5.25 series, not 5.26.0; not patched (pip install 'transformers<5.26')
    """
    r = release(version)[:2]
    if r < _FLOOR or r > _NEWEST:
        hint = "transformers>=4.45" if r < _FLOOR else f"transformers<{_NEWEST[0]}.{_NEWEST[1] + 1}"
        raise PosEncError(f"model_type {model_type!r} under transformers {version}: posenc.hf is tested with "
                          f"transformers {span_in_words()}, not {version}; not patched (pip install '{hint}')")


def expected_holder(model_type: str, version: str) -> str:
    """Where transformers ``version`` keeps ``model_type``'s rows: one of the holder names of this module.

    >>> expected_holder("gptj", "5.23.0")
    "the attention's table, read through _get_embed_positions"
    >>> expected_holder("gptj", "5.24.0"), expected_holder("llama", "4.45.0")
    ('a rotary module holding the table (embed_positions)', 'a rotary module (inv_freq)')
    """
    r = release(version)
    held = ROTARY
    for first, holder in _HOLDERS.get(model_type, ()):
        if r >= first:
            held = holder
    return held
