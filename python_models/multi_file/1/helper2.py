"""Imported by model.py with `from . import helper2` (model.py lives in package `1`)."""


def shift(x):
    return x + 1
