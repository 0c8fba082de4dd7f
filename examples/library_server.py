"""A small library catalogue served over MCP, written with decorators.

Run it as ``python examples/library_server.py`` (stdio), or with the
``mcp-sync`` command: ``mcp-sync run examples/library_server.py``. It shows
tools with structured output, a tool that reports progress, a tool that asks
the user a question (elicitation), a resource template and a prompt.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from mcp_sync import MCP_CODES, Context, MCPError, MCPServer

server = MCPServer("library", "1.0", instructions="Search the catalogue, then borrow books by id.")


class Book(BaseModel):
    id: int
    title: str
    author: str
    year: int
    available: bool = True


CATALOGUE = [
    Book(id=1, title="Structure and Interpretation of Computer Programs", author="Abelson and Sussman", year=1985),
    Book(id=2, title="The Art of Computer Programming", author="Donald Knuth", year=1968),
    Book(id=3, title="Python Tricks", author="Dan Bader", year=2017),
    Book(id=4, title="Fluent Python", author="Luciano Ramalho", year=2015, available=False),
]


class Borrower(BaseModel):
    name: str = Field(description="Your name, as on your library card")
    weeks: int = Field(default=2, ge=1, le=6, description="How many weeks you need the book")


@server.tool(title="Search the catalogue")
def search(
    query: Annotated[str, Field(description="Words to look for in titles and authors")],
    only_available: bool = False,
) -> list[Book]:
    """Find books whose title or author contains the query (case-insensitive)."""
    words = query.lower().split()
    return [
        book
        for book in CATALOGUE
        if all(word in f"{book.title} {book.author}".lower() for word in words)
        and (book.available or not only_available)
    ]


@server.tool
def borrow(book_id: int, ctx: Context) -> str:
    """Borrow a book: asks who you are and for how long."""
    book = next((b for b in CATALOGUE if b.id == book_id), None)
    if book is None:
        raise ValueError(f"no book with id {book_id}")
    if not book.available:
        return f"{book.title!r} is already out."
    answer = ctx.elicit(f"Who is borrowing {book.title!r}?", Borrower)
    if not answer.accepted or answer.data is None:
        return "Nothing borrowed."
    book.available = False
    return f"{book.title!r} is yours for {answer.data.weeks} weeks, {answer.data.name}."


@server.tool
def reindex(ctx: Context) -> int:
    """Rebuild the search index, reporting progress; returns how many books were indexed."""
    for done, book in enumerate(CATALOGUE, start=1):
        if ctx.cancelled.is_set():
            break
        ctx.progress(done, len(CATALOGUE), f"indexed {book.title}")
    ctx.log("info", "index rebuilt")
    return len(CATALOGUE)


@server.resource("books://{book_id}", mime_type="application/json")
def book_record(book_id: int) -> Book:
    """One book's catalogue record."""
    for book in CATALOGUE:
        if book.id == book_id:
            return book
    # NOT_FOUND reaches the client as "resource not found" (-32002), not as an internal error.
    raise MCPError(MCP_CODES.NOT_FOUND, f"no book with id {book_id}", context={"uri": f"books://{book_id}"})


@server.prompt
def recommend(genre: str, audience: Literal["beginner", "expert"] = "beginner") -> str:
    """Ask for a reading recommendation from the catalogue."""
    return f"From the library's catalogue, recommend one {genre} book for a {audience}, and say why."


if __name__ == "__main__":
    server.serve_stdio()
