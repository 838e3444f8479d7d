"""A pydantic model's JSON schema in the subset OpenAI's strict structured outputs accept.

``ResponseFormat.from_model(model, strict=True)`` sends this schema. Strict mode constrains
decoding to the schema, and accepts only schemas where:

- every object has ``additionalProperties: false`` and lists every property in ``required``;
- keywords come from a small set: ``type``, ``properties``, ``required``,
  ``additionalProperties``, ``items``, ``anyOf``, ``enum``, ``const``, ``$ref`` and ``$defs``,
  the annotations ``title`` and ``description``, and the constraints ``pattern``, ``format``
  (of a few formats), ``minimum``, ``maximum``, ``exclusiveMinimum``, ``exclusiveMaximum``,
  ``multipleOf``, ``minItems`` and ``maxItems``;
- a ``$ref`` stands alone.

The conversion, node by node, on a copy:

- **Objects** get ``additionalProperties: false`` and every property required. A field with
  a default stays of its type, so what the model must now always send is still a value the
  pydantic model accepts; a field whose type admits ``None`` (``T | None``) is already
  nullable (``anyOf [T, null]``) in pydantic's schema, and the model sends ``null`` for it.
  Making ``x: int = 5`` nullable instead would let the model answer ``null``, which the
  pydantic model refuses.
- **Dropped**: ``default`` and every other keyword outside the set; these either annotate or
  narrow values, and the reply is still validated against the pydantic model, which checks
  what the schema no longer says (``minLength``, ``uniqueItems``, an unlisted ``format``).
- **Rewritten**: ``oneOf`` (pydantic's discriminated unions, whose branches never overlap) is
  ``anyOf``; an ``allOf`` of one schema is merged into its node; a ``$ref`` with siblings (a
  field's ``description``) is replaced by the definition it names, the siblings winning, or
  loses its siblings when the definition is recursive along the way.
- **Refused** (``PolicyError``): what strict mode cannot say and dropping would change: a
  mapping with free keys (``dict[str, T]``: ``additionalProperties`` other than false,
  ``patternProperties``, ``propertyNames``), a tuple (``prefixItems``), a value of no type
  (``Any``), ``allOf`` of several schemas, ``not``, conditionals, and references outside
  ``$defs``.

The OpenAI SDK has a converter too (``openai.lib._pydantic.to_strict_json_schema``, a private
module); this one does not import ``openai``, refuses what the API would refuse, and drops
the keywords the API does not accept. The tests compare the two.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from backends._check import fail

__all__ = ["strict_json_schema"]

_KEPT = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "anyOf",
        "enum",
        "const",
        "$ref",
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
)
"""The keywords a converted node keeps (``$defs`` is handled at the root)."""

_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
"""The string formats strict mode documents; other formats are dropped."""

_REFUSED = {
    "prefixItems": "a tuple (`prefixItems`)",
    "patternProperties": "a mapping with free keys (`patternProperties`)",
    "propertyNames": "a mapping with free keys (`propertyNames`)",
    "not": "`not`",
    "if": "a conditional (`if`)",
    "then": "a conditional (`then`)",
    "else": "a conditional (`else`)",
    "dependentSchemas": "`dependentSchemas`",
    "dependentRequired": "`dependentRequired`",
}
"""Keywords whose meaning strict mode cannot express, and what they are, for the error."""

_TYPED = ("type", "anyOf", "$ref", "enum", "const")
"""A node needs one of these: strict mode has no schema for "any value"."""

_HINT = "change the model's field to a type strict mode can express, or pass `strict=False`"


def strict_json_schema(schema: Mapping[str, Any], what: str) -> dict[str, Any]:
    """``schema`` (a pydantic model's JSON schema) converted for strict structured outputs.

    ``what`` names the schema in errors. The input is not changed.
    """
    defs = schema.get("$defs", {})
    if not isinstance(defs, Mapping):
        raise fail(f"{what}: `$defs` is not an object")
    converter = _Converter(defs, what)
    root = converter.node({k: v for k, v in schema.items() if k != "$defs"}, "#", ())
    if defs:
        root["$defs"] = {
            name: converter.node(definition, f"#/$defs/{name}", (name,))
            for name, definition in defs.items()
        }
    return root


class _Converter:
    def __init__(self, defs: Mapping[str, Any], what: str) -> None:
        self.defs = defs
        self.what = what

    def refuse(self, path: str, problem: str) -> Exception:
        return fail(f"{self.what}: strict mode cannot express {problem} at `{path}`", _HINT)

    def node(self, schema: object, path: str, inlining: tuple[str, ...]) -> dict[str, Any]:
        """One schema node converted; ``inlining`` names the definitions being inlined."""
        if not isinstance(schema, Mapping):
            raise self.refuse(path, f"the schema `{schema!r:.40}`")
        schema = dict(schema)
        all_of = schema.pop("allOf", None)
        if all_of is not None:
            if not isinstance(all_of, list) or len(all_of) != 1:
                raise self.refuse(path, "`allOf` of several schemas")
            if not isinstance(all_of[0], Mapping):
                raise self.refuse(path, f"the schema `{all_of[0]!r:.40}`")
            schema = {**all_of[0], **schema}  # the node's own keywords win
        if "oneOf" in schema:
            if "anyOf" in schema:
                raise self.refuse(path, "both `oneOf` and `anyOf`")
            schema["anyOf"] = schema.pop("oneOf")
        for key, problem in _REFUSED.items():
            if key in schema:
                raise self.refuse(path, problem)
        if not any(key in schema for key in _TYPED):
            raise self.refuse(path, "a value of no type (`Any`)")
        out: dict[str, Any] = {}
        for key, value in schema.items():
            if key not in _KEPT or key in ("required", "additionalProperties"):
                continue
            if key == "properties":
                if not isinstance(value, Mapping):
                    raise self.refuse(path, "`properties` that are not an object")
                out[key] = {
                    name: self.node(sub, f"{path}/properties/{name}", inlining)
                    for name, sub in value.items()
                }
            elif key == "items":
                out[key] = self.node(value, f"{path}/items", inlining)
            elif key == "anyOf":
                if not isinstance(value, list) or not value:
                    raise self.refuse(path, "an empty `anyOf`")
                out[key] = [
                    self.node(sub, f"{path}/anyOf/{i}", inlining) for i, sub in enumerate(value)
                ]
            elif key == "format" and value not in _FORMATS:
                continue
            else:
                out[key] = value
        kinds = out.get("type")
        if (
            kinds == "object"
            or (isinstance(kinds, list) and "object" in kinds)
            or ("properties" in out)
        ):
            self.close(schema, out, path)
        if "$ref" in out:
            return self.resolve(out, path, inlining)
        return out

    def close(self, schema: Mapping[str, Any], out: dict[str, Any], path: str) -> None:
        """An object node: no other properties, every property required."""
        extra = schema.get("additionalProperties", False)
        if extra is not False:
            raise self.refuse(path, "a mapping with free keys (`additionalProperties`)")
        out.setdefault("properties", {})
        out["required"] = list(out["properties"])
        out["additionalProperties"] = False

    def resolve(self, out: dict[str, Any], path: str, inlining: tuple[str, ...]) -> dict[str, Any]:
        """A ``$ref`` node: alone it stays; with siblings it is inlined (siblings winning)."""
        ref = out["$ref"]
        if not isinstance(ref, str) or not ref.startswith("#/$defs/"):
            raise self.refuse(path, f"the reference `{ref!r:.60}` (only `#/$defs/...`)")
        name = ref.removeprefix("#/$defs/")
        if name not in self.defs:
            raise self.refuse(path, f"the reference `{ref}` to no definition")
        siblings = {key: value for key, value in out.items() if key != "$ref"}
        if not siblings:
            return out
        if name in inlining:  # recursive: inlining would never end; the reference stands alone
            return {"$ref": ref}
        inlined = self.node(self.defs[name], path, (*inlining, name))
        return {**inlined, **siblings}
