"""What posenc.jax takes, checked before any work: its arrays, its positions, the size of what it returns.

Every entry point reads its array arguments through :func:`as_input` (a
torch tensor or another framework's array is refused by name, not met with a
raw TypeError), its positions through :func:`check_traced_positions`, and
sizes its output with :func:`check_output` from the static shapes, so a call
that could not fit is refused in milliseconds, under ``jit`` too.

What can be checked depends on what posenc is given:

- a NumPy array or Python numbers: every value (an integer outside int32, a
  float that float32 does not hold exactly, a NaN or infinity is refused);
- a concrete JAX array: its dtype and every value (the same refusals);
- a traced value (inside ``jit``, ``vmap``, ``grad``): its dtype and shape
  only. JAX has already converted a jit argument to its own dtypes before
  posenc sees it: with ``jax_enable_x64`` off a NumPy int64 array is cut to
  its low 32 bits (2**31 + 5 arrives as −2**31 + 5) and a float64 one rounded
  to float32 (0.1 arrives as float32(0.1)), silently (JAX 0.10 warns only
  when a 64-bit dtype is requested explicitly, as in
  ``jnp.asarray(p, jnp.int64)``); a uint64 arrives as uint32, which is
  refused. The tracer holds no trace of it: :func:`positions` checks host
  positions before they reach ``jit``.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import jax.numpy as jnp
import numpy as np

import jax

from ..errors import PosEncError, show_value
from ..exact.fixed import FLOAT_LIMIT, INT_LIMIT
from ..support.memory import check_size

__all__ = ["as_input", "check_output", "check_traced_positions", "device_memory",
           "is_traced", "positions"]


_WIDENED = ("bfloat16", "float16")  # float dtypes every value of which float32 holds exactly


def is_traced(value: Any) -> bool:
    """Whether ``value`` is a tracer (inside ``jit``, ``vmap``, ``grad``): its values are unknown here."""
    return isinstance(value, jax.core.Tracer)


def as_input(value: Any, name: str) -> jax.Array | np.ndarray:
    """``value`` as a JAX array (traced or not) or a NumPy array; any other array type refused by name.

    JAX arrays, NumPy arrays and scalars, Python numbers and (nested) lists or
    tuples of them are taken; a torch tensor, a TensorFlow or CuPy array, a
    pandas object is a PosEncError naming its type (JAX would meet some with
    a raw TypeError, and read others through ``__array__`` at a copy's cost).

    >>> as_input([1, 2], "positions").dtype.kind
    'i'
    >>> as_input(memoryview(b"ab"), "positions")
    Traceback (most recent call last):
    ...
    posenc.errors.PosEncError: positions must be a JAX array, a NumPy array or Python numbers, got a memoryview ...
    """
    if isinstance(value, (jax.Array, np.ndarray)):
        return value
    if isinstance(value, (np.generic, numbers.Number, list, tuple)):
        try:
            return np.asarray(value)
        except (ValueError, TypeError, OverflowError, RuntimeError) as exc:  # ragged, huge ints, tensors inside
            raise PosEncError(f"{name} must be an array of integers or floats, got {show_value(value)}") from exc
    raise PosEncError(
        f"{name} must be a JAX array, a NumPy array or Python numbers, got {_described(value)}: convert it "
        "first (jnp.asarray(np.asarray(...))), or use posenc.torch for torch tensors"
    )


def _described(value: Any) -> str:
    """``a torch.Tensor of shape (2, 3), dtype torch.float32``: a foreign value in one line, never its repr."""
    kind, module = type(value).__qualname__, type(value).__module__
    text = f"a {kind if module == 'builtins' else module.split('.')[0] + '.' + kind}"
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    try:
        if shape is not None:
            text += f" of shape {tuple(int(n) for n in shape)}"
        if dtype is not None:
            text += f", dtype {show_value(str(dtype))[1:-1]}"
    except (TypeError, ValueError):  # a shape that is not integers: the type says enough
        pass
    return text if shape is not None or dtype is not None else f"{text} ({show_value(value)})"


def positions(values: Any) -> jax.Array:
    """Host positions as a checked JAX array, to pass into ``jax.jit``: refused where JAX would change them.

    ``jax.jit(f)(p)`` converts a NumPy ``p`` to JAX's 32-bit dtypes first
    (``jax_enable_x64`` off), without a word: an int64 2**31 + 5 arrives as
    −2**31 + 5, a float64 0.1 as float32(0.1). Inside the compiled function
    posenc sees an int32 (float32) tracer and cannot tell; passing
    ``positions(p)`` instead checks every value here, on the host.

    Args:
        values: integer or float positions (timesteps, coordinates) ``[...]``:
            a NumPy array, Python numbers, or a concrete JAX array (int64 and
            float64 ones too, with ``jax_enable_x64`` on). A traced value gets
            the checks of its dtype only (its values are unknown).

    Returns:
        int32 ``[...]`` for integers, float32 ``[...]`` for floats (bfloat16
        and float16 widened exactly), the same values.

    Raises:
        PosEncError: for an integer outside int32, a float that is NaN,
            infinite, at or past 2**31 in magnitude, or not held exactly by
            float32, bools, complex numbers or another framework's array.

    >>> import numpy as np
    >>> p = positions(np.arange(3, dtype=np.int64))
    >>> p.dtype, p.tolist()
    (dtype('int32'), [0, 1, 2])
    >>> positions(np.array([2**31 + 5]))
    Traceback (most recent call last):
    ...
    posenc.errors.PosEncError: positions must fit int32 (-2**31 <= p < 2**31, ...), got 2147483653
    """
    return check_traced_positions(values, "positions")


def check_traced_positions(positions: Any, name: str = "positions", limit: float | None = FLOAT_LIMIT) -> jax.Array:
    """positions as a JAX array: int32 or float32, or a traced int64 (``jax_enable_x64`` on) kept as it is.

    Integer positions become int32 (a value outside int32 is refused where
    the values are known; a traced int64 is returned as it is and the rows
    give NaN where it leaves int32); float positions float32 (bfloat16 and
    float16 widened exactly; |p| < ``limit``, else NaN rows; None: every finite
    float32). A NumPy, Python or concrete JAX value is checked here: an integer
    outside int32, a float that float32 does not hold exactly, a NaN or an
    infinity, or one at or past ``limit``, is refused rather than silently moved.
    A float64 JAX array (``jax_enable_x64`` on) is refused by its dtype, traced or not.
    """
    value = as_input(positions, name)
    if isinstance(value, np.ndarray):
        return jnp.asarray(_host(value, name, limit))
    dt = np.dtype(value.dtype)
    if dt.name in _WIDENED:
        value, dt = value.astype(jnp.float32), np.dtype(np.float32)
    if dt.kind == "f":
        if dt.itemsize > 4:
            raise PosEncError(
                f"{name} is {dt} (jax_enable_x64 is on) and posenc.jax computes in 32-bit arithmetic, which would "
                f"round it: pass float32 values ({name}.astype(jnp.float32), if that rounding is meant), integers, "
                "or use the NumPy API for float64"
            )
        if not is_traced(value):
            _check_floats(value, name, limit)
        return value
    if dt.kind == "i" or (dt.kind == "u" and dt.itemsize < 4):
        if dt.itemsize <= 4:
            return value.astype(jnp.int32)
        if is_traced(value):  # int64 under x64: the values are unknown here; the rows mask what leaves int32
            return value
        with jax.ensure_compile_time_eval():  # a concrete value closed over by a jitted function: read, not staged
            if value.size and (int(value.min()) < -INT_LIMIT or int(value.max()) >= INT_LIMIT):
                raise _outside_int32(name, np.asarray(value))
        return value.astype(jnp.int32)
    if dt.kind == "u":
        raise PosEncError(f"{name} must be signed integers (int32, or int64 values within int32), got dtype {dt}")
    raise PosEncError(f"{name} must be integers or floats, got dtype {dt}")


def _outside_int32(name: str, host: np.ndarray) -> PosEncError:
    bad = host[(host < -INT_LIMIT) | (host >= INT_LIMIT)]
    return PosEncError(f"{name} must fit int32 (-2**31 <= p < 2**31, the 32-bit exact path's range), "
                       f"got {show_value(bad.reshape(-1)[0])}")


def _not_finite(name: str, limit: float | None, bad: Any) -> PosEncError:
    rule = "finite" if limit is None else "finite with |p| < 2**31 (the 32-bit exact path's range)"
    return PosEncError(f"{name} must be {rule}, got {show_value(bad)}")


def _check_floats(value: jax.Array, name: str, limit: float | None) -> None:
    """A concrete float32 JAX array's values: finite, and below ``limit`` in magnitude.

    Evaluated at trace time: a concrete array closed over by a jitted function
    (a model's constant) is known, but jnp operations on it would otherwise be
    staged into the program, and their result unreadable here.
    """
    with jax.ensure_compile_time_eval():
        ok = jnp.isfinite(value) if limit is None else jnp.abs(value) < limit  # NaN compares False
        fine = bool(ok.all())
    if not fine:
        host = np.asarray(value)
        raise _not_finite(name, limit, host[~np.asarray(ok)].reshape(-1)[0])


def _host(host: np.ndarray, name: str, limit: float | None) -> np.ndarray:
    """A NumPy value's positions, every value checked: int32, or float32 that holds them exactly."""
    if host.dtype.name == "bfloat16":
        host = host.astype(np.float32)
    if host.dtype.kind not in "iuf":
        raise PosEncError(f"{name} must be integers or floats, got dtype {host.dtype} ({show_value(host)})")
    if host.dtype.kind in "iu":
        if host.size and (host.min() < -INT_LIMIT or host.max() >= INT_LIMIT):
            raise _outside_int32(name, host)
        return host.astype(np.int32)
    finite = np.isfinite(host) if limit is None else np.abs(host) < limit
    if not finite.all():
        raise _not_finite(name, limit, host[~finite].reshape(-1)[0])
    with np.errstate(over="ignore"):  # past float32's range (limit None): inf, which is not equal
        narrow = host.astype(np.float32)
    if host.dtype.itemsize > 4 and not np.array_equal(narrow, host):
        raise PosEncError(
            f"{name} must be float32 values: posenc.jax computes in 32-bit arithmetic, so a float64 value "
            f"such as {show_value(host[narrow != host].reshape(-1)[0])} would be rounded before any encoding; "
            "pass integers, or float32 values"
        )
    return narrow


def device_memory() -> int | None:
    """The memory of JAX's default device where it reports one (a GPU's, a TPU's), else None (the host's)."""
    try:
        device = jax.devices()[0]
        stats = None if device.platform == "cpu" else device.memory_stats()
    except (RuntimeError, AttributeError, TypeError, ValueError):  # no backend, or one that reports nothing
        return None
    have = (stats or {}).get("bytes_limit")
    return int(have) if have else None


def check_output(shape: Sequence[int], what: str, *, work: int | None = None, dtype: Any = np.float32) -> None:
    """Refuse at once an output (and its working arrays) larger than the device's memory.

    Shapes are static under ``jit``, so this runs at trace time too: a call
    that could not fit is a PosEncError naming the shape and the bytes, in
    milliseconds, not an out-of-memory error (or an abort) after seconds of
    work. ``work`` defaults to twice the float32 output: the sin and cos
    rows, and an eager call's copy while they are placed.
    """
    out = int(np.prod([int(n) for n in shape], dtype=object)) * 4
    check_size(shape, dtype, what, work=2 * out if work is None else work, have=device_memory())
