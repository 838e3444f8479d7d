"""Prompt tokens per step: the agent's stable layout against a prompt re-rendered every step.

A 20-step scripted run of a research agent (six tools with real descriptions, requirements
that change the pass at most steps) records every request the model receives. Each request is
serialised as the server renders it for the model — the tool definitions first, then the
messages, each as the JSON the server receives (``backends._wire``) — and counted in
approximate tokens (words and punctuation marks, the shape of a BPE count without a
tokenizer dependency). A step's *uncached* tokens are those after the longest common prefix
with the previous step's request: what a provider's prefix cache cannot serve.

The baseline is the same run laid out as the original design does: the system prompt
re-rendered each step from the pass (every visible tool with allowed or not, and the
reasons), only the allowed tools offered, no step note. Same history, same passes.

    python -m benchmarks.tokens            # the table
    python -m benchmarks.tokens --json out.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import anyio

from agent import RequirementAgent, StepStartEvent, tool
from backends import (
    ChatRequest,
    ScriptedChatModel,
    SystemMessage,
    UserMessage,
)
from backends._wire import message_to_wire, request_body
from benchmarks._report import Column, format_table, write_json
from ruleengine import FINAL_ANSWER, ConditionalRequirement, Pass

TARGET = 5.0
"""The issue's target: at least 5× fewer uncached prompt tokens per step than the baseline."""
STEPS = 20
_TOKEN = re.compile(r"\w+|[^\w\s]")

PAGE = (
    "Z3 is a satisfiability modulo theories (SMT) solver developed at Microsoft Research. It is"
    " used to check the satisfiability of logical formulas over one or more theories, such as"
    " arithmetic, bit-vectors, arrays and uninterpreted functions. Z3 offers APIs for C, C++,"
    " Python, Java and .NET, and is used in program verification, test generation and"
    " symbolic execution."
)


@tool
def think(thought: str) -> str:
    """Write down your reasoning before acting: what you know, what you still need, and the
    next step. Use it to plan, not to talk to the user.

    Args:
        thought: your reasoning, in a few sentences
    """
    return "noted"


@tool
def search(query: str, max_results: int = 3) -> list[dict[str, str]]:
    """Search the web and return the most relevant pages, each with its title, its address
    and a short snippet. Prefer precise queries of a few words.

    Args:
        query: what to search for
        max_results: how many results to return, from 1 to 10
    """
    return [
        {"title": f"{query} — result {i}", "url": f"https://example.org/{i}", "snippet": PAGE[:90]}
        for i in range(1, max_results + 1)
    ]


@tool
def fetch(url: str) -> str:
    """Fetch a web page and return its main text, without navigation and advertisements.
    Only fetch addresses returned by `search`.

    Args:
        url: the address of the page
    """
    return PAGE


@tool
def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression exactly and return the result.

    Args:
        expression: the expression, e.g. `(3 + 4) * 12 / 7`
    """
    return "12"


@tool
def save_note(title: str, text: str) -> str:
    """Save a note to the user's notebook, where they will find it later.

    Args:
        title: a short title
        text: the note, in plain text
    """
    return f"saved `{title}`"


@tool
def send_email(to: str, subject: str, body: str) -> str:
    """Send an e-mail on the user's behalf. Only send what the user asked for.

    Args:
        to: the recipient's address
        subject: the subject line
        body: the message, in plain text
    """
    return f"sent to {to}"


TOOLS = [think, search, fetch, calculator, save_note, send_email]
REQUIREMENTS = [
    ConditionalRequirement(think, force_at_step=1, consecutive_allowed=False),
    ConditionalRequirement(fetch, only_after=[search], reason="search first"),
    ConditionalRequirement(think, force_after=[fetch], name="think-after-fetch"),
    ConditionalRequirement(search, max_invocations=5),
    ConditionalRequirement(send_email, only_after=[save_note], max_invocations=1),
    ConditionalRequirement(save_note, min_invocations=1, reason="save the findings first"),
]
PLAN: list[tuple[str, dict[str, Any]]] = [
    ("think", {"thought": "Find what Z3 is, then save and send a summary."}),
    ("search", {"query": "Z3 solver"}),
    ("fetch", {"url": "https://example.org/1"}),
    ("think", {"thought": "Z3 is an SMT solver. Look for its uses."}),
    ("search", {"query": "Z3 solver uses"}),
    ("fetch", {"url": "https://example.org/2"}),
    ("think", {"thought": "Verification and test generation. Check the history."}),
    ("search", {"query": "Z3 history Microsoft Research"}),
    ("fetch", {"url": "https://example.org/3"}),
    ("think", {"thought": "First released in 2008. Count the years."}),
    ("calculator", {"expression": "2020 - 2008"}),
    ("search", {"query": "Z3 Python API"}),
    ("fetch", {"url": "https://example.org/1"}),
    ("think", {"thought": "Enough material: write the note."}),
    ("save_note", {"title": "Z3", "text": "Z3: an SMT solver from Microsoft Research."}),
    ("calculator", {"expression": "12 * 12"}),
    ("think", {"thought": "Send the summary."}),
    ("send_email", {"to": "ada@example.org", "subject": "Z3", "body": "See my note."}),
    ("think", {"thought": "Done."}),
    (FINAL_ANSWER, {"response": "Z3 is an SMT solver; I saved a note and sent it to Ada."}),
]


@dataclass(frozen=True, slots=True)
class Row:
    """One step of the table."""

    step: int
    tool: str
    ours: int
    ours_uncached: int
    baseline: int
    baseline_uncached: int


def count(text: str) -> list[str]:
    """Approximate tokens: words and punctuation marks."""
    return _TOKEN.findall(text)


def rendered(request: ChatRequest) -> list[str]:
    """The request as the model reads it: tool definitions, then messages (chat-template order)."""
    body = request_body(request, model="m")
    parts = [json.dumps(t, ensure_ascii=False) for t in body.get("tools", [])]
    parts += [json.dumps(message_to_wire(m), ensure_ascii=False) for m in request.messages]
    return count("\n".join(parts))


def uncached(previous: list[str] | None, current: list[str]) -> int:
    """Tokens of ``current`` after its longest common prefix with ``previous``."""
    if previous is None:
        return len(current)
    common = 0
    for a, b in zip(previous, current, strict=False):
        if a != b:
            break
        common += 1
    return len(current) - common


def record_run() -> tuple[list[ChatRequest], list[Pass], RequirementAgent[str]]:
    """Run the 20-step plan; the requests the model received and the pass of each step."""

    def script(request: ChatRequest) -> dict[str, Any]:
        done = sum(1 for m in request.messages if m.kind == "assistant")
        name, arguments = PLAN[done]
        return {"tool_calls": [{"name": name, "arguments": arguments}]}

    llm = ScriptedChatModel(script)
    agent = RequirementAgent(
        llm,
        TOOLS,
        REQUIREMENTS,
        role="You are a research assistant.",
        instructions=["Research the user's question on the web.", "Save your findings."],
    )
    passes: list[Pass] = []

    def on_step(event: StepStartEvent) -> None:
        passes.append(event.pass_)

    agent.emitter.on("step.start", on_step)
    out = anyio.run(agent.run, "What is Z3? Save a note and send it to ada@example.org.")
    statuses = [s.status for s in out.steps]
    if len(out.steps) != STEPS or set(statuses) != {"ok"}:
        raise RuntimeError(
            f"the scripted run went astray: {[(s.tool, s.status) for s in out.steps]}"
        )
    return [r.request for r in llm.requests], passes, agent


def baseline_request(
    agent: RequirementAgent[str], pass_: Pass, request: ChatRequest
) -> ChatRequest:
    """The step as the original design lays it out: the pass rendered into the system prompt,
    only the allowed tools offered, no step note."""
    visible = [t for t in agent.tools if t.name not in pass_.hidden]
    lines = [agent.role or "", "", "# Instructions"]
    lines += [f"- {i}" for i in agent.instructions]
    lines += ["", "# Tools", "| tool | description | allowed now | reason |", "|---|---|---|---|"]
    for t in visible:
        state = "forced" if t.name == pass_.forced else ("yes" if t.name in pass_.allowed else "no")
        description = " ".join(t.description.split())
        lines.append(f"| {t.name} | {description} | {state} | {pass_.reasons.get(t.name, '')} |")
    lines += ["", "# Notes"]
    if pass_.forced:
        lines.append(f"- You must use the tool `{pass_.forced}` now.")
    if not pass_.can_stop:
        lines.append("- You cannot give the final answer yet.")
    lines.append("- Give your final answer with the tool `final_answer`.")
    history = [
        m
        for m in request.messages[1:]
        if not (isinstance(m, UserMessage) and m.content.startswith("Now:"))
    ]
    allowed = [t.definition for t in visible if t.name in pass_.allowed]
    return ChatRequest(
        [SystemMessage("\n".join(lines)), *history], tools=allowed, tool_choice=pass_.tool_choice
    )


def measure() -> list[Row]:
    """The per-step rows of the table."""
    requests, passes, agent = record_run()
    rows = []
    previous_ours: list[str] | None = None
    previous_base: list[str] | None = None
    for step, (request, pass_) in enumerate(zip(requests, passes, strict=True), 1):
        ours = rendered(request)
        base = rendered(baseline_request(agent, pass_, request))
        rows.append(
            Row(
                step,
                PLAN[step - 1][0],
                len(ours),
                uncached(previous_ours, ours),
                len(base),
                uncached(previous_base, base),
            )
        )
        previous_ours, previous_base = ours, base
    return rows


def summary(rows: Sequence[Row]) -> dict[str, float]:
    """Totals and the per-step ratio of uncached tokens (steps 2 on: step 1 is cold for both)."""
    warm = rows[1:]
    ours = sum(r.ours_uncached for r in warm) / len(warm)
    base = sum(r.baseline_uncached for r in warm) / len(warm)
    return {
        "ours_prompt_tokens": sum(r.ours for r in rows),
        "ours_uncached_tokens": sum(r.ours_uncached for r in rows),
        "baseline_prompt_tokens": sum(r.baseline for r in rows),
        "baseline_uncached_tokens": sum(r.baseline_uncached for r in rows),
        "ours_uncached_per_step": ours,
        "baseline_uncached_per_step": base,
        "ratio": base / ours,
    }


COLUMNS: list[Column] = [
    ("step", 4, ">"),
    ("tool called", 12, "<"),
    ("prompt", 7, ">"),
    ("uncached", 8, ">"),
    ("baseline prompt", 15, ">"),
    ("baseline uncached", 17, ">"),
]


def report(rows: Sequence[Row]) -> str:
    """The table, its totals, and the target line."""
    cells = [
        (
            str(r.step),
            r.tool,
            str(r.ours),
            str(r.ours_uncached),
            str(r.baseline),
            str(r.baseline_uncached),
        )
        for r in rows
    ]
    s = summary(rows)
    cells.append(
        (
            "all",
            "",
            str(int(s["ours_prompt_tokens"])),
            str(int(s["ours_uncached_tokens"])),
            str(int(s["baseline_prompt_tokens"])),
            str(int(s["baseline_uncached_tokens"])),
        )
    )
    verdict = "met" if s["ratio"] >= TARGET else "NOT met"
    return "\n".join(
        [
            format_table(COLUMNS, cells),
            "",
            f"uncached prompt tokens per step (steps 2-{len(rows)}): ours"
            f" {s['ours_uncached_per_step']:.0f}, baseline {s['baseline_uncached_per_step']:.0f}:"
            f" {s['ratio']:.1f}× fewer (target ≥ {TARGET:g}×: {verdict})",
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.tokens", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--json", metavar="PATH", help="also write the rows and totals as JSON")
    args = parser.parse_args(argv)
    rows = measure()
    print(report(rows))
    if args.json:
        write_json(args.json, {"rows": [_row(r) for r in rows], "summary": summary(rows)})
    return 0 if summary(rows)["ratio"] >= TARGET else 1


def _row(row: Row) -> dict[str, Any]:
    return {field.name: getattr(row, field.name) for field in dataclasses.fields(row)}


if __name__ == "__main__":
    sys.exit(main())
