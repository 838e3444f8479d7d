"""``ResponseFormat.from_model(model, strict=True)``: a schema OpenAI's strict mode accepts.

Strict structured outputs take a subset of JSON Schema: every object closed
(``additionalProperties: false``) with every property in ``required``, optional values as
``anyOf [T, null]``, a few keywords only, ``$ref`` alone. The tests walk the converted schemas
for those rules, validate the models' instances against them with ``jsonschema``, and compare
them with the OpenAI SDK's own converter when it can be imported.
"""

from __future__ import annotations

import copy
import enum
from collections.abc import Iterator
from typing import Annotated, Any, Literal

import jsonschema
import pytest
from pydantic import BaseModel, Field

from backends import ResponseFormat
from ruleengine import PolicyError

ALLOWED_KEYWORDS = {
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "anyOf",
    "enum",
    "const",
    "$ref",
    "$defs",
    "title",
    "description",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
}


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Address(BaseModel):
    street: str
    city: str
    postcode: str | None = None


class Item(BaseModel):
    sku: str = Field(description="The stock-keeping unit.")
    quantity: int = Field(ge=1)
    color: Color = Color.RED


class Order(BaseModel):
    """An order, with everything strict mode must handle."""

    id: int
    ship_to: Address = Field(description="Where the parcel goes.")
    bill_to: Address | None = None
    items: list[Item]
    tags: list[str] = []
    priority: Literal["low", "high"] = "low"
    note: Annotated[str, Field(max_length=140)] = ""
    discount: float | None = Field(None, description="A share of the price, 0 to 1.")


class Tree(BaseModel):
    name: str
    children: list[Tree] = []
    parent: Tree | None = Field(None, description="The node above.")


class Forest(BaseModel):
    """A recursive model under a root object (pydantic makes a recursive root a `$ref`)."""

    trees: list[Tree]


class Cat(BaseModel):
    kind: Literal["cat"] = "cat"
    lives: int


class Dog(BaseModel):
    kind: Literal["dog"] = "dog"
    good: bool


class Pet(BaseModel):
    pet: Cat | Dog = Field(discriminator="kind")


ORDERS = [
    Order(id=1, ship_to=Address(street="1 Main St", city="Oslo"), items=[]),
    Order(
        id=2,
        ship_to=Address(street="2 Side St", city="Bergen", postcode="5003"),
        bill_to=Address(street="3 Hill Rd", city="Bergen"),
        items=[Item(sku="A-1", quantity=2), Item(sku="B-2", quantity=1, color=Color.GREEN)],
        tags=["gift"],
        priority="high",
        note="Leave at the door.",
        discount=0.1,
    ),
]


def strict(model: type[BaseModel]) -> dict[str, Any]:
    fmt = ResponseFormat.from_model(model, strict=True)
    assert fmt.strict is True
    return dict(fmt.schema)


def nodes(schema: Any, path: str = "#") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema node, with its path."""
    if not isinstance(schema, dict):
        return
    yield path, schema
    for name, sub in schema.get("properties", {}).items():
        yield from nodes(sub, f"{path}/properties/{name}")
    for name, sub in schema.get("$defs", {}).items():
        yield from nodes(sub, f"{path}/$defs/{name}")
    if "items" in schema:
        yield from nodes(schema["items"], f"{path}/items")
    for i, sub in enumerate(schema.get("anyOf", [])):
        yield from nodes(sub, f"{path}/anyOf/{i}")


def assert_strict(schema: dict[str, Any]) -> None:
    """The rules of strict mode, node by node."""
    assert schema["type"] == "object" and "anyOf" not in schema
    for path, node in nodes(schema):
        assert set(node) <= ALLOWED_KEYWORDS, (path, set(node) - ALLOWED_KEYWORDS)
        if node.get("type") == "object":
            assert node["additionalProperties"] is False, path
            assert node["required"] == list(node["properties"]), path
        if "$ref" in node:
            assert set(node) == {"$ref"}, path
            assert node["$ref"].removeprefix("#/$defs/") in schema["$defs"], path


def nullable(node: dict[str, Any]) -> bool:
    return {"type": "null"} in node.get("anyOf", []) or "null" in node.get("type", [])


@pytest.mark.parametrize("model", [Order, Address, Item, Forest, Pet])
def test_the_schema_keeps_to_strict_mode(model: type[BaseModel]) -> None:
    assert_strict(strict(model))


def test_optional_fields_are_required_and_nullable_defaulted_ones_keep_their_type() -> None:
    schema = strict(Order)
    properties = schema["properties"]
    assert schema["required"] == list(Order.model_fields)
    # `T | None` fields: required, and null allowed.
    assert nullable(properties["bill_to"]) and nullable(properties["discount"])
    assert properties["discount"]["description"] == "A share of the price, 0 to 1."
    # Fields with a default: required, of their own type, the default gone.
    assert properties["tags"] == {"items": {"type": "string"}, "title": "Tags", "type": "array"}
    assert properties["priority"]["enum"] == ["low", "high"] and not nullable(
        properties["priority"]
    )
    assert properties["note"] == {"title": "Note", "type": "string"}  # maxLength: the model checks
    assert not any("default" in node for _, node in nodes(schema))


def test_nested_models_enums_and_lists() -> None:
    schema = strict(Order)
    properties, defs = schema["properties"], schema["$defs"]
    # A nested model with a description of its own is inlined: a `$ref` must stand alone.
    ship_to = properties["ship_to"]
    assert ship_to["description"] == "Where the parcel goes."
    assert ship_to["required"] == ["street", "city", "postcode"]
    assert ship_to["additionalProperties"] is False
    assert properties["items"]["items"] == {"$ref": "#/$defs/Item"}
    assert defs["Item"]["required"] == ["sku", "quantity", "color"]
    assert defs["Item"]["properties"]["color"] == {"$ref": "#/$defs/Color"}
    assert defs["Item"]["properties"]["quantity"]["minimum"] == 1
    assert defs["Color"] == {"enum": ["red", "green"], "title": "Color", "type": "string"}


def test_recursive_models_keep_their_references() -> None:
    schema = strict(Forest)
    assert schema["properties"]["trees"]["items"] == {"$ref": "#/$defs/Tree"}
    tree = schema["$defs"]["Tree"]
    assert tree["properties"]["children"]["items"] == {"$ref": "#/$defs/Tree"}
    assert tree["properties"]["parent"]["anyOf"] == [{"$ref": "#/$defs/Tree"}, {"type": "null"}]
    leaf = Tree(name="leaf", parent=Tree(name="root"))
    forest = Forest(trees=[leaf, Tree(name="other", children=[Tree(name="twig")])])
    jsonschema.Draft202012Validator(schema).validate(forest.model_dump(mode="json"))


def test_discriminated_unions_become_any_of() -> None:
    schema = strict(Pet)
    assert schema["properties"]["pet"]["anyOf"] == [
        {"$ref": "#/$defs/Cat"},
        {"$ref": "#/$defs/Dog"},
    ]
    validator = jsonschema.Draft202012Validator(schema)
    validator.validate(Pet(pet=Dog(good=True)).model_dump(mode="json"))
    assert not validator.is_valid({"pet": {"kind": "cat", "good": True}})


@pytest.mark.parametrize("order", ORDERS, ids=["defaults", "everything-set"])
def test_the_models_instances_validate(order: Order) -> None:
    schema = strict(Order)
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema).validate(order.model_dump(mode="json"))


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda d: d.pop("tags"), "a defaulted field must be sent"),
        (lambda d: d.pop("bill_to"), "an optional field must be sent, as null"),
        (lambda d: d.update(tags=None), "a defaulted field is not nullable"),
        (lambda d: d.update(extra=1), "no other properties"),
        (lambda d: d["ship_to"].update(extra=1), "nested objects are closed too"),
        (lambda d: d.update(priority="urgent"), "enums hold"),
    ],
)
def test_what_strict_mode_would_not_let_the_model_send(change: Any, reason: str) -> None:
    data = ORDERS[1].model_dump(mode="json")
    change(data)
    assert not jsonschema.Draft202012Validator(strict(Order)).is_valid(data), reason


def test_the_model_schema_is_not_changed_and_strict_false_keeps_it() -> None:
    before = copy.deepcopy(Order.model_json_schema())
    strict(Order)
    assert Order.model_json_schema() == before
    assert dict(ResponseFormat.from_model(Order).schema) == before


class Free(BaseModel):
    counts: dict[str, int]


class Pair(BaseModel):
    pair: tuple[int, str]


class Loose(BaseModel):
    anything: Any


@pytest.mark.parametrize(
    ("model", "fragment"),
    [
        (Free, "a mapping with free keys (`additionalProperties`) at `#/properties/counts`"),
        (Pair, "a tuple (`prefixItems`) at `#/properties/pair`"),
        (Loose, "a value of no type (`Any`) at `#/properties/anything`"),
    ],
)
def test_what_strict_mode_cannot_express_is_refused(model: type[BaseModel], fragment: str) -> None:
    with pytest.raises(PolicyError) as info:
        ResponseFormat.from_model(model, strict=True)
    assert f"response format `{model.__name__}`: strict mode cannot express {fragment}" in str(
        info.value
    )
    ResponseFormat.from_model(model)  # without strict mode the schema is sent as it is


# -- the OpenAI SDK's converter ----------------------------------------------------------------


def inline(schema: Any, defs: dict[str, Any]) -> Any:
    """``schema`` with every ``$ref`` replaced by its definition (for non-recursive models)."""
    if isinstance(schema, list):
        return [inline(item, defs) for item in schema]
    if not isinstance(schema, dict):
        return schema
    if "$ref" in schema:
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        return inline({**defs[schema["$ref"].removeprefix("#/$defs/")], **rest}, defs)
    return {k: inline(v, defs) for k, v in schema.items() if k != "$defs"}


def without(schema: Any, keys: set[str]) -> Any:
    if isinstance(schema, list):
        return [without(item, keys) for item in schema]
    if not isinstance(schema, dict):
        return schema
    # `properties` maps names to schemas: its keys are never keywords.
    return {
        k: without(v, keys) if k != "properties" else {n: without(s, keys) for n, s in v.items()}
        for k, v in schema.items()
        if k not in keys or k == "properties"
    }


class Plain(BaseModel):
    """Like ``Order`` without the constraints the SDK keeps and strict mode lacks."""

    id: int
    ship_to: Address = Field(description="Where the parcel goes.")
    bill_to: Address | None = None
    items: list[Item]
    tags: list[str] = []
    priority: Literal["low", "high"] = "low"
    discount: float | None = Field(None, description="A share of the price, 0 to 1.")


@pytest.mark.parametrize("model", [Plain, Address, Item])
def test_the_sdk_converter_gives_an_equivalent_schema(model: type[BaseModel]) -> None:
    try:
        from openai.lib._pydantic import to_strict_json_schema
    except ImportError:
        pytest.skip("the OpenAI SDK's converter cannot be imported")
    ours = strict(model)
    theirs = to_strict_json_schema(model)
    # The SDK keeps defaults other than null (strict mode lists no `default`); the rest agrees.
    assert inline(ours, ours.get("$defs", {})) == without(
        inline(theirs, theirs.get("$defs", {})), {"default"}
    )


# -- schemas pydantic rarely writes --------------------------------------------------------------


def test_hand_written_schemas() -> None:
    from backends._strict import strict_json_schema

    node = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            # A reference with a sibling, inside the definition it names: inlining it would
            # never end, so the reference stands alone.
            "best": {"$ref": "#/$defs/Node", "description": "The best child."},
        },
    }
    schema = {
        "type": "object",
        "properties": {
            "root": {"$ref": "#/$defs/Node", "description": "The root."},
            "size": {"allOf": [{"type": "integer"}], "description": "How many."},
        },
        "$defs": {"Node": node},
    }
    converted = strict_json_schema(schema, "s")
    root = converted["properties"]["root"]
    assert root["description"] == "The root."
    assert root["properties"]["best"] == {"$ref": "#/$defs/Node"}
    assert converted["$defs"]["Node"]["properties"]["best"] == {"$ref": "#/$defs/Node"}
    assert converted["properties"]["size"] == {"type": "integer", "description": "How many."}
    assert_strict(converted)
    assert schema["properties"]["root"] == {"$ref": "#/$defs/Node", "description": "The root."}


@pytest.mark.parametrize(
    ("sub", "fragment"),
    [
        ({"allOf": [{"type": "integer"}, {"minimum": 1}]}, "`allOf` of several schemas"),
        ({"$ref": "other.json#/x"}, "the reference `'other.json#/x'`"),
        ({"$ref": "#/$defs/Missing"}, "the reference `#/$defs/Missing` to no definition"),
        ({"not": {"type": "string"}}, "`not`"),
        ({"type": "object", "additionalProperties": True}, "a mapping with free keys"),
        ({"description": "no type"}, "a value of no type"),
        ({"anyOf": []}, "an empty `anyOf`"),
    ],
)
def test_hand_written_schemas_strict_mode_cannot_express(
    sub: dict[str, Any], fragment: str
) -> None:
    from backends._strict import strict_json_schema

    with pytest.raises(PolicyError) as info:
        strict_json_schema({"type": "object", "properties": {"x": sub}}, "s")
    assert f"s: strict mode cannot express {fragment}" in str(info.value)
    assert "at `#/properties/x`" in str(info.value)
