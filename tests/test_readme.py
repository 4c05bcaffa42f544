"""The README's panel example is a valid params.yaml fragment (docs that cannot drift)."""

from __future__ import annotations

import re

import yaml
from conftest import REPO

from judgebias.config import validate_params
from judgebias.study import study_models


def test_readme_panel_example_validates(params):
    readme = (REPO / "README.md").read_text()
    block = re.search(r"```yaml\n(families:\n.*?)```", readme, re.S).group(1)
    example = yaml.safe_load(block)
    params["families"].update(example["families"])
    params["panel"].update(example["panel"])
    params["backends"] = example["backends"]
    params["philautia"]["models"] = list(example["panel"])
    config = validate_params(params)
    assert {config["panel"][m]["backend"] for m in example["panel"]} == {
        "vllm", "openai", "gemini"}
    assert study_models(config, "philautia") == list(example["panel"])

