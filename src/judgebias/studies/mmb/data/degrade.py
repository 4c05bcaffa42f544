"""The MJBench protocol's aesthetic degradations (seed 002 §5: "extreme contrast, motion
blur, brightness shifts, random occlusions, and noise"). The paper prints no parameters, so
they come from params (``mmb.dataset.mjbench_protocol.degradations``). Each is a pure,
deterministic function of an RGB uint8 array (H, W, 3) and its parameters (and a seed where
it draws), returning a new array; the identity setting returns the input unchanged."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from scipy import ndimage


def _clip(values: np.ndarray) -> np.ndarray:
    return np.clip(np.rint(values), 0, 255).astype(np.uint8)


def extreme_contrast(img: np.ndarray, factor: float) -> np.ndarray:
    """Scale every channel's distance from mid-grey (127.5) by `factor` (1 = identity)."""
    return _clip(127.5 + factor * (img.astype(np.float64) - 127.5))


def motion_blur(img: np.ndarray, length: int, angle_degrees: float = 0.0) -> np.ndarray:
    """Average along a line of `length` pixels at `angle_degrees` (1 = identity)."""
    length = int(length)
    if length <= 1:
        return img.copy()
    kernel = np.zeros((length, length))
    centre = (length - 1) / 2
    angle = np.deg2rad(angle_degrees)
    for t in np.linspace(-centre, centre, 4 * length):
        kernel[round(centre - t * np.sin(angle)), round(centre + t * np.cos(angle))] = 1
    kernel /= kernel.sum()
    out = np.stack([ndimage.convolve(img[..., c].astype(np.float64), kernel, mode="nearest")
                    for c in range(img.shape[2])], axis=-1)
    return _clip(out)


def brightness_shift(img: np.ndarray, delta: float) -> np.ndarray:
    """Add `delta` x 255 to every channel (`delta` in [-1, 1]; 0 = identity)."""
    return _clip(img.astype(np.float64) + 255.0 * delta)


def random_occlusion(img: np.ndarray, fraction: float, seed: int = 0) -> np.ndarray:
    """One black rectangle of about `fraction` of the area at a seeded place."""
    out = img.copy()
    if fraction <= 0:
        return out
    h, w = img.shape[:2]
    rng = np.random.default_rng(seed)
    side_h = min(h, max(1, round(h * np.sqrt(fraction))))
    side_w = min(w, max(1, round(fraction * h * w / side_h)))
    top, left = int(rng.integers(h - side_h + 1)), int(rng.integers(w - side_w + 1))
    out[top:top + side_h, left:left + side_w] = 0
    return out


def gaussian_noise(img: np.ndarray, sd: float, seed: int = 0) -> np.ndarray:
    """Add N(0, (sd x 255)^2) noise per pixel and channel (0 = identity)."""
    if sd <= 0:
        return img.copy()
    rng = np.random.default_rng(seed)
    return _clip(img.astype(np.float64) + rng.normal(0.0, 255.0 * sd, img.shape))


DEGRADATIONS: dict[str, tuple[Callable[..., np.ndarray], dict[str, Any], bool]] = {
    # name: (function, default parameters, takes a seed)
    "extreme_contrast": (extreme_contrast, {"factor": 3.0}, False),
    "motion_blur": (motion_blur, {"length": 9, "angle_degrees": 0.0}, False),
    "brightness_shift": (brightness_shift, {"delta": 0.35}, False),
    "random_occlusion": (random_occlusion, {"fraction": 0.25}, True),
    "gaussian_noise": (gaussian_noise, {"sd": 0.2}, True),
}


def degrade(img: np.ndarray, name: str, params: Mapping[str, Any] | None = None,
            seed: int = 0) -> np.ndarray:
    """Apply degradation `name` with `params` (defaults filled in); unknown names or
    parameters are a ValueError naming them."""
    if name not in DEGRADATIONS:
        raise ValueError(f"unknown degradation {name!r} (known: {', '.join(DEGRADATIONS)})")
    function, defaults, seeded = DEGRADATIONS[name]
    unknown = sorted(set(params or {}) - set(defaults))
    if unknown:
        raise ValueError(f"degradation {name!r} has no parameter {unknown} "
                         f"(it has: {', '.join(defaults)})")
    arguments = {**defaults, **(params or {})}
    return function(img, **arguments, seed=seed) if seeded else function(img, **arguments)
