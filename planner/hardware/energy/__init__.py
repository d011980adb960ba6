"""Energy counters: find the one this machine exposes (or say why none is usable) and read it.

Four families, each in its own module: RAPL through powercap sysfs (CPU package, `rapl`), NVML's
total-energy counter (GPU, `gpu`), a Jetson's INA3221 rails through hwmon or the older ina3221x driver
(SoC rails, `ina3221`) and a Raspberry Pi 5's PMIC through `vcgencmd pmic_read_adc` (SoC rails, `pmic`).
`find_counter` picks one and `open_meter` reads it over a window (`planner.hardware.energy.meter`).
No figure is ever estimated from a TDP: without a counter the answer is "unavailable" and why.
"""

from planner.hardware.energy.counter import Counter, CounterFamily, CounterProbe, EnergyReadError, Reading
from planner.hardware.energy.find import find_counter
from planner.hardware.energy.meter import IdlePower, Meter, measure_idle, open_meter

__all__ = ["Counter", "CounterFamily", "CounterProbe", "EnergyReadError", "IdlePower", "Meter", "Reading",
           "find_counter", "measure_idle", "open_meter"]
