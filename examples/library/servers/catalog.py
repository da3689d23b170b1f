"""The library's catalog, an MCP server over stdio: books with their copies, and loans.

Each episode starts it afresh; the task's seed for the `catalog` env arrives as JSON in the
AGENT_ENV_SEED variable: {"books": [{"id", "title", "author", "copies"}], "loans": [{"book_id",
"member"}]}.
"""

from __future__ import annotations

import json
import os
from typing import Annotated

from mcp.server.fastmcp import FastMCP
from pydantic import Field

_seed = json.loads(os.environ.get("AGENT_ENV_SEED") or "{}")
BOOKS: dict[str, dict[str, object]] = {book["id"]: dict(book) for book in _seed.get("books", [])}
LOANS: list[dict[str, str]] = [dict(loan) for loan in _seed.get("loans", [])]

server = FastMCP("catalog", log_level="WARNING")

BookId = Annotated[str, Field(description="The book's id, such as B2.")]
Member = Annotated[str, Field(description="The member's name.")]


def _free(book_id: str) -> int:
    lent = sum(1 for loan in LOANS if loan["book_id"] == book_id)
    return int(BOOKS[book_id]["copies"]) - lent  # type: ignore[call-overload]


@server.tool()
def find_books(
    query: Annotated[str, Field(description="Words of the title or of the author's name.")],
) -> list[dict]:
    """Find the books whose title or author holds the query, each with how many copies are free."""
    words = query.lower()
    return [
        {**book, "free": _free(book_id)}
        for book_id, book in BOOKS.items()
        if words in str(book["title"]).lower() or words in str(book["author"]).lower()
    ]


@server.tool()
def lend_book(book_id: BookId, member: Member) -> str:
    """Lend a free copy of a book to a member."""
    if book_id not in BOOKS:
        raise ValueError(f"no book {book_id}; find_books gives the ids")
    if _free(book_id) < 1:
        raise ValueError(f"every copy of {BOOKS[book_id]['title']} is lent out")
    LOANS.append({"book_id": book_id, "member": member})
    return f"lent {BOOKS[book_id]['title']} to {member}"


@server.tool()
def return_book(book_id: BookId, member: Member) -> str:
    """Take back a book a member returns."""
    loan = {"book_id": book_id, "member": member}
    if loan not in LOANS:
        raise ValueError(f"{member} has no loan of {book_id}")
    LOANS.remove(loan)
    return f"{member} returned {BOOKS[book_id]['title']}"


@server.tool()
def loans() -> list[dict]:
    """Every book on loan, and to whom."""
    return list(LOANS)


if __name__ == "__main__":
    server.run()
