"""Load an :class:`App` from ``module:attribute`` or ``path/to/file.py:attribute``.

A module is imported as ``python -m`` would: the current folder comes first on ``sys.path``,
so ``stopline run certs_app:app`` finds ``./certs_app.py`` (the console script alone would
not put it there).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

from .automation import App, Automation


class AppLoadError(Exception):
    """The APP argument names nothing stopline can run."""


def _current_folder_importable() -> None:
    here = os.getcwd()
    if "" not in sys.path and here not in sys.path:
        sys.path.insert(0, here)


def load_app(spec: str) -> App:
    module_part, sep, attribute = spec.rpartition(":")
    if not sep or not module_part or not attribute:
        raise AppLoadError(
            f"APP must be module:attribute or path/to/file.py:attribute, not {spec!r}"
        )
    try:
        if module_part.endswith(".py") or "/" in module_part:
            path = Path(module_part).resolve()
            if not path.is_file():
                raise AppLoadError(f"no such file: {module_part}")
            name = f"stopline_app_{abs(hash(str(path)))}"
            loaded = importlib.util.spec_from_file_location(name, path)
            if loaded is None or loaded.loader is None:
                raise AppLoadError(f"cannot import {module_part}")
            module = importlib.util.module_from_spec(loaded)
            sys.modules[name] = module
            loaded.loader.exec_module(module)
        else:
            _current_folder_importable()
            module = importlib.import_module(module_part)
    except AppLoadError:
        raise
    except Exception as exc:
        raise AppLoadError(f"importing {module_part} failed: {type(exc).__name__}: {exc}") from exc
    value: Any = getattr(module, attribute, None)
    if value is None:
        raise AppLoadError(f"{module_part} has no attribute {attribute!r}")
    if callable(value) and not isinstance(value, App | Automation):
        try:
            value = value()
        except Exception as exc:  # e.g. an invalid automation or actor name
            raise AppLoadError(f"{spec} failed: {type(exc).__name__}: {exc}") from exc
    if isinstance(value, App):
        return value
    if isinstance(value, Automation):
        return App([value])
    if isinstance(value, list | tuple) and all(isinstance(v, Automation) for v in value):
        return App(list(value))
    raise AppLoadError(f"{spec} is a {type(value).__name__}, not an App or Automation")
