"""Does the planner install where users run it? Its dependencies against the real package index, for aarch64 Linux.

For each dependency in pyproject.toml ([project] dependencies, then each optional extra but dev) and each Python
the boards run (3.11, 3.12, 3.13), pip resolves it alone, as a binary-only install for an aarch64 Linux with the
boards' glibc, without installing anything:

    pip install --dry-run --ignore-installed --only-binary=:all: --platform manylinux2014_aarch64
        --platform manylinux_2_17_aarch64 ... --platform manylinux_2_35_aarch64 --python-version 3.11
        --report - DEPENDENCY

One dependency per run, so one that has no wheel does not hide the others (a dependency of a dependency that has
none shows in that dependency's row, with pip's words naming it). Then the install command `planner preflight`
prints for an aarch64 host (planner/ssh/preflight.py's install_command), with the planner's wheel standing for
its own dependencies: its pinned torch and torchvision, then all the dependencies together, as `pip install
planner-*.whl` resolves them; again for a host with an NVIDIA driver (a Jetson), for which the command adds the
[nvidia] extra. Prints a table, dependency x Python -> the version pip would install, or "no wheel" with pip's
reason below it.

Not run in CI: it asks the real index (https://pypi.org/simple by default), so it needs the network and takes a
minute or two. The pip configuration of this machine is left out (PIP_CONFIG_FILE=/dev/null, and the PIP_*
variables other than the certificate and the timeout are dropped): a cap on torch or a local folder of wheels
there would answer for the index. --use-pip-config keeps it.

Exit status 0 when every [project] dependency and the preflight's install resolve for every Python, 1 otherwise.

Usage: .venv/bin/python benchmarks/aarch64_wheels.py [--python 3.11 3.12 3.13] [--glibc 2.35] [--jobs 4]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from planner.ssh.hosts import HostSpec  # noqa: E402  (the planner from this source folder, not an installed one)
from planner.ssh.preflight import HostBasics, install_command  # noqa: E402

PYTHONS = ("3.11", "3.12", "3.13")
"""The Pythons the boards run: Raspberry Pi OS 12 and Ubuntu 24.04 ship 3.11 and 3.12; 3.13 is the newest."""

GLIBC = "2.35"
"""The boards' glibc: Ubuntu 22.04 (JetPack 6 on a Jetson Orin) has 2.35; Raspberry Pi OS 12 has 2.36."""

OLDEST_MANYLINUX = 17
"""manylinux_2_17 (= manylinux2014) is the oldest aarch64 wheel tag: manylinux1 and 2010 had no aarch64."""

INDEX_URL = "https://pypi.org/simple"
"""The real package index."""

PIP_TIMEOUT_S = 600.0
"""How long one resolution may take (torch's metadata over a slow link)."""

KEPT_PIP_VARIABLES = ("PIP_CERT", "PIP_DEFAULT_TIMEOUT")
"""The pip variables kept from this environment: how to reach the index, not what it answers."""

NOT_EXTRAS = ("dev",)
"""Extras that are not for a host running plans (the checkers and the test runner)."""


@dataclass(frozen=True)
class Row:
    """One line of the table: what pip is asked to install, and under which name."""

    label: str
    requirements: tuple[str, ...]
    group: str  # "dependency", "extra NAME" or "preflight"


@dataclass(frozen=True)
class Answer:
    """What pip said for one row and one Python: the versions it would install, or why it cannot."""

    versions: dict[str, str]  # canonical name -> version
    problem: str = ""


def canonical(name: str) -> str:
    """A distribution's name as PEP 503 compares it."""
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(requirement: str) -> str:
    """The distribution a requirement names ("onnxruntime>=1.22  # ..." -> "onnxruntime")."""
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    return canonical(match.group(1)) if match else requirement


def platforms(glibc: str) -> list[str]:
    """Every aarch64 manylinux tag a host with this glibc takes (pip does not widen a manylinux_2_X tag itself)."""
    major, minor = (int(part) for part in glibc.split(".")[:2])
    return ["manylinux2014_aarch64", *(f"manylinux_{major}_{m}_aarch64" for m in range(OLDEST_MANYLINUX, minor + 1))]


def read_project(path: Path) -> tuple[list[str], dict[str, list[str]]]:
    """pyproject.toml's [project] dependencies and optional extras."""
    project = tomllib.loads(path.read_text(encoding="utf-8"))["project"]
    return list(project.get("dependencies", [])), dict(project.get("optional-dependencies", {}))


def preflight_rows(dependencies: list[str], extras: dict[str, list[str]], python: str, glibc: str,
                   nvidia: bool) -> list[Row]:
    """The `pip install` steps of the command `planner preflight` prints for an aarch64 host (`nvidia`: one with an
    NVIDIA driver, a Jetson), in order; the planner's wheel (which is not on the index) stands for its dependencies
    and the extras it names."""
    basics = HostBasics(arch="aarch64", python=python, glibc=glibc, nvidia=nvidia)
    text = install_command(HostSpec(host="board", label="board"), basics, source=REPO_ROOT)
    ssh_line = next(line for line in text.splitlines() if line.strip().startswith("ssh "))
    remote = shlex.split(ssh_line)[-1]
    rows: list[Row] = []
    before: list[str] = []
    for step in remote.split(" && "):
        words = shlex.split(step)
        if len(words) < 3 or not words[0].endswith("pip") or words[1] != "install" or "--upgrade" in words:
            continue
        asked: list[str] = []
        for word in words[2:]:
            wheel = re.match(r".*planner-[^/]*\.whl(?:\[(.*)\])?$", word)
            if wheel is None:
                asked.append(word)
                continue
            asked += dependencies
            for extra in filter(None, (wheel.group(1) or "").split(",")):
                asked += extras.get(extra.strip(), [])
        before += asked
        # Each step installs into what the earlier ones put there: resolve them together, as pip would.
        rows.append(Row(f"preflight: pip install {' '.join(words[2:])}", tuple(before), "preflight"))
    return rows


def pip_environment(use_pip_config: bool) -> dict[str, str]:
    """The environment pip runs in: this machine's pip configuration left out unless asked for."""
    if use_pip_config:
        return dict(os.environ)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_") or k in KEPT_PIP_VARIABLES}
    env["PIP_CONFIG_FILE"] = os.devnull  # pip then reads no configuration file at all
    return env


def resolve(requirements: tuple[str, ...], python: str, tags: list[str], index_url: str,
            env: dict[str, str]) -> Answer:
    """Ask pip what it would install for `requirements` on an aarch64 host with this Python, binaries only."""
    command = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--only-binary=:all:",
               "--python-version", python, "--index-url", index_url, "--quiet", "--report", "-",
               *(arg for tag in tags for arg in ("--platform", tag)),
               *(r.split("#")[0].strip() for r in requirements)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=PIP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return Answer({}, f"pip took more than {PIP_TIMEOUT_S:.0f} s")
    if done.returncode != 0:
        return Answer({}, pip_reason(done.stderr) or f"pip exited with status {done.returncode}")
    report = json.loads(done.stdout)
    return Answer({canonical(item["metadata"]["name"]): item["metadata"]["version"] for item in report["install"]})


def pip_reason(stderr: str) -> str:
    """pip's own words for a failed resolution: its ERROR lines (the requirement it could not satisfy first)."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip().startswith("ERROR:")]
    lines.sort(key=lambda line: "Could not find a version" not in line)
    return " / ".join(line.removeprefix("ERROR: ") for line in lines[:2])[:400]


def cell(row: Row, answer: Answer) -> str:
    """A table cell: the version of the row's own distribution (every one for the preflight's rows), or no wheel."""
    if answer.problem:
        return "no wheel"
    if row.group == "preflight":
        return f"ok ({len(answer.versions)} packages)"
    return answer.versions.get(requirement_name(row.requirements[0]), "?")


def main(argv: list[str] | None = None) -> int:
    """Resolve every row for every Python (several pip runs at once) and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", nargs="+", default=list(PYTHONS), help="the Python versions (default: %(default)s)")
    parser.add_argument("--glibc", default=GLIBC, help="the hosts' glibc, for the manylinux tags (default %(default)s)")
    parser.add_argument("--index-url", default=INDEX_URL, help="the package index (default %(default)s)")
    parser.add_argument("--jobs", type=int, default=4, help="pip runs at once (default %(default)s)")
    parser.add_argument("--use-pip-config", action="store_true",
                        help="keep this machine's pip configuration (its caps and local wheels answer too)")
    parser.add_argument("--only", nargs="*", help="only the rows whose label holds one of these words")
    args = parser.parse_args(argv)

    dependencies, extras = read_project(REPO_ROOT / "pyproject.toml")
    rows = [Row(d.split("#")[0].strip(), (d,), "dependency") for d in dependencies]
    rows += [Row(f"{d.split('#')[0].strip()}  [{name}]", (d,), f"extra {name}")
             for name, reqs in extras.items() if name not in NOT_EXTRAS for d in reqs]
    if args.only:
        rows = [r for r in rows if any(word in r.label for word in args.only)]
    preflight = {py: [row for nvidia in (False, True) for row in preflight_rows(dependencies, extras, py, args.glibc,
                                                                                  nvidia)]
                 for py in args.python}
    tags = platforms(args.glibc)
    env = pip_environment(args.use_pip_config)
    print(f"pip {'with' if args.use_pip_config else 'without'} this machine's configuration, index {args.index_url}, "
          f"aarch64 manylinux up to glibc {args.glibc}, binaries only", flush=True)

    jobs: dict[tuple[str, str], tuple[Row, tuple[str, ...]]] = {}
    for py in args.python:
        for row in rows:
            jobs[(row.label, py)] = (row, row.requirements)
        for row in preflight[py]:
            jobs[(row.label, py)] = (row, row.requirements)
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {key: pool.submit(resolve, reqs, key[1], tags, args.index_url, env) for key, (_, reqs) in
                   jobs.items()}
        answers = {key: future.result() for key, future in futures.items()}

    labels = list(dict.fromkeys(label for label, _ in jobs))
    width = max(len(label) for label in labels)
    header = f"{'dependency':<{width}}  " + "  ".join(f"{'Python ' + py:<22}" for py in args.python)
    print(header)
    print("-" * len(header))
    problems: list[str] = []
    failed = False
    for label in labels:
        cells = []
        for py in args.python:
            row, _ = jobs.get((label, py), (None, ()))
            if row is None:
                cells.append(f"{'-':<22}")
                continue
            answer = answers[(label, py)]
            cells.append(f"{cell(row, answer):<22}")
            if answer.problem:
                problems.append(f"  {label} on Python {py}: {answer.problem}")
                failed = failed or row.group in ("dependency", "preflight")
        print(f"{label:<{width}}  " + "  ".join(cells))
    if problems:
        print("\nWhy not:")
        print("\n".join(problems))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
