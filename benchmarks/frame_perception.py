"""Benchmark: what the simulated FRAME judge pays to look at one picture (issue 24, item 1).

    .venv/bin/python benchmarks/frame_perception.py [--images 90] [--repeat 3]
                                                   [--baseline-src DIR] [--judge corvid-pro]

Every FRAME score the ``sim`` backend answers reads the picture's pixels
(judgebias.studies.frame.sim.look: scene.read_scene for what it shows, perceive.features for
the manipulations), so this per-image cost is most of the default pipeline's frame_score
jobs. The workload is ``--images`` offline renders (scene.render, 256 px, the five domains
in turn), each through one of the default grids' manipulation kinds (manipulate.apply,
recipes cycled, one that does not apply to the domain falls back to the original), as PNG
bytes. Per picture it times (CPU time of the process, ``time.process_time``, which a
shared machine's other work inflates less than wall time), median over pictures and
``--repeat`` passes:

* ``decode``: the PNG bytes to an RGB uint8 array (Pillow), which every reading needs;
* ``features``: perceive.features from the decoded pixels;
* ``read_scene``: scene.read_scene from the decoded pixels, and ``_glyphs``, the share of
  it spent in the glyph reader (timed by wrapping ``scene._glyphs``);
* ``latent_score``: sim.latent_score for the judge from the PNG bytes with sim.look's cache
  cleared, i.e. everything a fresh request costs before its noise; ``images/s`` is
  pictures / total latent_score time.

With ``--baseline-src`` (the ``src`` folder of another checkout, e.g. ``git archive main
src | tar -x -C /tmp/main``) the same passes run against that code too, alternating
process by process so both see the same machine load, and the table says whether both
gave the same features and scores (a sha256 of their reprs). Prints Markdown. CI smoke
run (tests/core/test_benchmarks.py): --images 6 --repeat 1.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import io
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RECIPES = ("original", "brightness=1.3", "gamma=1.5", "authenticity_overlay=top-left",
           "keyword_overlay=center", "instruction_overlay=bottom-right", "padding=40",
           "bounding_box=annotated", "beauty_filter=smoothing",
           "gamma=2.3+instruction_overlay=center+padding=50")
STAGES = ("decode", "features", "read_scene", "_glyphs", "latent_score")


def pictures(count: int) -> list[tuple[bytes, str, str | None, str]]:
    """(PNG bytes, instruction, keyword, domain) of the workload (module docstring)."""
    import numpy as np

    from judgebias.studies.frame import manipulate, scene
    from judgebias.studies.frame.concepts import compose_instruction, keyword, sample_concepts
    from judgebias.studies.frame.recipes import DOMAINS, applies, parse_recipe

    rng = np.random.default_rng(0)
    out = []
    for i in range(count):
        domain = DOMAINS[i % len(DOMAINS)]
        concepts = sample_concepts(domain, rng)
        instruction = compose_instruction(domain, concepts)
        drawn = scene.render(instruction, seed=i)
        word = keyword(domain, concepts)
        steps = parse_recipe(RECIPES[i % len(RECIPES)])
        if not all(applies(s.manipulation, domain) for s in steps):
            steps = ()
        context = manipulate.ItemContext(instruction, word, drawn.boxes,
                                         manipulate.SmoothingRestorer())
        buffer = io.BytesIO()
        manipulate.apply(drawn.image, steps, context).save(buffer, format="PNG")
        out.append((buffer.getvalue(), instruction, word, domain))
    return out


def measure(count: int, judge: str) -> dict:
    """One pass over the workload with the judgebias on sys.path: per-picture seconds of
    each stage and a digest of everything the judge read and scored."""
    import numpy as np
    from PIL import Image

    from judgebias.config import load_config
    from judgebias.models.registry import build_backend
    from judgebias.studies.frame import perceive, scene, sim

    params = load_config(REPO / "params.yaml")
    try:
        from judgebias.models.context import RunContext
    except ImportError:  # a --baseline-src from before the run context: the mapping
        backend, _ = build_backend(params, judge, "judge")
    else:
        backend, _ = build_backend(RunContext(params), judge, "judge")
    model = backend.models[params["panel"][judge]["model_id"]]
    traits = sim.JudgeTraits.of(model)
    glyph_time = [0.0]
    reader = scene._glyphs

    def timed_glyphs(*args, **kwargs):
        start = time.process_time()
        try:
            return reader(*args, **kwargs)
        finally:
            glyph_time[0] += time.process_time() - start

    scene._glyphs = timed_glyphs
    times: dict[str, list[float]] = {stage: [] for stage in STAGES}
    digest = hashlib.sha256()
    for png, instruction, word, domain in pictures(count):
        start = time.process_time()
        pixels = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))
        times["decode"].append(time.process_time() - start)
        start = time.process_time()
        found = perceive.features(pixels, instruction=instruction, keyword=word)
        times["features"].append(time.process_time() - start)
        glyph_time[0] = 0.0
        start = time.process_time()
        shown = scene.read_scene(pixels, domain)
        times["read_scene"].append(time.process_time() - start)
        times["_glyphs"].append(glyph_time[0])
        sim.look.cache_clear()
        start = time.process_time()
        latent = sim.latent_score(backend, model, traits, png, instruction)
        times["latent_score"].append(time.process_time() - start)
        digest.update(repr((dataclasses.asdict(found), shown, latent)).encode())
    return {"times": times, "digest": digest.hexdigest()}


def run_worker(src: Path, count: int, judge: str) -> dict:
    """One :func:`measure` pass in a fresh process importing judgebias from `src`."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    done = subprocess.run([sys.executable, __file__, "--worker", "--images", str(count),
                           "--judge", judge], env=env, cwd=REPO, check=True,
                          capture_output=True, text=True)
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--images", type=int, default=90)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--judge", default="corvid-pro")
    parser.add_argument("--baseline-src", type=Path, default=None)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(measure(args.images, args.judge)))
        return
    variants = {"this checkout": REPO / "src"}
    if args.baseline_src:
        variants["baseline"] = args.baseline_src.resolve()
    passes: dict[str, list[dict]] = {name: [] for name in variants}
    for _ in range(args.repeat):  # alternating: every variant sees the same machine load
        for name, src in variants.items():
            passes[name].append(run_worker(src, args.images, args.judge))
    print(f"{args.images} pictures x {args.repeat} passes, judge {args.judge}\n")
    print("| code | " + " | ".join(f"{s} ms/image" for s in STAGES) + " | images/s |")
    print("|" + "---|" * (len(STAGES) + 2))
    medians = {}
    for name, runs in passes.items():
        per_stage = {s: [t for run in runs for t in run["times"][s]] for s in STAGES}
        medians[name] = {s: statistics.median(v) for s, v in per_stage.items()}
        rate = len(per_stage["latent_score"]) / sum(per_stage["latent_score"])
        print(f"| {name} | " + " | ".join(f"{1e3 * medians[name][s]:.2f}" for s in STAGES)
              + f" | {rate:.1f} |")
    if args.baseline_src:
        ratios = " | ".join(f"{medians['baseline'][s] / medians['this checkout'][s]:.2f}"
                            for s in STAGES)
        print(f"| speed-up (baseline / this) | {ratios} | |")
        same = {run["digest"] for runs in passes.values() for run in runs}
        print(f"\nsame features, scenes and scores in both: {'yes' if len(same) == 1 else 'NO'}")


if __name__ == "__main__":
    main()
