"""Edge boards: every board has labelled datasheet ceilings, lookups fail clearly, projections say their basis."""

from __future__ import annotations

import pytest

from planner.hardware.boards import PROFILES, UnknownDeviceError, get_profile, profile_for_board, project


def test_every_board_is_there_with_labelled_ceilings():
    assert {"rpi4", "rpi5", "orin-nano", "agx-orin", "generic-arm"} <= set(PROFILES)
    for profile in PROFILES.values():
        info = profile.to_info()
        assert info["ceilings_are"] == "datasheet-derived, not measured"
        assert profile.fp32_gflops > 0 and profile.bandwidth_gbs > 0 and profile.cores > 0
        assert profile.ceiling_basis.startswith(("datasheet", "typical datasheet"))


def test_isa_traits_follow_the_cores():
    assert not get_profile("rpi4").dot_product  # Cortex-A72 is Armv8.0
    assert get_profile("rpi5").dot_product and get_profile("rpi5").fp16
    assert get_profile("RPI_5") is get_profile("rpi5")


def test_an_unknown_device_lists_the_profiles():
    with pytest.raises(UnknownDeviceError) as err:
        get_profile("rpi9")
    assert "rpi9" in err.value.problem
    assert all(name in err.value.fix for name in PROFILES)


def test_a_detected_board_picks_its_profile():
    assert profile_for_board("raspberry_pi", "Raspberry Pi 5 Model B Rev 1.0").name == "rpi5"
    assert profile_for_board("raspberry_pi", "Raspberry Pi 4 Model B").name == "rpi4"
    assert profile_for_board("jetson", "NVIDIA Jetson AGX Orin").name == "agx-orin"
    assert profile_for_board("cpu_server", None) is None


def test_projection_is_the_slower_roof_and_says_it_is_an_estimate():
    rpi5 = get_profile("rpi5")
    compute = project(rpi5, flops=1e9, weight_bytes=1e3)
    assert compute["bound"] == "compute" and compute["estimate_ms"] == pytest.approx(1e9 / (rpi5.fp32_gflops * 1e6))
    memory = project(rpi5, flops=1e3, weight_bytes=1e8)
    assert memory["bound"] == "memory" and memory["fits_size_budget"] is True
    assert project(rpi5, flops=1e9, weight_bytes=1e3, int8=True)["estimate_ms"] < compute["estimate_ms"]
    assert compute["basis"].startswith("estimate, not measured")
