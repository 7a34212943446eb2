"""The files the command line names for wirecheck to write (exec --output,
run and per-connection --trace, run --strace, and the directory of exec
--fiu-ctrl's FIFOs) are checked before anything
runs: a path that cannot be written is a usage error (exit 2, docs/cli.md,
"Exit status") naming the flag, the path and the errno's text, and the
program or subject never starts (each test's program would leave a marker
file). A write that fails later says its real errno (exit 3).

Before this check, exec ran the program and then said "Input/output error"
whatever the cause, and run ran the whole scenario before naming the path.
"""
import os
import stat

import pytest

from exec_helpers import script

SCENARIO = os.path.join(os.path.dirname(__file__), "scenarios", "peer-reads.wcs")


def marker_subject(tmp_path):
    """A subject (or exec program) that leaves a marker file when it runs."""
    marker = tmp_path / "it-ran"
    prog = script(tmp_path, "marks.sh", f"#!/bin/sh\ntouch '{marker}'\necho ran\n")
    prog.chmod(prog.stat().st_mode | stat.S_IXUSR)
    return prog, marker


def refused(proc, flag, path, reason, marker):
    assert proc.returncode == 2, proc.stderr
    assert f"{flag} '{path}': cannot write there: " in proc.stderr
    assert reason in proc.stderr, proc.stderr
    assert not marker.exists(), "the program ran before the path was checked"
    assert "ran" not in proc.stdout


@pytest.mark.parametrize("where, reason", [
    ("missing/dir/r.json", "its directory {tmp}/missing/dir: No such file or directory"),
    ("", "Is a directory"),                       # the directory itself
    ("afile/r.json", "Not a directory"),          # under a regular file
])
def test_exec_refuses_an_output_path_before_the_program_runs(wc, tmp_path, preload,
                                                            where, reason):
    (tmp_path / "afile").write_text("x")
    prog, marker = marker_subject(tmp_path)
    out = f"{tmp_path}/{where}" if where else str(tmp_path)
    proc = wc("exec", "--output", out, "--", prog)
    refused(proc, "--output", out, reason.format(tmp=tmp_path), marker)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes a mode-0500 directory anyway")
def test_exec_refuses_an_unwritable_directory(wc, tmp_path, preload):
    ro = tmp_path / "ro"
    ro.mkdir(mode=0o500)
    prog, marker = marker_subject(tmp_path)
    proc = wc("exec", "--output", ro / "r.json", "--", prog)
    refused(proc, "--output", ro / "r.json", "Permission denied", marker)


def test_exec_refuses_a_fiu_ctrl_prefix_whose_directory_is_missing(wc, tmp_path, preload):
    # libfiu in the program makes PREFIX-PID.in and .out; before this check
    # the preload ended the program (exit 2) and exec still printed a report.
    prog, marker = marker_subject(tmp_path)
    prefix = f"{tmp_path}/missing/ctl"
    proc = wc("exec", "--fiu-ctrl", prefix, "--", prog)
    assert proc.returncode == 2, proc.stderr
    assert (f"--fiu-ctrl '{prefix}': cannot make its FIFOs there: its directory "
            f"{tmp_path}/missing: No such file or directory") in proc.stderr, proc.stderr
    assert not marker.exists() and proc.stdout == ""
    # A prefix in a directory that exists runs the program.
    proc = wc("exec", "--fiu-ctrl", tmp_path / "ctl", "--", prog)
    assert proc.returncode == 0, proc.stderr
    assert marker.exists()
    assert not list(tmp_path.glob("ctl-*"))  # exec removed its FIFOs


def test_exec_leaves_an_existing_report_alone_until_it_writes(wc, tmp_path, preload):
    # The check opens nothing (an early open with O_TRUNC would empty it):
    # a report from an earlier run stays whole when this run fails after
    # the check, here for a missing preload library (exit 3).
    old = tmp_path / "old.json"
    old.write_text('{"earlier": true}\n')
    prog, marker = marker_subject(tmp_path)
    proc = wc("exec", "--preload", tmp_path / "none.so", "--output", old, "--", prog)
    assert proc.returncode == 3, proc.stderr
    assert "none.so: No such file or directory" in proc.stderr
    assert old.read_text() == '{"earlier": true}\n'
    assert not marker.exists()


def test_exec_says_the_real_errno_when_the_write_fails(wc, tmp_path, preload):
    # /dev/full can be opened for writing; the write fails at the flush.
    prog, marker = marker_subject(tmp_path)
    proc = wc("exec", "--output", "/dev/full", "--", prog)
    assert proc.returncode == 3, proc.stderr
    assert marker.exists()
    assert "wirecheck exec: /dev/full: No space left on device" in proc.stderr
    assert "Input/output error" not in proc.stderr


@pytest.mark.parametrize("flag", ["--trace", "--strace"])
def test_run_refuses_an_output_path_before_the_subject_runs(wc, tmp_path, flag):
    prog, marker = marker_subject(tmp_path)
    out = tmp_path / "missing" / "x.json"
    proc = wc("run", SCENARIO, "--subject", prog, flag, out)
    refused(proc, flag, out, f"its directory {tmp_path}/missing: No such file or directory",
            marker)
    assert "Try 'wirecheck run --help'." in proc.stderr


def test_per_connection_refuses_a_trace_path_before_the_runs(wc, tmp_path):
    prog, marker = marker_subject(tmp_path)
    proc = wc("per-connection", SCENARIO, "--from", 1, "--to", 2,
              "--subject", prog, "--trace", tmp_path)
    refused(proc, "--trace", tmp_path, "Is a directory", marker)


# A scenario made for per-connection (every connection ends): SCENARIO
# leaves the second connection open, so its run at 2 connections lasts
# until the 30 s timeout.
PER_CONNECTION = os.path.join(os.path.dirname(__file__), "..", "..", "scenarios", "half-open",
                              "per-connection.wcs")


def test_per_connection_says_the_real_errno_when_the_write_fails(wc, tmp_path):
    proc = wc("per-connection", PER_CONNECTION, "--from", 1, "--to", 2, "--trace", "/dev/full")
    assert proc.returncode == 3, proc.stderr
    assert "cannot write the result to /dev/full: No space left on device" in proc.stderr


def test_sweep_refuses_an_output_path_before_any_run(wc, wirecheck, tmp_path):
    # The binary the sweep runs leaves the marker: it must never be called.
    marker = tmp_path / "it-ran"
    fake = script(tmp_path, "wirecheck", f"#!/bin/sh\ntouch '{marker}'\nexec '{wirecheck}' \"$@\"\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    out = tmp_path / "missing" / "sweep.json"
    proc = wc("sweep", SCENARIO, "-k", 1, "-b", 0, "--wirecheck-bin", fake, "--output", out)
    assert proc.returncode == 2, proc.stderr
    assert (f"--output '{out}': cannot write there: its directory {tmp_path}/missing: "
            "No such file or directory") in proc.stderr
    assert not marker.exists(), "the sweep ran before the path was checked"


def test_sweep_says_the_real_errno_when_the_write_fails(wc, tmp_path):
    proc = wc("sweep", SCENARIO, "-k", 1, "-b", 0, "--output", "/dev/full")
    assert proc.returncode == 3, proc.stderr
    assert "wirecheck sweep: cannot write the result to /dev/full: No space left on device" \
        in proc.stderr
    assert "Traceback" not in proc.stderr
