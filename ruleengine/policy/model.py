"""``Policy``: the tools, requirements and limits an agent runs under, checked once, trusted after.

A policy comes from a file (``Policy.load("policy.toml")``, see ``load.py``) or from Python
(``Policy(tools, requirements)``). Either way it is validated at construction with the same
checks as the reasoner's (``_validate``): at least one tool besides ``final_answer`` is
declared, each once, requirement names are unique, every requirement is bound to the declared
tools (which reports unknown tool names), ``max_iterations`` is an integer ≥ 1 and ``mode`` is
``strict`` or ``priority``. Errors raised here name their parameter as a key path
(``requirements[2].only_after``), which the file loader turns into a line of the file, and a
policy from a file keeps the ``Location`` of every key (``_places.py``).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ruleengine import _validate
from ruleengine._tags import declared_tags
from ruleengine.conditions.types import ParamType
from ruleengine.errors import PolicyError
from ruleengine.ir import FINAL_ANSWER
from ruleengine.passes import Mode
from ruleengine.policy._places import Location
from ruleengine.reasoner import Reasoner
from ruleengine.requirements import (
    AskPermissionRequirement,
    ConditionalRequirement,
    CycleGuard,
    Requirement,
    parameters_of,
)

if TYPE_CHECKING:
    from os import PathLike

    from ruleengine.check import Report

__all__ = ["Policy"]

DEFAULT_MAX_ITERATIONS = 20
PYTHON_SOURCE = "<python>"

_TOOL_HINT = "name a tool by string, by a `(name, description)` pair, or by an object with a `name`"
_LAST_PART = re.compile(r"(\.[^.\[\]]+|\[\d+\])$")


class Policy:
    """The tools, requirements, iteration budget and mode of an agent, validated together.

    ``tools`` are names, ``(name, description)`` pairs, or objects with a ``name`` (and maybe
    a ``description``); ``final_answer`` is implicit (accepted if listed, always last).
    ``requirements`` are any ``Requirement`` objects; each is bound to the tools here.
    ``source`` says where the policy came from (a file, ``module:attr``, or ``"<python>"``);
    ``locations`` maps key paths (``requirements[1].target``) to places in that file.
    """

    def __init__(
        self,
        tools: Iterable[object],
        requirements: Iterable[Requirement] | Requirement = (),
        *,
        max_iterations: int = DEFAULT_MAX_ITERATIONS,
        mode: Mode = "strict",
        source: str | None = None,
        locations: Mapping[str, Location] | None = None,
    ) -> None:
        declared, names, descriptions, tags, answer = _declared_tools(tools)
        self.tools: tuple[str, ...] = names
        """The declared tools, in order, without ``final_answer`` (always implicit, last)."""
        self.descriptions: Mapping[str, str] = MappingProxyType(descriptions)
        """Tool descriptions, for the tools that have one."""
        self.tags: Mapping[str, tuple[str, ...]] = MappingProxyType(tags)
        """Tool tags, for the tools that carry some (requirements name them ``tag:NAME``;
        they are resolved to the tools' names when the policy is built)."""
        self.parameters: Mapping[str, Mapping[str, ParamType]] = MappingProxyType(
            {
                name: MappingProxyType(dict(params))
                for name, tool in zip(names, declared, strict=True)
                if (params := parameters_of(tool)) is not None
            }
        )
        """Tool parameters, for the tools declared with some (``parameters`` or
        ``input_schema`` in a file, a tool object's input model in Python): what conditions
        on their arguments are typed against."""
        self.max_iterations: int = _validate.integer(max_iterations, name="max_iterations", least=1)
        """How many LLM rounds a run may take (SPEC §8's `budget` counts against it)."""
        self.mode: Mode = _validate.one_of(mode, ("strict", "priority"), name="mode")
        """``strict`` (deny wins) or ``priority`` (rules soft at their priority)."""
        self.requirements: tuple[Requirement, ...] = _bound_requirements(
            requirements, declared if answer is None else [*declared, answer]
        )
        """The requirements in declared order, each bound to the tools."""
        self.source: str = (
            PYTHON_SOURCE if source is None else _validate.text(source, name="source")
        )
        """Where the policy came from: a file path as given, ``module:attr``, or ``<python>``."""
        self._locations: Mapping[str, Location] = MappingProxyType(dict(locations or {}))
        self._key = (
            self.tools,
            tuple(sorted(self.descriptions.items())),
            tuple(sorted(self.tags.items())),
            tuple(_requirement_key(r) for r in self.requirements),
            self.max_iterations,
            self.mode,
        )

    # -- building ------------------------------------------------------------------------

    @staticmethod
    def load(source: str | PathLike[str] | Policy | Callable[[], Policy], /) -> Policy:
        """A policy from a file (``.toml``, ``.yaml``/``.yml``, ``.json``), from ``module:attr``
        or ``path/to/file.py:attr`` naming a ``Policy`` (or a function of no arguments that
        returns one), or from such a function itself.

        Every mistake is a ``PolicyError`` naming the file, the line and the key path.
        """
        # Imported here: a policy made in Python never loads the file loader. It is handed
        # `Policy` to build, since it cannot import this module, which imports it.
        from ruleengine.policy.load import load_policy

        return load_policy(source, Policy)

    @staticmethod
    def json_schema() -> dict[str, Any]:
        """The JSON Schema of policy files, for editors and ``ruleengine schema``."""
        from ruleengine.policy.schema import policy_json_schema

        return policy_json_schema()

    def reasoner(self, **options: Any) -> Reasoner:
        """A ``Reasoner`` for this policy's tools, requirements and mode.

        ``options`` are the reasoner's other keyword arguments (``cache_size``, ``rlimit``…).
        """
        return Reasoner(self.tools, self.requirements, mode=self.mode, **options)

    def check(self, **options: Any) -> Report:
        """Statically check this policy (SPEC §8): ``ruleengine.check.check_policy(self, …)``.

        ``options`` are the checker's (``timeout``, ``max_states``…).
        """
        # Imported here: importing a policy should not load the checker.
        from ruleengine.check import check_policy

        return check_policy(self, **options)

    # -- reading -------------------------------------------------------------------------

    def location(
        self, requirement_name: str | None = None, key: str | None = None
    ) -> Location | None:
        """Where something is written in the policy file, or ``None`` (not from a file).

        With ``requirement_name``: that requirement's entry, or with ``key`` (``"target"``,
        ``"only_after[1]"``) that key inside it. Without it, ``key`` is a path from the top
        (``"max_iterations"``, ``"tools[2]"``), and no key at all is the file itself. A key
        that is not written in the file (a default) gives the nearest enclosing place.
        """
        _validate.optional_text(requirement_name, name="requirement_name")
        _validate.optional_text(key, name="key")
        if not self._locations:
            return None
        if requirement_name is None:
            return self._nearest(key or "")
        for index, req in enumerate(self.requirements):
            if req.name == requirement_name:
                base = f"requirements[{index}]"
                return self._nearest(f"{base}.{key}" if key else base)
        return None

    def _nearest(self, path: str) -> Location | None:
        while True:
            found = self._locations.get(path)
            if found is not None or not path:
                return found
            shorter = _LAST_PART.sub("", path)
            path = "" if shorter == path else shorter

    @property
    def locations(self) -> Mapping[str, Location]:
        """Every key path written in the file, with its place (empty when not from a file)."""
        return self._locations

    def _with_source(self, source: str) -> Policy:
        """This policy, said to come from ``source`` (``module:attr`` loading)."""
        moved = copy.copy(self)
        moved.source = source
        return moved

    # -- comparing and showing -----------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        """Same tools, descriptions, requirements (built-ins by their parameters, others by
        identity), budget and mode; where the policy came from does not count."""
        if not isinstance(other, Policy):
            return NotImplemented
        return self._key == other._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        tools = [(t, self.descriptions[t]) if t in self.descriptions else t for t in self.tools]
        parts = [repr(tools)]
        if self.requirements:
            parts.append(repr(list(self.requirements)))
        if self.max_iterations != DEFAULT_MAX_ITERATIONS:
            parts.append(f"max_iterations={self.max_iterations}")
        if self.mode != "strict":
            parts.append(f"mode={self.mode!r}")
        if self.source != PYTHON_SOURCE:
            parts.append(f"source={self.source!r}")
        return f"Policy({', '.join(parts)})"


def _declared_tools(
    tools: object,
) -> tuple[list[object], tuple[str, ...], dict[str, str], dict[str, tuple[str, ...]], object]:
    """The tools as the requirements bind to them, their names, their descriptions, their
    tags, and ``final_answer`` where it is declared as more than a name (its parameters say
    what conditions on the answer read), else ``None``."""
    declared: list[object] = []
    answer: object = None
    names: list[str] = []
    descriptions: dict[str, str] = {}
    tags: dict[str, tuple[str, ...]] = {}
    seen: set[str] = set()
    for index, tool in enumerate(_validate.sequence(tools, name="tools")):
        at = f"tools[{index}]"
        name, description = _tool_entry(tool, at)
        if name in seen:
            raise PolicyError(f"tool `{name}` is declared twice", parameter=at)
        seen.add(name)
        if description is not None:
            descriptions[name] = description
        try:
            carried = declared_tags(tool)
        except PolicyError as exc:
            raise PolicyError(exc.message, hint=exc.hint, parameter=f"{at}.tags") from None
        if carried and name != FINAL_ANSWER:
            tags[name] = carried
        kept = tool if hasattr(tool, "name") and not isinstance(tool, tuple) else name
        if name != FINAL_ANSWER:
            names.append(name)
            # Tool objects stay as they are, so requirements may name them by class.
            declared.append(kept)
        elif kept is not name:
            answer = kept
    if not names:
        # A run could only end at once: surely a mistake (an emptied list, a wrong key).
        but = f" but `{FINAL_ANSWER}`" if seen else ""
        raise PolicyError(
            f"the policy declares no tool{but}",
            hint=f"list the tools the agent may call (`{FINAL_ANSWER}` is always there, "
            "implicitly)",
            parameter="tools",
        )
    return declared, tuple(names), descriptions, tags, answer


def _tool_entry(tool: object, at: str) -> tuple[str, str | None]:
    """A tool's name and description (``None`` when it has none)."""
    if isinstance(tool, str):
        return _validate.text(tool, name=at), None
    if isinstance(tool, tuple):
        if len(tool) != 2:
            raise PolicyError(f"{at}=`{tool!r}` is not a tool", hint=_TOOL_HINT, parameter=at)
        name = _validate.text(tool[0], name=f"{at}.name")
        return name, _validate.optional_text(tool[1], name=f"{at}.description")
    attribute = getattr(tool, "name", None)
    if isinstance(tool, Mapping) or not isinstance(attribute, str):
        raise PolicyError(f"{at}=`{tool!r}` is not a tool", hint=_TOOL_HINT, parameter=at)
    description = getattr(tool, "description", None)
    return _validate.text(attribute, name=f"{at}.name"), (
        description if isinstance(description, str) else None
    )


def _bound_requirements(requirements: object, declared: list[object]) -> tuple[Requirement, ...]:
    """The requirements, checked and bound to ``declared``; errors name their key path."""
    if isinstance(requirements, Requirement):
        requirements = (requirements,)
    items = _validate.sequence(requirements, name="requirements")
    bound: list[Requirement] = []
    names: set[str] = set()
    for index, req in enumerate(items):
        at = f"requirements[{index}]"
        if not isinstance(req, Requirement):
            raise PolicyError(
                f"{at}=`{req!r}` is not a requirement",
                hint="subclass `Requirement` or decorate a function with `@requirement`",
                parameter=at,
            )
        if req.name in names:
            raise PolicyError(
                f"two requirements are named `{req.name}`",
                hint="cores and explanations cite requirements by name: give each a unique one",
                parameter=f"{at}.name",
            )
        names.add(req.name)
        try:
            bound.append(req.bind(declared))
        except PolicyError as exc:
            where = f"{at}.{exc.parameter}" if exc.parameter else at
            raise PolicyError(exc.message, hint=exc.hint, parameter=where) from exc
    return tuple(bound)


def _requirement_key(req: Requirement) -> object:
    """What makes two requirements the same: a built-in's parameters, else the object."""
    common = (type(req), req.name, req.priority, req.enabled)
    if type(req) is ConditionalRequirement:
        m = req.monitor()
        return (
            *common,
            (m.target, m.only_before, m.only_after, m.force_after, m.force_at_step),
            (m.force_prevent_stop, m.min_invocations, m.max_invocations, m.only_success),
            (m.consecutive_allowed, req.custom_checks, req.reason),
        )
    if type(req) is AskPermissionRequirement:
        covered = req.monitor().covered
        flags = (req.remember_choices, req.hide_disallowed, req.always_allow)
        return (*common, covered, flags, req.timeout, req.handler)
    if type(req) is CycleGuard:
        return (*common, req.max_strike_length, req.max_total_occurrences, req.window_size)
    return req
