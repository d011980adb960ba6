"""format_profile(): what `planner detect` prints."""

from __future__ import annotations

from hardware_fake_nvml import FakeNvml, NVMLError_DriverNotLoaded, a100
from hardware_trees import FIXTURES

from planner.hardware import detect, format_profile


def _row(text: str, label: str) -> str:
    """The line whose label is `label`."""
    return next(line for line in text.splitlines() if line.strip().startswith(label))


def test_no_gpu_reason_shown() -> None:
    """Without a driver the output says 'no NVIDIA GPU' and why."""
    hw = detect(root=FIXTURES / "epyc_zen3", nvml_module=FakeNvml(init_error=NVMLError_DriverNotLoaded()))
    text = format_profile(hw)
    assert "no NVIDIA GPU — NVML: driver not loaded (NVMLError_DriverNotLoaded)" in text
    assert "AMD EPYC 7763 64-Core Processor" in text
    assert "physical 4, logical 8, usable 8" in text
    assert _row(text, "AVX2").endswith("yes")
    assert _row(text, "AVX-512").endswith("no")
    assert _row(text, "AMX").endswith("no")
    assert "CPU server" in text


def test_every_probe_note_is_printed() -> None:
    """Each probe that could not run appears with its reason."""
    hw = detect(root=FIXTURES / "graviton3")
    text = format_profile(hw)
    assert hw.probe_notes
    for probe, reason in hw.probe_notes:
        assert f"{probe}: {reason}" in text


def test_arm_features_and_board() -> None:
    """On ARM the table shows NEON, dot-product, i8mm and SVE, and the board name."""
    text = format_profile(detect(root=FIXTURES / "rpi5"))
    assert "Raspberry Pi 5 Model B Rev 1.0" in text
    assert _row(text, "NEON").endswith("yes")
    assert _row(text, "dot-product").endswith("yes (asimddp)")
    assert _row(text, "i8mm").endswith("no")
    assert _row(text, "SVE").endswith("no")
    assert "AVX2" not in text
    assert "L3 2 MiB" in text


def test_amx_listed_on_sapphire_rapids() -> None:
    """AMX, VNNI and BF16 are reported with the instructions behind them."""
    text = format_profile(detect(root=FIXTURES / "xeon_sapphire_rapids"))
    assert _row(text, "AMX").endswith("yes (amx_tile, amx_int8, amx_bf16)")
    assert _row(text, "VNNI").endswith("yes (avx512_vnni, avx_vnni)")
    assert _row(text, "BF16").endswith("yes (avx512_bf16, amx_bf16)")


def test_gpu_listed() -> None:
    """A GPU is shown with its memory, compute capability and tensor-core generation."""
    text = format_profile(detect(root=FIXTURES / "epyc_zen3", nvml_module=FakeNvml([a100()])))
    assert "[0] NVIDIA A100-SXM4-80GB" in text
    assert "80 GiB (79 GiB free)" in text
    assert "Ampere (3rd gen)" in text
    assert "driver 550.54.15, CUDA 12.4" in text
    assert "no NVIDIA GPU" not in text


def test_container_limit_shown() -> None:
    """A cgroup memory cap and reduced usable cores are visible."""
    text = format_profile(detect(root=FIXTURES / "epyc_container_cgroup_v2"))
    assert "usable 2" in text
    assert "container limit   4 GiB" in text
