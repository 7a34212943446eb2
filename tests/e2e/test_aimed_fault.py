"""Faults aimed at a byte of a connection's stream (`conn=C,byte=N`,
docs/scenario-language.md "Fault rules"): the fixed and legacy strategies
cut their stream into different calls, so a fault at call k lands on other
bytes in each, while a fault at byte N lands, in both, on the call that
carries byte N.

several-writes writes "first\\n", "second\\n", "third\\n" (19 bytes) in one
task: the fixed strategy sends the first write, then the other two in one
call; the legacy one (batch=off) sends each write by itself."""
import json
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
SCENARIO = REPO / "scenarios" / "batching" / "several-writes.wcs"
STRATEGIES = {"fixed": [], "legacy": ["--variant", "batch=off"]}


def run(wc, *flags):
    proc = wc("run", SCENARIO, *flags)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize("byte", [0, 5, 6, 12, 13, 15, 18])
def test_both_strategies_meet_the_fault_at_the_same_byte(wc, byte):
    rule = f"write:errno=EPIPE,conn=0,byte={byte}"
    seen = {}
    for name, variant in STRATEGIES.items():
        t = run(wc, "--fault", rule, *variant)
        (f,) = t["fired"]["calls"]
        assert f["rule"] == rule and f["conn"] == 0 and f["refused"], (name, f)
        # The call that would have carried the byte: it starts at or before
        # it and reaches past it.
        assert f["offset"] <= byte < f["offset"] + f["length"], (name, f)
        # Refused: the peer has what went before that call, and no more.
        assert t["peer"]["bytes"] == f["offset"], (name, t["peer"])
        assert any(" error EPIPE" in e for e in t["events"]), (name, t["events"])
        seen[name] = (f["index"], f["offset"])
    if byte >= 13:
        # "third\n": the fixed strategy's second call, the legacy one's third.
        assert seen == {"fixed": (2, 6), "legacy": (3, 13)}


def test_a_fault_by_call_index_meets_the_strategies_at_different_bytes(wc):
    # What byte= is for: the third writing call exists in the legacy
    # strategy only, so the same rule by index fails one run and not the
    # other.
    fired = {name: run(wc, "--fault", "write:errno=EPIPE,after=2", *v)["fired"]["calls"]
             for name, v in STRATEGIES.items()}
    assert fired["fixed"] == []
    assert [f["offset"] for f in fired["legacy"]] == [13]


def test_a_rule_aimed_at_another_connection_or_past_the_stream_never_fires(wc):
    for rule in ("write:errno=EPIPE,conn=1", "write:errno=EPIPE,conn=0,byte=19"):
        t = run(wc, "--fault", rule)
        assert t["fired"]["calls"] == [], rule
        assert t["peer"]["bytes"] == 19


def test_a_byte_rule_on_a_call_without_bytes_is_refused_with_its_spec(wc):
    proc = wc("run", SCENARIO, "--fault", "shutdown:errno=EIO,byte=3")
    assert proc.returncode == 2
    assert 'spec "shutdown:errno=EIO,byte=3": byte=3: target shutdown carries no bytes' \
        in proc.stderr


# Under the preload gate (`wirecheck exec`): a program's connections are
# numbered as it opens them, and byte= counts what each has carried.
TWO_CONNECTIONS = """
import socket, sys
srv = socket.socket(socket.AF_UNIX)
srv.bind(sys.argv[1])
srv.listen(4)
out = []
for i in range(2):
    c = socket.socket(socket.AF_UNIX)
    c.connect(sys.argv[1])
    out.append(c)
peers = [srv.accept()[0] for _ in range(2)]
for c in out:
    for part in (b"abcd", b"efgh", b"ijkl"):
        try:
            c.send(part)
        except BrokenPipeError:
            print("EPIPE", out.index(c), file=sys.stderr)
"""


def test_the_preload_gate_aims_at_a_connection_and_a_byte(wc, wirecheck, tmp_path):
    lib = wirecheck.parent.parent / "lib" / "libwirecheck-preload.so"
    if not lib.is_file():
        pytest.skip(f"{lib} is not built (sanitizer builds do not build it)")
    prog = tmp_path / "two.py"
    prog.write_text(TWO_CONNECTIONS)
    out = tmp_path / "report.json"
    # Connections 0 and 1 are the two connect()s; 2 and 3 the accepted
    # ends, which never send. Byte 6 of connection 1 is in its 2nd send.
    proc = wc("exec", "--fault", "write:errno=EPIPE,conn=1,byte=6", "--output", out,
              "--", "/usr/bin/python3", prog, tmp_path / "s.sock")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == ["EPIPE 1"]
    [f] = json.loads(out.read_text())["counts"]["fired"]
    assert (f["call"], f["conn"], f["index"], f["offset"], f["length"]) == ("send", 1, 2, 4, 4)
