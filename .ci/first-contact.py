"""CI proves what the README promises a new user (STYLE.md lesson 29).

1. **The README's first command, verbatim.** A fresh clone of this checkout's HEAD; the first
   indented command of README.md run exactly as written with bash (it makes its own virtual
   environment, installs the project without the lock or the dev extra, and runs
   `guts serve`), only the port changed (GUTS_PORT in its environment); /readyz waited for;
   the README's "One full hand with curl" block run as written (its port changed the same
   way); the hand it played read back; SIGTERM; every process it started gone.
2. **The image's way.** A wheel built from the clone, installed non-editable into another fresh
   virtual environment constrained by requirements.lock (as the Dockerfile does), `guts serve`
   started from a directory that is not the checkout, /readyz, the same hand, SIGTERM.

Standard library only (it runs before, and apart from, the project's own environment). A
failure names its step and shows the end of that step's log; the exit code is 1.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
README_PORT = 8000
OPERATOR_KEY = "change-me"  # the README's
READY_TIMEOUT_S = 600.0  # the first command installs the project first
STOP_TIMEOUT_S = 60.0


class StepFailed(Exception):
    """A step of the check failed; the message names it."""


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="guts-first-contact-") as scratch:
        root = Path(scratch)
        step = "clone"
        try:
            clone = root / "clone"
            run(["git", "clone", "--quiet", str(REPO), str(clone)], step)
            readme = (clone / "README.md").read_text()
            command = first_command(readme)
            hand = curl_block(readme)

            step = "README first command"
            started = time.monotonic()
            port = free_port()
            env = clean_env(GUTS_PORT=str(port), GUTS_OPERATOR_KEYS=OPERATOR_KEY)
            log = root / "first-command.log"
            with Running(["bash", "-c", command], clone, env, log, step) as served:
                served.wait_ready(port)
                say(f"{step}: /readyz answered 200 {time.monotonic() - started:.1f} s after start")
                play(hand, port, root / "hand-1.log", "README curl hand (first command)")
            say(f"{step}: stopped cleanly")

            step = "wheel, as the Dockerfile installs it"
            venv = root / "wheel-venv"
            run([sys.executable, "-m", "venv", str(venv)], step)
            pip = [str(venv / "bin" / "python"), "-m", "pip", "-q", "--disable-pip-version-check"]
            wheels = root / "wheels"
            run([*pip, "wheel", "--no-deps", "--wheel-dir", str(wheels), str(clone)], step)
            (wheel,) = wheels.glob("guts-*.whl")
            run([*pip, "install", "-c", str(clone / "requirements.lock"), str(wheel)], step)
            elsewhere = root / "elsewhere"
            elsewhere.mkdir()
            port = free_port()
            env = clean_env(GUTS_OPERATOR_KEYS=OPERATOR_KEY)
            argv = [str(venv / "bin" / "guts"), "serve", "--port", str(port)]
            started = time.monotonic()
            with Running(argv, elsewhere, env, root / "wheel.log", step) as served:
                served.wait_ready(port)
                say(f"{step}: /readyz answered 200 {time.monotonic() - started:.1f} s after start")
                play(hand, port, root / "hand-2.log", "README curl hand (wheel)")
            say(f"{step}: stopped cleanly")
        except StepFailed as failure:
            print(f"first contact FAILED at step: {failure}", file=sys.stderr)
            return 1
    say("first contact: ok")
    return 0


def first_command(readme: str) -> str:
    """The README's first indented (4-space) code line: the command that runs the service."""
    for line in readme.splitlines():
        if line.startswith("    ") and line.strip():
            return line.strip()
    raise StepFailed("README: no indented command found")


def curl_block(readme: str) -> str:
    """The ```sh block under the README's heading "One full hand with curl"."""
    found = re.search(r"^#+ [^\n]*One full hand with curl.*?```sh\n(.*?)```", readme, re.M | re.S)
    if found is None:
        raise StepFailed('README: no ```sh block under a "One full hand with curl" heading')
    return found.group(1)


READ_BACK = """
# (added by .ci/first-contact.py: the hand the block played, read back)
curl -sf -H "$OP" $H/v1/tables/$T/hands/1 > "$GUTS_HAND_FILE"
"""


def play(block: str, port: int, log: Path, step: str) -> None:
    """Run the curl block as written (its port changed) with bash, then check the hand."""
    script = block.replace(f":{README_PORT}", f":{port}") + READ_BACK
    hand_file = log.with_suffix(".json")
    env = clean_env(GUTS_HAND_FILE=str(hand_file))
    with open(log, "wb") as out:
        done = subprocess.run(
            ["bash", "-eo", "pipefail", "-c", script],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            timeout=120,
        )
    if done.returncode != 0:
        raise StepFailed(f"{step}: exited with {done.returncode}\n{tail(log)}")
    try:
        hand = json.loads(hand_file.read_text())
    except (OSError, ValueError) as error:
        raise StepFailed(f"{step}: the hand's history did not read back ({error})") from None
    if hand.get("hand") != 1 or hand.get("status") != "complete" or not hand.get("seed"):
        raise StepFailed(f"{step}: hand 1 is not a complete hand: {str(hand)[:400]}")
    say(f"{step}: played hand 1 to the end ({len(hand['events'])} events, seed revealed)")


class Running:
    """A command started in a session of its own, its output in `log`; on exit SIGTERM to
    its process group, then a wait until every process of its session is gone."""

    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str], log: Path, step: str):
        self.argv, self.cwd, self.env, self.log, self.step = argv, cwd, env, log, step

    def __enter__(self) -> Running:
        self.out = open(self.log, "wb")  # noqa: SIM115 - closed in __exit__
        self.process = subprocess.Popen(
            self.argv,
            cwd=self.cwd,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=self.out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        return self

    def wait_ready(self, port: int) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        last = "no answer"
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise StepFailed(
                    f"{self.step}: exited with {self.process.returncode} before /readyz "
                    f"answered 200\n{tail(self.log)}"
                )
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2):
                    return
            except urllib.error.HTTPError as error:
                last = f"{error.code} {error.read()[:300]!r}"
            except OSError as error:
                last = str(error)
            time.sleep(0.25)
        raise StepFailed(f"{self.step}: /readyz not 200 in {READY_TIMEOUT_S:.0f} s ({last})")

    def __exit__(self, kind: object, error: object, traceback: object) -> None:
        session = self.process.pid
        try:
            os.killpg(session, signal.SIGTERM)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while session_alive(session) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = session_alive(session)
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.process.wait()
        self.out.close()
        if left and kind is None:
            raise StepFailed(
                f"{self.step}: {len(left)} processes still running {STOP_TIMEOUT_S:.0f} s "
                f"after SIGTERM\n{tail(self.log)}"
            )


def session_alive(session: int) -> list[int]:
    """The pids of the processes of `session` still running (zombies aside)."""
    alive = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rpartition(")")[2].split()
        if fields[0] != "Z" and int(fields[3]) == session:
            alive.append(int(entry.name))
    return alive


def clean_env(**extra: str) -> dict[str, str]:
    """The environment of a new user's shell: none of the project's settings, no virtual
    environment; `extra` added."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("GUTS_", "REDIS_", "PIP_", "VIRTUAL_ENV", "PYTHON"))
    }
    return {**env, **extra}


def run(argv: list[str], step: str) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise StepFailed(
            f"{step}: {' '.join(argv[:4])} ... exited {done.returncode}\n"
            f"{done.stdout[-2000:]}{done.stderr[-2000:]}"
        )


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def tail(log: Path, lines: int = 40) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def say(line: str) -> None:
    print(line, flush=True)


if __name__ == "__main__":
    sys.exit(main())
