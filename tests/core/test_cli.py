"""The thin CLI: how a step's failure reaches the person reading its log."""

from __future__ import annotations

import pytest

from judgebias import cli


def test_unexpected_failure_reaches_the_job_log(tmp_path, monkeypatch):
    """A bug in a step (not bad input) still leaves its traceback in the `--log` file a
    rule declares, not only on Snakemake's stderr (issue 19: no empty logs)."""
    def broken(args):
        raise RuntimeError("planted bug")

    monkeypatch.setattr(cli, "_cmd_validate", broken)
    log = tmp_path / "step.log"
    with pytest.raises(RuntimeError):
        cli.main(["--log", str(log), "validate"])
    text = log.read_text()
    assert "validate failed unexpectedly" in text and "planted bug" in text
    assert "Traceback" in text
