"""Request/response parameters: a dict of str -> bool/int/str, carried as a JSON string."""

import json

from .errors import TritonModelException


def params_to_json(params):
    """JSON text of user-supplied parameters; None when there are none to carry."""
    if params is None:
        return None
    if not isinstance(params, dict):
        # Triton's text names the C++ type as the compiler mangles it (pybind11::dict).
        raise TritonModelException(f"Expect N8pybind114dictE, got {type(params)}")
    for key, value in params.items():
        if not isinstance(key, str):
            raise TritonModelException(f"Expect parameters keys to have type str, found type {type(key)}")
        if not isinstance(value, (bool, int, str)):
            raise TritonModelException(f"Expect parameters values to have type bool/int/str, found type {type(value)}")
    return json.dumps(params) if params else None
