"""The expensive jobs: captions per generator and scores per evaluator x generator x setting.

Seed 000 Algorithm 1, lines 2 and 4 (the per-image part): a generator captions each image
with the generation prompt; an evaluator scores each caption with the G-VEval prompt of
the setting (reference-based or reference-free). Every answer keeps its raw text, token
log-probs, status and the model id / revision / sampling / prompt id that produced it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pandas as pd

from judgebias import prompts
from judgebias.artifacts import read_columns
from judgebias.models.base import ChatRequest, ChatResponse
from judgebias.models.journal import Journal, journal_path, request_key
from judgebias.models.registry import backend_version, build_backend, sampling_for
from judgebias.models.runner import RunStats, run_requests
from judgebias.scoring import STATUS_OK, parse_score

log = logging.getLogger(__name__)

NO_CAPTION = "no_caption"
NO_IMAGE = "no_image"


def _call_columns(config: Mapping[str, Any], key: str, prompt_id: str,
                  requests: list[ChatRequest | None], responses: list[ChatResponse | None],
                  backend: str, version: str) -> dict[str, list[Any]]:
    model = config["models"][key]
    sampling = json.dumps(model["sampling"], sort_keys=True)
    cols: dict[str, list[Any]] = {name: [] for name in (
        "model_id", "revision", "backend", "prompt_id", "sampling", "request_key", "status",
        "error", "raw_text", "logprobs")}
    for request, response in zip(requests, responses, strict=True):
        cols["model_id"].append(model["model_id"])
        cols["revision"].append(model["revision"])
        cols["backend"].append(model["backend"])
        cols["prompt_id"].append(prompt_id)
        cols["sampling"].append(sampling)
        cols["request_key"].append(None if request is None
                                   else request_key(request, backend, version))
        cols["status"].append(NO_CAPTION if response is None else response.status)
        cols["error"].append("" if response is None else response.error)
        cols["raw_text"].append("" if response is None else response.text)
        cols["logprobs"].append("" if response is None else response.logprobs_json())
    return cols


def _run(config: Mapping[str, Any], key: str, role: str, requests: list[ChatRequest]
         ) -> tuple[list[ChatResponse], RunStats, str, str]:
    """Answer a job's requests through `key`'s backend, journaled and within budget.

    A model on the vllm backend first takes its own GPUs (Snakemake only caps how many
    are in use; judgebias.models.gpu makes sure two jobs never share a device), unless
    every answer is already journaled: a rerun from the journal needs no GPU.
    """
    model = config["models"][key]
    gpus = model.get("resources", {}).get("gpus", 0) if model["backend"] == "vllm" else 0
    path = journal_path(config["journal_dir"], model["backend"], model["model_id"])
    with Journal(path) as journal, ExitStack() as stack:
        version = backend_version(config, key)
        keys = [request_key(r, model["backend"], version) for r in requests]
        if gpus and len(journal.lookup(keys)) < len(set(keys)):
            from judgebias.models.gpu import assign_gpus

            stack.enter_context(assign_gpus(gpus, Path(config["journal_dir"]) / "gpu-locks"))
        backend, version = build_backend(config, key, role)
        responses, stats = run_requests(backend, requests, journal, backend_version=version,
                                        max_requests=model.get("max_requests"),
                                        label=f"{role} {key}")
    log.info("%s: %d requests, %d from the journal, %d new calls, %d failed, retries %s",
             key, stats.total, stats.journaled, stats.called, stats.failed,
             stats.retries or "none")
    return responses, stats, backend.name, version


def _request(config: Mapping[str, Any], key: str, prompt: str, image_path: str
             ) -> ChatRequest:
    model = config["models"][key]
    return ChatRequest(model=model["model_id"], prompt=prompt,
                       images=(Path(image_path).read_bytes(),),
                       sampling=sampling_for(model), revision=model["revision"])


def caption_requests(config: Mapping[str, Any], generator: str, images: pd.DataFrame
                     ) -> list[ChatRequest]:
    """The generation prompt (seed 000 Appendix C) with each image, for `generator`."""
    prompt = prompts.render(config["prompts"]["caption"])
    return [_request(config, generator, prompt, p) for p in images["image_path"]]


def judge_requests(config: Mapping[str, Any], evaluator: str, setting: str,
                   rows: pd.DataFrame) -> list[ChatRequest | None]:
    """The setting's G-VEval prompt for each row (image_path, caption, references, status):
    None where there is nothing to judge (a failed caption, an item without its image)."""
    spec = config["philautia"]["settings"][setting]
    requests: list[ChatRequest | None] = []
    for row in rows.itertuples(index=False):
        if row.status != STATUS_OK or not isinstance(row.image_path, str):
            requests.append(None)
            continue
        refs = list(row.references) if spec["references"] else None
        prompt = prompts.render(spec["prompt"], caption=row.caption, references=refs)
        requests.append(_request(config, evaluator, prompt, row.image_path))
    return requests


def caption_rows(images: pd.DataFrame, captions: pd.DataFrame) -> pd.DataFrame:
    """One row per image with its caption by one generator, ready to be judged; a failed
    caption becomes status "no_caption" (nothing to judge)."""
    rows = images.merge(captions[["image_id", "generator", "caption", "status"]],
                        on="image_id", how="inner", validate="one_to_one")
    rows["status"] = rows["status"].where(rows["status"] == STATUS_OK, NO_CAPTION)
    return rows


def item_rows(items: pd.DataFrame) -> pd.DataFrame:
    """Judgement-dataset items (judgebias.data.judgements.items) ready to be judged."""
    rows = items.rename(columns={"candidate": "caption"})
    rows["status"] = [STATUS_OK if isinstance(p, str) else NO_IMAGE for p in rows["image_path"]]
    return rows


def _judge(config: Mapping[str, Any], evaluator: str, setting: str,
           rows: pd.DataFrame) -> dict[str, Any]:
    """Seed 000 Alg. 1 line 4, per caption: the judge's answers and the scores read from
    them, as columns aligned with `rows`. Rows without a request keep their status."""
    requests = judge_requests(config, evaluator, setting, rows)
    to_call = [r for r in requests if r is not None]
    answered, _, backend, version = _run(config, evaluator, "evaluator", to_call)
    answers = iter(answered)
    responses = [None if r is None else next(answers) for r in requests]
    parsed = [None if r is None or not r.ok else parse_score(r.text, r.tokens)
              for r in responses]
    prompt_id = config["philautia"]["settings"][setting]["prompt"]
    calls = _call_columns(config, evaluator, prompt_id, requests, responses, backend, version)
    calls["status"] = [
        given if request is None else status if p is None else p.status
        for given, status, request, p in zip(rows["status"], calls["status"], requests,
                                             parsed, strict=True)]
    return {
        "evaluator": evaluator,
        "setting": setting,
        "score_raw": pd.array([None if p is None else p.raw for p in parsed], dtype="Int64"),
        "score_expected": pd.array([None if p is None else p.expected for p in parsed],
                                   dtype="Float64"),
        "score_mass": pd.array([None if p is None else p.score_mass for p in parsed],
                               dtype="Float64"),
        "logprobs_available": [r is not None and r.tokens is not None for r in responses],
        **calls,
    }


def caption_images(config: Mapping[str, Any], generator: str, images: pd.DataFrame
                   ) -> pd.DataFrame:
    """Seed 000 Alg. 1 line 2: one caption per image by `generator` (a captions table)."""
    prompt_id = config["prompts"]["caption"]
    requests = caption_requests(config, generator, images)
    responses, _, backend, version = _run(config, generator, "generator", requests)
    frame = pd.DataFrame({
        "image_id": images["image_id"].to_numpy(),
        "generator": generator,
        "caption": [r.text.strip() if r.ok else None for r in responses],
        **_call_columns(config, generator, prompt_id, list(requests), list(responses),
                        backend, version),
    })
    return frame


def score_captions(config: Mapping[str, Any], evaluator: str, setting: str,
                   images: pd.DataFrame, captions: pd.DataFrame) -> pd.DataFrame:
    """Seed 000 Alg. 1 line 4 (per image): `evaluator` scores each caption (a scores table).

    Images whose caption failed get status "no_caption" and no request is made.
    """
    rows = caption_rows(images, captions)
    return pd.DataFrame({"image_id": rows["image_id"].to_numpy(),
                         "generator": rows["generator"].to_numpy(),
                         **_judge(config, evaluator, setting, rows)})


def score_items(config: Mapping[str, Any], evaluator: str, setting: str,
                items: pd.DataFrame) -> pd.DataFrame:
    """The same judge, prompt and setting on a caption-judgement dataset's items (seed 000
    §6.3), through the same journal: one item_scores row per item. Items whose image is
    absent get status "no_image" and no request is made."""
    rows = item_rows(items)
    return pd.DataFrame({"item_id": rows["item_id"].to_numpy(),
                         "dataset": rows["dataset"].to_numpy(),
                         **_judge(config, evaluator, setting, rows)})


def score_values(frame: pd.DataFrame, score: str) -> pd.Series:
    """A judge's score in [0, 1] per row, NaN where the answer failed or was unparseable.

    `score` = "expected" uses the log-prob weighted score where the answer had log-probs
    and the parsed one otherwise; "parsed" always uses the parsed $NN$.
    """
    value = frame["score_raw"].astype("float64")
    if score == "expected":
        expected = frame["score_expected"].astype("float64")
        value = expected.where(expected.notna(), value)
    return (value / 100.0).where(frame["status"] == STATUS_OK)


def analysis_scores(paths: list[str], score: str) -> pd.DataFrame:
    """The long (image, generator, evaluator, score in [0,1]) table the analysis reads;
    failed or unparseable answers are NaN (excluded from means, counted)."""
    columns = ["image_id", "generator", "evaluator", "status", "score_raw", "score_expected"]
    scores = pd.concat([read_columns(p, "scores", columns) for p in paths], ignore_index=True)
    scores["score"] = score_values(scores, score)
    return scores[["image_id", "generator", "evaluator", "status", "score"]]
