"""A Raspberry Pi 5's PMIC rails through `vcgencmd pmic_read_adc`: amps and volts per rail, sampled and integrated.

Each rail appears twice, as `<RAIL>_A current(N)=…A` and `<RAIL>_V volt(M)=…V` (N and M differ, so
rails pair by name). A rail with only a voltage (EXT5V_V, the 5 V input) has no power of its own
here and is left out. The PMIC's outputs feed the SoC, RAM and peripherals on the board, not the
USB ports or the power supply's own losses: hence the scope 'SoC rails (PMIC)', not wall power.
Each read starts a process, so the rails are sampled less often than sysfs ones.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable, Sequence

from planner.hardware.energy.counter import SCOPE_PMIC, Counter, CounterFamily, EnergyReadError, Rail

COMMAND = ("vcgencmd", "pmic_read_adc")
SAMPLE_INTERVAL_S = 0.2
_LINE = re.compile(r"^\s*(\S+)_([AV])\s+(?:current|volt)\(\d+\)=([-+0-9.eE]+|nan)([AV])\s*$", re.MULTILINE)

CommandRunner = Callable[[Sequence[str]], str]
"""Runs a command line and returns its standard output; raises OSError or CalledProcessError on failure."""


def run_command(command: Sequence[str]) -> str:
    """The command's standard output (2 s at most: vcgencmd answers in milliseconds)."""
    return subprocess.run(list(command), capture_output=True, text=True, timeout=2.0, check=True).stdout


def parse_rails(output: str) -> dict[str, tuple[float, float]]:
    """{rail: (volts, amps)} for each rail the output gives both for; lines it cannot read are left out."""
    volts: dict[str, float] = {}
    amps: dict[str, float] = {}
    for name, kind, value, unit in _LINE.findall(output):
        if kind != unit or value == "nan":
            continue
        (volts if kind == "V" else amps)[name] = float(value)
    return {name: (volts[name], amps[name]) for name in sorted(volts.keys() & amps.keys())}


def find_pmic(runner: CommandRunner | None) -> tuple[Counter | None, str]:
    """(the PMIC rails as one counter, '') or (None, why not). `runner` None: vcgencmd is looked up on PATH."""
    if runner is None:
        if shutil.which(COMMAND[0]) is None:
            return None, "no vcgencmd on PATH (not a Raspberry Pi)"
        runner = run_command
    try:
        output = runner(COMMAND)
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"`{' '.join(COMMAND)}` failed: {exc}"
    rails = parse_rails(output)
    if not rails:
        first = output.strip().splitlines()[0] if output.strip() else "no output"
        return None, f"`{' '.join(COMMAND)}` gave no rail readings (a Raspberry Pi 5 has them): {first[:120]}"
    return Counter(family=CounterFamily.PMIC, scope=SCOPE_PMIC, source="Raspberry Pi 5 PMIC (vcgencmd), sampled",
                   detail=" + ".join(rails), rails=tuple(Rail(n, f"{n}_V", f"{n}_A") for n in rails),
                   command=COMMAND, sample_interval_s=SAMPLE_INTERVAL_S), ""


def read_pmic_watts(counter: Counter, runner: CommandRunner = run_command) -> float:
    """The power the counter's rails draw now, in watts (the sum of volts x amps)."""
    try:
        rails = parse_rails(runner(counter.command))
    except (OSError, subprocess.SubprocessError) as exc:
        raise EnergyReadError(f"`{' '.join(counter.command)}` failed: {exc}") from exc
    missing = [r.name for r in counter.rails if r.name not in rails]
    if missing:
        raise EnergyReadError(f"`{' '.join(counter.command)}` no longer reports {', '.join(missing)}")
    return sum(rails[r.name][0] * rails[r.name][1] for r in counter.rails)
