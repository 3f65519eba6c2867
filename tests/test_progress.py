"""The one progress implementation (longpipe/progress.py): the multi-run bar and one
run's simulated-time line, both on tqdm, shown on terminals only."""

from __future__ import annotations

import io

from longpipe.progress import Progress, RunProgress


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_run_progress_line_after_the_delay(monkeypatch):
    monkeypatch.setenv("LONGPIPE_PROGRESS_AFTER", "0")
    s = _Tty()
    p = RunProgress(False, s)
    assert p.enabled
    p(10**9, 10**15)
    p(3 * 10**9, 10**15)
    out = s.getvalue()
    assert "simulated 3 s of 1e+06 s" in out and "elapsed" in out and "left" in out
    p.clear()
    assert s.getvalue().endswith("\r")  # the line is wiped, the terminal left clean


def test_run_progress_silent_for_short_runs_quiet_or_no_terminal(monkeypatch):
    monkeypatch.setenv("LONGPIPE_PROGRESS_AFTER", "3600")
    s = _Tty()
    p = RunProgress(False, s)
    p(10**9, 10**12)
    p.clear()
    assert s.getvalue() == ""
    monkeypatch.setenv("LONGPIPE_PROGRESS_AFTER", "0")
    assert not RunProgress(True, _Tty()).enabled
    assert not RunProgress(False, io.StringIO()).enabled


def test_many_runs_bar():
    s = _Tty()
    with Progress(4, "runs", True, stream=s) as p:
        p.update(2)
    assert "runs:" in s.getvalue() and "2/4" in s.getvalue()
    quiet = _Tty()
    with Progress(4, "runs", False, stream=quiet) as p:
        p.update(2)
    assert quiet.getvalue() == ""
