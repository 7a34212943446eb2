"""Regression tests for defects a review of the stack and the harness found.
Each failed before its fix (named in the test) and passes after it."""
import stat

from conftest import wirecheck_path
from test_run import texts, trace_of


def scenario(tmp_path, text, name="s.wcs"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_the_subject_starts_with_sigpipe_at_its_default(wc, tmp_path):
    # The harness ignores SIGPIPE; an ignored signal stays ignored across
    # execve, so the subject survived a SIGPIPE sent to itself.
    path = scenario(tmp_path, "task\n  write \"a\\n\"\n  signal SIGPIPE\ntask\n  end\n")
    t = trace_of(wc("run", path))
    assert t["exit"]["signal"] == "SIGPIPE"
    assert not any(e.startswith("end") for e in texts(t))  # task 2 never ran


def test_end_callback_learns_that_its_own_send_failed(wc, tmp_path):
    # The send inside end() failed and destroyed the socket before end()
    # stored its callback: the callback never ran.
    path = scenario(tmp_path, "fault send:errno=ECONNRESET\ntask\n  end \"xyz\" cb\n")
    ev = texts(trace_of(wc("run", path)))
    assert "end cb ECONNRESET" in ev
    assert ev.index("end cb ECONNRESET") < ev.index("error ECONNRESET send")


def test_no_drain_after_destroy(wc, tmp_path):
    # node's afterWrite emits drain only for a stream that is not destroyed.
    path = scenario(tmp_path, "task\n  write 20KiB\n  destroy\n")
    ev = texts(trace_of(wc("run", path)))
    assert "destroy" in ev and "drain" not in ev


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
