"""Every hand-over package of a plan proves itself without the planner (issue 37, item 5).

For each package under PLAN_DIR/deploy/ (each folder with a manifest.json):
  1. its manifest.json and README.md name no absolute path and no /tmp path (the plan's folder may move);
  2. a fresh virtual environment holding only the package's requirements.txt (one per distinct file, kept under
     --venvs so a second run reuses it; the planner is not importable there, which is checked), in which
     `python deploy/NAME/run.py --check` runs from the plan's folder: its files against the manifest, its
     outputs on the stored samples against the original model's by the manifest's fidelity rule, and its
     timing as benchmark_app reports it, against the recorded p50;
  3. `planner verify deploy/NAME` (this checkout's planner), which judges by the same rule and times by the
     plan's own method.

Prints each package's lines from both, then one verdict per package. Exits 1 when a path check fails, when
run.py --check exits non-zero (a file or the outputs failed), or when planner verify fails; a latency outside
the tolerance fails verify but not --check (a different or busy machine times differently: quote the
figures with the load average, which is printed).

Usage: .venv/bin/python benchmarks/package_proof.py PLAN_DIR [--venvs DIR] [--seconds 3] [--no-verify]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def path_problems(folder: Path) -> list[str]:
    """Each absolute or /tmp path in the package's manifest.json and README.md."""
    def strings(value: object) -> list[str]:
        if isinstance(value, dict):
            return [s for v in value.values() for s in strings(v)]
        if isinstance(value, list):
            return [s for v in value for s in strings(v)]
        return [value] if isinstance(value, str) else []

    found = [f"manifest.json: {s[:80]}" for s in strings(json.loads((folder / "manifest.json").read_text()))
             if s.startswith("/") or "/tmp/" in s]
    found += [f"README.md: {line.strip()[:80]}" for line in (folder / "README.md").read_text().splitlines()
              if "/tmp/" in line]
    return found


def bare_env() -> dict[str, str]:
    """This process's environment without PYTHONPATH: the fresh environment must not see this checkout."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def venv_for(requirements: Path, root: Path) -> Path:
    """The Python of a virtual environment holding only these requirements (made once per distinct file)."""
    digest = hashlib.sha256(requirements.read_bytes()).hexdigest()[:10]
    home = root / digest
    python = home / "bin" / "python"
    if not python.exists():
        print(f"  making {home} with pip install -r {requirements.name} (once) ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(home)], check=True, env=bare_env())
        subprocess.run([str(python), "-m", "pip", "install", "-q", "-r", str(requirements)], check=True,
                       env=bare_env())
    leak = subprocess.run([str(python), "-c", "import planner"], capture_output=True, text=True, cwd=root,
                          env=bare_env())
    if leak.returncode == 0:
        raise SystemExit(f"the planner is importable in {home}: the check would not show the package stands alone")
    return python


def main() -> int:
    """Check every package of the plan; the exit status says whether all passed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("plan", type=Path, help="the plan's folder (where results.json and deploy/ are)")
    parser.add_argument("--venvs", type=Path, default=Path.home() / ".cache" / "planner-package-proof",
                        help="where the fresh virtual environments are kept (one per distinct requirements.txt)")
    parser.add_argument("--seconds", default="3", help="run.py --check's timing loop, in seconds (default 3)")
    parser.add_argument("--no-verify", action="store_true", help="skip planner verify")
    args = parser.parse_args()
    plan = args.plan.resolve()
    packages = sorted((p.parent for p in (plan / "deploy").glob("*/manifest.json")),
                      key=lambda p: (p.name != "winner", p.name))
    if not packages:
        print(f"no package under {plan / 'deploy'}", file=sys.stderr)
        return 1
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    verdicts = []
    for folder in packages:
        name = folder.relative_to(plan).as_posix()
        print(f"\n== {name}")
        problems = path_problems(folder)
        for problem in problems:
            print(f"  path: {problem}")
        python = venv_for(folder / "requirements.txt", args.venvs)
        check = subprocess.run([str(python), f"{name}/run.py", "--check", "--seconds", args.seconds], cwd=plan,
                               capture_output=True, text=True, timeout=900, env=bare_env())
        print(f"  $ python {name}/run.py --check   (exit {check.returncode})")
        print("".join(f"    {line}\n" for line in (check.stdout + check.stderr).splitlines()), end="")
        verified = 0
        if not args.no_verify:
            env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
            verify = subprocess.run([sys.executable, "-m", "planner.cli", "verify", name], cwd=plan, env=env,
                                    capture_output=True, text=True, timeout=900)
            verified = verify.returncode
            print(f"  $ planner verify {name}   (exit {verify.returncode})")
            print("".join(f"    {line}\n" for line in verify.stdout.splitlines()[1:-2]), end="")
        verdicts.append((name, not problems, check.returncode == 0, verified == 0))
    print(f"\nload average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"\n{'package':<32} {'paths':<6} {'run.py --check':<15} planner verify")
    for name, paths, checked, verified in verdicts:
        print(f"{name:<32} {'ok' if paths else 'FAIL':<6} {'pass' if checked else 'FAIL':<15} "
              f"{'skipped' if args.no_verify else 'pass' if verified else 'FAIL'}")
    return 0 if all(all(v[1:]) for v in verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
