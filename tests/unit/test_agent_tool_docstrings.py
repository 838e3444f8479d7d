"""``@tool`` reads docstrings in Google, NumPy and Sphinx style (``agent.tools.parse_docstring``).

The tool's description is the docstring's text before its first section; each parameter's
text becomes the ``description`` of its property in the input schema, unless a pydantic
``Field(description=...)`` in the signature says otherwise (the Field wins). A documented
name the function does not take is left out, with a ``UserWarning`` at the function.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field

from agent import Tool, tool
from agent.tools import parse_docstring

DESCRIPTION = "Search the catalogue for products.\n\nMatches names and descriptions, newest first."
PARAMS = {
    "query": "What to look for, in a few words.",
    "limit": "How many products to return.",
    "in_stock": "Only products in stock.",
}

GOOGLE = """Search the catalogue for products.

Matches names and descriptions, newest first.

Args:
    query: What to look for,
        in a few words.
    limit (int): How many products
        to return.

Keyword Args:
    in_stock (bool, optional): Only products in stock.

Returns:
    list[str]: The products' names.

Raises:
    ValueError: When the query is empty.

Example:
    >>> search("lamp")
"""

NUMPY = """Search the catalogue for products.

Matches names and descriptions, newest first.

Parameters
----------
query : str
    What to look for,
    in a few words.
limit : int
    How many products
    to return.

Other Parameters
----------------
in_stock : bool, optional
    Only products in stock.

Returns
-------
list of str
    The products' names.

Raises
------
ValueError
    When the query is empty.

Notes
-----
The index is rebuilt nightly.

Examples
--------
>>> search("lamp")
"""

SPHINX = """Search the catalogue for products.

Matches names and descriptions, newest first.

:param query: What to look for,
    in a few words.
:type query: str
:param int limit: How many products
    to return.
:keyword in_stock: Only products in stock.
:returns: The products' names.
:rtype: list[str]
:raises ValueError: When the query is empty.
"""


@pytest.mark.parametrize("doc", [GOOGLE, NUMPY, SPHINX], ids=["google", "numpy", "sphinx"])
def test_each_style_gives_the_same_description_and_parameter_texts(doc: str) -> None:
    assert parse_docstring(doc) == (DESCRIPTION, PARAMS)


@pytest.mark.parametrize("doc", [GOOGLE, NUMPY, SPHINX], ids=["google", "numpy", "sphinx"])
def test_a_tool_puts_the_texts_into_its_description_and_schema(doc: str) -> None:
    def search(query: str, limit: int = 10, in_stock: bool = False) -> list[str]:
        return []

    search.__doc__ = doc
    made = tool(search)
    assert made.description == DESCRIPTION
    assert "Parameters" not in made.description and "Returns" not in made.description
    properties = made.definition.parameters["properties"]
    assert {name: p["description"] for name, p in properties.items()} == PARAMS
    assert properties["limit"]["default"] == 10


def test_numpy_names_documented_together_share_the_text() -> None:
    doc = "Move.\n\nParameters\n----------\nx, y : float\n    The target, in metres.\n"
    assert parse_docstring(doc) == (
        "Move.",
        {"x": "The target, in metres.", "y": "The target, in metres."},
    )


def test_google_sections_other_than_parameters_end_the_description() -> None:
    doc = "Delete a file.\n\nNote:\n    There is no undo.\n\nArgs:\n    path: The file.\n"
    assert parse_docstring(doc) == ("Delete a file.", {"path": "The file."})


def test_google_description_lines_and_star_names() -> None:
    doc = "Do this\nacross two lines.\n\nArgs:\n    *values: The values.\n"
    assert parse_docstring(doc) == ("Do this\nacross two lines.", {"values": "The values."})


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        ("", ("", {})),
        ("One line.", ("One line.", {})),
        (
            "Summary.\n\nA paragraph.\n\n    an indented example\n\nAnother paragraph.",
            ("Summary.\n\nA paragraph.\n\n    an indented example\n\nAnother paragraph.", {}),
        ),
        ("Args:\n    x: The x.", ("", {"x": "The x."})),
        (":param x: The x.", ("", {"x": "The x."})),
        ("Parameters\n----------\nx : int\n    The x.", ("", {"x": "The x."})),
        ("Summary.\n\nReturns:\n    The sum.", ("Summary.", {})),
        ("Summary.\n\n:returns: The sum.", ("Summary.", {})),
        ("Summary.\n\nReturns\n-------\nint\n    The sum.", ("Summary.", {})),
        # A parameter with a type and no text has nothing to describe it.
        ("Summary.\n\nParameters\n----------\nx : int\n", ("Summary.", {})),
    ],
    ids=[
        "empty",
        "one-line",
        "paragraphs",
        "only-google-params",
        "only-sphinx-params",
        "only-numpy-params",
        "google-returns",
        "sphinx-returns",
        "numpy-returns",
        "numpy-untyped-text",
    ],
)
def test_odd_docstrings(doc: str, expected: tuple[str, dict[str, str]]) -> None:
    assert parse_docstring(doc) == expected


def test_a_docstring_no_style_reads_is_all_description() -> None:
    # Google's parser refuses an `Args:` entry without a colon; the other styles see no section.
    summary, params = parse_docstring("Do it.\n\nArgs:\n    no colon here")
    assert summary == "Do it.\n\nArgs:\n    no colon here"
    assert params == {}


def test_a_documented_name_the_function_does_not_take_warns_and_is_left_out() -> None:
    def find(query: str) -> str:
        """Find things.

        Args:
            qurey: What to look for.
        """
        return query

    with pytest.warns(UserWarning, match="documents `qurey`, which the function does not") as seen:
        made = tool(find)
    (warning,) = seen.list
    assert Path(warning.filename).name == Path(__file__).name  # points at the function
    assert warning.lineno == find.__code__.co_firstlineno
    assert "description" not in made.definition.parameters["properties"]["query"]
    assert made.description == "Find things."


def test_no_warning_when_every_documented_name_is_a_parameter_or_the_model_is_given() -> None:
    class Input(BaseModel):
        query: str

    def find(query: str) -> str:
        """Find things.

        :param query: What to look for.
        :param other: Not a parameter, but the input model is explicit.
        """
        return query

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        explicit = tool(input_model=Input)(find)
        find.__doc__ = "Find things.\n\n:param query: What to look for."
        tool(find)
    assert "description" not in explicit.definition.parameters["properties"]["query"]


def test_a_field_description_in_the_signature_wins_over_the_docstring() -> None:
    @tool
    def book(
        room: Annotated[str, Field(description="The room's code, as on the door.")],
        nights: int = Field(1, ge=1, description="How many nights."),
        guests: Annotated[int, Field(ge=1)] = 2,
        note: str = Field("", max_length=200),
    ) -> str:
        """Book a room.

        Args:
            room: The room (docstring).
            nights: The nights (docstring).
            guests: How many people stay.
            note: A note for the front desk.
        """
        return room

    assert isinstance(book, Tool)
    properties: dict[str, Any] = book.definition.parameters["properties"]
    assert properties["room"]["description"] == "The room's code, as on the door."
    assert properties["nights"]["description"] == "How many nights."
    assert properties["nights"]["default"] == 1 and properties["nights"]["minimum"] == 1
    # A Field without a description takes the docstring's, and keeps its constraints.
    assert properties["guests"]["description"] == "How many people stay."
    assert properties["guests"]["minimum"] == 1 and properties["guests"]["default"] == 2
    assert properties["note"]["description"] == "A note for the front desk."
    assert properties["note"]["maxLength"] == 200 and properties["note"]["default"] == ""
    assert book.definition.parameters["required"] == ["room"]
    validated = book.validate({"room": "B2"})
    assert (validated.nights, validated.guests, validated.note) == (1, 2, "")  # type: ignore[attr-defined]
