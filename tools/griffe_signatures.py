"""A Griffe extension (mkdocs.yml): the torch and JAX forms show the NumPy function's parameters, as Python does.

A framework's form of a public function (``posenc.jax.alibi_bias``) is a
``def f(*args, **kwargs)`` decorated with
``@parameters_of(numpy_form, dtype=jnp.float32)``
(:func:`posenc.support.signatures.parameters_of`): at import it becomes a
function with the NumPy function's parameters, that framework's defaults
replaced. Griffe reads the source, not the imported function, so without
this extension the reference pages would show ``(*args, **kwargs)``. Here,
once the package is loaded, each such form takes the template's parameters
from Griffe's own reading of the template, the defaults named in the
decorator replaced by their source text (``jnp.float32``): the page shows
what ``inspect.signature`` of the imported function shows.
"""

from __future__ import annotations

from typing import Any

import griffe

#: the decorator's path, as Griffe resolves it
DECORATOR = "posenc.support.signatures.parameters_of"


class ParametersOf(griffe.Extension):
    """Give each ``@parameters_of(template, **defaults)`` function the template's parameters."""

    def on_function(self, *, func: griffe.Function, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        for decorator in func.decorators:
            call = decorator.value
            if not isinstance(call, griffe.ExprCall) or _path(call.function) != DECORATOR:
                continue
            template_expr, *rest = call.arguments
            template = loader.modules_collection.get_member(_path(template_expr))
            if isinstance(template, griffe.Alias):
                template = template.final_target
            defaults = {arg.name: arg.value for arg in rest if isinstance(arg, griffe.ExprKeyword)}
            params = [griffe.Parameter(p.name, annotation=p.annotation, kind=p.kind,
                                       default=defaults.get(p.name, p.default)) for p in template.parameters]
            for p in params:
                p.function = func
            func.parameters = griffe.Parameters(*params)
            return


def _path(expr: Any) -> str:
    return str(getattr(expr, "canonical_path", expr))
