"""The documentation site (mkdocs.yml, docs/) builds, its params reference is the schema's,
every schema key is described, and the README stays an entrance (issue 42 item 1)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from helpers.project import REPO

from judgebias.devtools.params_reference import COMMAND, params_keys, params_reference

README_MAX_LINES = 150

# Panel-entry fields that the backend registry defines in Python (judgebias.models.backends
# SIM_FIELDS, VLLM_FIELDS, ANTHROPIC_FIELDS; judgebias.models.reasoning REASONING_FIELDS,
# THINKING_FIELDS) without a description. Describe them there, then drop them here: the
# test fails on an entry that has gained one, so the list only shrinks.
UNDESCRIBED_IN_CODE: frozenset[str] = frozenset()


def test_mkdocs_builds_strictly(tmp_path):
    """`mkdocs build --strict` (what `make docs` runs): no broken link or anchor between
    pages, no page left out of the nav, no unrecognised relative link."""
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
         str(REPO / "mkdocs.yml"), "--site-dir", str(site)],
        cwd=REPO, capture_output=True, text=True, timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stdout + done.stderr
    for page in ("index.html", "getting-started/index.html", "studies/birch/index.html",
                 "reference/params/index.html", "design/index.html"):
        assert (site / page).is_file(), page


def test_params_reference_is_generated_from_the_schema():
    """docs/reference/params.md is params_reference()'s output: a schema change (a study's
    schema.yaml, the core schema, a backend's fields) must regenerate it."""
    committed = (REPO / "docs" / "reference" / "params.md").read_text()
    assert committed == params_reference(), (
        f"docs/reference/params.md is not the schema's reference: regenerate it with `{COMMAND}`")


def test_params_reference_lists_every_key():
    """Every key is listed once, with placeholders where the user names the key; $refs
    are followed (a panel entry's fields, the backends' client settings)."""
    paths = [key.path for key in params_keys()]
    assert len(paths) == len(set(paths))
    page = params_reference()
    for path in ("seed", "panel.<key>.backend", "panel.<key>.sampling.temperature",
                 "panel.<key>.reasoning.sampling", "panel.<key>.lora",
                 "backends.openai.batch_wait_s", "backends.anthropic.concurrency",
                 "max_failures.<key>", "philautia.settings.<key>.prompt",
                 "pomms.datasets.<key>.format", "mmb.dataset.hpdv2.test",
                 "mmb.instructions.grow.writer", "frame.manipulations.padding",
                 "birch.datasets.<key>.overrides", "birch.inference.interval"):
        assert path in paths, path
        assert (f"## `{path}`" if "." not in path else f"| `{path}` |") in page, path


def test_every_schema_key_has_a_description():
    """The reference is only as good as the schema's descriptions: every key has one
    (the core schema, each study's schema.yaml, the backends' fields)."""
    undescribed = {key.path for key in params_keys() if not key.description.strip()}
    missing = sorted(undescribed - UNDESCRIBED_IN_CODE)
    assert not missing, f"{len(missing)} schema keys without a description: {missing}"
    described = sorted(UNDESCRIBED_IN_CODE - undescribed)
    assert not described, f"described now: drop them from UNDESCRIBED_IN_CODE: {described}"


def test_readme_is_an_entrance():
    """The README is short (the details live on the docs site) and names its two commands."""
    readme = (REPO / "README.md").read_text()
    lines = readme.count("\n") + (not readme.endswith("\n"))
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines (at most {README_MAX_LINES})"
    assert "make run" in readme and "make test" in readme


def test_readme_links_resolve():
    """Every relative link of the README names a file of the repository (mkdocs checks the
    links between the docs pages; the README is not one of them)."""
    readme = (REPO / "README.md").read_text()
    links = [link.split("#")[0] for link in re.findall(r"\]\(([^)\s]+)\)", readme)
             if "://" not in link]
    assert links
    missing = [link for link in links if not (REPO / link).is_file()]
    assert not missing, missing
