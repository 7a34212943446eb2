#!/usr/bin/env python3
"""manpages.py WIRECHECK VERSION OUTDIR: man pages for wirecheck and each of
its subcommands, made from their --help texts (cmake/Install.cmake).

wirecheck.1 is `wirecheck --help`; wirecheck-CMD.1 is `wirecheck CMD --help`,
so `man wirecheck-run` shows the flags of `wirecheck run`. The text is kept
as it is (a .nf block): the --help texts are laid out for a terminal already.
"""
import subprocess
import sys
from pathlib import Path

COMMANDS = {
    "run": "run a scenario against a subject and print its trace",
    "per-connection": "syscalls per connection, from two runs",
    "exec": "run a program with the fault gate preloaded",
    "check": "parse a scenario and report its first error",
    "sweep": "fail each writing call with each fault, judged by invariants",
    "explore": "generated operations judged by a model and real peers, shrunk to a scenario",
}


def escape(text: str) -> str:
    lines = []
    for line in text.replace("\\", "\\e").splitlines():
        # a line starting with . or ' would be a roff request
        lines.append("\\&" + line if line.startswith((".", "'")) else line)
    return "\n".join(lines)


def page(name: str, version: str, summary: str, help_text: str, see: list[str]) -> str:
    out = [f'.TH {name.upper()} 1 "" "wirecheck {version}" "wirecheck"',
           ".SH NAME", f"{name} \\- {summary}",
           ".SH DESCRIPTION", ".nf", escape(help_text), ".fi"]
    if see:
        out += [".SH SEE ALSO", ", ".join(f"\\fB{s}\\fR(1)" for s in see)]
    out += [".PP", "The documents named above are installed in /usr/share/doc/wirecheck "
            "(under the install prefix)."]
    return "\n".join(out) + "\n"


def help_of(binary: str, args: list[str]) -> str:
    proc = subprocess.run([binary, *args, "--help"], capture_output=True, text=True, check=False)
    if proc.returncode != 0 or not proc.stdout.strip():
        sys.exit(f"manpages.py: `{binary} {' '.join(args)} --help` exited "
                 f"{proc.returncode}: {proc.stderr.strip()}")
    return proc.stdout


def main() -> int:
    if len(sys.argv) != 4:
        sys.exit("usage: manpages.py WIRECHECK VERSION OUTDIR")
    binary, version, outdir = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    outdir.mkdir(parents=True, exist_ok=True)
    subpages = [f"wirecheck-{c}" for c in COMMANDS]
    (outdir / "wirecheck.1").write_text(page(
        "wirecheck", version, "fault-injection harness for socket write paths",
        help_of(binary, []), subpages))
    for cmd, summary in COMMANDS.items():
        (outdir / f"wirecheck-{cmd}.1").write_text(page(
            f"wirecheck-{cmd}", version, summary, help_of(binary, [cmd]), ["wirecheck"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
