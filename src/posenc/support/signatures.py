"""One parameter list for a function every backend has: written in NumPy's ``def``, read by the others'.

posenc's public functions exist three times, as :func:`posenc.alibi_bias`,
:func:`posenc.torch.alibi_bias` and :func:`posenc.jax.alibi_bias`, with one
parameter list and one set of defaults (only the dtype's differs: each
framework's float32); each is a generic function (:mod:`posenc.bias.functions`,
…) bound to its backend. The parameter list is written once, in the NumPy
function's ``def`` (the template: what the reference pages and an editor
show). A torch or JAX form is a ``def`` with its own docstring and body,
``(*args, **kwargs)`` passed to the generic function, and
:func:`parameters_of` gives it the template's parameters: it generates the
function that takes them, as :mod:`dataclasses` generates ``__init__`` from
the fields, so a call is checked by Python itself (its own messages), the
signature is a real one (``inspect``, ``help``), and nothing is added per
call but one call.

mypy and an editor read the parameters through the decorator's type (a
:class:`typing.ParamSpec`), the reference pages through the mkdocstrings
extension ``tools/griffe_signatures.py``.

>>> def scaled(x, *, factor=2, dtype="float32"):
...     '''The template: NumPy's.'''
>>> @parameters_of(scaled, dtype="bfloat16")
... def scaled(*args, **kwargs):
...     '''Another framework's form.'''
...     return args, kwargs
>>> import inspect
>>> str(inspect.signature(scaled)), scaled(3), scaled.__doc__
("(x, *, factor=2, dtype='bfloat16')", ((3,), {'factor': 2, 'dtype': 'bfloat16'}), "Another framework's form.")
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

__all__ = ["parameters_of"]

P = ParamSpec("P")
R = TypeVar("R")

_KINDS = inspect.Parameter


def parameters_of(template: Callable[P, Any], **defaults: Any) -> Callable[[Callable[..., R]], Callable[P, R]]:
    """A decorator giving a ``def`` taking ``(*args, **kwargs)`` the parameters of ``template``, ``defaults`` replaced.

    The function made takes the template's parameters (names, kinds, order,
    annotations, defaults) and calls the decorated one with them: positional
    parameters by position, keyword-only ones by name, ``*args`` and
    ``**kwargs`` as they come. It keeps the decorated function's name,
    module, docstring and return annotation; ``__signature_of__`` names the
    template (its module is where the parameters' annotations are read).

    Args:
        template: the NumPy public function.
        **defaults: parameters whose default this framework gives its own
            (``dtype=jnp.float32``); each must be a parameter of the template.

    Raises:
        TypeError: a name in ``defaults`` that the template lacks.
    """
    sig = inspect.signature(template)
    unknown = sorted(set(defaults) - set(sig.parameters))
    if unknown:
        raise TypeError(f"parameters_of: {template.__qualname__} has no parameters {unknown}")
    params = [p.replace(default=defaults[p.name]) if p.name in defaults else p for p in sig.parameters.values()]

    def decorate(body: Callable[..., R]) -> Callable[P, R]:
        made = _generate(body.__name__, params, body)
        # the body's module as the globals: doctest finds the docstring's examples there (the code reads none)
        form = types.FunctionType(made.__code__, body.__globals__, body.__name__, made.__defaults__,
                                  made.__closure__)
        form.__kwdefaults__ = made.__kwdefaults__
        for attr in ("__module__", "__qualname__", "__doc__"):  # not __wrapped__: the signature is the made one
            setattr(form, attr, getattr(body, attr))
        form.__signature_of__ = template  # type: ignore[attr-defined]  # where the annotations' names are read
        form.__annotations__ = {**{p.name: p.annotation for p in params if p.annotation is not _KINDS.empty},
                                "return": body.__annotations__.get("return", sig.return_annotation)}
        return form

    return decorate


def _generate(name: str, params: list[inspect.Parameter], body: Callable[..., Any]) -> types.FunctionType:
    """``def name(<params>): return _body(<arguments>)``, each default the value given."""
    heads: list[str] = []
    passes: list[str] = []
    values: dict[str, Any] = {}
    star = False
    for i, p in enumerate(params):
        default = ""
        if p.default is not _KINDS.empty:
            values[f"_d_{p.name}"] = p.default
            default = f"=_d_{p.name}"
        if p.kind is _KINDS.KEYWORD_ONLY and not star:
            heads.append("*")
            star = True
        if p.kind is _KINDS.VAR_POSITIONAL:
            heads.append(f"*{p.name}")
            passes.append(f"*{p.name}")
            star = True
        elif p.kind is _KINDS.VAR_KEYWORD:
            heads.append(f"**{p.name}")
            passes.append(f"**{p.name}")
        elif p.kind is _KINDS.KEYWORD_ONLY:
            heads.append(f"{p.name}{default}")
            passes.append(f"{p.name}={p.name}")
        else:
            heads.append(f"{p.name}{default}")
            passes.append(p.name)
        if p.kind is _KINDS.POSITIONAL_ONLY and (i + 1 == len(params) or params[i + 1].kind is not p.kind):
            heads.append("/")
    source = (f"def _make(_body, {', '.join(['_', *values])}):\n"
              f"    def {name}({', '.join(heads)}):\n"
              f"        return _body({', '.join(passes)})\n"
              f"    return {name}")
    scope: dict[str, Any] = {}
    exec(compile(source, f"<posenc parameters of {name}>", "exec"), scope)  # the source is built above
    made: types.FunctionType = scope["_make"](body, None, *values.values())
    return made
