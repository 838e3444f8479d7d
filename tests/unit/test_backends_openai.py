"""backends/openai.py without a server: construction, secrets, and life without ``openai``.

The real client against the real test server is in tests/integration/test_openai_backend.py.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from backends import OpenAIChatModel, RetryPolicy
from backends.openai import _mask
from ruleengine import PolicyError

KEY = "sk-test-9f8e7d6c5b4a3928171605f4e3d2c1b0"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _no_openai_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def test_defaults_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:11434/v1/")
    llm = OpenAIChatModel("llama3.1")
    assert llm.base_url == "http://localhost:11434/v1"
    assert llm.model == "llama3.1"
    assert llm.timeout == 60.0
    assert llm.retry == RetryPolicy()


def test_a_local_server_needs_no_key() -> None:
    assert (
        OpenAIChatModel("m", base_url="http://127.0.0.1:8000/v1").base_url
        == "http://127.0.0.1:8000/v1"
    )


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"model": ""}, "`model` must be a non-empty model name"),
        ({"model": 3}, "`model`"),
        ({"model": "m"}, "no API key for the OpenAI API"),
        ({"model": "m", "api_key": ""}, "`api_key` must be non-empty text"),
        ({"model": "m", "api_key": "sk-abc\nX-Evil: 1"}, "control character"),
        ({"model": "m", "api_key": KEY, "base_url": "localhost:8000"}, "http(s) URL"),
        ({"model": "m", "api_key": KEY, "base_url": "ftp://host/v1"}, "http(s) URL"),
        ({"model": "m", "base_url": "http://user:pw@host/v1"}, "must not carry credentials"),
        ({"model": "m", "base_url": "http://h:8000/v1/chat/completions"}, "is the endpoint"),
        ({"model": "m", "api_key": KEY, "timeout": 0}, "`timeout`"),
        ({"model": "m", "api_key": KEY, "timeout": "5"}, "`timeout`"),
        ({"model": "m", "api_key": KEY, "retry": 3}, "`retry` must be a RetryPolicy"),
        ({"model": "m", "api_key": KEY, "sleep": 0.1}, "`sleep`"),
        ({"model": "m", "api_key": KEY, "default_headers": ["x"]}, "`default_headers`"),
        ({"model": "m", "api_key": KEY, "capabilities": "all"}, "`capabilities`"),
    ],
)
def test_bad_arguments_name_the_culprit(kwargs: dict[str, Any], fragment: str) -> None:
    with pytest.raises(PolicyError) as caught:
        OpenAIChatModel(**kwargs)
    assert fragment in caught.value.message
    assert "sk-abc" not in str(caught.value) and "pw@" not in str(caught.value)


def test_the_key_is_in_no_repr() -> None:
    llm = OpenAIChatModel("gpt-4o", api_key=KEY)
    assert repr(llm) == "OpenAIChatModel('gpt-4o')"
    local = OpenAIChatModel("m", api_key=KEY, base_url="http://127.0.0.1:1/v1")
    assert repr(local) == "OpenAIChatModel('m', base_url='http://127.0.0.1:1/v1')"
    assert KEY not in repr(vars(llm).get("retry"))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"bad key {KEY}", "bad key ***"),
        (
            "Incorrect API key provided: sk-test-9f8e7d6c5b4a****c1b0",
            "Incorrect API key provided: *******c1b0",
        ),
        ("nothing secret here", "nothing secret here"),
        (KEY[5:20], "***"),
        ("", ""),
    ],
)
def test_the_key_and_its_pieces_are_masked(text: str, expected: str) -> None:
    assert _mask(text, KEY) == expected
    assert _mask(text, "no-key") == text


def run_isolated(code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter where ``import openai`` fails."""
    blocker = textwrap.dedent(
        """
        import sys
        class _NoOpenAI:
            def find_spec(self, name, path=None, target=None):
                if name == "openai" or name.startswith("openai."):
                    raise ImportError("openai is blocked for this test")
                return None
        sys.meta_path.insert(0, _NoOpenAI())
        """
    )
    return subprocess.run(
        [sys.executable, "-c", blocker + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )


def test_everything_but_the_openai_model_works_without_openai() -> None:
    result = run_isolated(
        """
        import anyio
        import ruleengine
        import backends
        from backends import ScriptedChatModel, ChatRequest, UserMessage, BackendError
        from backends.testing import OpenAICompatibleServer

        llm = ScriptedChatModel(["offline reply"])
        reply = anyio.run(llm.complete, ChatRequest([UserMessage("hi")]))
        print(reply.text)
        assert "openai" not in sys.modules
        try:
            backends.OpenAIChatModel("m", base_url="http://127.0.0.1:1/v1")
        except BackendError as error:
            print(error)
        """
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "offline reply"
    assert lines[1] == "the `openai` package is not installed: `OpenAIChatModel` needs it"
    assert lines[2].startswith("  hint: install it")
