"""End-to-end tests of `wirecheck run` against the real subject.

Every expected figure below is derived from the scenario and the stack's rules
(reference/socket.c, reference/queue.c, harness/run.c, harness/peer.c), not pasted from a
trace; each derivation is written next to the assertion that uses it.

The rules the derivations use:
- A write that finds the queue empty makes one send() inside the call; a write
  that finds bytes queued makes one sendmsg() of the queued tail plus the new
  bytes; what the kernel does not take is appended to the queue.
- A writable event sends queued bytes (sock_flush): one send() per call, and
  as many calls per wakeup as the stack's bound allows. No figure below
  depends on that bound, only on how many bytes each call takes.
- A clamp C (`write:short=C`) makes every writing call take min(C, offered)
  bytes; on loopback the kernel takes all it is offered at these sizes.
- Tasks run in order, each in a later loop iteration than the one before;
  a read point or a signal at the end of task N sees only what task N's own
  calls sent, since writable events are tasks of their own.
- `syscalls` counts every call the gate saw, minus those the *kernel*
  answered EAGAIN; a call refused by an injected errno is a call.
- Byte x of a connection's stream is wc_pattern(x) (protocol/protocol.h) unless
  the scenario gives literal bytes.
"""
import functools
import hashlib
import json
import math
import os
import pathlib
import re
import shutil
import stat

import pytest

from conftest import wirecheck_path

HERE = pathlib.Path(__file__).resolve().parent
E2E_SCENARIOS = HERE / "scenarios"
QUEUE_SCENARIOS = HERE.parents[1] / "scenarios" / "queue"

TRANSPORTS = ["tcp", "unix"]
KIB = 1024

# The flags of `wirecheck run` (harness/cli_run.c, docs/cli.md).
RUN_FLAGS = ["--clamp-send", "--refuse-write", "--signal", "--fault", "--variant",
             "--transport", "--timeout", "--repeat", "--valgrind", "--trace", "--subject",
             "--connections", "--strace", "--subject-preload", "--subject-handoff"]

# The top-level keys of a trace (docs/cli.md, "The trace").
TRACE_KEYS = {"scenario", "transport", "variant", "faults", "exit", "peer", "events",
              "syscalls", "syscalls_timing", "queue", "fired"}

CLEAN_EXIT = {"code": 0, "timed_out": False}


# ---- helpers ------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def pattern(n):
    """The first n bytes of the generated stream (wc_pattern in protocol/protocol.h):
    byte x = 0x21 + (((x * 2654435761) mod 2**32) >> 16) % 94."""
    return bytes(0x21 + ((((x & 0xFFFFFFFF) * 2654435761) & 0xFFFFFFFF) >> 16) % 94
                 for x in range(n))


def sha(data):
    return hashlib.sha256(data).hexdigest()


SIZE_RE = re.compile(r"^\s+(write|end)\s+(\d+)(K|KiB|M|MiB)?(\s|$)")


def generated_sizes(path):
    """The sizes of a scenario's generated writes and ends, in file order (the
    scenario language's byte counts: N, NK, NKiB, NM, NMiB); string payloads
    and bare `end` are not counted."""
    mult = {None: 1, "K": KIB, "KiB": KIB, "M": KIB * KIB, "MiB": KIB * KIB}
    sizes = []
    for line in path.read_text().splitlines():
        m = SIZE_RE.match(line.split("#", 1)[0])
        if m:
            sizes.append(int(m.group(2)) * mult[m.group(3)])
    return sizes


def queue_scenario(name):
    return QUEUE_SCENARIOS / f"{name}.wcs"


def e2e_scenario(name):
    return E2E_SCENARIOS / f"{name}.wcs"


def scenario(tmp_path, text, name="s.wcs"):
    """A scenario file of the test's own."""
    path = tmp_path / name
    path.write_text(text)
    return path


def trace_of(proc):
    """The trace a successful run printed; fails the test with stderr otherwise."""
    assert proc.returncode == 0, f"wirecheck exited {proc.returncode}: {proc.stderr}"
    return json.loads(proc.stdout)


def trace_of_any(proc):
    """The trace of a run, whatever its exit status."""
    return json.loads(proc.stdout)


def texts(trace):
    """The events without their "tN cK " prefix, in order (one connection)."""
    out = []
    for e in trace["events"]:
        m = re.fullmatch(r"t(\d+) c(\d+) (.*)", e)
        assert m, f"malformed event {e!r}"
        assert m.group(2) == "0", f"event on another connection: {e!r}"
        out.append(m.group(3))
    return out


def index_of(events, prefix):
    for i, e in enumerate(events):
        if e.startswith(prefix):
            return i
    raise AssertionError(f"no event starting with {prefix!r} in {events}")


def assert_in_order(events, prefixes):
    """Each prefix starts some event, each after the previous one."""
    at = -1
    for p in prefixes:
        later = [i for i, e in enumerate(events) if i > at and e.startswith(p)]
        assert later, f"no event starting with {p!r} after position {at} in {events}"
        at = later[0]


def assert_stream(peer, n):
    """The peer holds the first n bytes of the generated stream, in order."""
    assert peer["bytes"] == n
    assert peer["sha256"] == sha(pattern(n))
    if n <= 4096:
        assert peer["hex"] == pattern(n).hex()
    else:
        assert "hex" not in peer


def memmove_moved(p, c):
    """bytes_moved of end(p) at clamp c under queue=memmove, from the code:
    end() sends c in the call and appends m = p - c once; each later send
    (however many a writable event makes) takes min(c, left) and, when bytes
    are left, moves them to the front (rs_queue_consume); the send that
    empties the queue frees it instead.
    Flush k (k = 1..K) leaves m - k*c > 0 bytes, K = ceil(m / c) - 1, so
    moved = sum_{k=1..K} (m - k c) = K m - c K (K + 1) / 2."""
    m = p - c
    k = -(-m // c) - 1
    return k * m - c * k * (k + 1) // 2


# ---- 1. the queue scenarios -------------------------------------------------------

END_LARGE_CLAMPS = [1, 7, 4096, 16384]


def test_memmove_closed_form_matches_the_documented_one():
    # The model above, checked without the binary so that a wrong derivation
    # cannot hide behind a wrong binary: against the plain sum, against
    # docs/queue-model.md's C (n-1)(n-2) / 2 when C divides P (n = P / C),
    # and against that document's table (4 MiB and 32 MiB at 4 KiB).
    for p in (128 * KIB, 256 * KIB):
        for c in END_LARGE_CLAMPS:
            m = p - c
            assert memmove_moved(p, c) == sum(m - k * c for k in range(1, m // c + 1)
                                              if m - k * c > 0)
            if p % c == 0:
                n = p // c
                assert memmove_moved(p, c) == c * (n - 1) * (n - 2) // 2
    assert memmove_moved(4 * KIB * KIB, 4096) == 2_141_196_288
    assert memmove_moved(32 * KIB * KIB, 4096) == 137_388_625_920


@pytest.mark.parametrize("variant", ["cursor", "memmove"])
@pytest.mark.parametrize("clamp", END_LARGE_CLAMPS)
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_end_large(wc, transport, clamp, variant):
    # The scenario runs at its full size (one end() of P bytes): even at a
    # 1-byte clamp, P sends of 256 KiB took about 2 s (cursor) and 3.5 s
    # (memmove) here, well under the 10 s that would call for a smaller copy.
    [END_LARGE] = generated_sizes(queue_scenario("end-large"))
    args = [queue_scenario("end-large"), "--clamp-send", clamp, "--transport", transport]
    if variant != "cursor":
        args += ["--variant", f"queue={variant}"]
    t = trace_of(wc("run", *args))

    assert t["scenario"] == "end-large"
    assert t["transport"] == transport
    assert t["variant"] == {"batch": "on", "chunked": "fixed", "halfopen": "end-first",
                            "queue": variant, "ws": "by-option"}
    assert t["faults"] == [f"write:short={clamp},repeat=forever"]
    assert t["exit"] == CLEAN_EXIT
    assert_stream(t["peer"], END_LARGE)
    assert t["peer"]["reads"] == []  # no read points: the peer reads continuously

    # One send in end(), then sends from writable events, each taking C,
    # until the P - C queued bytes are gone: 1 + ceil((P - C) / C) =
    # ceil(P / C). One write only, and it found the queue empty: no sendmsg.
    assert t["syscalls"]["send"] == math.ceil(END_LARGE / clamp)
    assert t["syscalls"]["sendmsg"] == 0
    assert t["syscalls"]["shutdown"] == 1  # our FIN, once every byte is taken
    # P - C is appended once, to an empty queue: one malloc, never grown.
    assert t["queue"]["allocations"] == 1
    expected_moved = 0 if variant == "cursor" else memmove_moved(END_LARGE, clamp)
    assert t["queue"]["bytes_moved"] == expected_moved

    ev = texts(t)
    assert_in_order(ev, ["connect", f"end {END_LARGE} -> ok", "end cb ok", "finish",
                         f"close had_error=0 bytes_written={END_LARGE}"])
    assert not any(e.startswith("error") for e in ev)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_write_behind_tail(wc, transport):
    path = queue_scenario("write-behind-tail")
    first, second = generated_sizes(path)  # task 1's write, task 2's write
    total = first + second
    assert first % 4096 == 0 and second % 4096 == 0
    t = trace_of(wc("run", path, "--transport", transport))
    assert t["exit"] == CLEAN_EXIT
    assert t["faults"] == ["write:short=4096,repeat=forever"]
    assert_stream(t["peer"], total)

    ev = texts(t)
    assert_in_order(ev, [f"write#1 {first} -> false", f"write#2 {second} -> false",
                         "write#1 cb ok", "write#2 cb ok", "finish",
                         f"close had_error=0 bytes_written={total}"])
    assert index_of(ev, "write#1 cb") < index_of(ev, "write#2 cb")

    # The scenario's point: write#2 goes behind a tail. write#1's callback
    # comes after write#2 ran, so the kernel did not have all of write#1 then:
    # write#2 found bytes queued, and made the one sendmsg. write#1 found the
    # queue empty (a send); every other call is a writable event's send.
    assert index_of(ev, f"write#2 {second}") < index_of(ev, "write#1 cb")
    assert t["syscalls"]["sendmsg"] == 1
    # Every size is a multiple of the 4 KiB clamp, so every writing call takes
    # exactly 4096 bytes: total / 4096 calls in all.
    assert t["syscalls"]["send"] + t["syscalls"]["sendmsg"] == total // 4096
    # Cursor queue: it never moves an unsent byte unless an append finds a
    # sent prefix at least as large as the unsent bytes; here task 2 appends
    # behind a prefix of at most a wakeup's sends, far below the unsent rest.
    assert t["queue"]["bytes_moved"] == 0


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_writev_clamp_below_tail(wc, transport):
    path = queue_scenario("writev-clamp-below-tail")
    first, second = generated_sizes(path)
    total = first + second
    assert first % 4096 == 0 and second % 4096 == 0 and first > 4096
    t = trace_of(wc("run", path, "--transport", transport))
    assert t["exit"] == CLEAN_EXIT
    assert_stream(t["peer"], total)

    ev = texts(t)
    assert_in_order(ev, [f"write#1 {first} -> false", f"write#2 {second} -> false", "end 0 -> ok",
                         "write#1 cb ok", "write#2 cb ok", "end cb ok", "finish",
                         f"close had_error=0 bytes_written={total}"])
    assert index_of(ev, "write#1 cb") < index_of(ev, "write#2 cb")

    # write#1: send of 4096 (queue empty), the rest queued. write#2, same task
    # (no writable event in between): bytes queued, so one sendmsg of tail +
    # new bytes, clamped to 4096, all tail. total / 4096 writing calls: 1
    # sendmsg, the rest sends.
    assert t["syscalls"]["sendmsg"] == 1
    assert t["syscalls"]["send"] == total // 4096 - 1
    # Cursor: write#2's append finds a 4096-byte sent prefix, less than the
    # unsent tail: no move; it does not fit the first exact allocation, so
    # one realloc (docs/queue-model.md, "Allocation sizes"). Copied: what
    # write#1's call left (64 KiB - 4096) and all of write#2 (its call took
    # only tail bytes), each once.
    assert t["queue"] == {"bytes_moved": 0, "allocations": 2,
                          "bytes_copied": (64 * 1024 - 4096) + 8 * 1024}


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_eagain_then_disarm(wc, transport):
    path = queue_scenario("eagain-then-disarm")
    [generated] = generated_sizes(path)
    t = trace_of(wc("run", path, "--transport", transport))
    assert t["exit"] == CLEAN_EXIT
    assert t["faults"] == ["write:errno=EAGAIN,repeat=forever"]
    # The generated stream (100 KiB), then the literal "tail\n" of write#2.
    expected = pattern(generated) + b"tail\n"
    assert t["peer"]["bytes"] == len(expected)
    assert t["peer"]["sha256"] == sha(expected)

    ev = texts(t)
    disarm = index_of(ev, "disarm")
    oks = [i for i, e in enumerate(ev) if e.endswith(" cb ok")]
    assert oks, ev
    assert disarm < min(oks), f"a callback completed before the gate was disarmed: {ev}"
    assert index_of(ev, "write#1 cb ok") < index_of(ev, "write#2 cb ok") < index_of(ev, "end cb ok")
    assert not any("EAGAIN" in e or e.startswith("error") for e in ev)
    assert ev[-1] == f"close had_error=0 bytes_written={len(expected)}"

    # write#2 finds write#1's bytes queued (its send was refused): one sendmsg,
    # refused too. Sends: write#1's (refused), the writable event's between
    # task 1 and task 2 (refused, which ends that wakeup's sends), then at
    # least one that the kernel takes.
    assert t["syscalls"]["sendmsg"] == 1
    assert t["syscalls"]["send"] >= 3


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_enobufs_flush(wc, transport):
    path = queue_scenario("enobufs-flush")
    [total] = generated_sizes(path)  # one write of 32 KiB, then a bare end
    t = trace_of(wc("run", path, "--transport", transport))
    assert t["exit"] == CLEAN_EXIT
    assert t["faults"] == ["write:short=4096,repeat=forever",
                           "send:errno=ENOBUFS,after=1,repeat=3"]
    assert_stream(t["peer"], total)

    ev = texts(t)
    assert not any(e.startswith("error") or "ENOBUFS" in e or "had_error=1" in e
                   for e in ev), ev
    assert_in_order(ev, [f"write#1 {total} -> false", "write#1 cb ok", "end cb ok", "finish",
                         f"close had_error=0 bytes_written={total}"])
    # The call's send (the rule skips 1) takes 4096; the next three sends get
    # ENOBUFS and keep the bytes queued (each ends its wakeup's sends); then
    # 28 KiB / 4 KiB = 7 sends take the rest.
    assert t["syscalls"]["send"] == 1 + 3 + (total - 4096) // 4096
    assert t["syscalls"]["sendmsg"] == 0


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_epipe_prefix(wc, transport):
    path = queue_scenario("epipe-prefix")
    [written] = generated_sizes(path)  # 16 KiB
    t = trace_of(wc("run", path, "--transport", transport))
    assert t["exit"] == CLEAN_EXIT
    assert t["faults"] == ["write:short=4096,repeat=forever", "write:errno=EPIPE,after=1"]
    # The first writing call sent 4096 of the 16 KiB; the second got EPIPE.
    assert t["peer"]["bytes"] == 4096 < written
    assert_stream(t["peer"], 4096)

    ev = texts(t)
    assert_in_order(ev, ["write#1 cb EPIPE", "error EPIPE", "close had_error=1"])
    assert ev[-1] == "close had_error=1 bytes_written=4096"
    assert not any(e.endswith("cb ok") or e == "finish" for e in ev), ev
    assert t["syscalls"]["send"] == 2
    assert t["syscalls"]["shutdown"] == 0  # never finished: no FIN


# node:net never emits 'drain' once the stream is ending (Writable afterWrite:
# needDrain = !state.ending && ...): a write that returned false followed by
# end() sees finish without drain. This was a strict xfail until the stack
# followed node 20's order.
def test_no_drain_after_end(wc):
    # writev-clamp-below-tail: write#2 returns false (past the high-water mark),
    # then end() in the same task.
    t = trace_of(wc("run", queue_scenario("writev-clamp-below-tail")))
    ev = texts(t)
    assert "finish" in ev
    assert "drain" not in ev


def test_no_drain_after_destroy(wc, tmp_path):
    # node's afterWrite emits drain only for a stream that is not destroyed.
    path = scenario(tmp_path, "task\n  write 20KiB\n  destroy\n")
    ev = texts(trace_of(wc("run", path)))
    assert "destroy" in ev and "drain" not in ev


def test_end_callback_learns_that_its_own_send_failed(wc, tmp_path):
    # The send inside end() failed and destroyed the socket before end()
    # stored its callback: the callback never ran.
    path = scenario(tmp_path, "fault send:errno=ECONNRESET\ntask\n  end \"xyz\" cb\n")
    ev = texts(trace_of(wc("run", path)))
    assert "end cb ECONNRESET" in ev
    assert ev.index("end cb ECONNRESET") < ev.index("error ECONNRESET send")


# ---- 2. --repeat ---------------------------------------------------------------------


# write-behind-tail delivers every byte; epipe-prefix the first call's 4096.
@pytest.mark.parametrize("name,prefix", [("write-behind-tail", None), ("epipe-prefix", 4096)])
def test_repeat_20_is_deterministic(wc, name, prefix):
    total = prefix or sum(generated_sizes(queue_scenario(name)))
    proc = wc("run", queue_scenario(name), "--repeat", 20)
    t = trace_of(proc)
    assert "run 20/20" in proc.stderr  # it did run 20 times
    assert "differs" not in proc.stderr
    assert_stream(t["peer"], total)


def test_repeat_reports_a_difference(wc, tmp_path):
    # A subject whose one event differs on every run (its pid): --repeat must
    # exit 1, name the field, and stop at the first difference.
    fake = tmp_path / "fake-subject"
    fake.write_text('#!/bin/sh\necho "ev 1 0 nonce $$" >&4\n')
    fake.chmod(0o755)
    proc = wc("run", e2e_scenario("peer-reads"), "--subject", fake, "--repeat", 5)
    assert proc.returncode == 1, proc.stderr
    assert "run 2 differs from run 1 in 'events'" in proc.stderr
    assert "run 3/5" not in proc.stderr
    first = json.loads(proc.stdout)  # the first run's trace is still written
    assert re.fullmatch(r"t1 c0 nonce \d+", first["events"][0])


# ---- 3. a subject that crashes --------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_crash_sigsegv(wc, transport):
    t = trace_of(wc("run", e2e_scenario("crash-segv"), "--transport", transport))
    assert t["exit"]["signal"] == "SIGSEGV"
    assert t["exit"]["timed_out"] is False
    assert "code" not in t["exit"]
    assert t["queue"] is None  # no clean exit, no stats line
    ev = texts(t)
    assert ev[-1] == "signal SIGSEGV"
    assert "write#3 1000 -> true" in ev
    # The trace's own account of what the kernel took: 8000 bytes at the end
    # of task 1 (the read point), and task 2's 1000 went in its call before
    # the signal. The peer has exactly those 9000 bytes, in order.
    assert t["peer"]["reads"] == [3000 + 5000]
    assert_stream(t["peer"], 9000)
    assert t["syscalls"]["send"] == 3


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_crash_sigabrt_loses_queued_bytes(wc, transport):
    t = trace_of(wc("run", e2e_scenario("crash-abort-queued"), "--transport", transport))
    assert t["exit"]["signal"] == "SIGABRT"
    assert t["exit"]["timed_out"] is False
    assert texts(t)[-2:] == ["write#1 16384 -> false", "signal SIGABRT"]
    # One send in the write's call (4096 under the clamp), no writable event
    # before the signal: the peer has the 4096-byte prefix, nothing more.
    assert t["syscalls"]["send"] == 1
    assert_stream(t["peer"], 4096)
    assert t["queue"] is None


# ---- 4. a subject that hangs ----------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_hang_is_killed_at_the_timeout(wc, transport):
    # The subprocess timeout is only a safety net; the run's own --timeout is
    # what must stop the subject.
    proc = wc("run", e2e_scenario("hang-no-end"), "--timeout", 2, "--transport", transport,
              timeout=60)
    t = trace_of(proc)
    assert t["exit"]["timed_out"] is True
    assert t["exit"]["signal"] == "SIGKILL"
    assert "code" not in t["exit"]
    assert t["queue"] is None
    assert texts(t)[-1] == "write#1 5000 -> true"
    assert_stream(t["peer"], 5000)


def _children(pid):
    """The pids whose parent is pid (from /proc)."""
    out = []
    for d in pathlib.Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if int((d / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(d.name))
            except (OSError, IndexError, ValueError):
                pass  # a process that ended meanwhile
    return out


def _alive(pid):
    """pid exists and is not a zombie."""
    try:
        return (pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
                != "Z")
    except OSError:
        return False


def _until(cond, limit=60.0):
    """Checks cond every 50 ms until it holds or `limit` s have passed:
    waiting for a state, not a time. Returns whether it held."""
    import time
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


@pytest.mark.parametrize("child", ["subject", "peer-program"])
def test_the_children_die_with_a_killed_harness(wirecheck, tmp_path, child):
    # An outer timeout's SIGKILL ends wirecheck with no chance to kill its
    # children. They must go too (PR_SET_PDEATHSIG): before, they ran on as
    # orphans, and a mutant's spinning subject held a CPU for 94 minutes.
    # subject: a program's PATH that never speaks the protocol nor reads
    # its pipes, so the harness's death is nothing it would notice by
    # itself. peer-program: a `peer exec` program that sleeps (the default
    # subject beside it). --timeout 600 is far away.
    import signal
    import subprocess
    if child == "subject":
        deaf = tmp_path / "deaf-subject"
        deaf.write_text("#!/bin/sh\nexec sleep 600\n")
        deaf.chmod(0o755)
        argv = [str(e2e_scenario("hang-no-end")), "--subject", str(deaf)]
    else:
        sc = tmp_path / "sleeper.wcs"
        sc.write_text("role server\npeer exec /bin/sh -c \"exec sleep 600\"\n")
        argv = [str(sc)]
    proc = subprocess.Popen([str(wirecheck), "run", *argv, "--timeout", "600"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    subject = []
    try:
        want = 1 if child == "subject" else 2
        assert _until(lambda: len(subject.extend(_children(proc.pid)) or
                                 set(subject)) >= want), "wirecheck started too few children"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
        assert _until(lambda: not any(_alive(p) for p in subject)), \
            f"a child outlived its harness: {subject}"
    finally:
        for p in subject:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# ---- 5. bad flags and bad input -------------------------------------------------------

END_LARGE_WCS = queue_scenario("end-large")

BAD_FLAGS = [
    # (flags after the scenario, what the message must contain)
    (["--bogus"], ["unknown flag '--bogus'"]),
    (["-x"], ["unknown flag '-x'"]),
    (["--clamp-send", "0"], ["--clamp-send", "'0'"]),
    (["--clamp-send", "abc"], ["--clamp-send", "'abc'"]),
    (["--clamp-send"], ["--clamp-send needs a value"]),
    (["--refuse-write", "EBOGUS"], ["--refuse-write", "unknown errno 'EBOGUS'"]),
    (["--signal", "FOO@send:1"], ["--signal", "unknown signal 'FOO'"]),
    (["--fault", "send:bogus"], ["--fault", "unknown action \"bogus\""]),
    (["--variant", "queue=nope"], ["--variant", "'queue' does not take the value 'nope'"]),
    (["--variant", "nope=1"], ["--variant", "unknown variant 'nope'"]),
    (["--transport", "udp"], ["--transport", "'udp'"]),
    (["--timeout", "-1"], ["--timeout", "'-1'"]),
    (["--timeout", "0"], ["--timeout", "'0'"]),
    (["--repeat", "0"], ["--repeat", "'0'"]),
    (["--repeat", "x"], ["--repeat", "'x'"]),
    # end-large has one task: a signal at task 3 names the flag, not a line.
    (["--signal", "SIGTERM@task:3"], ["--signal", "task 3"]),
    # Too large: the message names the bound, not "at least 1".
    (["--clamp-send", "99999999999999999999"], ["--clamp-send '99999999999999999999': at most 2147483647"]),
    (["--refuse-write", "EPIPE@99999999999"], ["call 99999999999: at most 2147483647"]),
    (["--connections", "5000"], ["--connections '5000': expected 1 to 1024"]),
    (["--repeat", "1000000"], ["from 1 to 100000"]),
]


@pytest.mark.parametrize("flags,needles", BAD_FLAGS, ids=[" ".join(f) for f, _ in BAD_FLAGS])
def test_bad_flag(wc, flags, needles):
    proc = wc("run", END_LARGE_WCS, *flags)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    for needle in needles:
        assert needle in proc.stderr
    assert ":0:" not in proc.stderr  # a flag has no line number


def test_missing_file(wc, tmp_path):
    missing = tmp_path / "no-such.wcs"
    proc = wc("run", missing)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert f"{missing}: cannot open" in proc.stderr


def test_no_file(wc):
    proc = wc("run", "--repeat", 2)
    assert proc.returncode == 2
    assert "needs a scenario FILE" in proc.stderr


def test_syntax_error_names_file_and_line(wc, tmp_path):
    bad = tmp_path / "bad.wcs"
    bad.write_text("# a comment\ntask\n  write 10\n  frobnicate 5\n")
    proc = wc("run", bad)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert f"{bad}:4:" in proc.stderr
    assert "frobnicate" in proc.stderr


def test_two_files(wc):
    other = queue_scenario("epipe-prefix")
    proc = wc("run", END_LARGE_WCS, other)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "one scenario file per run" in proc.stderr
    assert str(other) in proc.stderr


# ---- input that parses but cannot run ------------------------------------------------


def _fault_lines(n):
    return "".join(f"fault send:errno=EPIPE,after={k}\n" for k in range(n))


CANNOT_RUN = [
    # (scenario text, line, what the message must contain)
    ("task\n  write 99999999999MiB\n", 2, "'99999999999MiB': at most 1073741824 (1GiB) bytes in one write or end"),
    ("task\n  end 2GiB\n", 2, "'2GiB': at most 1073741824 (1GiB)"),  # G and GiB: 2^30
    ("task\n  end 1025MiB\n", 2, "at most 1073741824 (1GiB)"),
    ("task\n  write \"" + "x" * 10_000_000 + "\"\n", 2, "a string of 10000000 bytes: at most 262144"),
    (_fault_lines(40) + "task\n  end\n", 33, "fault rule 33: the gate arms at most 32"),
    ("clamp-send 7\n" + _fault_lines(32) + "task\n  end\n", 33, "fault rule 33"),
    ("task\n  write 1 conn=9999\n", 2, "conn=9999: at most 1023 (a scenario has at most 1024 connections)"),
    ("task conn=99999999999\n  end\n", 1, "conn=99999999999: at most 1023"),
    ("peer read at task 99999999999\ntask\n  end\n", 1, "task '99999999999': at most 2147483647"),
    ("clamp-send 99999999999999999999\ntask\n  end\n", 1, "clamp-send '99999999999999999999': at most 2147483647"),
]


@pytest.mark.parametrize("text,line,needle", CANNOT_RUN, ids=[c[2][:40] for c in CANNOT_RUN])
def test_check_refuses_what_the_subject_would(wc, tmp_path, text, line, needle):
    # Before: these passed `check` and `run` exited 0 with the subject's
    # fatal error inside the trace only, or a rule past the gate's 32 named
    # no line.
    path = scenario(tmp_path, text, "c.wcs")
    for cmd in ("check", "run"):
        proc = wc(cmd, path)
        assert proc.returncode == 2, (cmd, proc.stdout[:200])
        assert f"c.wcs:{line}: " in proc.stderr and needle in proc.stderr, proc.stderr[:500]


def test_32_rules_are_the_limit_and_run(wc, tmp_path):
    path = scenario(tmp_path, _fault_lines(31) + "clamp-send 7\ntask\n  end \"abc\"\n")
    t = trace_of(wc("run", path))
    assert t["exit"] == CLEAN_EXIT and len(t["faults"]) == 32
    proc = wc("run", path, "--clamp-send", 9)
    assert proc.returncode == 2
    assert "33 fault rules with the command line's: the gate arms at most 32" in proc.stderr


def test_run_exits_4_when_the_subject_reports_a_fatal_error(wc, tmp_path):
    # A subject that reads the script, reports a fatal error and exits 2,
    # as refstack-subject does when it cannot go on: the trace is written,
    # and the exit status says so (it was 0).
    subject = tmp_path / "fatal-subject"
    subject.write_text("#!/bin/sh\nprintf 'fatal cannot listen: EADDRINUSE\\n' >&4\nexit 2\n")
    subject.chmod(0o755)
    path = scenario(tmp_path, "task\n  end\n")
    proc = wc("run", path, "--subject", subject, "--timeout", 10)
    assert proc.returncode == 4, proc.stderr
    t = trace_of_any(proc)
    assert t["exit"]["error"] == "cannot listen: EADDRINUSE" and t["exit"]["code"] == 2
    assert "the subject stopped with an error: cannot listen: EADDRINUSE" in proc.stderr


def test_an_empty_scenario_is_refused(wc, tmp_path):
    # Before: it passed check, then the run waited for the whole timeout.
    for text in ("", "# only a comment\n", "name x\nclamp-send 7\n"):
        path = scenario(tmp_path, text, "empty.wcs")
        for cmd in ("check", "run"):
            proc = wc(cmd, path)
            assert proc.returncode == 2, (cmd, text)
            assert "empty.wcs: an empty scenario" in proc.stderr


def test_a_scenario_of_handlers_only_is_not_empty(wc, tmp_path):
    path = scenario(tmp_path, "role server\npeer send \"hi\" at start\non data\n  end\n")
    assert wc("check", path).returncode == 0


def test_500000_operations_end_by_the_deadline(wc, tmp_path):
    # The script went through the pipe in one blocking write and the
    # subject read it a byte at a time: 500,000 operations took 50 s under
    # --timeout 5, and the time grows with the script. Now the deadline
    # counts from the start and covers writing the script. 1,500,000
    # operations (15 MB, under the 16 MiB bound) would take the old code
    # some 150 s on a quiet machine; the subprocess bound of 120 s leaves
    # room for a loaded one (15 s here at load 10; 500,000 operations
    # missed a 20 s bound at load 40), so it is a safety net that the old
    # code still trips, not a measure of speed.
    path = scenario(tmp_path, "task\n" + "  write 1\n" * 1_500_000 + "  end\n", "big.wcs")
    proc = wc("run", path, "--timeout", 5, timeout=120)
    assert proc.returncode == 0, proc.stderr
    t = json.loads(proc.stdout)
    assert t["exit"]["timed_out"] or t["exit"] == CLEAN_EXIT


def test_check_of_dev_zero_stops_with_an_error(wc):
    proc = wc("check", "/dev/zero", timeout=60)
    assert proc.returncode == 2
    assert "/dev/zero: larger than 16 MiB: a scenario file is at most 16 MiB" in proc.stderr


def test_a_fifo_with_no_writer_does_not_block(wc, tmp_path):
    # open() of a FIFO waited for a writer forever.
    fifo = tmp_path / "s.fifo"
    os.mkfifo(fifo)
    for cmd in ("check", "run"):
        proc = wc(cmd, fifo, timeout=30)
        assert proc.returncode == 2 and "an empty scenario" in proc.stderr, proc.stderr


def test_a_fifo_whose_writer_never_writes_ends_at_the_timeout(wc, tmp_path):
    fifo = tmp_path / "s.fifo"
    os.mkfifo(fifo)
    writer = os.open(fifo, os.O_RDWR)  # a writer that never writes
    try:
        proc = wc("run", fifo, "--timeout", 1, timeout=30)
    finally:
        os.close(writer)
    assert proc.returncode == 2
    assert "s.fifo: no input within 1 s" in proc.stderr


def test_main_help(wc):
    proc = wc("--help")
    assert proc.returncode == 0
    for word in ["run", "check", "--help", "--version", "wirecheck run --help"]:
        assert word in proc.stdout
    assert wc("-h").stdout == proc.stdout


def test_no_command_is_a_usage_error(wc):
    assert wc().returncode == 2
    proc = wc("frobnicate")
    assert proc.returncode == 2
    assert "unknown command 'frobnicate'" in proc.stderr


@pytest.mark.parametrize("spelling", ["--help", "-h"])
def test_run_help_mentions_every_flag(wc, spelling):
    proc = wc("run", spelling)
    assert proc.returncode == 0
    mentioned = set(re.findall(r"--[a-z][a-z-]*", proc.stdout)) - {"--help"}
    assert mentioned == set(RUN_FLAGS)


@pytest.mark.parametrize("flag", RUN_FLAGS)
def test_every_documented_flag_is_accepted(wc, tmp_path, flag):
    # The parser knows every flag the help lists: with a missing scenario the
    # error is about the file, never "unknown flag".
    value = [] if flag in ("--valgrind", "--subject-preload") else ["1"]
    proc = wc("run", tmp_path / "missing.wcs", flag, *value)
    assert proc.returncode == 2
    assert "unknown flag" not in proc.stderr
    assert "cannot open" in proc.stderr


# ---- 6. valgrind ----------------------------------------------------------------------


def test_valgrind_clean(wc):
    if shutil.which("valgrind") is None:
        pytest.skip("valgrind is not installed")
    path = queue_scenario("writev-clamp-below-tail")
    t = trace_of(wc("run", path, "--valgrind"))
    assert t["exit"] == {"code": 0, "timed_out": False, "valgrind": "clean"}
    assert_stream(t["peer"], sum(generated_sizes(path)))


# ---- 7. peer read points --------------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_peer_reads_at_points(wc, transport):
    proc = wc("run", e2e_scenario("peer-reads"), "--repeat", 20, "--transport", transport)
    t = trace_of(proc)
    assert "run 20/20" in proc.stderr
    assert t["exit"] == CLEAN_EXIT
    # Small writes without a clamp are taken whole: 1000 + 2000 by the end of
    # task 1, 500 more by the end of task 2.
    assert t["peer"]["reads"] == [3000, 500]
    assert_stream(t["peer"], 3500)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_peer_read_sees_what_the_kernel_took(wc, transport):
    proc = wc("run", e2e_scenario("peer-reads-clamp"), "--repeat", 20, "--transport", transport)
    t = trace_of(proc)
    assert t["exit"] == CLEAN_EXIT
    # 10000 written in task 1, but the call sends 4096 under the clamp and
    # writable events only come after the task: the read point gets 4096.
    assert t["peer"]["reads"] == [4096]
    assert_stream(t["peer"], 10000)
    ev = texts(t)
    assert_in_order(ev, ["write#1 10000 -> true", "end 0 -> ok", "end cb ok", "finish"])
    assert index_of(ev, "write#1 cb ok") < index_of(ev, "end cb ok")


# ---- 8. signals -----------------------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("how", ["self", "external"])
def test_signal_at_task(wc, transport, how):
    spec = "SIGTERM@task:1" + (":external" if how == "external" else "")
    t = trace_of(wc("run", queue_scenario("write-behind-tail"), "--signal", spec,
                    "--transport", transport))
    assert t["exit"]["signal"] == "SIGTERM"
    assert t["exit"]["timed_out"] is False
    ev = texts(t)
    assert ev[-1] == "signal SIGTERM" + (" external" if how == "external" else "")
    assert not any(e.startswith("write#2") for e in ev)  # task 2 never ran
    # Task 1's write sent 4096 in its call (clamp); the signal came at the end
    # of the task, before any writable event.
    assert_stream(t["peer"], 4096)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_signal_at_send_via_gate(wc, transport):
    t = trace_of(wc("run", END_LARGE_WCS, "--clamp-send", 4096, "--signal", "SIGTERM@send:2",
                    "--transport", transport))
    assert t["exit"]["signal"] == "SIGTERM"
    assert t["faults"] == ["write:short=4096,repeat=forever", "send:signal=SIGTERM,after=1"]
    assert "finish" not in texts(t)
    # The gate raises SIGTERM before the 2nd send: the peer has exactly the
    # bytes of the first one (end()'s call, 4096 under the clamp).
    assert_stream(t["peer"], 4096)


# ---- how the subject starts: its signals and its fds ----------------------------------


def test_the_subject_starts_with_sigpipe_at_its_default(wc, tmp_path):
    # The harness ignores SIGPIPE; an ignored signal stays ignored across
    # execve, so the subject survived a SIGPIPE sent to itself.
    path = scenario(tmp_path, "task\n  write \"a\\n\"\n  signal SIGPIPE\ntask\n  end\n")
    t = trace_of(wc("run", path))
    assert t["exit"]["signal"] == "SIGPIPE"
    assert not any(e.startswith("end") for e in texts(t))  # task 2 never ran


def test_the_subject_gets_only_its_three_fds(wc, tmp_path):
    # The harness moved the pipes and the memfd out of the way with F_DUPFD
    # (no CLOEXEC), so the subject also held three more fds (11, 12, 13):
    # two pipe ends and the memfd, beside 3, 4 and 5.
    listing = tmp_path / "fds"
    wrapper = tmp_path / "subject.py"
    real = wirecheck_path().parent / "refstack-subject"
    wrapper.write_text(
        "#!/usr/bin/python3\n"
        "import os\n"
        "fds = {}\n"
        "for fd in os.listdir('/proc/self/fd'):\n"
        "    try:\n"
        "        fds[fd] = os.readlink('/proc/self/fd/' + fd)\n"
        "    except OSError:\n"
        "        pass\n"
        f"open({str(listing)!r}, 'w').write(repr(fds))\n"
        f"os.execv({str(real)!r}, [{str(real)!r}])\n")
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    path = scenario(tmp_path, "task\n  end \"x\"\n")
    t = trace_of(wc("run", path, "--subject", wrapper))
    assert t["exit"]["code"] == 0
    fds = eval(listing.read_text())  # noqa: S307 - our own repr
    pipes_and_memfd = {fd for fd, target in fds.items()
                       if fd not in ("0", "1", "2") and
                       (target.startswith("pipe:") or "memfd:" in target)}
    assert pipes_and_memfd == {"3", "4", "5"}, fds


# ---- 9. the trace format --------------------------------------------------------------


def _sorted_pairs(pairs):
    keys = [k for k, _ in pairs]
    assert keys == sorted(keys), f"keys not sorted: {keys}"
    return dict(pairs)


def test_trace_format_and_trace_file(wc, tmp_path):
    scenario = queue_scenario("epipe-prefix")
    out = wc("run", scenario)
    assert out.returncode == 0, out.stderr
    from_stdout = json.loads(out.stdout, object_pairs_hook=_sorted_pairs)
    assert set(from_stdout) == TRACE_KEYS
    assert set(from_stdout["peer"]) >= {"bytes", "sha256", "reads"}
    assert set(from_stdout["exit"]) >= {"timed_out"}
    # Sorted keys at every level, two-space indent.
    assert out.stdout == json.dumps(from_stdout, indent=2, sort_keys=True) + "\n"

    path = tmp_path / "trace.json"
    proc = wc("run", scenario, "--trace", path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    text = path.read_text()
    from_file = json.loads(text, object_pairs_hook=_sorted_pairs)
    assert text.rstrip("\n") == json.dumps(from_file, indent=2, sort_keys=True)
    # Two runs: only syscalls_timing may differ (it is never compared).
    for t in (from_stdout, from_file):
        del t["syscalls_timing"]
    assert from_file == from_stdout


def test_trace_file_unwritable_is_a_harness_error(wc, tmp_path):
    # A path that cannot be written is refused before the run (exit 2,
    # tests/e2e/test_output_paths.py); a write that fails anyway is the
    # harness's error, with its errno.
    proc = wc("run", queue_scenario("epipe-prefix"), "--trace", "/dev/full")
    assert proc.returncode == 3
    assert "cannot write the trace to /dev/full: No space left on device" in proc.stderr


# ---- several connections ----------------------------------------------------------


def events_by_connection(trace):
    out = {}
    for e in trace["events"]:
        m = re.fullmatch(r"t(\d+) c(\d+) (.*)", e)
        assert m, f"malformed event {e!r}"
        out.setdefault(int(m.group(2)), []).append(m.group(3))
    return out


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_two_connections(wc, transport):
    # Two connections, each with its own stream counted from byte 0. Only
    # what is per connection is asserted: how the two interleave depends on
    # when the peer's close of the first reaches the subject (see the report
    # on multi-connection determinism).
    t = trace_of(wc("run", e2e_scenario("two-connections"), "--transport", transport,
                    "--timeout", 10))
    assert t["exit"] == CLEAN_EXIT
    assert isinstance(t["peer"], list) and len(t["peer"]) == 2
    assert_stream(t["peer"][0], 100)
    assert_stream(t["peer"][1], 200)
    by_conn = events_by_connection(t)
    assert sorted(by_conn) == [0, 1]
    for conn, n in ((0, 100), (1, 200)):
        assert by_conn[conn] == ["connect", f"write#1 {n} -> true", "end 0 -> ok", "finish",
                                 "eof", f"close had_error=0 bytes_written={n}"]
    assert t["syscalls"]["connect"] == 2
    assert t["syscalls"]["shutdown"] == 2


def test_a_refused_close_still_closes_the_fd(wc, tmp_path):
    # The gate kept the fd open on an injected close failure; with a failed
    # epoll_ctl(DEL) too, epoll then pointed at a freed socket (ASan: use
    # after free), and with close alone the peer never saw EOF (a hang).
    path = scenario(tmp_path, "connections 2\n"
                              "fault epoll_ctl:errno=EIO,after=4\n"
                              "fault close:errno=EIO\n"
                              "task\n  destroy conn=0\n"
                              "task\n  write \"b\" conn=1\n  end conn=1\n", "close.wcs")
    t = trace_of(wc("run", path, "--timeout", 20))
    assert t["exit"] == {"code": 0, "timed_out": False}
    assert [p["bytes"] for p in t["peer"]] == [0, 1]


def test_a_subject_that_wrote_nothing_is_warned_of(wc, tmp_path):
    """A program that does not speak the subject protocol (/bin/true given
    as --subject) ended with exit 0, no event and nothing on stderr: its
    trace, and a golden made from it, held nothing, silently. It now gets
    a warning naming it and the protocol; the reference subject does not.
    (On the code before, stderr was empty.)"""
    sc = tmp_path / "t.wcs"
    sc.write_text('behaviour queue\ntask\n  write "hello" cb\n  end cb\n')
    proc = wc("run", sc, "--subject", "/bin/true")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["events"] == []
    assert ("wirecheck run: warning: the subject /bin/true wrote nothing on its event pipe "
            "(fd 4) before it ended: does it speak the subject protocol?") in proc.stderr
    proc = wc("run", sc)
    assert proc.returncode == 0 and "warning" not in proc.stderr, proc.stderr
