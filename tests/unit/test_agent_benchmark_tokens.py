"""benchmarks.tokens: the 20-step run keeps its prompt prefix, and meets the ≥ 5× target."""

from __future__ import annotations

from benchmarks import tokens


def test_the_stable_layout_meets_the_target():
    rows = tokens.measure()
    assert len(rows) == tokens.STEPS
    summary = tokens.summary(rows)
    assert summary["ratio"] >= tokens.TARGET
    # every step after the first reuses the previous request as its prefix
    assert all(r.ours_uncached < r.ours // 2 for r in rows[1:])
    assert "target ≥ 5×: met" in tokens.report(rows)


def test_uncached_and_token_counts():
    assert tokens.count('{"a": 1}') == ["{", '"', "a", '"', ":", "1", "}"]
    assert tokens.uncached(None, ["a", "b"]) == 2
    assert tokens.uncached(["a", "b"], ["a", "b", "c"]) == 1
    assert tokens.uncached(["a", "x"], ["a", "b", "c"]) == 2


def test_main_prints_the_table(capsys, tmp_path):
    assert tokens.main(["--json", str(tmp_path / "out.json")]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == [
        "step",
        "tool",
        "called",
        "prompt",
        "uncached",
        "baseline",
        "prompt",
        "baseline",
        "uncached",
    ]
    assert (tmp_path / "out.json").read_text(encoding="utf-8").startswith("{")
