"""Edge boards: ISA traits, cores, memory, datasheet-derived ceilings and budgets per board.

Nothing here is measured. Each ceiling is derived from the vendor's datasheet (clock x cores x
SIMD width, memory bus width x transfer rate) and says so in its basis; budgets are the planner's
defaults for the board, not vendor figures. `project` puts a candidate measured elsewhere onto a
board as a roofline estimate: the slower of compute (FLOPs over the peak) and memory (bytes over
the bandwidth), labelled with that basis.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from planner.errors import PlannerError


@dataclass(frozen=True)
class EdgeProfile:
    """One board: what its CPU can do, its memory, datasheet ceilings, and default budgets."""

    name: str
    title: str
    cpu: str
    cores: int
    clock_ghz: float
    neon: bool
    dot_product: bool  # SDOT/UDOT: INT8 dot products (Armv8.2 option)
    i8mm: bool  # SMMLA: INT8 matrix multiply (Armv8.6 option)
    fp16: bool  # half-precision arithmetic (Armv8.2 FP16)
    memory_gb: float
    fp32_gflops: float  # CPU peak, all cores
    int8_gops: float  # CPU peak, all cores
    bandwidth_gbs: float
    ceiling_basis: str
    latency_budget_ms: float
    memory_budget_mb: float
    model_size_budget_mb: float
    gpu: str = ""
    board_kinds: tuple[str, ...] = ()  # device classes planner.hardware reports for this board
    # What the figures above are, written with them wherever the profile is recorded (results.json's
    # edge_device) so that no reader takes them for measurements.
    ceilings_are: str = "datasheet-derived, not measured"
    budgets_are: str = "the planner's defaults for this board"

    def to_info(self) -> dict:
        """A JSON-ready dict with its ceilings labelled as datasheet figures."""
        return asdict(self)


def _neon_peak(cores: int, ghz: float, fma_pipes: int) -> float:
    # 128-bit NEON FMA: 4 fp32 lanes x 2 FLOPs per pipe per cycle.
    return cores * ghz * fma_pipes * 8


PROFILES: dict[str, EdgeProfile] = {p.name: p for p in (
    EdgeProfile("rpi4", "Raspberry Pi 4 Model B", "Cortex-A72 (Armv8.0)", 4, 1.5, True, False, False, False,
                4.0, _neon_peak(4, 1.5, 2), _neon_peak(4, 1.5, 2), 12.8,
                "datasheet: 4 x 1.5 GHz x two 128-bit NEON FMA pipes; LPDDR4-3200 on a 32-bit bus; no INT8 "
                "dot product, so INT8 peaks no higher than fp32", 100.0, 1024.0, 100.0,
                board_kinds=("raspberry_pi",)),
    EdgeProfile("rpi5", "Raspberry Pi 5", "Cortex-A76 (Armv8.2)", 4, 2.4, True, True, False, True,
                8.0, _neon_peak(4, 2.4, 2), 4 * 2.4 * 2 * 32, 17.1,
                "datasheet: 4 x 2.4 GHz x two 128-bit NEON pipes (8 fp32 FLOPs or 32 INT8 ops with SDOT per "
                "pipe per cycle); LPDDR4X-4267 on a 32-bit bus", 50.0, 2048.0, 200.0,
                board_kinds=("raspberry_pi",)),
    EdgeProfile("orin-nano", "Jetson Orin Nano 8GB", "Cortex-A78AE (Armv8.2)", 6, 1.5, True, True, False, True,
                8.0, _neon_peak(6, 1.5, 2), 6 * 1.5 * 2 * 32, 68.0,
                "datasheet: 6 x 1.5 GHz A78AE, two 128-bit NEON pipes; 128-bit LPDDR5 at 68 GB/s; the "
                "1024-core Ampere GPU (about 20 dense INT8 TOPS) is not in these CPU ceilings", 20.0, 2048.0, 500.0,
                gpu="1024-core Ampere (sm_87)", board_kinds=("jetson",)),
    EdgeProfile("agx-orin", "Jetson AGX Orin 64GB", "Cortex-A78AE (Armv8.2)", 12, 2.2, True, True, False, True,
                64.0, _neon_peak(12, 2.2, 2), 12 * 2.2 * 2 * 32, 204.8,
                "datasheet: 12 x 2.2 GHz A78AE, two 128-bit NEON pipes; 256-bit LPDDR5 at 204.8 GB/s; the "
                "2048-core Ampere GPU (about 138 dense INT8 TOPS) is not in these CPU ceilings", 10.0, 8192.0, 2000.0,
                gpu="2048-core Ampere (sm_87)", board_kinds=("jetson",)),
    EdgeProfile("generic-arm", "Generic Arm board (Cortex-A53 class)", "Cortex-A53 (Armv8.0)", 4, 1.2, True, False,
                False, False, 1.0, _neon_peak(4, 1.2, 1), _neon_peak(4, 1.2, 1), 6.4,
                "typical datasheet: 4 x 1.2 GHz in-order cores, one 128-bit NEON FMA pipe; 32-bit LPDDR3 "
                "at 6.4 GB/s", 200.0, 256.0, 50.0, board_kinds=("arm_board",)),
)}


class UnknownDeviceError(PlannerError):
    """A --device name that is not one of the profiles."""


def get_profile(name: str) -> EdgeProfile:
    """The profile called `name` (case, '-' and '_' ignored); a clear error listing them otherwise."""
    key = "".join(ch for ch in name.lower() if ch.isalnum())
    for profile in PROFILES.values():
        if key == profile.name.replace("-", ""):
            return profile
    listing = ", ".join(f"{p.name} ({p.title})" for p in PROFILES.values())
    raise UnknownDeviceError(f"unknown edge device {name!r}", f"choose one of: {listing}")


def profile_for_board(device_class: str, board_name: str | None = None) -> EdgeProfile | None:
    """The profile matching a detected board (a Raspberry Pi 5 by its name), or None off boards."""
    text = (board_name or "").lower()
    if device_class == "raspberry_pi":
        return PROFILES["rpi5"] if "pi 5" in text else PROFILES["rpi4"]
    if device_class == "jetson":
        return PROFILES["agx-orin"] if "agx" in text else PROFILES["orin-nano"]
    if device_class == "arm_board":
        return PROFILES["generic-arm"]
    return None


def project(profile: EdgeProfile, *, flops: float | None, weight_bytes: float | None,
            activation_bytes: float = 0.0, int8: bool = False) -> dict:
    """A roofline estimate of batch-1 latency on the board, with its basis; None parts are missing inputs.

    Compute time is FLOPs over the CPU peak (the INT8 peak for INT8/ternary candidates), memory time
    is weights plus activations over the bandwidth; the estimate is the larger. Real kernels rarely
    reach either ceiling, so this is a lower bound on latency.
    """
    peak = profile.int8_gops if int8 else profile.fp32_gflops
    compute_ms = flops / (peak * 1e9) * 1e3 if flops else None
    moved = (weight_bytes or 0) + activation_bytes
    memory_ms = moved / (profile.bandwidth_gbs * 1e9) * 1e3 if moved else None
    parts = [t for t in (compute_ms, memory_ms) if t is not None]
    estimate = max(parts) if parts else None
    size_mb = weight_bytes / 1e6 if weight_bytes else None
    return {"device": profile.name, "estimate_ms": estimate, "compute_ms": compute_ms, "memory_ms": memory_ms,
            "bound": ("compute" if compute_ms and (memory_ms is None or compute_ms >= memory_ms) else "memory")
            if estimate is not None else "",
            "fits_latency_budget": estimate <= profile.latency_budget_ms if estimate is not None else None,
            "fits_size_budget": size_mb <= profile.model_size_budget_mb if size_mb is not None else None,
            "basis": (f"estimate, not measured: roofline lower bound from FLOPs measured here "
                      f"({'INT8' if int8 else 'fp32'} peak {peak:.0f} G/s) and bytes (file size on disk plus "
                      f"activations) over {profile.bandwidth_gbs:g} GB/s, the {profile.title}'s datasheet "
                      "ceilings")}
