import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

# A shell without job control starts background commands (`make test &`) with SIGINT
# ignored, and an ignored signal stays ignored across exec: the Ctrl-C tests' commands
# would never see it. Python's own handler is reset to the default at exec.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def cli(*args, cwd=None, check=False):
    """Runs `python -m longpipe ARGS`; returns CompletedProcess (text)."""
    env = dict(os.environ)
    p = subprocess.run([sys.executable, "-m", "longpipe", *map(str, args)], capture_output=True, text=True,
                       cwd=cwd, env=env, stdin=subprocess.DEVNULL, timeout=600)
    if check and p.returncode != 0:
        raise AssertionError(f"exit {p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}")
    return p


@pytest.fixture
def run_cli():
    return cli


@pytest.fixture
def tshark():
    path = shutil.which("tshark")
    if path is None:
        pytest.skip("tshark not installed (make test installs it as root)")
    return path


def path_scenario(**kw):
    """A two-node server->client scenario as a dict; keyword args override flow keys."""
    link = {"a": "server", "b": "client", "rate": kw.pop("rate", "10Mbps"), "delay": kw.pop("delay", "50ms"),
            "queue": {"limit": kw.pop("queue", "100pkt")}}
    if "loss" in kw:
        link["loss"] = kw.pop("loss")
    sc = {"name": "path", "duration": kw.pop("duration", "20s"), "link": [link],
          "flow": [{"src": "server", "dst": "client", **kw}]}
    return sc


def leaked_emu_namespaces(before: set[str]) -> set[str]:
    """The `lpemu-*` namespaces made since `before` that no live emulation owns: those
    whose run record (``/run/longpipe-emu/RUN.json``, or ``$LONGPIPE_EMU_STATE``) is gone
    or names a process that has ended. Other runs on the machine (another developer's
    tests) are live and so not counted, as `longpipe-emu cleanup` spares them too."""
    import json

    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    now = {line.split()[0] for line in out.splitlines() if line.startswith("lpemu-")}
    state = Path(os.environ.get("LONGPIPE_EMU_STATE", "/run/longpipe-emu"))

    def live(name: str) -> bool:
        try:
            rec = json.loads((state / f"{name.split('-')[1]}.json").read_text())
            stat = Path(f"/proc/{int(rec['pid'])}/stat").read_text()
        except (OSError, ValueError, KeyError, IndexError):
            return False
        return int(stat[stat.rfind(")") + 2:].split()[19]) == int(rec["start"])

    return {n for n in now - before if not live(n)}
