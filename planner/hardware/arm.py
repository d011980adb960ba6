"""Board probe: Raspberry Pi and NVIDIA Jetson from the device tree and L4T release, else a DMI/board name."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from planner.hardware._files import at, read_text
from planner.hardware.cpu import CpuInfoText
from planner.hardware.profile import GpuInfo


class BoardKind(StrEnum):
    """What sort of board the device tree says this is."""

    RASPBERRY_PI = "raspberry_pi"
    JETSON = "jetson"
    ARM_BOARD = "arm_board"
    OTHER = "other"


@dataclass(frozen=True)
class BoardInfo:
    """The board's kind and name, its SoC when known, and the Jetson L4T release when there is one."""

    kind: BoardKind
    name: str | None = None
    soc: str | None = None
    l4t_release: str | None = None


# Tegra SoC → (family, CUDA compute capability of its integrated GPU).
TEGRA_SOCS: dict[str, tuple[str, tuple[int, int]]] = {
    "tegra210": ("Jetson TX1/Nano (Maxwell)", (5, 3)),
    "tegra186": ("Jetson TX2 (Pascal)", (6, 2)),
    "tegra194": ("Jetson Xavier (Volta)", (7, 2)),
    "tegra234": ("Jetson Orin (Ampere)", (8, 7)),
    "tegra264": ("Jetson Thor (Blackwell)", (11, 0)),
}
# The device-tree model names the module even when `compatible` is missing.
_JETSON_MODEL_SOCS = (("Thor", "tegra264"), ("Orin", "tegra234"), ("Xavier", "tegra194"),
                      ("TX2", "tegra186"), ("Nano", "tegra210"), ("TX1", "tegra210"))
# Placeholder strings firmware vendors leave in DMI fields; they name nothing.
_DMI_JUNK = re.compile(r"to be filled|default string|system product name|not specified|^o\.?e\.?m\.?$|^none$",
                       re.IGNORECASE)


def _device_tree_text(root: Path, name: str) -> str | None:
    """A device-tree string property with its trailing NUL stripped."""
    text = read_text(at(root, f"/proc/device-tree/{name}"))
    if text is None:
        text = read_text(at(root, f"/sys/firmware/devicetree/base/{name}"))
    return text.rstrip("\x00").strip() if text is not None else None


def device_tree_compatible(root: Path) -> tuple[str, ...]:
    """The NUL-separated `compatible` list of the device-tree root, e.g. ('raspberrypi,5-model-b', 'brcm,bcm2712')."""
    text = _device_tree_text(root, "compatible")
    if not text:
        return ()
    return tuple(part.strip() for part in text.split("\x00") if part.strip())


def parse_l4t_release(text: str) -> str | None:
    """'# R36 (release), REVISION: 3.0, ...' → 'R36.3.0'; None when the text is not an L4T release line."""
    match = re.search(r"#\s*R(\d+)\s*\(release\),\s*REVISION:\s*([\d.]+)", text)
    if not match:
        return None
    return f"R{match.group(1)}.{match.group(2).rstrip('.')}"


def _soc_from_compatible(compatible: tuple[str, ...]) -> str | None:
    """The SoC named in the compatible list: 'brcm,bcm2712' → 'BCM2712', 'nvidia,tegra234' → 'tegra234'."""
    for entry in compatible:
        vendor, _, chip = entry.partition(",")
        if vendor == "brcm" and chip.startswith("bcm"):
            return chip.upper()
        if vendor == "nvidia" and chip.startswith("tegra"):
            return chip
    return None


def _dmi_name(root: Path) -> str | None:
    """'<sys_vendor> <product_name>' from DMI, e.g. 'Amazon EC2 c7g.xlarge', skipping firmware placeholders."""
    parts = []
    for field in ("sys_vendor", "product_name"):
        text = read_text(at(root, f"/sys/class/dmi/id/{field}"))
        if text and text.strip() and not _DMI_JUNK.search(text.strip()):
            parts.append(text.strip())
    return " ".join(parts) or None


def probe_board(root: Path, cpuinfo: CpuInfoText | None = None) -> BoardInfo:
    """Identify a Raspberry Pi or Jetson, else name the board from the device tree or DMI."""
    model = _device_tree_text(root, "model")
    compatible = device_tree_compatible(root)
    soc = _soc_from_compatible(compatible)
    cpuinfo_model = cpuinfo.first("Model") if cpuinfo else None
    cpuinfo_hardware = cpuinfo.first("Hardware") if cpuinfo else None

    tegra_text = read_text(at(root, "/etc/nv_tegra_release"))
    is_jetson = (tegra_text is not None
                 or any(c.startswith("nvidia,tegra") for c in compatible)
                 or (model is not None and "jetson" in model.lower()))
    if is_jetson:
        release = parse_l4t_release(tegra_text) if tegra_text else None
        if soc is None and model:
            soc = next((s for key, s in _JETSON_MODEL_SOCS if key.lower() in model.lower()), None)
        name = model or "NVIDIA Jetson"
        if release:
            name = f"{name} (L4T {release})"
        return BoardInfo(kind=BoardKind.JETSON, name=name, soc=soc, l4t_release=release)

    pi_name = next((m for m in (model, cpuinfo_model) if m and m.startswith("Raspberry Pi")), None)
    if pi_name is not None:
        return BoardInfo(kind=BoardKind.RASPBERRY_PI, name=pi_name, soc=soc or cpuinfo_hardware)

    if model:
        return BoardInfo(kind=BoardKind.ARM_BOARD, name=model, soc=soc or cpuinfo_hardware)
    return BoardInfo(kind=BoardKind.OTHER, name=_dmi_name(root) or cpuinfo_model, soc=soc or cpuinfo_hardware)


def jetson_integrated_gpu(board: BoardInfo, memory_total_bytes: int | None) -> GpuInfo | None:
    """The Jetson's integrated GPU from its SoC (NVML does not see it); memory is the shared system RAM."""
    if board.kind is not BoardKind.JETSON or board.soc not in TEGRA_SOCS:
        return None
    family, cc = TEGRA_SOCS[board.soc]
    return GpuInfo(index=0, name=f"NVIDIA {family} integrated GPU", memory_total_bytes=memory_total_bytes,
                   compute_capability=cc, integrated=True)
