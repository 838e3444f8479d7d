"""Policy files and Python policies → ``Policy`` (ruleengine/policy/load.py, _formats.py).

The writers below put each key of a policy on a line of its own, in TOML, YAML or JSON, and
say which line: the same policy in every format loads to one ``Policy``, each key's location
is the line it was written on, and every mistake reads ``FILE:LINE: KEY.PATH: message`` with
the message the Python constructors give for the same mistake.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ruleengine import (
    AskPermissionRequirement,
    ConditionalRequirement,
    CycleGuard,
    Policy,
    PolicyError,
    Requirement,
    RunState,
)
from ruleengine.policy.load import MAX_BYTES, load_bytes, policy_files

FORMATS = ("toml", "yaml", "json")
BUILDERS: dict[str, Callable[..., Requirement]] = {
    "conditional": ConditionalRequirement,
    "ask_permission": AskPermissionRequirement,
    "cycle_guard": CycleGuard,
}

# -- writers: a policy as data → text in each format, with the line of every key -----------

Lines = dict[str, int]


def _scalar(value: object) -> str:
    """A value as all three formats read it (JSON's literals are valid TOML and YAML here)."""
    if isinstance(value, dict):
        inner = ", ".join(f"{k} = {_scalar(v)}" for k, v in value.items())
        return "{" + inner + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_scalar(v) for v in value) + "]"
    return json.dumps(value)


def _json_scalar(value: object) -> str:
    return json.dumps(value)


def write_toml(policy: dict[str, Any]) -> tuple[str, Lines]:
    out: list[str] = []
    lines: Lines = {}

    def add(path: str, text: str) -> None:
        out.append(text)
        lines.setdefault(path, len(out))

    for key, value in policy.items():
        if key == "requirements":
            continue
        add(key, f"{key} = {_scalar(value)}")
        if key == "tools":
            for i, _ in enumerate(value):
                lines[f"tools[{i}]"] = len(out)
    for i, req in enumerate(policy.get("requirements", [])):
        out.append("")
        add("requirements", "[[requirements]]")
        lines[f"requirements[{i}]"] = len(out)
        for key, value in req.items():
            add(f"requirements[{i}].{key}", f"{key} = {_scalar(value)}")
    return "\n".join(out) + "\n", lines


def write_yaml(policy: dict[str, Any]) -> tuple[str, Lines]:
    out: list[str] = []
    lines: Lines = {}

    def add(path: str, text: str) -> None:
        out.append(text)
        lines.setdefault(path, len(out))

    for key, value in policy.items():
        if key == "requirements" and value:
            add(key, "requirements:")
            for i, req in enumerate(value):
                for n, (k, v) in enumerate(req.items()):
                    lead = "  - " if n == 0 else "    "
                    add(f"requirements[{i}].{k}", f"{lead}{k}: {_json_scalar(v)}")
                    if n == 0:
                        lines[f"requirements[{i}]"] = len(out)
        else:
            add(key, f"{key}: {_json_scalar(value)}")
            if key == "tools":
                for i, _ in enumerate(value):
                    lines[f"tools[{i}]"] = len(out)
    return "\n".join(out) + "\n", lines


def write_json(policy: dict[str, Any]) -> tuple[str, Lines]:
    out = ["{"]
    lines: Lines = {}
    entries = list(policy.items())
    for n, (key, value) in enumerate(entries):
        comma = "," if n < len(entries) - 1 else ""
        if key == "requirements":
            out.append('  "requirements": [')
            lines[key] = len(out)
            for i, req in enumerate(value):
                out.append("    {")
                lines[f"requirements[{i}]"] = len(out)
                items = list(req.items())
                for m, (k, v) in enumerate(items):
                    inner = "," if m < len(items) - 1 else ""
                    out.append(f"      {json.dumps(k)}: {_json_scalar(v)}{inner}")
                    lines[f"requirements[{i}].{k}"] = len(out)
                out.append("    }" + ("," if i < len(value) - 1 else ""))
            out.append("  ]" + comma)
        else:
            out.append(f"  {json.dumps(key)}: {_json_scalar(value)}{comma}")
            lines[key] = len(out)
            if key == "tools":
                for i, _ in enumerate(value):
                    lines[f"tools[{i}]"] = len(out)
    out.append("}")
    return "\n".join(out) + "\n", lines


WRITERS = {"toml": write_toml, "yaml": write_yaml, "json": write_json}


def python_policy(policy: dict[str, Any]) -> Policy:
    """The same policy built in Python, by the constructors."""
    requirements = [
        BUILDERS[r["type"]](**{k: v for k, v in r.items() if k != "type"})
        for r in policy.get("requirements", [])
    ]
    tools = [
        (t["name"], t.get("description")) if isinstance(t, dict) else t for t in policy["tools"]
    ]
    options = {k: policy[k] for k in ("max_iterations", "mode") if k in policy}
    return Policy(tools, requirements, **options)


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run in an empty directory, so files are named as users name them (`policy.toml`)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def save(fmt: str, policy: dict[str, Any], name: str = "policy") -> tuple[str, Lines]:
    text, lines = WRITERS[fmt](policy)
    file = f"{name}.{fmt}"
    Path(file).write_text(text, encoding="utf-8")
    return file, lines


def load_error(source: Any) -> PolicyError:
    with pytest.raises(PolicyError) as info:
        Policy.load(source)
    return info.value


def file_error(name: str, text: str | bytes) -> PolicyError:
    if isinstance(text, bytes):
        Path(name).write_bytes(text)
    else:
        Path(name).write_text(text, encoding="utf-8")
    return load_error(name)


# -- the same policy in three formats ---------------------------------------------------------

SUPPORT = {
    "tools": ["search", "think", {"name": "send_email", "description": "Send an email."}],
    "max_iterations": 12,
    "mode": "priority",
    "requirements": [
        {
            "type": "conditional",
            "name": "think-first",
            "target": "think",
            "force_at_step": 1,
            "consecutive_allowed": False,
        },
        {
            "type": "conditional",
            "target": "send_email",
            "only_after": ["search"],
            "max_invocations": 1,
            "reason": "search first",
            "priority": 20,
        },
        {"type": "ask_permission", "include": ["send_email"], "remember_choices": True},
        {"type": "cycle_guard", "max_strike_length": 2, "enabled": False},
    ],
}


@pytest.mark.parametrize("fmt", FORMATS)
def test_each_format_loads_the_policy_python_builds(here: Path, fmt: str) -> None:
    file, lines = save(fmt, SUPPORT)
    policy = Policy.load(file)
    assert policy == python_policy(SUPPORT)
    assert policy.source == file
    assert policy.tools == ("search", "think", "send_email")
    assert policy.descriptions == {"send_email": "Send an email."}
    assert (policy.max_iterations, policy.mode) == (12, "priority")
    names = [r.name for r in policy.requirements]
    assert names == ["think-first", "conditional(send_email)", "ask-permission", "cycle-guard"]
    for path, line in lines.items():
        location = policy.locations[path]
        assert (location.file, location.line) == (file, line), path


def test_the_three_formats_give_equal_policies(here: Path) -> None:
    loaded = [Policy.load(save(fmt, SUPPORT)[0]) for fmt in FORMATS]
    assert loaded[0] == loaded[1] == loaded[2]
    assert len({hash(p) for p in loaded}) == 1
    assert [p.source for p in loaded] == ["policy.toml", "policy.yaml", "policy.json"]


def test_a_loaded_policy_decides_like_its_reasoner(here: Path) -> None:
    policy = Policy.load(save("toml", SUPPORT)[0])
    reasoner = policy.reasoner()
    assert reasoner.mode == "priority"
    first = reasoner.decide(RunState())
    assert first.forced == "think"
    assert reasoner.decide(RunState.from_trace(["think"])).allowed == ("search", "final_answer")


def test_the_spec_example_loads(here: Path) -> None:
    Path("policy.toml").write_text(
        'tools = ["search", "think", "send_email"]   # or [[tools]] name=…, description=…\n'
        "max_iterations = 20\n"
        'mode = "strict"                              # or "priority"\n'
        "\n"
        "[[requirements]]\n"
        'type = "conditional"                         # every §5 parameter by name\n'
        'name = "think-first"\n'
        'target = "think"\n'
        "force_at_step = 1\n"
        "consecutive_allowed = false\n"
        "\n"
        "[[requirements]]\n"
        'type = "ask_permission"\n'
        'include = ["send_email"]\n'
        "remember_choices = true\n",
        encoding="utf-8",
    )
    policy = Policy.load(Path("policy.toml"))
    assert policy.source == "policy.toml"
    assert str(policy.location("think-first", "force_at_step")) == "policy.toml:9:1"
    assert str(policy.location("ask-permission")) == "policy.toml:12:1"
    assert str(policy.location(key="tools[2]")) == "policy.toml:1:29"
    assert str(policy.location("think-first", "only_after")) == "policy.toml:5:1"


def test_toml_tables_of_tools_and_inline_requirements(here: Path) -> None:
    Path("policy.toml").write_text(
        "requirements = [\n"
        '  {type = "conditional", target = "b", only_after = ["a"]},  # a comment, ]\n'
        "\n"
        '  { type = "cycle_guard", window_size = 4 },\n'
        "]\n"
        "[[tools]]\n"
        'name = "a"\n'
        "description = '''\n"
        'Finds "quoted" things,\n'
        "[[tools]] and # not a comment.'''\n"
        "[[tools]]\n"
        'name = "b"\n'
        'description = "say \\"hi\\" # not a comment either"\n',
        encoding="utf-8",
    )
    policy = Policy.load("policy.toml")
    assert policy.tools == ("a", "b")
    assert policy.descriptions == {
        "a": 'Finds "quoted" things,\n[[tools]] and # not a comment.',
        "b": 'say "hi" # not a comment either',
    }
    lines = {path: loc.line for path, loc in policy.locations.items()}
    assert lines["requirements[0]"] == 2
    assert lines["requirements[0].only_after[0]"] == 2
    assert lines["requirements[1]"] == 4
    assert lines["requirements[1].window_size"] == 4
    assert lines["tools[0]"] == 6
    assert lines["tools[0].description"] == 8
    assert lines["tools[1]"] == 11
    assert lines["tools[1].name"] == 12
    assert lines["tools[1].description"] == 13


def test_a_byte_order_mark_is_read_as_utf8(here: Path) -> None:
    Path("policy.json").write_bytes(b'\xef\xbb\xbf{"tools": ["caf\xc3\xa9"]}')
    assert Policy.load("policy.json").tools == ("café",)


def test_final_answer_may_be_listed_and_stays_implicit(here: Path) -> None:
    Path("policy.yaml").write_text(
        "tools: [final_answer, a]\nrequirements:\n  - {type: conditional, target: final_answer,"
        " only_after: a}\n",
        encoding="utf-8",
    )
    policy = Policy.load("policy.yaml")
    assert policy.tools == ("a",)
    assert policy.reasoner().tools == ("a", "final_answer")


# -- random policies round-trip -----------------------------------------------------------


TEXTS = st.text(
    st.characters(min_codepoint=0x20, max_codepoint=0xFFFD, exclude_categories=("Cs", "Cc")),
    max_size=16,
)
"""Text every writer can escape the same way (the BMP, no control characters)."""


@st.composite
def policies(draw: st.DrawFn) -> dict[str, Any]:
    """Valid policies as data, with every kind of requirement and key."""
    names = draw(
        st.lists(st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True), min_size=1, max_size=5)
    )
    tools = list(dict.fromkeys(n for n in names if n != "final_answer")) or ["tool"]
    entries: list[object] = [
        {"name": t, "description": draw(TEXTS)} if draw(st.booleans()) else t for t in tools
    ]
    policy: dict[str, Any] = {"tools": entries}
    if draw(st.booleans()):
        policy["max_iterations"] = draw(st.integers(1, 50))
    if draw(st.booleans()):
        policy["mode"] = draw(st.sampled_from(["strict", "priority"]))
    policy["requirements"] = [
        draw(requirement_entries(tools, f"r{i}")) for i in range(draw(st.integers(0, 4)))
    ]
    return policy


@st.composite
def requirement_entries(draw: st.DrawFn, tools: list[str], name: str) -> dict[str, Any]:
    kind = draw(st.sampled_from(sorted(BUILDERS)))
    entry: dict[str, Any] = {"type": kind, "name": name}
    optional: dict[str, st.SearchStrategy[Any]] = {
        "priority": st.integers(1, 30),
        "enabled": st.booleans(),
    }
    if kind == "conditional":
        target = draw(st.sampled_from(tools))
        others = [t for t in tools if t != target]
        after = draw(st.lists(st.sampled_from(others), unique=True)) if others else []
        rest = [t for t in others if t not in after]
        before = draw(st.lists(st.sampled_from(rest), unique=True)) if rest else []
        low = draw(st.integers(0, 3))
        entry["target"] = target
        optional |= {
            "only_after": st.just(after),
            "only_before": st.just(before),
            "force_after": st.just([t for t in after if t not in before]),
            "force_at_step": st.integers(1, 5),
            "min_invocations": st.just(low),
            "max_invocations": st.integers(low, low + 3),
            "force_prevent_stop": st.booleans(),
            "only_success_invocations": st.booleans(),
            "consecutive_allowed": st.booleans(),
            "reason": TEXTS,
        }
    elif kind == "ask_permission":
        optional |= {
            "include": st.lists(st.sampled_from(tools), unique=True),
            "remember_choices": st.booleans(),
            "hide_disallowed": st.booleans(),
            "always_allow": st.booleans(),
            "timeout": st.integers(1, 60),
        }
    else:
        optional |= {
            "max_strike_length": st.integers(1, 4),
            "max_total_occurrences": st.integers(1, 9),
            "window_size": st.integers(1, 20),
        }
    for key, values in optional.items():
        if draw(st.booleans()):
            entry[key] = draw(values)
    return entry


@given(policy=policies(), fmt=st.sampled_from(FORMATS))
def test_random_policies_round_trip_with_their_lines(
    tmp_path_factory: pytest.TempPathFactory, policy: dict[str, Any], fmt: str
) -> None:
    text, lines = WRITERS[fmt](policy)
    file = tmp_path_factory.mktemp("p") / f"policy.{fmt}"
    file.write_text(text, encoding="utf-8")
    loaded = Policy.load(file)
    assert loaded == python_policy(policy)
    for path, line in lines.items():
        assert loaded.locations[path].line == line, (path, text)
    for i, req in enumerate(policy["requirements"]):
        for key in req:
            assert loaded.location(req["name"], key) == loaded.locations[f"requirements[{i}].{key}"]


# -- the same mistake, the same message as in Python -----------------------------------------


def _conditional(**changes: Any) -> dict[str, Any]:
    return {"type": "conditional", "target": "search", **changes}


MISTAKES: dict[str, tuple[dict[str, Any], str]] = {
    # id: (policy, the key path the error is at)
    "negative count": (
        {"tools": ["search"], "requirements": [_conditional(max_invocations=-1)]},
        "requirements[0].max_invocations",
    ),
    "min above max": (
        {
            "tools": ["search"],
            "requirements": [_conditional(min_invocations=3, max_invocations=2)],
        },
        "requirements[0].min_invocations",
    ),
    "force at step 0": (
        {"tools": ["search"], "requirements": [_conditional(force_at_step=0)]},
        "requirements[0].force_at_step",
    ),
    "a bool is not an int": (
        {"tools": ["search"], "requirements": [_conditional(max_invocations=True)]},
        "requirements[0].max_invocations",
    ),
    "a float is not a priority": (
        {"tools": ["search"], "requirements": [_conditional(priority=2.0)]},
        "requirements[0].priority",
    ),
    "a string is not a flag": (
        {"tools": ["search"], "requirements": [_conditional(consecutive_allowed="no")]},
        "requirements[0].consecutive_allowed",
    ),
    "target in its own only_before": (
        {"tools": ["search"], "requirements": [_conditional(only_before=["search"])]},
        "requirements[0].only_before",
    ),
    "a tool both before and after": (
        {
            "tools": ["search", "think"],
            "requirements": [_conditional(only_before=["think"], only_after=["think"])],
        },
        "requirements[0].only_after",
    ),
    "two targets": (
        {"tools": ["search", "think"], "requirements": [_conditional(target=["search", "think"])]},
        "requirements[0].target",
    ),
    "a number is not a tool": (
        {"tools": ["search"], "requirements": [_conditional(only_after=[3])]},
        "requirements[0].only_after",
    ),
    "unknown tool": (
        {"tools": ["search"], "requirements": [_conditional(only_after=["serach"])]},
        "requirements[0].only_after",
    ),
    "unknown target": (
        {"tools": ["search"], "requirements": [_conditional(target="think")]},
        "requirements[0].target",
    ),
    "empty name": (
        {"tools": ["search"], "requirements": [_conditional(name="")]},
        "requirements[0].name",
    ),
    "window of 0": (
        {"tools": ["search"], "requirements": [{"type": "cycle_guard", "window_size": 0}]},
        "requirements[0].window_size",
    ),
    "negative timeout": (
        {"tools": ["search"], "requirements": [{"type": "ask_permission", "timeout": -1}]},
        "requirements[0].timeout",
    ),
    "a number is not a flag": (
        {"tools": ["search"], "requirements": [{"type": "ask_permission", "always_allow": 1}]},
        "requirements[0].always_allow",
    ),
    "unknown tool to ask about": (
        {"tools": ["search"], "requirements": [{"type": "ask_permission", "include": ["mail"]}]},
        "requirements[0].include",
    ),
    "duplicate tool": ({"tools": ["search", "think", "search"]}, "tools[2]"),
    "a number is not a tool name": ({"tools": ["search", 7]}, "tools[1]"),
    "empty tool name": ({"tools": ["search", ""]}, "tools[1]"),
    "duplicate requirement name": (
        {
            "tools": ["search"],
            "requirements": [_conditional(name="x"), {"type": "cycle_guard", "name": "x"}],
        },
        "requirements[1].name",
    ),
    "zero iterations": ({"tools": ["search"], "max_iterations": 0}, "max_iterations"),
    "a bool is not an iteration count": (
        {"tools": ["search"], "max_iterations": True},
        "max_iterations",
    ),
    "a float is not an iteration count": (
        {"tools": ["search"], "max_iterations": 2.5},
        "max_iterations",
    ),
    "unknown mode": ({"tools": ["search"], "mode": "lenient"}, "mode"),
}


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("mistake", sorted(MISTAKES))
def test_a_file_gives_the_constructors_message(here: Path, fmt: str, mistake: str) -> None:
    policy, path = MISTAKES[mistake]
    with pytest.raises(PolicyError) as in_python:
        python_policy(policy)
    file, lines = save(fmt, policy)
    in_file = load_error(file)
    where = f"{file}:{lines[path]}"
    assert in_file.message == f"{where}: {path}: {in_python.value.message}"
    assert in_file.hint == in_python.value.hint
    assert in_file.location == where
    assert in_file.parameter == path


def test_the_messages_read_as_documented(here: Path) -> None:
    file, _ = save("toml", MISTAKES["negative count"][0])
    assert load_error(file).message == (
        "policy.toml:6: requirements[0].max_invocations: requirement `conditional(search)`: "
        "max_invocations=`-1` must not be negative"
    )
    file, _ = save("yaml", MISTAKES["unknown tool"][0])
    error = load_error(file)
    assert str(error) == (
        "policy.yaml:5: requirements[0].only_after: requirement `conditional(search)`: "
        "only_after names unknown tool `serach`\n"
        "  hint: declared tools: `search`, `final_answer`"
    )


# -- structure: unknown keys, missing keys, wrong shapes ----------------------------------

STRUCTURE = [
    (
        "policy.toml",
        'tools = ["a"]\n[[requirements]]\ntype = "conditional"\ntaget = "a"\n',
        "policy.toml:4: requirements[0].taget: unknown key `taget`",
        "did you mean `target`? a `conditional` requirement has `type`, `target`, "
        "`force_at_step`, `only_before`, `only_after`, `force_after`, `force_prevent_stop`, "
        "`min_invocations`, `max_invocations`, `only_success_invocations`, "
        "`consecutive_allowed`, `reason`, `name`, `priority`, `enabled`",
    ),
    (
        "policy.yaml",
        "tools: [a]\nrequirements:\n  - type: conditional\n",
        "policy.yaml:3: requirements[0]: missing key `target`",
        None,
    ),
    (
        "policy.json",
        '{"tools": ["a"],\n "requirements": [\n  {"target": "a"}]}',
        "policy.json:3: requirements[0]: missing key `type`",
        "`type` is one of `conditional`, `ask_permission`, `cycle_guard`, `arguments`",
    ),
    (
        "policy.yaml",
        "tools: [a]\nrequirements:\n  - type: condtional\n    target: a\n",
        "policy.yaml:3: requirements[0].type: unknown requirement type `condtional`",
        "did you mean `conditional`? types: `conditional`, `ask_permission`, `cycle_guard`, "
        "`arguments`",
    ),
    (
        "policy.toml",
        'tolls = ["a"]\n',
        "policy.toml:1: tolls: unknown key `tolls`",
        "did you mean `tools`? a policy has `$schema`, `tools`, `max_iterations`, `mode`, "
        "`requirements`",
    ),
    ("policy.toml", 'mode = "strict"\n', "policy.toml:1: missing key `tools`", None),
    (
        "policy.json",
        '{"tools": [{"name": "a",\n  "descripton": "x"}]}',
        "policy.json:2: tools[0].descripton: unknown key `descripton`",
        "did you mean `description`? a tool has `name`, `description`, `parameters`, "
        "`input_schema`, `tags`",
    ),
    (
        "policy.toml",
        '[[tools]]\ndescription = "x"\n',
        "policy.toml:1: tools[0]: missing key `name`",
        None,
    ),
    (
        "policy.toml",
        'tools = "a"\n',
        "policy.toml:1: tools: tools=`'a'` must be a list",
        None,
    ),
    (
        "policy.yaml",
        "tools: [a]\nrequirements:\n  type: conditional\n",
        "policy.yaml:2: requirements: requirements=`{'type': 'conditional'}` must be a list",
        None,
    ),
    (
        "policy.yaml",
        "tools: [a]\nrequirements:\n  - conditional\n",
        "policy.yaml:3: requirements[0]: `'conditional'` is not a requirement",
        "a requirement is a mapping with a `type` and its parameters",
    ),
    (
        "policy.toml",
        'tools = ["a"]\n[[requirements]]\ntype = "conditional"\ntarget = "a"\n'
        'custom_checks = ["is_weekday"]\n',
        "policy.toml:5: requirements[0].custom_checks: custom checks cannot be written in a "
        "policy file",
        "custom checks are Python functions: write the policy in Python and load it as "
        "`module:attr`",
    ),
    (
        "policy.yaml",
        "tools: [a]\nrequirements:\n  - type: ask_permission\n    handler: my.handler\n",
        "policy.yaml:4: requirements[0].handler: a permission handler cannot be written in a "
        "policy file",
        "handlers are Python functions: write the policy in Python and load it as `module:attr`",
    ),
    (
        "policy.json",
        "[1, 2]",
        "policy.json:1: the top level is `[1, 2]`, not a mapping of keys",
        "a policy is a mapping with `tools`, and usually `requirements`",
    ),
    (
        "policy.yaml",
        "\n- a\n- b\n",
        "policy.yaml:2: the top level is `['a', 'b']`, not a mapping of keys",
        "a policy is a mapping with `tools`, and usually `requirements`",
    ),
    (
        "policy.yaml",
        "just text\n",
        "policy.yaml:1: the top level is `'just text'`, not a mapping of keys",
        "a policy is a mapping with `tools`, and usually `requirements`",
    ),
]


@pytest.mark.parametrize(("name", "text", "message", "hint"), STRUCTURE)
def test_structure_mistakes_are_located(
    here: Path, name: str, text: str, message: str, hint: str | None
) -> None:
    error = file_error(name, text)
    assert error.message == message
    assert error.hint == hint
    assert error.location == message.split(": ")[0]


def test_several_mistakes_report_the_first_in_the_file(here: Path) -> None:
    error = file_error(
        "policy.yaml",
        "tools: [a]\nrequirements:\n  - type: conditional\n    taget: a\n"
        "  - type: cycle_guard\n    windw: 3\n",
    )
    assert error.message == "policy.yaml:4: requirements[0].taget: unknown key `taget`"


# -- the text itself: reading, decoding, syntax --------------------------------------------

TEXT = [
    ("policy.toml", "", "policy.toml:1: the file is empty"),
    ("policy.json", "  \n\t\n", "policy.json:1: the file is empty"),
    ("policy.yaml", "# only a comment\n", "policy.yaml:1: the file is empty"),
    ("policy.toml", 'tools = ["a"\n', "policy.toml:2: invalid TOML: unclosed array"),
    (
        "policy.toml",
        'tools = ["a"]\ntools = ["b"]\n',
        "policy.toml:2: invalid TOML: cannot overwrite a value",
    ),
    (
        "policy.json",
        '{"tools": ["a"]\n "mode": "strict"}',
        "policy.json:2: invalid JSON: expecting ',' delimiter (column 2)",
    ),
    (
        "policy.json",
        '{"tools": ["NaN"],\n "max_iterations": NaN}',
        "policy.json:2: max_iterations: invalid JSON: `NaN` is not a JSON value",
    ),
    (
        "policy.json",
        '{"tools": ["a"],\n "requirements": [{"type": "cycle_guard",\n "type": "x"}]}',
        "policy.json:3: requirements[0].type: duplicate key `type`",
    ),
    (
        "policy.yaml",
        "tools: [a\n",
        "policy.yaml:2: invalid YAML: expected ',' or ']', but got '<stream end>'",
    ),
    (
        "policy.yaml",
        "tools: [a]\ntools: [b]\n",
        "policy.yaml:2: tools: duplicate key `tools`",
    ),
    (
        "policy.yaml",
        "tools: [a]\n---\ntools: [b]\n",
        "policy.yaml:2: invalid YAML: expected a single document in the stream, but found "
        "another document",
    ),
    (
        "policy.yaml",
        "tools: [a]\n1: x\n",
        "policy.yaml:2: key `1` is not text",
    ),
    (
        "policy.yaml",
        "? [a]\n: x\n",
        "policy.yaml:1: a key must be text, not a list or a mapping",
    ),
]


@pytest.mark.parametrize(("name", "text", "message"), TEXT)
def test_text_mistakes_are_located(here: Path, name: str, text: str, message: str) -> None:
    error = file_error(name, text)
    assert error.message == message
    assert error.location == message.split(": ")[0]


def test_non_utf8_names_the_line_and_byte(here: Path) -> None:
    error = file_error("policy.toml", b'tools = ["a"]\n# caf\xe9\n')
    assert error.message == "policy.toml:2: the file is not UTF-8: byte `0xe9` at offset 19"
    assert error.hint == "save the file as UTF-8"
    assert error.location == "policy.toml:2"


def test_a_missing_file(here: Path) -> None:
    error = load_error("nowhere.yaml")
    assert error.message == "nowhere.yaml: no such file"
    assert error.location == "nowhere.yaml"


def test_a_directory(here: Path) -> None:
    (here / "policies.toml").mkdir()
    assert load_error("policies.toml").message == "policies.toml: is a directory, not a policy file"


def test_a_directory_without_an_extension(here: Path) -> None:
    (here / "policies").mkdir()
    error = load_error("policies")
    assert error.message == "policies: is a directory, not a policy file"
    assert error.hint == "name one policy file in it (`ruleengine check DIR` checks every one)"


@pytest.mark.parametrize(
    ("name", "text", "line"),
    [
        ("policy.toml", "# nothing to call\ntools = []\n", 2),
        ("policy.yaml", "tools: []\nmax_iterations: 3\n", 1),
        ("policy.json", '{\n  "tools": []\n}', 2),
    ],
)
def test_an_empty_tool_list_is_an_error_at_its_line(
    here: Path, name: str, text: str, line: int
) -> None:
    error = file_error(name, text)
    assert error.message == f"{name}:{line}: tools: the policy declares no tool"
    assert error.parameter == "tools" and error.location == f"{name}:{line}"
    assert error.hint == (
        "list the tools the agent may call (`final_answer` is always there, implicitly)"
    )


def test_final_answer_alone_is_no_tool(here: Path) -> None:
    error = file_error("policy.yaml", "tools:\n  - final_answer\n")
    assert error.message == "policy.yaml:1: tools: the policy declares no tool but `final_answer`"


def test_not_a_regular_file(here: Path) -> None:
    os.mkfifo("policy.yaml")  # opening a pipe would block: it is refused unopened
    assert load_error("policy.yaml").message == "policy.yaml: is not a regular file"


@pytest.mark.parametrize(
    ("raised", "message"),
    [
        (PermissionError(13, "Permission denied"), "permission denied: cannot read the file"),
        (OSError(5, "Input/output error"), "cannot read the file: Input/output error"),
    ],
)
def test_an_unreadable_file(
    here: Path, monkeypatch: pytest.MonkeyPatch, raised: OSError, message: str
) -> None:
    Path("policy.toml").write_text('tools = ["a"]\n', encoding="utf-8")

    def refuse(*args: object, **kwargs: object) -> None:
        raise raised

    # Root reads any file whatever its mode, so the refusal is simulated where the file opens.
    monkeypatch.setattr("ruleengine.policy.load.open", refuse, raising=False)
    error = load_error("policy.toml")
    assert error.message == f"policy.toml: {message}"
    assert error.location == "policy.toml"


def test_a_file_over_10_mb_is_refused_unread(here: Path) -> None:
    with open("policy.toml", "wb") as handle:
        handle.truncate(MAX_BYTES + 1)
    assert load_error("policy.toml").message == "policy.toml: the file is larger than 10 MB"


def test_an_unknown_extension(here: Path) -> None:
    error = load_error("policy.ini")
    assert error.message == "policy.ini: unknown policy file extension `.ini`"
    assert error.hint == (
        "give a .toml, .yaml, .yml or .json file, or `module:attr` naming a `Policy` in Python"
    )


def test_extensions_are_read_case_insensitively(here: Path) -> None:
    Path("Policy.YML").write_text("tools: [a]\n", encoding="utf-8")
    assert Policy.load("Policy.YML").tools == ("a",)


def test_deep_nesting_is_an_error_not_a_crash(here: Path) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    error = file_error("policy.json", '{"tools": ' + deep + "}")
    assert error.message == "policy.json:1: the file nests too deeply"


def test_not_a_source() -> None:
    error = load_error(42)
    assert error.message == "`42` is not a policy source"


# -- YAML safety ---------------------------------------------------------------------------


def test_yaml_aliases_are_refused(here: Path) -> None:
    error = file_error("policy.yaml", "tools: &names [a, b]\nrequirements: []\nextra: *names\n")
    assert (
        error.message == "policy.yaml:1: YAML anchors and aliases are not allowed in policy files"
    )
    assert error.hint == "write the value out in full"


def test_an_alias_bomb_is_refused_at_once(here: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ruleengine.policy import _yaml

    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for n in range(1, 9):
        prev, cur = chr(ord("a") + n - 1), chr(ord("a") + n)
        lines.append(f"{cur}: &{cur} [" + ",".join(f"*{prev}" for _ in range(9)) + "]")

    class Built(Exception):
        """Stops the load where the aliases would be expanded (9**9 times over)."""

    def built(*args: object) -> object:
        raise Built

    monkeypatch.setattr(_yaml._YamlWalk, "value", built)
    try:
        error: PolicyError | None = file_error("policy.yaml", "\n".join(lines) + "\n")
    except Built:  # caught here: even a report of the bomb's nodes would not end
        error = None
    # At once: at the first anchor (line 1), before any value of the file is built.
    assert error is not None, "a value of the bomb was built"
    assert error.message == (
        "policy.yaml:1: YAML anchors and aliases are not allowed in policy files"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "tools: !!python/object/apply:os.system [echo hi]\n",
            "policy.yaml:1: tools: the tag `!!python/object/apply:os.system` is not allowed in "
            "policy files",
        ),
        (
            "tools: [a]\nmax_iterations: !!binary aGVsbG8=\n",
            "policy.yaml:2: max_iterations: the tag `!!binary` is not allowed in policy files",
        ),
        (
            "tools: !custom [a]\n",
            "policy.yaml:1: tools: the tag `!custom` is not allowed in policy files",
        ),
        (
            "tools: !!set {a: null}\n",
            "policy.yaml:1: tools: the tag `!!set` is not allowed in policy files",
        ),
    ],
)
def test_yaml_tags_beyond_plain_data_are_refused(here: Path, text: str, message: str) -> None:
    error = file_error("policy.yaml", text)
    assert error.message == message
    assert error.hint == "policy files hold plain data: text, numbers, booleans, lists, mappings"


def test_plain_yaml_tags_are_fine(here: Path) -> None:
    Path("policy.yaml").write_text(
        "tools: !!seq [!!str a]\nmax_iterations: !!int 7\n", encoding="utf-8"
    )
    policy = Policy.load("policy.yaml")
    assert (policy.tools, policy.max_iterations) == (("a",), 7)


# -- Python policies: module:attr ------------------------------------------------------------

MODULE = """
from ruleengine import ConditionalRequirement, Policy, requirement

def weekday(state):
    return True

@requirement(name="custom")
def custom(state):
    return []

policy = Policy(
    ["search", "think"],
    [ConditionalRequirement("think", custom_checks=weekday), custom],
    max_iterations=5,
)

def make():
    return policy

def broken():
    return Policy(["a", "a"])

def crash():
    raise RuntimeError("no network\\nsecond line")

def not_a_policy():
    return 3

answer = 42
"""


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A module on `sys.path` that defines Python policies; its name."""
    name = f"policy_fixture_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(MODULE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)
    yield name
    sys.modules.pop(name, None)


def test_module_attr_names_a_policy(module: str) -> None:
    policy = Policy.load(f"{module}:policy")
    assert policy.source == f"{module}:policy"
    assert policy.tools == ("search", "think")
    assert [r.name for r in policy.requirements] == ["conditional(think)", "custom"]
    assert policy.location("custom") is None
    original = sys.modules[module].policy
    assert original.source == "<python>"
    assert policy == original


def test_module_attr_may_name_a_function(module: str) -> None:
    assert Policy.load(f"{module}:make").source == f"{module}:make"


def test_a_function_may_be_given_directly(module: str) -> None:
    make = importlib.import_module(module).make
    assert Policy.load(make).source == f"{module}:make"


def test_a_python_file_path_and_attr(tmp_path: Path) -> None:
    path = tmp_path / "my_policy.py"
    path.write_text(MODULE, encoding="utf-8")
    policy = Policy.load(f"{path}:policy")
    assert policy.source == f"{path}:policy"
    assert policy.max_iterations == 5


@pytest.mark.parametrize(
    ("attr", "message", "hint"),
    [
        (
            "polcy",
            "{m}:polcy: `{m}` has no attribute `polcy`",
            "did you mean `policy`? name the `Policy` object (or a function returning one)",
        ),
        (
            "answer",
            "{m}:answer: `answer` is `42`, not a `Policy`",
            "name a `ruleengine.Policy`, or a function of no arguments that returns one",
        ),
        (
            "not_a_policy",
            "{m}:not_a_policy: `not_a_policy()` returned `3`, not a `Policy`",
            "a policy function takes no arguments and returns a `Policy`",
        ),
        (
            "crash",
            "{m}:crash: calling `crash()` raised `RuntimeError`: no network",
            "a policy function takes no arguments and returns a `Policy`",
        ),
        ("broken", "{m}:broken: tool `a` is declared twice", None),
    ],
)
def test_module_attr_mistakes(module: str, attr: str, message: str, hint: str | None) -> None:
    error = load_error(f"{module}:{attr}")
    assert error.message == message.format(m=module)
    assert error.hint == hint
    assert error.location == f"{module}:{attr}"


def test_a_module_that_is_not_there() -> None:
    error = load_error("no_such_policy_module:policy")
    assert error.message == "no_such_policy_module:policy: no module named `no_such_policy_module`"
    assert error.hint == (
        "check that the module is importable from here (`sys.path`), or name its file: "
        "`path/to/policy.py:attr`"
    )


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (
            "raise ValueError('bad config')\n",
            "raising: importing `raising` raised `ValueError`: bad config",
        ),
        (
            "def (:\n",
            "raising: importing `raising` raised `SyntaxError`: "
            "invalid syntax (raising.py, line 1)",
        ),
        (
            "import no_such_dependency_xyz\n",
            "raising: importing `raising` raised `ModuleNotFoundError`: No module named "
            "'no_such_dependency_xyz'",
        ),
        (
            "from ruleengine import Policy\npolicy = Policy(['a'], max_iterations=0)\n",
            "raising: max_iterations=`0` must be at least 1",
        ),
    ],
)
def test_a_module_that_fails_to_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str, message: str
) -> None:
    (tmp_path / "raising.py").write_text(source, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "raising", raising=False)
    error = load_error("raising:policy")
    assert error.message.replace("raising:policy", "raising") == message
    assert isinstance(error.__cause__, Exception)


def test_a_missing_python_file(here: Path) -> None:
    error = load_error("nowhere.py:policy")
    assert error.message == "nowhere.py:policy: no such file `nowhere.py`"


def test_module_attr_needs_both_parts() -> None:
    assert load_error(":policy").message == ":policy: name a Python policy as `module:attr`"


# -- text in a named format (the command line's stdin) ---------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_text_in_a_named_format_loads_with_its_lines(fmt: str) -> None:
    text, lines = WRITERS[fmt](SUPPORT)
    policy = load_bytes(text.encode(), format=fmt, source="<stdin>", policy_class=Policy)
    assert policy.source == "<stdin>"
    assert policy.tools == ("search", "think", "send_email")
    located = policy.location("think-first")
    assert located is not None and located.file == "<stdin>"
    assert located.line == lines["requirements[0]"]


@pytest.mark.parametrize(
    ("data", "fmt", "message", "hint"),
    [
        (b"", "toml", "<stdin>:1: the input is empty", "a policy lists at least its `tools`"),
        (
            b'tools = ["a"]\n# caf\xe9\n',
            "toml",
            "<stdin>:2: the input is not UTF-8: byte `0xe9` at offset 19",
            "give the policy as UTF-8 text",
        ),
        (b'{"tools": ["a"]}', "yaml", None, None),  # JSON is YAML: it loads
        (b'tools: ["a"]\n', "toml", "<stdin>:1: invalid TOML: ", None),
        (b'tools = ["a"]\n', "ini", "<stdin>: unknown policy format `ini`", None),
        (b"tools: []\n", "yaml", "<stdin>:1: tools: the policy declares no tool", None),
    ],
)
def test_text_mistakes_cite_the_source(
    data: bytes, fmt: str, message: str | None, hint: str | None
) -> None:
    if message is None:
        assert load_bytes(data, format=fmt, source="<stdin>", policy_class=Policy).tools == ("a",)
        return
    with pytest.raises(PolicyError) as info:
        load_bytes(data, format=fmt, source="<stdin>", policy_class=Policy)
    assert info.value.message.startswith(message)
    if hint is not None:
        assert info.value.hint == hint


def test_text_over_10_mb_is_refused() -> None:
    with pytest.raises(PolicyError, match="larger than 10 MB"):
        load_bytes(b" " * (MAX_BYTES + 1), format="toml", source="<stdin>", policy_class=Policy)


# -- the policy files of a directory ---------------------------------------------------------


def test_a_directory_lists_its_policy_files_sorted(here: Path) -> None:
    for name in ("b.yaml", "a.toml", "C.JSON", "d.yml", "notes.md", "policy.py", "README"):
        Path(name).write_text("tools: [a]\n", encoding="utf-8")
    Path(".hidden.toml").write_text('tools = ["a"]\n', encoding="utf-8")
    Path("policy.schema.json").write_text("{}", encoding="utf-8")
    Path("nested.toml").mkdir()
    Path("sub").mkdir()
    Path("sub", "inner.toml").write_text('tools = ["a"]\n', encoding="utf-8")
    assert policy_files(".") == ["./C.JSON", "./a.toml", "./b.yaml", "./d.yml"]
    assert policy_files(str(here) + os.sep) == [
        str(here / name) for name in ("C.JSON", "a.toml", "b.yaml", "d.yml")
    ]


def test_a_directory_without_policy_files_is_an_error(here: Path) -> None:
    Path("empty").mkdir()
    Path("empty", "notes.md").write_text("# notes\n", encoding="utf-8")
    with pytest.raises(PolicyError) as info:
        policy_files("empty")
    assert info.value.message == "empty: no policy file in the directory"
    assert info.value.location == "empty"
    with pytest.raises(PolicyError, match=r"^nowhere: no such directory$"):
        policy_files("nowhere")
