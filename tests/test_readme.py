"""The README's panel example is a valid params.yaml fragment (docs that cannot drift)."""

from __future__ import annotations

import re

import yaml
from conftest import REPO

from judgebias.config import validate_params


def test_readme_panel_example_validates(params):
    readme = (REPO / "README.md").read_text()
    block = re.search(r"```yaml\n(families:\n.*?)```", readme, re.S).group(1)
    example = yaml.safe_load(block)
    params["families"].update(example["families"])
    params["models"].update(example["models"])
    params["backends"] = example["backends"]
    params["philautia"]["models"] = list(example["models"])
    config = validate_params(params)
    assert {config["models"][m]["backend"] for m in example["models"]} == {
        "vllm", "openai", "gemini"}
