"""posenc's version: one place, read by the package, the command and the pages (pyproject.toml names the same)."""

__all__ = ["__version__"]

__version__ = "0.1.0"
