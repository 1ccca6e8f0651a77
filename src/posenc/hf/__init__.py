"""posenc and Hugging Face transformers, in one room: the one-line patch and the reading of checkpoints' configs.

- :mod:`.patching`: :func:`patch` / :func:`unpatch` (extra ``posenc[hf]``;
  torch and transformers are imported when called);
- :mod:`.config`: :func:`posenc.from_hf_config` (NumPy only), with what each
  family means by its keys (:mod:`.families`), the built-in ``rope_type``
  readers (beside each scaling, :mod:`posenc.rope.scaling`) and where each transformers release keeps the
  rows (:mod:`.versions`);
- the torch replacements the patch installs: :mod:`.rotary`, :mod:`.tables`, :mod:`.alibi`.
"""

from .patching import patch, unpatch

__all__ = ["patch", "unpatch"]
