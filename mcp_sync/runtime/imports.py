"""Importing a large part of mcp_sync at once without the garbage collector walking what the import makes."""

from __future__ import annotations

import gc
import importlib
from types import ModuleType

__all__ = ["import_unwalked"]


def import_unwalked(name: str) -> ModuleType:
    """Import the module ``name`` with the cyclic garbage collector paused, and count what it made as old.

    The first import of the client or the server makes a hundred thousand
    objects or more (pydantic, the wire models, our modules) that live as
    long as the program. Left to the collector, they would be walked some
    sixty times while they are made and found alive each time: about 3% of
    a stdio server's start (``bench/startup_instructions.py``). Instead,
    every object tracked when the import ends goes to the oldest generation
    at once (:func:`gc.freeze` then :func:`gc.unfreeze`), where the next
    full collection looks at them as usual: nothing is kept from the
    collector, and a cycle that dies later is freed. Objects a program
    froze itself (a server that forks its workers) stay frozen: with any
    frozen, the import's objects are left where they are. A collector the
    program disabled stays disabled.

    >>> import_unwalked("json").__name__
    'json'

    An import that fails leaves the collector as it was, too:

    >>> import gc
    >>> import_unwalked("no_such_module_here")
    Traceback (most recent call last):
    ModuleNotFoundError: No module named 'no_such_module_here'
    >>> gc.isenabled(), gc.get_freeze_count()
    (True, 0)
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        return importlib.import_module(name)
    finally:
        if gc.get_freeze_count() == 0:
            gc.freeze()
            gc.unfreeze()
        if collecting:
            gc.enable()
