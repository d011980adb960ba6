"""Validation data from files as people keep them: a folder of images (PNG, JPEG) or of `.wav` clips.

`--val-data DIR` with no `.npy`/`.npz` batches in it reads these instead:

- Images go to the model's image input, the first 4-D input with 1 or 3 channels (batch, C, H, W),
  or (batch, H, W, C) when only the last axis can be the channels. Each is resized to H x W
  (stretched, not cropped: crop with `--val-transform` when the model expects it), converted to
  the input's channels (RGB, or greyscale; an alpha channel is dropped) and normalised with a
  preset (`imagenet`, `unit`, `symmetric`; `PRESETS`), or by the user's own function.
- `.wav` clips go to the model's audio input, a float input (batch, N) or (batch, 1, N): one
  window per file, its first N samples (zero-padded when shorter), mixed to mono and resampled to
  the model's sample rate. That rate is the fixed value of an integer scalar input named like
  `sr` / `sample_rate`, else `--val-sample-rate`.

Labels come from sub-folders: DIR/cat/*.png and DIR/dog/*.png are labels 0 and 1, in sorted
order of the folder names. Files directly in DIR have no labels. Every other input of the model
is generated per its spec (a fixed value, token ids in their range, masks of ones), except float
ones with no fixed value, which are zeros rather than noise: a recurrent state starts a stream at
zeros, which is what the model sees on a real first call. An integer scalar named like a sample
rate gets the rate. Files are read in sorted order, once per process.
"""

from __future__ import annotations

import functools
import math
import wave
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

import numpy as np

from planner.errors import PlannerError
from planner.models.loaded import Feed, np_dtype, tensor_values
from planner.models.spec import BATCH, FLOAT_DTYPES, ModelInputs, TensorSpec, names_sample_rate
from planner.models.usercode import import_user_file, user_function

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")
AUDIO_SUFFIXES = (".wav",)
DYNAMIC_BATCH = 8
"""Samples per batch when the model takes any batch size."""
_MODE_WORDS = {"L": "greyscale", "LA": "greyscale+alpha", "P": "palette", "1": "black-and-white"}


@dataclass(frozen=True)
class Preset:
    """A normalisation: (pixel / 255 - mean) / std per channel."""

    name: str
    mean: tuple[float, ...]
    std: tuple[float, ...]
    words: str

    def fits(self, channels: int) -> bool:
        """Whether this preset has one mean and std for `channels` channels (or one for all)."""
        return len(self.mean) in (1, channels)


PRESETS = {
    "imagenet": Preset("imagenet", (0.485, 0.456, 0.406), (0.229, 0.224, 0.225),
                       "ImageNet's per-channel RGB mean and std"),
    "unit": Preset("unit", (0.0,), (1.0,), "pixel values scaled to 0-1"),
    "symmetric": Preset("symmetric", (0.5,), (0.5,), "pixel values scaled to -1-1"),
}


def default_preset(channels: int) -> str:
    """The preset used when none is named: imagenet for RGB, unit for greyscale.

    Most exported RGB classifiers (torchvision, timm) were trained on ImageNet-normalised inputs;
    ImageNet's statistics are RGB ones, so a greyscale model gets plain 0-1 values instead.
    """
    return "imagenet" if channels == 3 else "unit"


@dataclass(frozen=True)
class SampleOptions:
    """How to turn files into inputs: the preset or the user's transform, and the audio sample rate."""

    preset: str | None = None  # None: default_preset() for the input's channels
    transform: str | None = None  # "file.py:fn": the user's own conversion (needs trust_code)
    sample_rate: int | None = None  # Hz, when the model has no fixed sample-rate input
    trust_code: bool = False


@dataclass(frozen=True)
class SampleSet:
    """Samples read from a folder: the batches, and what was done to make them (for the report)."""

    folder: Path
    kind: str  # "images" or "audio"
    pairs: list[tuple[Feed, np.ndarray | None]]
    count: int
    classes: tuple[str, ...] = ()  # sub-folder names; label i is classes[i]
    skipped: tuple[str, ...] = ()  # "name (why)" for each file that could not be read
    how: str = ""  # what was done to each file, in words
    generated: tuple[str, ...] = field(default_factory=tuple)  # the other inputs, and how they were filled

    def describe(self) -> str:
        """One line: how many samples, from where, how converted, and the label mapping."""
        text = f"{self.count} {'images' if self.kind == 'images' else 'audio clips'} from {self.folder}"
        if self.how:
            text += f", {self.how}"
        if self.classes:
            text += "; labels from sub-folders: " + ", ".join(f"{n}={i}" for i, n in enumerate(self.classes))
        else:
            text += "; no labels (files directly in the folder)"
        if self.generated:
            text += "; other inputs: " + ", ".join(self.generated)
        return text

    def skipped_text(self) -> str:
        """The files left out and why, or '' when none was."""
        if not self.skipped:
            return ""
        return f"skipped {len(self.skipped)} of {len(self.skipped) + self.count} files: " + "; ".join(self.skipped)


def sample_files(folder: Path) -> tuple[list[Path], list[str]]:
    """The image or audio files in `folder` (directly, or one sub-folder deep), sorted; with their classes.

    The classes are the sorted sub-folder names holding files, or [] when the files sit directly in
    `folder`. Mixing the two, or images with audio, is refused: which files carry labels would be unclear.
    """
    suffixes = IMAGE_SUFFIXES + AUDIO_SUFFIXES
    direct = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in suffixes
                    and not p.name.startswith("."))
    classes = sorted(d.name for d in folder.iterdir() if d.is_dir() and not d.name.startswith(".")
                     and any(p.is_file() and p.suffix.lower() in suffixes for p in d.iterdir()))
    if direct and classes:
        raise PlannerError(f"--val-data {folder} has files both directly in it and in sub-folders "
                           f"({', '.join(classes)})",
                           "put every file in a class sub-folder (labels from the folder names) or all "
                           "directly in the folder (no labels)")
    files = direct or [p for c in classes for p in sorted((folder / c).iterdir())
                       if p.is_file() and p.suffix.lower() in suffixes and not p.name.startswith(".")]
    kinds = {p.suffix.lower() in IMAGE_SUFFIXES for p in files}
    if len(kinds) > 1:
        raise PlannerError(f"--val-data {folder} mixes images and .wav files",
                           "keep one kind of sample per folder: the one the model's input takes")
    return files, classes


def load_samples(folder: Path, inputs: ModelInputs, options: SampleOptions | None = None) -> SampleSet:
    """The folder's images or clips as batches for `inputs`; read once per process for the same files."""
    folder = Path(folder).resolve()
    listing = tuple((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in sample_files(folder)[0])
    return _load_cached(folder, listing, inputs, options or SampleOptions())


@functools.lru_cache(maxsize=4)
def _load_cached(folder: Path, listing: tuple, inputs: ModelInputs, options: SampleOptions) -> SampleSet:
    files, classes = sample_files(folder)
    if not files:
        raise PlannerError(f"--val-data {folder} holds no images (.png, .jpg), .wav clips or .npy/.npz batches",
                           "put the samples in the folder (in class sub-folders for labels), or save input "
                           "batches with numpy.save('batch0.npy', array)")
    if files[0].suffix.lower() in IMAGE_SUFFIXES:
        return _load_images(folder, files, classes, inputs, options)
    return _load_audio(folder, files, classes, inputs, options)


@dataclass(frozen=True)
class ImageInput:
    """Where images go: the input, its channel count, height, width and whether channels come last."""

    spec: TensorSpec
    channels: int
    height: int
    width: int
    channels_last: bool


def image_input(inputs: ModelInputs) -> ImageInput | None:
    """The model's image input: the first 4-D float (or uint8) input with 1 or 3 channels, NCHW or NHWC."""
    for spec in inputs.tensors:
        if len(spec.shape) != 4 or not (spec.is_float or spec.dtype == "uint8"):
            continue
        _, c1, h, w = spec.shape
        if c1 in (1, 3):
            return ImageInput(spec, c1, h, w, channels_last=False)
        if w in (1, 3):
            return ImageInput(spec, w, c1, h, channels_last=True)
    return None


def _load_images(folder: Path, files: list[Path], classes: list[str], inputs: ModelInputs,
                 options: SampleOptions) -> SampleSet:
    from PIL import Image, UnidentifiedImageError

    target = image_input(inputs)
    if target is None:
        raise PlannerError(f"--val-data {folder} holds images, but the model has no image input "
                           f"(it takes {inputs.describe()})",
                           "images need a 4-D input (batch, 1 or 3 channels, height, width); give this "
                           "model its inputs as .npy/.npz batches instead")
    if options.transform and options.preset:
        raise PlannerError(f"both --val-preset {options.preset} and --val-transform {options.transform} were given",
                           "drop --val-preset: your transform returns the input's values itself")
    transform = _user_transform(options)
    mode = "RGB" if target.channels == 3 else "L"
    preset = None
    if transform is None and target.spec.dtype != "uint8":
        preset = _preset(options, target.channels)
    rows: list[np.ndarray] = []
    labels: list[int] = []
    skipped: list[str] = []
    converted: dict[str, int] = {}
    resized = 0
    for path in files:
        try:
            with Image.open(path) as opened:
                opened.load()
                image = opened.copy()
        except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as exc:
            skipped.append(f"{_name(path, folder)} ({_why(exc)})")
            continue
        try:
            if transform is not None:
                row = _transformed(transform, image, target.spec)
            else:
                if image.mode != mode:
                    converted[image.mode] = converted.get(image.mode, 0) + 1
                    image = image.convert(mode)
                if image.size != (target.width, target.height):
                    resized += 1
                    image = image.resize((target.width, target.height), Image.Resampling.BILINEAR)
                row = _normalised(np.asarray(image), target, preset)
        except (OSError, ValueError, TypeError) as exc:
            skipped.append(f"{_name(path, folder)} ({_why(exc)})")
            continue
        rows.append(row)
        labels.append(classes.index(path.parent.name) if classes else -1)
    _need_some(rows, skipped, folder, "image")
    if transform is not None:
        how = f"converted by {options.transform}"
    else:
        changed = ([f"{resized} resized"] if resized else []) + (
            [" and ".join(f"{n} {_MODE_WORDS.get(m, m)}" for m, n in sorted(converted.items())) + " converted"]
            if converted else [])
        how = (f"as {target.height}x{target.width} {'RGB' if target.channels == 3 else 'greyscale'}"
               + (f" ({'; '.join(changed)})" if changed else ""))
        if preset is None:
            how += ", raw 0-255 values (the input is uint8)"
        else:
            named = options.preset is not None
            how += (f", normalised with the {preset.name} preset"
                    + ("" if named else f" (default for {target.channels}-channel inputs)"))
    return _batched(folder, "images", rows, labels, classes, skipped, how, inputs, target.spec, None)


def preset_named(name: str) -> Preset:
    """The normalisation preset called `name`; a clear error naming the presets when there is none."""
    preset = PRESETS.get(name)
    if preset is None:
        raise PlannerError(f"--val-preset {name!r} is not a preset", f"use one of {', '.join(PRESETS)}")
    return preset


def _preset(options: SampleOptions, channels: int) -> Preset:
    name = options.preset or default_preset(channels)
    preset = preset_named(name)
    if not preset.fits(channels):
        fitting = [n for n, p in PRESETS.items() if p.fits(channels)]
        raise PlannerError(f"the {name} preset has {len(preset.mean)} channel means, but the model's image "
                           f"input has {channels} channel{'s' if channels != 1 else ''}",
                           f"pass --val-preset {' or '.join(fitting)}, or your own --val-transform file.py:fn")
    return preset


def _normalised(pixels: np.ndarray, target: ImageInput, preset: Preset | None) -> np.ndarray:
    hwc = pixels.reshape(target.height, target.width, target.channels)
    if preset is None:
        values = hwc.astype(np.uint8)
    else:
        mean = np.asarray(preset.mean, dtype=np.float32)
        std = np.asarray(preset.std, dtype=np.float32)
        values = ((hwc.astype(np.float32) / 255.0 - mean) / std).astype(np_dtype(target.spec.dtype))
    return values if target.channels_last else values.transpose(2, 0, 1)


def _user_transform(options: SampleOptions) -> Callable[[Any], Any] | None:
    if not options.transform:
        return None
    return _import_transform(options.transform, options.trust_code)


@functools.lru_cache(maxsize=4)
def _import_transform(text: str, trust_code: bool) -> Callable[[Any], Any]:
    fix_form = "pass --val-transform path/to/file.py:function"
    file_part, sep, fn_name = text.rpartition(":")
    if not sep or not file_part or not fn_name:
        raise PlannerError(f"--val-transform {text!r} does not have the form file.py:function", fix_form)
    path = Path(file_part)
    if not path.is_file():
        raise PlannerError(f"--val-transform: {path} is not a file", fix_form)
    module = import_user_file(path, trust_code=trust_code, what=f"--val-transform {path}", error=PlannerError)
    return user_function(module, path, fn_name, error=PlannerError,
                         define=f"def {fn_name}(image) returning an array in the input's shape without the batch")


def _transformed(transform: Callable[[Any], Any], sample: Any, spec: TensorSpec) -> np.ndarray:
    try:
        out = np.asarray(transform(sample))
    except Exception as exc:  # noqa: BLE001 - the user's function may raise anything; that file is skipped
        raise ValueError(f"the transform raised {type(exc).__name__}: {exc}") from exc
    if tuple(out.shape) != tuple(spec.shape[1:]):
        raise ValueError(f"the transform returned shape {'x'.join(map(str, out.shape)) or 'scalar'}, "
                         f"the input takes {'x'.join(map(str, spec.shape[1:]))}")
    return out.astype(np_dtype(spec.dtype))


def audio_input(inputs: ModelInputs) -> TensorSpec | None:
    """The model's audio input: the first float input (batch, N) or (batch, 1, N)."""
    for spec in inputs.tensors:
        if not spec.is_float or not spec.shape:
            continue
        if len(spec.shape) == 2 or (len(spec.shape) == 3 and spec.shape[1] == 1):
            return spec
    return None


def sample_rate_input(inputs: ModelInputs) -> TensorSpec | None:
    """An integer scalar input named like a sample rate (`sr`, `sample_rate`), or None."""
    for spec in inputs.tensors:
        if spec.shape in ((), (1,)) and spec.dtype not in FLOAT_DTYPES and names_sample_rate(spec.name):
            return spec
    return None


def fixed_value(spec: TensorSpec) -> int | None:
    """The one value an input is always given, when its spec fixes one."""
    if spec.value is not None:
        return int(spec.value)
    if spec.low is not None and spec.high == spec.low + 1:
        return spec.low
    return None


def _sample_rate(inputs: ModelInputs, options: SampleOptions, folder: Path) -> tuple[int, str]:
    """The rate clips are resampled to, and where it came from."""
    rate_spec = sample_rate_input(inputs)
    fixed = fixed_value(rate_spec) if rate_spec is not None else None
    if rate_spec is not None and fixed is not None:
        if options.sample_rate is not None and options.sample_rate != fixed:
            raise PlannerError(f"--val-sample-rate {options.sample_rate} differs from the model's input "
                               f"{rate_spec.name} = {fixed}",
                               "drop --val-sample-rate, or give the input the rate you mean with --input")
        return fixed, f"the model's input {rate_spec.name}"
    if options.sample_rate is not None:
        if options.sample_rate <= 0:
            raise PlannerError(f"--val-sample-rate must be positive, got {options.sample_rate}",
                               "pass the rate the model was trained at in Hz, e.g. --val-sample-rate 16000")
        return options.sample_rate, "--val-sample-rate"
    raise PlannerError(f"--val-data {folder} holds .wav clips, but the model's sample rate is not known",
                       "pass --val-sample-rate HZ (the rate the model was trained at, e.g. 16000), or give "
                       "its sample-rate input a fixed value with --input sr::int64:16000")


def _load_audio(folder: Path, files: list[Path], classes: list[str], inputs: ModelInputs,
                options: SampleOptions) -> SampleSet:
    target = audio_input(inputs)
    if target is None:
        raise PlannerError(f"--val-data {folder} holds .wav clips, but the model has no audio input "
                           f"(it takes {inputs.describe()})",
                           "audio needs a float input of shape (batch, samples) or (batch, 1, samples); give "
                           "this model its inputs as .npy/.npz batches instead")
    rate, rate_basis = _sample_rate(inputs, options, folder)
    transform = _user_transform(options)
    window = target.shape[-1]
    rows: list[np.ndarray] = []
    labels: list[int] = []
    skipped: list[str] = []
    resampled = padded = 0
    for path in files:
        try:
            if transform is not None:
                row = _transformed(transform, path, target)
            else:
                samples, file_rate = read_wav(path)
                if file_rate != rate:
                    resampled += 1
                    samples = resample(samples, file_rate, rate)
                if len(samples) < window:
                    padded += 1
                clip = np.zeros(window, dtype=np.float32)
                clip[:min(window, len(samples))] = samples[:window]
                row = clip.reshape(target.shape[1:]).astype(np_dtype(target.dtype))
        except (wave.Error, EOFError, OSError, ValueError) as exc:
            skipped.append(f"{_name(path, folder)} ({_why(exc)})")
            continue
        rows.append(row)
        labels.append(classes.index(path.parent.name) if classes else -1)
    _need_some(rows, skipped, folder, ".wav")
    if transform is not None:
        how = f"converted by {options.transform}"
    else:
        how = (f"the first {window} samples of each at {rate} Hz (from {rate_basis}), mono"
               + (f"; {resampled} resampled" if resampled else "")
               + (f"; {padded} shorter, zero-padded" if padded else ""))
    return _batched(folder, "audio", rows, labels, classes, skipped, how, inputs, target, rate)


def read_wav(path: Path) -> tuple[np.ndarray, int]:
    """A PCM `.wav` file as mono float32 in [-1, 1], and its sample rate."""
    with wave.open(str(path), "rb") as reader:
        width, channels, rate = reader.getsampwidth(), reader.getnchannels(), reader.getframerate()
        raw = reader.readframes(reader.getnframes())
    if width == 1:  # 8-bit PCM is unsigned
        values = (np.frombuffer(raw, dtype=np.uint8).astype(np.float32) - 128.0) / 128.0
    elif width == 2:
        values = np.frombuffer(raw, dtype="<i2").astype(np.float32) / 32768.0
    elif width == 3:
        bytes3 = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 3)
        # Sign-extend the little-endian 24-bit samples through the top byte of an int32.
        as32 = (bytes3[:, 0].astype(np.int32) << 8 | bytes3[:, 1].astype(np.int32) << 16
                | bytes3[:, 2].astype(np.int32) << 24)
        values = (as32 >> 8).astype(np.float32) / 8388608.0
    elif width == 4:
        values = np.frombuffer(raw, dtype="<i4").astype(np.float32) / 2147483648.0
    else:
        raise ValueError(f"{width * 8}-bit samples are not supported")
    if channels > 1:
        values = values[:len(values) - len(values) % channels].reshape(-1, channels).mean(axis=1)
    return values.astype(np.float32), rate


def resample(samples: np.ndarray, rate_from: int, rate_to: int) -> np.ndarray:
    """`samples` at `rate_from` Hz resampled to `rate_to` Hz (polyphase filtering)."""
    from scipy.signal import resample_poly

    common = math.gcd(rate_from, rate_to)
    return resample_poly(samples, rate_to // common, rate_from // common).astype(np.float32)


def _batched(folder: Path, kind: str, rows: list[np.ndarray], labels: list[int], classes: list[str],
             skipped: list[str], how: str, inputs: ModelInputs, target: TensorSpec,
             rate: int | None) -> SampleSet:
    """Rows into batches of the model's batch size, with the other inputs filled in."""
    # The worker splits a batch along axis 0 only when every input may vary in it; otherwise (a state
    # with its batch on axis 1, a fixed batch) batches must be exactly the model's own size.
    size = DYNAMIC_BATCH if inputs.dynamic_batch else max(1, target.shape[0])
    rate_spec = sample_rate_input(inputs)
    # How each other input is filled: the sample rate gets the clips' rate; a float input with no fixed
    # value starts at zeros (a recurrent state's start); the rest follow their spec.
    others = {spec.name: "rate" if rate is not None and rate_spec is not None and spec.name == rate_spec.name
              else "zeros" if spec.is_float and spec.fill() != "fixed" else "spec"
              for spec in inputs.tensors if spec.name != target.name}
    rng = np.random.default_rng(0)
    pairs: list[tuple[Feed, np.ndarray | None]] = []
    for start in range(0, len(rows), size):
        chunk = np.stack(rows[start:start + size])
        feed: Feed = {}
        for spec in inputs.tensors:
            if spec.name == target.name:
                feed[spec.name] = chunk
                continue
            shaped = replace(spec, shape=tuple(len(chunk) if a == BATCH else d for a, d in zip(spec.axes, spec.shape)))
            if others[spec.name] == "rate":
                feed[spec.name] = np.full(shaped.shape, rate, dtype=np_dtype(spec.dtype))
            elif others[spec.name] == "zeros":
                feed[spec.name] = np.zeros(shaped.shape, dtype=np_dtype(spec.dtype))
            else:
                feed[spec.name] = tensor_values(shaped, rng)
        batch_labels = np.asarray(labels[start:start + size], dtype=np.int64) if classes else None
        pairs.append((feed, batch_labels))
    words = {"rate": lambda t: f"{t.name} = {rate}", "zeros": lambda t: f"{t.name} zeros (a stream's starting state)",
             "spec": lambda t: f"{t.name} {t.value_rule()}"}
    generated = [words[others[t.name]](t) for t in inputs.tensors if t.name != target.name]
    return SampleSet(folder=folder, kind=kind, pairs=pairs, count=len(rows), classes=tuple(classes),
                     skipped=tuple(skipped), how=how, generated=tuple(generated))


def _need_some(rows: list, skipped: list[str], folder: Path, what: str) -> None:
    if rows:
        return
    raise PlannerError(f"--val-data {folder}: no {what} file could be read ({'; '.join(skipped[:3])}"
                       + (f"; {len(skipped) - 3} more" if len(skipped) > 3 else "") + ")",
                       "check that the files open in an image or audio viewer, or pass --val-transform for "
                       "your own conversion")


def _name(path: Path, folder: Path) -> str:
    try:
        return str(path.relative_to(folder))
    except ValueError:
        return path.name


def _why(exc: BaseException) -> str:
    text = str(exc).split("\n")[0].strip()
    return text or type(exc).__name__
