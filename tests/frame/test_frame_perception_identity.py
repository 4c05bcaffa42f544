"""The simulated FRAME judge sees exactly what it saw before it was made fast (issue 24:
the default pipeline's per-image cost; the answers must not move by a bit).

tests/frame/frame_perception_expected.json holds, for 22 pictures drawn here (the offline
renderer's originals in every domain, at 256 and 512 px, and manipulate.py's recipes,
single and combined, the padding resized back included), the sha256 of their pixels and
everything the judge reads from them: perceive.features (every float exactly, via its
repr), scene.read_scene and sim.look (domain, alignment, what is shown, what is detected).
The file was recorded by the code before the speed-up (``python
tests/frame/test_frame_perception_identity.py --record``, run on main at 0b7b0ad); re-record it
only when a library upgrade changes the pixels themselves, never to make a changed
reader pass.

The last bits of the floats depend on the SIMD kernels numpy and OpenBLAS pick at run
time (measured: 7 features of 3 pictures differ in the last digit between AVX-512 and AVX2
kernels), and the two pick separately: numpy by its own CPU dispatch, OpenBLAS by its
core type (or ``OPENBLAS_CORETYPE``, which this workplace's machines set to Haswell), so
an AMD EPYC with AVX-512 ran numpy's AVX-512 kernels beside OpenBLAS's Haswell ones and
matched neither an Intel AVX-512 recording nor the AVX2 one. So the
comparison (and the recording) runs in a process pinned to the AVX2 kernels
(:func:`pinned_env`: ``OPENBLAS_CORETYPE=Haswell``, numpy's AVX-512 features disabled),
which every x86-64 machine with AVX2 runs alike; the recording was made by 0b7b0ad's code
on an AVX2 machine (issue 24), and an AVX-512 machine pinned so reproduces it exactly.
Elsewhere (no AVX2, another architecture) the comparison is skipped.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import PIL
import pytest
from PIL import Image
from scipy import ndimage

from judgebias.studies.frame import manipulate, perceive, scene, sim
from judgebias.studies.frame.concepts import compose_instruction, keyword, sample_concepts
from judgebias.studies.frame.recipes import parse_recipe

EXPECTED = Path(__file__).with_name("frame_perception_expected.json")

# (domain, size, seed, error rate, recipes applied to that original)
CASES = (
    ("people", 256, 11, 0.1, ("original", "brightness=1.3", "beauty_filter=smoothing",
                              "bounding_box=annotated+keyword_overlay=top-left",
                              "gamma=2.3+instruction_overlay=center+padding=50")),
    ("animal", 256, 12, 0.1, ("original", "gamma=0.9", "authenticity_overlay=bottom-right",
                              "instruction_overlay=top-right", "padding=10")),
    ("illustration", 256, 13, 0.3, ("original", "brightness=2.3+bounding_box=annotated",
                                    "keyword_overlay=center", "padding=25")),
    ("indoor", 256, 14, 0.1, ("brightness=0.9+authenticity_overlay=top-left+padding=40",
                              "instruction_overlay=bottom-left")),
    ("outdoor", 256, 15, 0.5, ("original", "gamma=1.5+authenticity_overlay=center",
                               "instruction_overlay=bottom-right+padding=15")),
    ("animal", 512, 16, 0.1, ("original", "bounding_box=annotated+padding=30")),
)
RESIZED_BACK = ("people", "padding=20")  # one picture through padding(resize_back=True)


def _pictures():
    """(name, PNG bytes, instruction, keyword) of every picture of the fixture."""
    rng = np.random.default_rng(2024)
    for domain, size, seed, error_rate, recipes in CASES:
        concepts = sample_concepts(domain, rng)
        instruction = compose_instruction(domain, concepts)
        drawn = scene.render(instruction, size=size, seed=seed, error_rate=error_rate)
        word = keyword(domain, concepts)
        recipes = (*recipes, RESIZED_BACK[1]) if domain == RESIZED_BACK[0] else recipes
        for recipe in recipes:
            context = manipulate.ItemContext(instruction, word, drawn.boxes,
                                             manipulate.SmoothingRestorer(),
                                             resize_back=(domain, recipe) == RESIZED_BACK)
            image = manipulate.apply(drawn.image, parse_recipe(recipe), context)
            buffer = io.BytesIO()
            image.save(buffer, format="PNG")
            yield f"{domain}-{size}-{seed}/{recipe}", buffer.getvalue(), instruction, word


def _plain(value):
    """A JSON round trip, so tuples and lists (and floats, by repr) compare alike."""
    return json.loads(json.dumps(value))


def _seen(png: bytes, instruction: str, word: str | None) -> dict:
    """Everything the judge reads from one picture."""
    pixels = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))
    found = perceive.features(png, instruction=instruction, keyword=word)
    looked = sim.look(png, instruction)
    return _plain({"pixels_sha256": hashlib.sha256(pixels.tobytes()).hexdigest(),
                   "features": dataclasses.asdict(found),
                   "scene": scene.read_scene(pixels, looked.domain),
                   "look": dataclasses.asdict(looked)})


def _versions() -> dict[str, str]:
    import scipy

    return {"numpy": np.__version__, "scipy": scipy.__version__, "pillow": PIL.__version__}


AVX512 = ("X86_V4", "AVX512_ICL", "AVX512_SPR")  # numpy's dispatch targets above AVX2
SKIPPED = 3  # the exit status of --check when it compared nothing


def _cpu_features() -> dict[str, bool]:
    from numpy._core._multiarray_umath import __cpu_features__

    return __cpu_features__


def pinned_env() -> dict[str, str]:
    """This environment with numpy and OpenBLAS pinned to their AVX2 kernels."""
    off = [name for name in AVX512 if _cpu_features().get(name)]
    return {**os.environ, "OPENBLAS_CORETYPE": "Haswell",
            **({"NPY_DISABLE_CPU_FEATURES": " ".join(off)} if off else {})}


def record() -> None:
    """Write the recording from the code as it is now (module docstring: when not to)."""
    pictures = {name: _seen(png, instruction, word)
                for name, png, instruction, word in _pictures()}
    EXPECTED.write_text(json.dumps({"versions": _versions(), "pictures": pictures},
                                   indent=1, sort_keys=True) + "\n")


def check() -> None:
    """Compare every picture with the recording; exit SKIPPED if none could be."""
    expected = json.loads(EXPECTED.read_text())
    pictures = list(_pictures())
    assert {name for name, *_ in pictures} == set(expected["pictures"])
    same_libraries = expected["versions"] == _versions()
    compared = 0
    for name, png, instruction, word in pictures:
        got, want = _seen(png, instruction, word), expected["pictures"][name]
        if got["pixels_sha256"] != want["pixels_sha256"]:
            # the renderer must draw the same bytes; a library upgrade may legitimately not
            assert not same_libraries, f"{name}: the renderer drew other pixels"
            continue
        assert got == want, f"{name}: {got} != {want}"
        compared += 1
    if not compared:
        print(f"every picture's pixels differ from the recording's ({expected['versions']} "
              f"vs {_versions()}): re-record it on main")
        sys.exit(SKIPPED)


def test_the_judge_reads_every_picture_exactly_as_before():
    if not _cpu_features().get("AVX2"):
        pytest.skip("the recording is of numpy's and OpenBLAS's AVX2 kernels; this CPU "
                    "has none")
    done = subprocess.run([sys.executable, __file__, "--check"], env=pinned_env(),
                          capture_output=True, text=True)
    said = done.stdout + done.stderr
    if done.returncode == SKIPPED:
        pytest.skip(said)
    assert done.returncode == 0, said


def test_the_fixture_covers_every_detector():
    """The pictures exercise each of the judge's readings (not only originals)."""
    expected = json.loads(EXPECTED.read_text())
    detected = {d[0] for p in expected["pictures"].values() for d in p["look"]["detected"]}
    assert detected >= {"brightness", "gamma", "authenticity_overlay", "keyword_overlay",
                        "instruction_overlay", "bounding_box", "beauty_filter", "padding"}


def test_the_fast_helpers_equal_what_they_replace():
    """brightest/darkest, dilate and _holes against numpy's and scipy's own, on random
    masks and pixels of every small shape (edges included)."""
    rng = np.random.default_rng(0)
    for _ in range(400):
        shape = tuple(int(v) for v in rng.integers(1, 14, 2))
        mask = rng.random(shape) < rng.random()
        for size in (3, 5):
            assert (perceive.dilate(mask, size) == ndimage.maximum_filter(mask, size)).all()
        assert scene._holes(mask) == ndimage.binary_fill_holes(mask).sum() - mask.sum()
        for pixels in (rng.integers(0, 256, (*shape, 3)).astype(np.uint8),
                       rng.random((*shape, 3)) * 255):
            assert (perceive.brightest(pixels) == pixels.max(axis=2)).all()
            assert (perceive.darkest(pixels) == pixels.min(axis=2)).all()


def test_ink_and_hue_tables_equal_the_per_pixel_arithmetic():
    """Every (channel, highest channel) pair, with the third channel at a few levels, in
    every channel order: the lookup tables give the float arithmetic's answers."""
    a, b = (v.ravel() for v in np.meshgrid(np.arange(256), np.arange(256)))
    third = np.repeat([0, 5, 128, 250, 255], a.size)
    base = np.stack([np.tile(a, 5), np.tile(b, 5), third], axis=1)
    pixels = np.concatenate([base[:, order] for order in ((0, 1, 2), (1, 2, 0), (2, 0, 1))]
                            ).astype(np.uint8)[None]
    wide = pixels.astype(np.int16)
    high, low = wide.max(axis=2), wide.min(axis=2)
    box = (wide[..., 0] >= 250) & (wide[..., 1] <= 5) & (wide[..., 2] <= 5)
    assert (scene.ink(pixels) == ((low < scene.INK_RATIO * high) & (high >= 8) & ~box)).all()
    rgb = pixels.astype(np.float32)
    flags = rgb >= scene.HIGH_RATIO * rgb.max(axis=2, keepdims=True)
    classes = flags[..., 0] * 4 + flags[..., 1] * 2 + flags[..., 2]
    assert (scene._hue_classes(pixels, perceive.brightest(pixels)) == classes).all()


def test_the_smoothness_median_over_keys_is_numpys_median_of_the_ratios():
    """_smoothness's definition, float32 ratios and np.median, against its key counting,
    on uniform, narrow and clipped V with and without pixels left out."""
    rng = np.random.default_rng(1)
    for i in range(600):
        shape = tuple(int(v) for v in rng.integers(3, 50, 2))
        v = (rng.integers(0, 256, shape) if i % 3 == 0 else
             rng.normal(rng.uniform(0, 255), rng.uniform(0.5, 20), shape))
        v = np.clip(v, 0, 255).astype(np.uint8)
        exclude = None if i % 3 == 1 else rng.random(shape) < rng.uniform(0, 0.95)
        f = v.astype(np.float32)
        centre = f[1:-1, 1:-1]
        lap = 4 * centre - f[:-2, 1:-1] - f[2:, 1:-1] - f[1:-1, :-2] - f[1:-1, 2:]
        relative = np.abs(lap) / np.maximum(centre, 1.0)
        if exclude is not None:
            relative = relative[~ndimage.maximum_filter(exclude, 3)[1:-1, 1:-1]]
        expected = float(np.median(relative)) * 1.7 if relative.size else 0.0
        assert perceive._smoothness(v, exclude, 1.7) == expected


if __name__ == "__main__":
    if sys.argv[1:] not in (["--record"], ["--check"]):
        sys.exit(f"usage: python {sys.argv[0]} --record|--check   (module docstring)")
    if dict(os.environ) != pinned_env():  # pin the kernels first
        sys.exit(subprocess.run([sys.executable, *sys.argv], env=pinned_env()).returncode)
    record() if sys.argv[1] == "--record" else check()


def test_a_stored_look_is_the_look(tmp_path):
    """What the run's perception store keeps (sim.seen_by) is exactly sim.look, read back
    from the store as from a fresh computation (judgebias.models.perception_store)."""
    from judgebias.models.sim import SimBackend

    stored = SimBackend({}, perception_dir=tmp_path)
    for name, png, instruction, _ in _pictures():
        looked = sim.look(png, instruction)
        assert sim.seen_by(stored, png, instruction) == looked, name  # computed, stored
        assert sim._seen_from_json(sim._seen_to_json(looked)) == looked, name
        assert sim.seen_by(stored, png, instruction) == looked, name  # read back
    assert len(list(tmp_path.rglob("*.json"))) == len(list(_pictures()))
