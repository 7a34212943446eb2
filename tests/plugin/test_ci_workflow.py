"""docs/ci.md's GitHub Actions workflow installs every Debian package that
wirecheck's build requires: each pkg-config module a CMakeLists.txt asks
for with REQUIRED comes from a package in the workflow's apt-get list. (A
new-user trial found zlib1g-dev missing: the workflow failed at configure.)"""
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def workflow_packages() -> set[str]:
    text = (REPO / "docs" / "ci.md").read_text()
    m = re.search(r"apt-get install (.*?)\n\n", text, re.S)
    assert m, "docs/ci.md: no apt-get install in the workflow"
    return {w for w in m.group(1).replace("\\", " ").split() if not w.startswith("-")}


def required_modules() -> set[str]:
    mods = set()
    for cm in REPO.glob("**/CMakeLists.txt"):
        if "build" in cm.relative_to(REPO).parts[:1] or "third_party" in cm.parts:
            continue
        for args in re.findall(r"pkg_check_modules\(([^)]*)\)", cm.read_text()):
            words = args.split()
            if "REQUIRED" in words:
                mods.update(w for w in words[1:] if w not in ("REQUIRED", "IMPORTED_TARGET",
                                                               "QUIET", "GLOBAL"))
    return mods


@pytest.mark.skipif(not (shutil.which("pkg-config") and shutil.which("dpkg")),
                    reason="needs pkg-config and dpkg (Debian)")
def test_the_workflow_installs_every_required_module():
    pkgs = workflow_packages()
    mods = required_modules()
    assert {"zlib", "libfiu", "jansson"} <= mods
    for mod in sorted(mods):
        pcdir = subprocess.run(["pkg-config", "--variable=pcfiledir", mod],
                               capture_output=True, text=True).stdout.strip()
        pc = Path(pcdir) / f"{mod}.pc"
        owner = subprocess.run(["dpkg", "-S", str(pc)], capture_output=True, text=True)
        if owner.returncode != 0:
            owner = subprocess.run(["dpkg", "-S", str(pc.resolve())], capture_output=True,
                                   text=True)
        assert owner.returncode == 0, f"{mod}: {pc} belongs to no Debian package"
        package = owner.stdout.split(":")[0]
        assert package in pkgs, (f"docs/ci.md's workflow does not install {package}, "
                                 f"which has {mod}.pc (a REQUIRED pkg-config module)")
