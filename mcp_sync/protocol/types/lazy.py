"""How the wire models are loaded on demand: each model's home is the package, and a field's type may come later.

Not part of the models' public names (the package does not star-import it).
"""

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, GetCoreSchemaHandler
from pydantic_core import CoreSchema


def adopt(namespace: dict[str, Any]) -> None:
    """Give each class a module of this package defines the package as its module (call it at the module's end).

    ``mcp_sync.protocol.types.Tool``, wherever it is defined: what shows in
    signatures, reprs and pickles is the path users import from, not a
    file's name that may move; every name is importable from the package
    (``client_features`` through its ``__getattr__``).
    """
    package = __name__.rpartition(".")[0]  # mcp_sync.protocol.types
    for value in list(namespace.values()):
        if isinstance(value, type) and value.__module__ == namespace["__name__"]:
            value.__module__ = package


def build(*models: type[BaseModel]) -> None:
    """Build the validators and serializers of ``models`` now; deferred, each is built at its first use.

    For a moment that has time to spare before the models are needed: a
    client waiting for its server process to start builds the models of its
    first exchanges meanwhile, rather than once the server has answered.

    >>> from mcp_sync.protocol.types import EmptyResult
    >>> build(EmptyResult)
    >>> EmptyResult.__pydantic_complete__
    True
    """
    for model in models:
        model.model_rebuild()


class Later:
    """A field's type that is imported when its model's schema is first built, not when the model is declared.

    For a field whose models a program rarely needs: the module that defines
    them is loaded by the first validation or schema of the model that has
    the field, and the schema is the same as if the type were written out.
    Use it as ``Annotated[Any, Later(load)]``, where ``load`` returns the
    type (importing its module inside); type checkers see the real type
    under ``TYPE_CHECKING``.

    >>> from typing import Annotated
    >>> from pydantic import BaseModel
    >>> class Box(BaseModel):
    ...     size: Annotated[Any, Later(lambda: int)]
    >>> Box(size="3").size
    3
    """

    def __init__(self, load: Callable[[], Any]) -> None:
        self.load = load

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return handler.generate_schema(self.load())
