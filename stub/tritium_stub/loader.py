"""Import model.py the way Triton does (docs/protocol-notes.md, "How model.py is imported")."""

import importlib
import os


class StubError(Exception):
    """An error whose text is reported verbatim (Triton's PythonBackendException)."""


def import_model(model_file, runtime_dir=None):
    """Import `<version>.<stem>` and return the module; for a Python-based backend (a
    model.py in the backend directory, which main.py put on sys.path), the module `model`."""
    if runtime_dir is not None:
        return importlib.import_module("model")
    file_name = os.path.basename(model_file)
    if not file_name.endswith(".py"):
        raise StubError(f"Model name must end with '.py'. Model name is \"{file_name}\".")
    version = os.path.basename(os.path.dirname(model_file))
    return importlib.import_module(f"{version}.{file_name[:-3]}")
