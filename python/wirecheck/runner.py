"""Running the `wirecheck` binary and expanding a scenario's matrix."""
from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

REPO = Path(__file__).resolve().parents[2]

# matrix key -> the `wirecheck run` flag it stands for
MATRIX_FLAGS = {
    "clamp": "--clamp-send",
    "refuse": "--refuse-write",
    "signal": "--signal",
    "fault": "--fault",
    "transport": "--transport",
}


class WirecheckError(Exception):
    """`wirecheck` refused its input (exit 2), failed (3) or found traces
    that differ across --repeat (1). The message is wirecheck's stderr."""

    def __init__(self, returncode: int, stderr: str, argv: Sequence[str]):
        self.returncode = returncode
        self.stderr = stderr
        self.argv = list(argv)
        super().__init__(stderr.strip() or f"wirecheck exited {returncode}")


class NotATrace(WirecheckError):
    """`wirecheck run` ended but its stdout is not a JSON trace (something
    else wrote on it). .stdout is what it wrote, .stderr its stderr."""

    def __init__(self, stdout: str, stderr: str, argv: Sequence[str], error: ValueError):
        super().__init__(0, stderr, argv)
        self.stdout = stdout
        self.args = (f"wirecheck run's stdout is not a JSON trace ({error})",)


def find_binary(explicit: str | os.PathLike | None = None) -> Path:
    """The wirecheck binary: explicit, else $WIRECHECK_BIN, else the
    checkout's build/bin/wirecheck (this package in a checkout's python/),
    else `wirecheck` on PATH (an installed wirecheck)."""
    for candidate in (explicit, os.environ.get("WIRECHECK_BIN"),
                      REPO / "build" / "bin" / "wirecheck", shutil.which("wirecheck")):
        if candidate:
            path = Path(candidate)
            if path.is_file() and os.access(path, os.X_OK):
                return path
            if explicit is not None or candidate == os.environ.get("WIRECHECK_BIN"):
                raise FileNotFoundError(f"wirecheck binary not found or not executable: {path}")
    raise FileNotFoundError(
        "wirecheck binary not found: not on PATH (install it: README, \"Installing\"; "
        "or build it: scripts/setup.sh --no-run), "
        "or pass --wirecheck-bin / set WIRECHECK_BIN")


def _call_full(argv: Sequence[str], timeout: float | None,
               ok: Sequence[int] = (0,)) -> tuple[str, str]:
    # errors="replace": a subject's stdout goes to wirecheck's stderr, and a
    # subject may print any bytes.
    proc = subprocess.run(list(argv), capture_output=True, text=True, errors="replace",
                          timeout=timeout)
    if proc.returncode not in ok:
        raise WirecheckError(proc.returncode, proc.stderr, argv)
    return proc.stdout, proc.stderr


def _call(argv: Sequence[str], timeout: float | None) -> str:
    return _call_full(argv, timeout)[0]


def check(path: str | os.PathLike, binary: str | os.PathLike | None = None) -> dict:
    """Parses a scenario with the harness's own parser; returns its suite
    metadata (name, behaviour, matrix, legacy). Raises WirecheckError with
    "file:line: problem" when the scenario is malformed."""
    out = _call([str(find_binary(binary)), "check", "--json", str(path)], 60)
    return json.loads(out)


@dataclass(frozen=True)
class Profile:
    """One fault profile of a scenario's matrix: its id and its flags."""
    values: tuple = ()  # ((key, value), ...) in declaration order

    @property
    def id(self) -> str:
        return "::".join(f"{k}={v}" for k, v in self.values)

    @property
    def flags(self) -> list[str]:
        out: list[str] = []
        for key, value in self.values:
            if value != "none":
                out += [MATRIX_FLAGS[key], value]
        return out

    @property
    def golden_suffix(self) -> str:
        return "".join(f".{k}={v}" for k, v in self.values)


def profiles(meta: dict) -> list[Profile]:
    """The cartesian product of the matrix axes, in declaration order."""
    axes = [[(m["key"], v) for v in m["values"]] for m in meta.get("matrix", [])]
    return [Profile(tuple(combo)) for combo in itertools.product(*axes)] or [Profile()]


def run(path: str | os.PathLike, flags: Iterable[str] = (), *,
        variants: Iterable[str] = (), repeat: int | None = None,
        valgrind: bool = False, binary: str | os.PathLike | None = None,
        timeout: float | None = 900) -> dict:
    """Runs `wirecheck run PATH FLAGS` and returns the parsed trace.

    A subject that crashes or hangs is not an error: the trace says so; nor
    is one that stopped with a fatal error of its own (`run` exits 4 after
    writing the trace, whose exit.error says why).
    Raises WirecheckError for bad input, harness failures, and traces that
    differ across `repeat` runs."""
    return run_capture(path, flags, variants=variants, repeat=repeat,
                       valgrind=valgrind, binary=binary, timeout=timeout)[0]


def run_capture(path: str | os.PathLike, flags: Iterable[str] = (), *,
                variants: Iterable[str] = (), repeat: int | None = None,
                valgrind: bool = False, binary: str | os.PathLike | None = None,
                timeout: float | None = 900) -> tuple[dict, str]:
    """run(), and wirecheck's stderr too (the valgrind log under valgrind,
    the progress of --repeat)."""
    argv = [str(find_binary(binary)), "run", str(path), *flags]
    for v in variants:
        argv += ["--variant", v]
    if repeat and repeat > 1:
        argv += ["--repeat", str(repeat)]
    if valgrind:
        argv.append("--valgrind")
    # 4: the trace was written, and the subject stopped with a fatal error
    # (docs/cli.md, "Exit status"); the trace's exit.error is the caller's.
    out, err = _call_full(argv, timeout, ok=(0, 4))
    try:
        return json.loads(out), err
    except ValueError as e:
        raise NotATrace(out, err, argv, e) from None


@dataclass
class ExecResult:
    """What `wirecheck exec` reported, and what the program printed."""
    report: dict
    stdout: str
    stderr: str

    @property
    def exit(self) -> dict:
        return self.report["exit"]

    @property
    def counts(self) -> dict | None:
        """The program's own counts, however it ended (their "exited" is
        false when it ran no exit handler: a signal, _exit); None only when
        the program never started with the library."""
        return self.report["counts"]

    def calls(self, kind: str) -> int:
        """The program's calls of one kind ("send"), 0 if none or no counts."""
        return ((self.counts or {}).get("syscalls") or {}).get(kind, 0)


def exec_program(argv: Sequence[str | os.PathLike], flags: Iterable[str] = (), *,
                 binary: str | os.PathLike | None = None, timeout: float = 30,
                 cwd: str | os.PathLike | None = None,
                 env: dict | None = None) -> ExecResult:
    """Runs `wirecheck exec FLAGS -- ARGV` (docs/cli.md, "wirecheck exec"):
    a program not built against the gate, with the gate preloaded. flags are
    the exec flags (["--clamp-send", "7"], ["--fault", "send:errno=EPIPE"]).
    The program's own exit is in .exit, whatever it was; raises
    WirecheckError when wirecheck refused the flags (2) or failed (3)."""
    import tempfile
    with tempfile.TemporaryDirectory(prefix="wirecheck-exec-") as tmp:
        out = Path(tmp) / "report.json"
        # --exit-zero: exec would pass the program's status on, which
        # .exit holds; a non-zero status then means wirecheck's own error.
        cmd = [str(find_binary(binary)), "exec", *map(str, flags),
               "--exit-zero", "--timeout", str(timeout), "--output", str(out),
               "--", *map(str, argv)]
        # The harness kills the program at `timeout`; this one only guards
        # against a harness that would not return.
        proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace",
                              cwd=cwd, env=env, timeout=timeout + 60)
        if proc.returncode != 0:
            raise WirecheckError(proc.returncode, proc.stderr, cmd)
        return ExecResult(json.loads(out.read_text()), proc.stdout, proc.stderr)
