"""Traces people write (check/trace.py ``parse_trace``): ``explain --trace`` and
``--trace-file``, comma-separated or as a JSON list, every mistake a one-line ``PolicyError``."""

from __future__ import annotations

import pytest

from ruleengine import PolicyError
from ruleengine.check import TraceStep
from ruleengine.check.trace import JSON_HINT, TEXT_HINT, parse_trace

TOOLS = ("search", "github:search", "a,b")


def parsed(text: str, **options: object) -> tuple[list[tuple[str, str]], bool]:
    steps, finish = parse_trace(text, TOOLS, **options)  # type: ignore[arg-type]
    return [(s.tool, s.status) for s in steps], finish


def mistake(text: str, **options: object) -> PolicyError:
    with pytest.raises(PolicyError) as info:
        parse_trace(text, TOOLS, **options)  # type: ignore[arg-type]
    return info.value


def test_comma_separated_steps_with_statuses() -> None:
    assert parsed("search, search:error,final_answer") == (
        [("search", "ok"), ("search", "error")],
        True,
    )
    assert parsed("") == ([], False)
    assert parsed("  ") == ([], False)


def test_a_json_list_names_tools_with_colons_and_commas() -> None:
    text = (
        '["github:search", ["a,b", "error"], {"tool": "search"}, '
        '{"tool": "a,b", "status": "denied"}]'
    )
    assert parsed(text) == (
        [("github:search", "ok"), ("a,b", "error"), ("search", "ok"), ("a,b", "denied")],
        False,
    )
    assert parsed(' [ "search", "final_answer" ] ') == ([("search", "ok")], True)
    assert parsed("[]") == ([], False)


def test_check_json_traces_are_read_as_they_are() -> None:
    trace = [TraceStep(tool="a,b", status="error"), TraceStep(tool="search")]
    text = "[" + ", ".join(s.model_dump_json() for s in trace) + "]"
    steps, _ = parse_trace(text, TOOLS, json_only=True)
    assert steps == trace


@pytest.mark.parametrize(
    ("text", "message", "hint"),
    [
        ("search,,search", "--trace: entry 2 is empty", TEXT_HINT),
        ("final_answer,search", "--trace: `final_answer`: `final_answer` ends the run", TEXT_HINT),
        ("search,serch", "--trace: unknown tool `serch` (entry 2)", "did you mean `search`?"),
        ("search:maybe", "--trace: unknown status `maybe` for `search` (entry 1)", None),
        ("[", "--trace: invalid JSON: expecting value (line 1, column 2)", JSON_HINT),
        ('{"tool": "search"}', '--trace: `{"tool": "search"}` is not a list of steps', JSON_HINT),
        ('"search"', '--trace: `"search"` is not a list of steps', JSON_HINT),
        ("[1]", "--trace: entry 1 is `1`, not a step", JSON_HINT),
        ('[["search"]]', '--trace: entry 1 is `["search"]`, not a step', JSON_HINT),
        ('[{"tool": "search", "x": 1}]', "--trace: entry 1 is `{", JSON_HINT),
        ('[""]', "--trace: entry 1 is empty", JSON_HINT),
        ('[["search", "maybe"]]', "--trace: unknown status `maybe` for `search` (entry 1)", None),
        ('["final_answer", "search"]', '--trace: `"final_answer"`: `final_answer` ends', JSON_HINT),
        ('[["final_answer", "error"]]', '--trace: `["final_answer", "error"]`: `final', JSON_HINT),
        ("[" * 100_000 + "]" * 100_000, "--trace: the JSON nests too deeply", JSON_HINT),
    ],
)
def test_mistakes_are_one_line_naming_the_entry(text: str, message: str, hint: str | None) -> None:
    error = mistake(text)
    assert error.message.startswith(message)
    assert "\n" not in error.message
    if hint is not None:
        assert error.hint is not None and error.hint.startswith(hint)


def test_a_name_with_a_colon_written_plainly_points_to_json() -> None:
    error = mistake("github:search", source="mcp.toml")
    assert error.message == "--trace: unknown tool `github` (entry 1)"
    assert error.hint == (
        "`github:search` is a tool: a name with `:` is written in a JSON list, "
        '`["github:search"]`; the tools of mcp.toml: `search`, `github:search`, `a,b`'
    )


def test_json_only_refuses_the_comma_form_and_names_where() -> None:
    error = mistake("search", where="--trace-file: t.json", json_only=True)
    assert error.message.startswith("--trace-file: t.json: invalid JSON: ")
