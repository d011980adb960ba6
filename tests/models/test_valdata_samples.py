"""--val-data folders of images and .wav clips: resized, converted, normalised, labelled by sub-folder."""

from __future__ import annotations

import wave
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from planner.errors import PlannerError
from planner.models.samples import PRESETS, SampleOptions, load_samples, read_wav
from planner.models.spec import ModelInputs, TensorSpec
from planner.models.valdata import labels_of, load_val_data, prepare_val_data, samples_note

RGB = ModelInputs((TensorSpec(name="x", shape=(1, 3, 8, 8), axes=("", "", "", "")),))  # fixed batch 1
GREY = ModelInputs((TensorSpec(name="x", shape=(1, 1, 8, 8), axes=("", "", "", "")),))
DYNAMIC_RGB = ModelInputs.single((1, 3, 8, 8))  # any batch: batches of 8
NHWC = ModelInputs((TensorSpec(name="x", shape=(2, 6, 6, 3), axes=("", "", "", "")),))


def _png(path: Path, mode: str, size: tuple[int, int], value: int | tuple) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new(mode, size, value).save(path)
    return path


def test_mixed_modes_and_sizes_convert_and_a_corrupt_file_is_named(tmp_path: Path) -> None:
    _png(tmp_path / "a_rgb.png", "RGB", (8, 8), (255, 0, 0))
    _png(tmp_path / "b_grey.png", "L", (20, 12), 255)
    _png(tmp_path / "c_rgba.png", "RGBA", (5, 5), (0, 0, 255, 10))
    (tmp_path / "d_broken.png").write_bytes(b"\x89PNG not really")
    found = load_samples(tmp_path, RGB)
    assert found.count == 3 and len(found.pairs) == 3  # fixed batch 1: one batch per image
    x = np.concatenate([feed["x"] for feed, _ in found.pairs])
    assert x.shape == (3, 3, 8, 8) and x.dtype == np.float32
    net = PRESETS["imagenet"]
    red = [(v - m) / s for v, m, s in zip((1.0, 0.0, 0.0), net.mean, net.std)]
    assert np.allclose(x[0, :, 0, 0], red, atol=1e-5)
    assert np.allclose(x[1, :, 3, 3], [(1.0 - m) / s for m, s in zip(net.mean, net.std)], atol=1e-5)  # grey -> RGB
    blue = [(v - m) / s for v, m, s in zip((0.0, 0.0, 1.0), net.mean, net.std)]
    assert np.allclose(x[2, :, 2, 2], blue, atol=1e-5)  # alpha dropped, not blended
    assert found.skipped and found.skipped[0].startswith("d_broken.png (")
    assert "d_broken.png" in found.skipped_text() and "1 of 4" in found.skipped_text()
    assert "imagenet preset (default for 3-channel inputs)" in found.describe()
    assert all(labels is None for _, labels in found.pairs)


def test_presets_unit_and_symmetric_and_greyscale(tmp_path: Path) -> None:
    _png(tmp_path / "white.png", "RGB", (8, 8), (255, 255, 255))
    _png(tmp_path / "black.png", "RGB", (8, 8), (0, 0, 0))
    unit = np.concatenate([f["x"] for f, _ in load_samples(tmp_path, GREY).pairs])
    assert unit.shape == (2, 1, 8, 8) and unit[0].max() == 0.0 and unit[1].min() == 1.0  # sorted: black, white
    sym = np.concatenate([f["x"] for f, _ in load_samples(tmp_path, RGB, SampleOptions(preset="symmetric")).pairs])
    assert sym[0].min() == -1.0 and sym[1].max() == 1.0


def test_sub_folders_are_labels_in_sorted_order_and_dynamic_batch_is_eight(tmp_path: Path) -> None:
    for i in range(6):
        _png(tmp_path / "dog" / f"{i}.png", "RGB", (8, 8), (i, i, i))
    for i in range(5):
        _png(tmp_path / "cat" / f"{i}.jpg", "RGB", (9, 7), (i, 0, 0))
    found = load_samples(tmp_path, DYNAMIC_RGB)
    assert found.classes == ("cat", "dog")
    assert [len(f["x"]) for f, _ in found.pairs] == [8, 3]
    assert np.concatenate([lab for _, lab in found.pairs]).tolist() == [0] * 5 + [1] * 6
    assert "cat=0, dog=1" in found.describe()
    assert [lab.tolist() for lab in labels_of(tmp_path, inputs=DYNAMIC_RGB)] == [[0] * 5 + [1] * 3, [1] * 3]


def test_channels_last_input(tmp_path: Path) -> None:
    for i in range(3):
        _png(tmp_path / f"{i}.png", "RGB", (10, 10), (0, 255, 0))
    pairs = load_val_data(tmp_path, inputs=NHWC, options=SampleOptions(preset="unit"))
    assert [f["x"].shape for f, _ in pairs] == [(2, 6, 6, 3), (1, 6, 6, 3)]
    assert np.allclose(pairs[0][0]["x"][0, 0, 0], [0.0, 1.0, 0.0])


def test_empty_folder_and_a_preset_that_does_not_fit_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(PlannerError, match="holds no images") as err:
        load_val_data(tmp_path, inputs=RGB)
    assert "numpy.save" in err.value.fix
    _png(tmp_path / "a.png", "L", (8, 8), 3)
    with pytest.raises(PlannerError, match="imagenet preset has 3 channel means, but the model's image input has 1"
                       ) as err:
        load_samples(tmp_path, GREY, SampleOptions(preset="imagenet"))
    assert "--val-preset unit or symmetric" in err.value.fix
    with pytest.raises(PlannerError, match="no image input"):
        load_samples(tmp_path, ModelInputs.single((1, 16)))


def test_every_file_unreadable_says_which(tmp_path: Path) -> None:
    (tmp_path / "x.jpg").write_bytes(b"nope")
    with pytest.raises(PlannerError, match=r"no image file could be read \(x\.jpg"):
        load_samples(tmp_path, RGB)


def test_user_transform_needs_trust_and_shapes_each_image(tmp_path: Path) -> None:
    _png(tmp_path / "imgs" / "a.png", "RGB", (4, 4), (10, 20, 30))
    code = tmp_path / "prep.py"
    code.write_text("import numpy as np\n\ndef prep(image):\n"
                    "    return np.full((3, 8, 8), image.getpixel((0, 0))[0], dtype=np.float64)\n")
    with pytest.raises(PlannerError, match="--trust-code"):
        load_samples(tmp_path / "imgs", RGB, SampleOptions(transform=f"{code}:prep"))
    found = load_samples(tmp_path / "imgs", RGB, SampleOptions(transform=f"{code}:prep", trust_code=True))
    x = found.pairs[0][0]["x"]
    assert x.dtype == np.float32 and x.shape == (1, 3, 8, 8) and float(x.max()) == 10.0
    assert f"converted by {code}:prep" in found.describe()
    with pytest.raises(PlannerError, match="both --val-preset unit and --val-transform"):
        load_samples(tmp_path / "imgs", RGB, SampleOptions(preset="unit", transform=f"{code}:prep", trust_code=True))


def test_prepare_converts_once_into_batches_every_reader_reads(tmp_path: Path) -> None:
    src = tmp_path / "pngs"
    _png(src / "a" / "0.png", "RGB", (8, 8), (1, 2, 3))
    _png(src / "b" / "0.png", "RGB", (8, 8), (4, 5, 6))
    (src / "b" / "bad.png").write_bytes(b"")
    prepared = prepare_val_data(src, inputs=DYNAMIC_RGB, workdir=tmp_path / "work")
    assert prepared.folder != src and prepared.samples == 2 and prepared.classes == ("a", "b")
    assert "b/bad.png" in prepared.skipped
    assert [lab.tolist() for lab in labels_of(prepared.folder)] == [[0, 1]]  # plain arrays now: no inputs needed
    [(feed, _)] = load_val_data(prepared.folder, inputs=DYNAMIC_RGB)
    assert feed["x"].shape == (2, 3, 8, 8)
    assert samples_note(prepared.folder)["source"] == str(src)


def _wav(path: Path, samples: np.ndarray, rate: int, channels: int = 1) -> Path:
    with wave.open(str(path), "wb") as out:
        out.setnchannels(channels)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes((samples * 32767).astype("<i2").tobytes())
    return path


def test_wav_clips_are_resampled_padded_and_the_rate_fills_the_sr_input(tmp_path: Path) -> None:
    vad = ModelInputs((TensorSpec(name="input", shape=(1, 512), axes=("", "")),
                       TensorSpec(name="state", shape=(2, 1, 4), axes=("", "", "")),
                       TensorSpec(name="sr", shape=(), dtype="int64", low=16000, high=16001)))
    t = np.arange(8000) / 8000
    _wav(tmp_path / "a_8k.wav", 0.5 * np.sin(2 * np.pi * 200 * t), 8000)
    _wav(tmp_path / "b_short.wav", np.full(100, 0.25), 16000)
    stereo = np.stack([np.full(600, 0.5), np.full(600, -0.5)], axis=1).reshape(-1)
    _wav(tmp_path / "c_stereo.wav", stereo, 16000, channels=2)
    (tmp_path / "d_bad.wav").write_bytes(b"RIFF0000WAVE")
    samples, rate = read_wav(tmp_path / "b_short.wav")
    assert rate == 16000 and np.allclose(samples, 0.25, atol=1e-4)
    found = load_samples(tmp_path, vad)
    assert found.count == 3 and "d_bad.wav" in found.skipped_text()
    feed = found.pairs[0][0]
    assert feed["input"].shape == (1, 512) and feed["state"].shape == (2, 1, 4) and not feed["state"].any()
    assert int(feed["sr"]) == 16000
    # 8 kHz at 200 Hz resampled to 16 kHz: still a 200 Hz sine, 80 samples per period.
    assert abs(float(feed["input"][0, 40]) - 0.5 * np.sin(2 * np.pi * 200 * 40 / 16000)) < 0.05
    short = found.pairs[1][0]["input"][0]
    assert np.allclose(short[:100], 0.25, atol=1e-4) and not short[100:].any()
    assert np.allclose(found.pairs[2][0]["input"], 0.0, atol=1e-4)  # stereo mixed to mono
    assert "at 16000 Hz (from the model's input sr)" in found.describe()


def test_wav_without_a_known_rate_asks_for_one(tmp_path: Path) -> None:
    _wav(tmp_path / "a.wav", np.zeros(10), 8000)
    mono = ModelInputs.single((1, 64))
    with pytest.raises(PlannerError, match="sample rate is not known") as err:
        load_samples(tmp_path, mono)
    assert "--val-sample-rate" in err.value.fix
    found = load_samples(tmp_path, mono, SampleOptions(sample_rate=8000))
    assert found.pairs[0][0]["x"].shape == (1, 64)


def test_voice_activity_model_clips_come_one_per_batch_with_its_state_and_rate(tmp_path: Path) -> None:
    from trait_models import scalar_branch_model

    from planner.models import load_model

    model = load_model(str(scalar_branch_model(tmp_path / "vad.onnx", window=256, state_size=8)),
                       inputs=["sr::int64:16000"])
    clips = tmp_path / "clips"
    clips.mkdir()
    for i in range(3):
        _wav(clips / f"{i}.wav", np.full(300, 0.1 * i), 16000)
    found = load_samples(clips, model.inputs)
    # The state keeps its batch on axis 1, so the worker cannot split batches: one clip per batch.
    assert [tuple(f["state"].shape) for f, _ in found.pairs] == [(2, 1, 8)] * 3
    assert [f["input"].shape for f, _ in found.pairs] == [(1, 256)] * 3 and int(found.pairs[0][0]["sr"]) == 16000
    assert "state zeros" in found.describe() and "sr = 16000" in found.describe()


def test_int8_calibration_names_the_images_or_says_it_ran_on_generated_inputs(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from planner.models.loaded import make_feeds
    from planner.onnx.quantize import calibration_inputs

    for i in range(3):
        _png(tmp_path / "pngs" / f"{i}.png", "RGB", (8, 8), (i, i, i))
    prepared = prepare_val_data(tmp_path / "pngs", inputs=DYNAMIC_RGB, workdir=tmp_path / "work")
    model = SimpleNamespace(inputs=DYNAMIC_RGB, make_feeds=lambda count, seed: make_feeds(DYNAMIC_RGB, count=count,
                                                                                            seed=seed))
    feeds, note = calibration_inputs(SimpleNamespace(quick=True, val_data=prepared.folder,
                                                     val_data_basis="--val-data", model=model))
    assert len(feeds) == 1 and feeds[0]["x"].shape == (3, 3, 8, 8)
    assert note.startswith(f"calibrated on 3 samples (1 batch) of --val-data (images from {tmp_path / 'pngs'}): "
                           "calibration and judgement share these samples")
    feeds, note = calibration_inputs(SimpleNamespace(quick=True, val_data=None, model=model))
    assert note.startswith("calibrated on 8 batches of generated random inputs (no --val-data): its accuracy on "
                           "real data is not established")
