"""A serving pipeline for demo:digits, to time whole requests with `--pipeline`.

Each request is a PNG image of a handwritten digit, as a client would upload it. `preprocess` decodes it
with Pillow and scales it the way demo:digits takes its input (float32, 1x8x8, pixel values 0..16: the
model divides by 16 itself); `postprocess` turns the logits into a label and its probability.

    planner plan demo:digits --target cpu --quick --trust-code \
        --pipeline examples/pipelines/digits.py:preprocess,postprocess

The raw requests come from `samples()`: scikit-learn's bundled 8x8 digits (no download), written as
8-bit greyscale PNG bytes.
"""

from __future__ import annotations

import io

import numpy as np
from PIL import Image

PIXEL_MAX = 16.0  # the digits dataset's pixel values run 0..16
SAMPLE_COUNT = 64


def samples() -> list[bytes]:
    """PNG bytes of the first SAMPLE_COUNT digits, 0..16 stretched to 0..255 as an image file stores them."""
    from sklearn.datasets import load_digits

    images = load_digits().images[:SAMPLE_COUNT]
    encoded = []
    for image in images:
        buffer = io.BytesIO()
        Image.fromarray(np.round(image * (255.0 / PIXEL_MAX)).astype(np.uint8), mode="L").save(buffer, format="PNG")
        encoded.append(buffer.getvalue())
    return encoded


def preprocess(png: bytes) -> np.ndarray:
    """One PNG request to the model's input: float32, 1x8x8 (channel, height, width), values 0..16."""
    with Image.open(io.BytesIO(png)) as image:
        pixels = np.asarray(image.convert("L").resize((8, 8)), dtype=np.float32)
    return (pixels * (PIXEL_MAX / 255.0))[None]


def postprocess(logits: np.ndarray) -> tuple[int, float]:
    """The predicted digit and its probability, from the model's logits for one request."""
    row = logits.reshape(-1, logits.shape[-1])[0].astype(np.float64)
    probabilities = np.exp(row - row.max())
    probabilities /= probabilities.sum()
    label = int(probabilities.argmax())
    return label, float(probabilities[label])
