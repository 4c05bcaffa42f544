"""FRAME's diffusers backend for real, on a CPU, with a tiny random-weight Stable Diffusion
pipeline built locally (helpers/tiny_diffusers.py; no model hub): seeded generation that
is repeatable, the device it computes on, and one small FRAME project whose images come
from the pipeline, with imported human scores, run by Snakemake to its report."""

from __future__ import annotations

import io
import logging
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from helpers.project import BIN, make_project, run, study_params
from helpers.tiny_diffusers import IMAGE_SIZE, build_tiny_text_to_image, use_tiny_diffusers
from PIL import Image

from judgebias.io.filedigest import tree_sha256
from judgebias.models.gpu import device_line
from judgebias.studies.frame import imagegen

PROMPT = "Generate an image of two cats napping in a meadow."


@pytest.fixture(autouse=True)
def _offline_hub(monkeypatch):
    """No model hub: a lookup would fail at once instead of waiting on the network."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return build_tiny_text_to_image(tmp_path_factory.mktemp("tiny-sd"))


def _pixels(data: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(data)) as image:
        assert image.size == (IMAGE_SIZE, IMAGE_SIZE) and image.mode == "RGB"
        return np.asarray(image)


def test_tiny_pipeline_is_seeded_and_says_where_it_computes(tiny_model, tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger=imagegen.__name__):
        generator = imagegen.backend({"backend": "diffusers",
                                      "options": {"model": str(tiny_model), "steps": 2}})
    expected = "cuda" if torch.cuda.is_available() else "cpu"  # the default, "auto"
    assert generator.device == expected
    assert f"{tiny_model}: {device_line(expected)}" in caplog.text
    # the cache key: the model's files by content, the settings, and the device type
    # (issue 39; test_the_image_cache_is_keyed_by_the_weights_content_and_the_device)
    described = generator.describe()
    assert described["weights"] == tree_sha256(tiny_model) and "model" not in described
    assert (described["steps"], described["guidance"], described["device"]) == (2, 7.5,
                                                                               expected)
    first = imagegen.cached_generate(generator, tmp_path, PROMPT, seed=1)
    assert generator.generate(PROMPT, 1) == first  # the same bytes again, not the cache's
    assert imagegen.cache_path(generator, tmp_path, PROMPT, 1).read_bytes() == first
    a, b = _pixels(first), _pixels(generator.generate(PROMPT, 2))
    assert not np.array_equal(a, b)  # set B's seed is another picture
    assert a.std() > 1  # a picture, not one flat colour
    other = _pixels(generator.generate("Generate an image of a lake at sunrise.", 1))
    assert not np.array_equal(a, other)  # the prompt reaches the picture


def tiny_diffusers_params(default_params: dict, model_dir: Path, scores_dir: Path) -> dict:
    """FRAME alone, on the tiny pipeline: one simulated judge, two domains of 2 items, a
    one-value grid of three manipulations, pairs, one mitigation prompt."""
    params = study_params(default_params, "frame")
    frame = params["frame"]
    frame.update(models=["lumen-mini"], analysis_judge="lumen-mini", mitigation=["bias_aware"],
                 combinations=[2], pairwise={"manipulation": "instruction_overlay"},
                 manipulations={"brightness": [1.5], "instruction_overlay": ["top-right"],
                                "bounding_box": ["annotated"]})
    frame["dataset"]["synthetic"].update(n_per_domain=2, domains=["people", "animal"])
    frame["analysis"]["n_permutations"] = 100
    return use_tiny_diffusers(params, model_dir, scores_dir)


@pytest.mark.slow
def test_frame_builds_its_benchmark_with_diffusers_through_the_pipeline(
        tmp_path, default_params, tiny_model):
    params = tiny_diffusers_params(default_params, tiny_model, tmp_path / "humans")
    images = params["frame"]["dataset"]["synthetic"]["images"]
    assert images["backend"] == "diffusers" and images["options"]["model"] == str(tiny_model)
    (tmp_path / "project").mkdir()
    project = make_project(tmp_path / "project", params)
    run([str(BIN / "snakemake"), "--cores", "2", "--quiet"], project)

    log = (project / "logs/frame/images.log").read_text()  # a GPU rule, here on the CPU
    assert f"computing on {'cuda' if torch.cuda.is_available() else 'cpu'}" in log, log
    generated = pd.read_parquet(project / "data/frame/build/generated.parquet")
    assert len(generated) == 4 and (generated["status"] == "ok").all()
    assert generated["alignment"].isna().all() and generated["boxes"].isna().all()
    for path in [*generated["image"], *generated["image_b"]]:  # relative to the project
        with Image.open(project / path) as image:
            assert image.size == (IMAGE_SIZE, IMAGE_SIZE)
    assert len(list((project / ".judgebias/images").rglob("*.png"))) == 8  # A and B, cached

    items = pd.read_parquet(project / "data/frame/items.parquet")
    humans = pd.read_csv(tmp_path / "humans/human_scores.csv")
    assert sorted(items["item_id"]) == sorted(humans["item_id"])
    assert items["human_score"].between(1, 5).all()
    assert items["source"].str.contains("human scores human_scores.csv").all()

    # No boxes without the offline renderer: every bounding-box render is unavailable
    boxes = pd.read_parquet(project / "data/frame/renders/bounding_box.parquet")
    assert (boxes["status"] != "ok").all()
    assert boxes["message"].str.contains("no box annotation").all()
    bright = pd.read_parquet(project / "data/frame/renders/brightness.parquet")
    assert len(bright) == 4 and (bright["status"] == "ok").all()

    for table in ("table2", "table3_in_sample", "table5", "table6", "human_correlation"):
        assert (project / f"results/frame/{table}.parquet").is_file(), table
    assert (project / "results/report.html").is_file()


def test_the_image_cache_is_keyed_by_the_weights_content_and_the_device(
        tiny_model, tmp_path, monkeypatch):
    """Issue 39: a generated image is reused exactly when a fresh draw would give it: the
    key holds the pipeline's files by their content (a local folder wherever it lies),
    the steps, the guidance, the prompt, the seed, the versions of the libraries that
    draw it, and the torch device type (CPU and CUDA draw different noise from one seed).
    Each change below misses, the unchanged key hits. The drawing itself is a stand-in
    (only the key is under test; the real one: the test above)."""
    import shutil

    import diffusers

    calls: list[tuple[str, int]] = []
    png = io.BytesIO()
    Image.new("RGB", (4, 4)).save(png, format="PNG")

    def draw(self: imagegen.DiffusersPipeline, prompt: str, seed: int) -> bytes:
        calls.append((prompt, seed))
        return png.getvalue()

    monkeypatch.setattr(imagegen.DiffusersPipeline, "generate", draw)
    model = tmp_path / "model"
    shutil.copytree(tiny_model, model)
    cache = tmp_path / "cache"

    def load(folder: Path = model, **options: object) -> imagegen.TextToImage:
        return imagegen.backend({"backend": "diffusers", "cache_dir": str(cache),
                                 "options": {"model": str(folder), "steps": 2, **options}})

    def drawn(generator: imagegen.TextToImage, prompt: str = PROMPT, seed: int = 1) -> bool:
        before = len(calls)
        imagegen.cached_generate(generator, cache, prompt, seed)
        return len(calls) > before

    generator = load()
    assert drawn(generator)
    assert not drawn(generator)
    assert not drawn(load())  # loaded again: the same key
    assert drawn(generator, seed=2)
    assert drawn(generator, prompt="Generate an image of a lake at sunrise.")
    assert drawn(load(steps=3))
    assert drawn(load(guidance=5.0))
    generator.device = "cuda"  # as a job given a GPU resolves `auto`
    assert drawn(generator)
    assert not drawn(generator)
    generator.device = "cpu"
    copy = tmp_path / "copy"
    shutil.copytree(model, copy)
    assert not drawn(load(copy))  # the same files elsewhere: the same images
    config = model / "model_index.json"
    config.write_text(config.read_text() + "\n")  # the pipeline's files changed
    assert drawn(load())
    monkeypatch.setattr(diffusers, "__version__", "0.0.0-other")
    assert drawn(load())
