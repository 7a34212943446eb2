"""The UTF-8 validator and the legacy U+FFFD decoder (reference/utf8.c)
held against reference decoders: Python's own (bytes.decode, strict and
errors="replace") and, when node is installed, node's Buffer#toString,
which is what npm ws and the seed's legacy path used to make text of bytes.

build/bin/ws_utf8_check reads one hex line per input and prints
"valid|invalid REPLACED-HEX"; it also feeds the validator at every split
point and byte by byte and prints "split ..." when an answer differs.
"""
import pathlib
import pytest
import random
import shutil

import subprocess

# The repository, from this file (not `from conftest import`: with several
# test folders in one run, "conftest" may be another folder's).
REPO = pathlib.Path(__file__).resolve().parents[2]

CHECK = REPO / "build" / "bin" / "ws_utf8_check"


def edge_inputs():
    """Every boundary of Unicode's Table 3-7, one and two sequences long,
    cut short, and the classic bad cases (overlongs, surrogates, > U+10FFFF,
    lone continuations)."""
    out = [b"", b"a", b"\xff\x68", b"\xe2\x82\x28", b"\xf0\x9f\x98\x80",
           b"\xed\x9f\xbf", b"\xed\xa0\x80", b"\xee\x80\x80", b"\xc0\x80",
           b"\xc1\xbf", b"\xc2\x80", b"\xdf\xbf", b"\xe0\x9f\xbf",
           b"\xe0\xa0\x80", b"\xef\xbf\xbf", b"\xf0\x8f\xbf\xbf",
           b"\xf0\x90\x80\x80", b"\xf4\x8f\xbf\xbf", b"\xf4\x90\x80\x80",
           b"\xf5\x80\x80\x80", b"\x80", b"\xbf", b"\xe0\x80", b"\xf0\x9f\x98",
           b"\xf0\x9f", b"\xe2\x82", b"\xf8\x88\x80\x80\x80",
           b"a\xf0\x9f\x98\x80b" * 3, b"\xc3\xa9" * 20 + b"\xc3"]
    for lead in range(0x80, 0x100):
        for second in (0x00, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0):
            out.append(bytes([lead, second, 0x80, 0x80]))
            out.append(bytes([lead, second]))
    return out


def random_inputs(n=3000, seed=11):
    rng = random.Random(seed)
    alphabet = list(range(256))
    # Weighted towards bytes that matter: ASCII, leads, continuations.
    weights = [4 if b < 0x80 else 3 if 0x80 <= b <= 0xbf else 2 for b in alphabet]
    out = []
    for _ in range(n):
        k = rng.randrange(0, 24)
        if rng.random() < 0.3:
            # Mostly valid text with one byte changed.
            s = "".join(chr(rng.choice([0x41, 0xe9, 0x20ac, 0x1f600, 0x10ffff, 0xd7ff]))
                        for _ in range(rng.randrange(1, 8))).encode()
            i = rng.randrange(len(s))
            s = s[:i] + bytes([rng.randrange(256)]) + s[i + 1:]
            out.append(s)
        else:
            out.append(bytes(rng.choices(alphabet, weights, k=k)))
    return out


def run_check(inputs):
    if not CHECK.exists():
        pytest.skip(f"{CHECK} is not built")
    text = "".join(b.hex() + "\n" for b in inputs)
    res = subprocess.run([str(CHECK)], input=text, capture_output=True,
                         text=True, timeout=120, check=True)
    lines = res.stdout.splitlines()
    assert not [l for l in lines if l.startswith("split")], \
        "the validator's answer depends on where the input is cut"
    assert len(lines) == len(inputs)
    return [(l.split(" ")[0] == "valid", bytes.fromhex(l.split(" ", 1)[1]))
            for l in lines]


def python_valid(b):
    try:
        b.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


@pytest.mark.parametrize("name,inputs", [("edge", edge_inputs()),
                                         ("random", random_inputs())])
def test_validator_and_replacement_match_python(name, inputs):
    got = run_check(inputs)
    for b, (valid, replaced) in zip(inputs, got):
        assert valid == python_valid(b), f"{name}: {b.hex()}"
        assert replaced == b.decode("utf-8", "replace").encode("utf-8"), \
            f"{name}: {b.hex()}"


def long_inputs():
    """Inputs of 48 to 64 bytes, so that the validator takes its vector
    path (whole blocks of 16 bytes from a boundary, when the CPU has SSSE3;
    the DFA otherwise): every edge input at every offset from 0 to 40 in
    ASCII, and at the even offsets in text of "é", so that each boundary
    case falls at every place in a block and across the blocks' edges, and
    the blocks' end leaves sequences open in every way."""
    out = []
    for e in edge_inputs():
        if len(e) > 8:
            continue
        for off in range(0, 41):
            out.append(b"a" * off + e + b"b" * (64 - off - len(e)))
            if off % 2 == 0:
                out.append(b"\xc3\xa9" * (off // 2) + e + b"\xc3\xa9" * ((48 - off) // 2))
    return out


def test_long_inputs_match_python():
    inputs = long_inputs()
    got = run_check(inputs)
    wrong = [b.hex() for b, (valid, _) in zip(inputs, got) if valid != python_valid(b)]
    assert not wrong, f"{len(wrong)} of {len(inputs)} differ from Python, the first: {wrong[:3]}"


def test_seed_example():
    """The seed's example: ff 68 is not UTF-8, and the legacy path turns it
    into ef bf bd 68."""
    [(valid, replaced)] = run_check([b"\xff\x68"])
    assert not valid
    assert replaced.hex() == "efbfbd68"


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_replacement_matches_node_buffer_tostring():
    """node's Buffer#toString("utf8") is the decode of the seed's legacy
    path (normalizeData); our replacement must give the same bytes."""
    inputs = edge_inputs() + random_inputs(500, seed=5)
    got = run_check(inputs)
    script = ("const lines=require('fs').readFileSync(0,'utf8').split('\\n');"
              "for (const l of lines.slice(0, -1)) {"
              " const b = Buffer.from(l.slice(1), 'hex');"
              " console.log(Buffer.from(b.toString('utf8'), 'utf8').toString('hex')); }")
    text = "".join("x" + b.hex() + "\n" for b in inputs)
    res = subprocess.run(["node", "-e", script], input=text, capture_output=True,
                         text=True, timeout=120, check=True)
    node = res.stdout.splitlines()[:len(inputs)]
    for b, (_, replaced), n in zip(inputs, got, node):
        assert replaced.hex() == n, b.hex()
