"""The packages as a user installs them: the wheel carries a ``py.typed`` marker for each of
``ruleengine``, ``agent`` and ``backends``, so a user's ``mypy --strict`` type-checks a file
importing all three against them (without the markers it stops at "missing library stubs or
py.typed marker")."""

from __future__ import annotations

import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("ruleengine", "agent", "backends")

USER_FILE = """\
from agent import RequirementAgent
from backends import Capabilities
from ruleengine import ConditionalRequirement, Policy

policy = Policy(["search", "write"], [ConditionalRequirement("write", only_after="search")])
tools: list[str] = list(policy.tools)
capabilities: Capabilities = Capabilities()
agent_class = RequirementAgent
"""


def _wheel(tmp_path: Path) -> Path:
    """A wheel built from a copy of the sources (the build leaves nothing in the repo)."""
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for package in PACKAGES:
        shutil.copytree(ROOT / package, source / package, ignore=ignore)
    dist = tmp_path / "dist"
    pip_wheel = ["pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist)]
    subprocess.run(
        [sys.executable, "-m", *pip_wheel, str(source)],
        check=True,
        capture_output=True,
        cwd=tmp_path,
    )
    (wheel,) = dist.glob("ruleengine-*.whl")
    return wheel


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The wheel, and a fresh virtual environment with it installed (and nothing else)."""
    tmp = tmp_path_factory.mktemp("packaging")
    wheel = _wheel(tmp)
    env = tmp / "venv"
    venv.create(env, with_pip=False)
    python = env / "bin" / "python"
    install = ["install", "-q", "--no-deps", "--no-index", str(wheel)]
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), *install],
        check=True,
        capture_output=True,
    )
    return wheel, python


def test_the_wheel_marks_every_package_typed(installed: tuple[Path, Path]) -> None:
    wheel, _ = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    for package in PACKAGES:
        assert f"{package}/py.typed" in names, package


def _mypy(python: Path, user: Path, text: str) -> subprocess.CompletedProcess[str]:
    """A user's ``mypy --strict app.py`` in ``user`` (nothing of the repository on its
    path), against the environment of ``python``."""
    (user / "app.py").write_text(text, encoding="utf-8")
    options = ["--strict", "--python-executable", str(python), "--no-incremental"]
    return subprocess.run(
        [sys.executable, "-m", "mypy", *options, "--cache-dir", str(user / "cache"), "app.py"],
        capture_output=True,
        text=True,
        cwd=user,
    )


def test_a_users_strict_mypy_accepts_the_installed_packages(
    installed: tuple[Path, Path], tmp_path: Path
) -> None:
    _, python = installed
    done = _mypy(python, tmp_path, USER_FILE)
    assert done.returncode == 0, done.stdout + done.stderr
    # It really type-checked against the packages: a wrong type is caught.
    done = _mypy(python, tmp_path, USER_FILE + "wrong: int = policy.tools\n")
    assert done.returncode == 1 and "app.py:9: error" in done.stdout, done.stdout
