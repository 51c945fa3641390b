"""Builds the tabuladb wheels, one per platform, each carrying that platform's tabula binary
from the release tool (dist/bin/<os>_<arch>/), with the package tabuladb (the Python API,
the pytest plugin, the ``tabula`` console script). Standard library only: a wheel is a zip
with a dist-info directory, written here in a fixed order with fixed dates, so that the same
inputs give the same bytes.

    go run ./packaging/release
    python3 packaging/python/build_wheel.py [--version 1.2.3] [--dist dist] [--out dist/python]

The version defaults to git describe, made a PEP 440 version (v1.2.3 → 1.2.3; a commit
c0ffee → 0.0.0.dev0+gc0ffee).
"""

import argparse
import base64
import hashlib
import os
import re
import subprocess
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

# The release's platforms and their wheel platform tags. The binaries are static, so a
# linux one runs on every glibc and musl distribution.
PLATFORMS = [
    ("linux", "amd64", "manylinux_2_17_x86_64.manylinux2014_x86_64.musllinux_1_1_x86_64"),
    ("linux", "arm64", "manylinux_2_17_aarch64.manylinux2014_aarch64.musllinux_1_1_aarch64"),
    ("darwin", "amd64", "macosx_10_15_x86_64"),
    ("darwin", "arm64", "macosx_11_0_arm64"),
    ("windows", "amd64", "win_amd64"),
    ("windows", "arm64", "win_arm64"),
]

DATE = (1980, 1, 1, 0, 0, 0)  # the earliest a zip can say


def pep440(v):
    m = re.fullmatch(r"v?(\d+\.\d+\.\d+)", v)
    if m:
        return m.group(1)
    return "0.0.0.dev0+g" + re.sub(r"[^0-9A-Za-z]+", ".", v.lstrip("v")).strip(".").lower()


def record_hash(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def build(version, goos, goarch, tag, dist, out):
    exe = "tabula.exe" if goos == "windows" else "tabula"
    binary = os.path.join(dist, "bin", f"{goos}_{goarch}", exe)
    if not os.path.exists(binary):
        print(f"no {binary}: the {tag} wheel is not built", file=sys.stderr)
        return None
    info = f"tabuladb-{version}.dist-info"
    files = []
    for name in sorted(os.listdir(os.path.join(HERE, "tabuladb"))):
        if name.endswith(".py"):
            with open(os.path.join(HERE, "tabuladb", name), "rb") as f:
                files.append((f"tabuladb/{name}", f.read(), 0o644))
    with open(binary, "rb") as f:
        files.append((f"tabuladb/bin/{exe}", f.read(), 0o755))
    with open(os.path.join(HERE, "README.md"), "rb") as f:
        readme = f.read()
    metadata = (
        "Metadata-Version: 2.1\n"
        "Name: tabuladb\n"
        f"Version: {version}\n"
        "Summary: Tabula, a fake of Azure Table storage: the tabula binary and a pytest fixture giving each test a fresh fake\n"
        "Requires-Python: >=3.8\n"
        "Description-Content-Type: text/markdown\n"
        "\n"
    ).encode() + readme
    files += [
        (f"{info}/METADATA", metadata, 0o644),
        (f"{info}/WHEEL", (
            "Wheel-Version: 1.0\n"
            "Generator: tabula packaging/python/build_wheel.py\n"
            "Root-Is-Purelib: false\n"
            + "".join(f"Tag: py3-none-{t}\n" for t in tag.split("."))
        ).encode(), 0o644),
        (f"{info}/entry_points.txt", (
            "[console_scripts]\ntabula = tabuladb.__main__:main\n\n"
            "[pytest11]\ntabuladb = tabuladb.pytest_plugin\n"
        ).encode(), 0o644),
    ]
    record = "".join(f"{n},{record_hash(d)},{len(d)}\n" for n, d, _ in files) + f"{info}/RECORD,,\n"
    files.append((f"{info}/RECORD", record.encode(), 0o644))

    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, f"tabuladb-{version}-py3-none-{tag}.whl")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data, mode in files:  # dist-info last, RECORD last of all, as wheels are read
            zi = zipfile.ZipInfo(name, DATE)
            zi.external_attr = (0o100000 | mode) << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, data)
    return path


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--version")
    p.add_argument("--dist", default=os.path.join(REPO, "dist"))
    p.add_argument("--out")
    a = p.parse_args()
    version = a.version or subprocess.run(["git", "describe", "--tags", "--always", "--dirty"], cwd=REPO,
                                          check=True, capture_output=True, text=True).stdout.strip()
    version = pep440(version)
    out = a.out or os.path.join(a.dist, "python")
    if os.path.isdir(out):  # wheels of an earlier version would be installed beside these
        for name in os.listdir(out):
            if name.startswith("tabuladb-") and name.endswith(".whl"):
                os.remove(os.path.join(out, name))
    for goos, goarch, tag in PLATFORMS:
        path = build(version, goos, goarch, tag, a.dist, out)
        if path:
            print(path)


if __name__ == "__main__":
    main()
