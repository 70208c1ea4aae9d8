"""sampleval.progress, the one progress implementation: a counted bar (with rate and time
left), named steps and a tracked iterable on standard error, and nothing when disabled."""

from __future__ import annotations

import pytest

from sampleval.progress import Bar, steps, track


def test_a_bar_counts_on_stderr_only_when_enabled(capsys: pytest.CaptureFixture[str]) -> None:
    with Bar(3, "cells 0/2", True, unit="trials", timing=True, transient=False) as bar:
        for done in range(3):
            bar.advance(1, f"cells {done}/2")
    out, err = capsys.readouterr()
    assert out == "" and "3/3" in err and "trials" in err and "cells 2/2" in err
    with Bar(3, "quiet", False, unit="trials", timing=True) as bar:
        bar.advance(3)
    assert list(track(iter("abc"), 3, "reading", False)) == ["a", "b", "c"]
    with steps(2, "estimating", False) as step:
        step("one")
        step("two")
    assert capsys.readouterr() == ("", "")
