"""Typed functions whose tool schemas mcp_sync and the official SDK's MCPServer must derive alike.

Plain Python with pydantic only, so both sides can import it.
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Literal

from pydantic import BaseModel, Field
from typing_extensions import TypedDict


class Unit(str, Enum):
    CELSIUS = "celsius"
    FAHRENHEIT = "fahrenheit"


class Address(BaseModel):
    street: str
    city: str = Field(description="City name")
    zip_code: str | None = None


class Forecast(BaseModel):
    city: str
    temperature: float
    unit: Unit


class Totals(TypedDict):
    count: int
    total: float


def add(a: int, b: int = 0) -> int:
    """Add two integers."""
    return a + b


def greet(name: Annotated[str, Field(description="Who to greet")], excited: bool = False) -> str:
    """Greet someone."""
    return f"Hello, {name}{'!' if excited else '.'}"


def forecast(city: str, days: int = 1, unit: Unit = Unit.CELSIUS) -> Forecast:
    """Weather forecast for a city."""
    return Forecast(city=city, temperature=21.5, unit=unit)


def ship(address: Address, items: list[str], express: bool | None = None) -> dict[str, str]:
    """Ship items to an address."""
    return {"status": "queued", "to": address.city, "items": ",".join(items)}


def summarize(values: list[float], mode: Literal["sum", "mean"] = "sum") -> Totals:
    """Sum or average numbers."""
    total = sum(values) if mode == "sum" else sum(values) / max(len(values), 1)
    return {"count": len(values), "total": total}


def tags(labels: list[str] | None = None, limit: Annotated[int, Field(ge=1, le=10)] = 5) -> list[str]:
    """Up to ``limit`` labels."""
    return (labels or [])[:limit]


def untyped(x, y=2):  # type: ignore[no-untyped-def]
    """No annotations at all."""
    return str(x) + str(y)


FUNCTIONS = [add, greet, forecast, ship, summarize, tags, untyped]
