"""judgebias.stats.power's formulas on hand-computed cases, and `judgebias plan --power` (the
simulation check is benchmarks/power_check.py, smoke-run in tests/core/test_benchmarks.py)."""

from __future__ import annotations

import json
import math
import subprocess

import pandas as pd
import pytest
import yaml
from helpers.project import BIN, REPO

from judgebias.card.schema import CARD, card_row
from judgebias.io.artifacts import write_table
from judgebias.stats.power import (
    PowerSettings,
    detection_power,
    mde,
    power_table,
    se_from_interval,
    size_for,
)

Z975, Z80 = 1.959963984540054, 0.8416212335729143


def test_the_mde_is_z_alpha_plus_z_power_standard_errors():
    settings = PowerSettings()
    assert se_from_interval(-Z975, Z975) == pytest.approx(1.0)
    assert se_from_interval(1.0, 5.0) == pytest.approx(2.0 / Z975)
    assert mde(1.0, settings) == pytest.approx(Z975 + Z80)
    assert mde(2.0, PowerSettings(alpha=0.01, power=0.9)) == pytest.approx(
        2 * (2.5758293035489 + 1.2815515655446004))
    assert detection_power(mde(0.7, settings), 0.7) == pytest.approx(0.8, abs=1e-3)
    assert detection_power(0.0, 1.0) == pytest.approx(0.05)


def test_the_size_for_a_target_inverts_the_mde():
    settings = PowerSettings()
    # s0 = 1 at 100 units: a tenth of the MDE needs 100 x 10^2 units
    assert size_for((Z975 + Z80) / 10, 1.0, 100, settings) == 10_000
    n = size_for(1.5, 2.0, 40, settings)
    assert mde(2.0 * math.sqrt(40 / n), settings) <= 1.5 < mde(2.0 * math.sqrt(40 / (n - 1)),
                                                                 settings)
    with pytest.raises(ValueError, match="alpha and power"):
        PowerSettings(power=1.0)


def _row(model: str, low: float, high: float, n: int, measure: str = "self_preference"):
    return {"model": model, "study": "philautia", "measure": measure, "setting": "ref_free",
            "unit": "score points", "ci_low": low, "ci_high": high, "n": n}


def test_the_table_scales_the_pilots_errors_to_the_configured_size():
    pilot = pd.DataFrame([_row("a", -Z975, Z975, 50), _row("b", 0.0, 4 * Z975, 50),
                          _row("c", 0.0, 6 * Z975, 50), _row("a", math.nan, math.nan, 50,
                                                              "philautia_score")])
    settings = PowerSettings(targets={"self_preference": 1.0})
    table = power_table(pilot, {"philautia": ["a", "z"]},
                        {("philautia", "self_preference"): 4.0,
                         ("philautia", "philautia_score"): 4.0},
                        settings, simulated={"a", "b", "c"}).set_index("model")
    assert set(table["measure"]) == {"self_preference"}  # no interval: no power row
    # judge a: s0 = 1 at 50 images; 200 images halve it
    assert table.loc["a", "n"] == 200 and table.loc["a", "se_pilot"] == pytest.approx(1.0)
    assert table.loc["a", "mde"] == pytest.approx((Z975 + Z80) / 2)
    assert table.loc["a", "n_for_target"] == math.ceil(50 * (Z975 + Z80) ** 2)
    assert table.loc["a", "variance_from"] == "pilot (simulated panel)"
    # judge z is not in the pilot: the median error of a, b, c (s0 = 2)
    assert table.loc["z", "se_pilot"] == pytest.approx(2.0)
    assert table.loc["z", "variance_from"] == "pilot median of 3 judges (simulated panel)"


@pytest.mark.slow  # two CLI processes (7 s)
def test_plan_power_carries_a_pilots_card_to_a_papers_config(tmp_path, default_params):
    """`judgebias plan --power` from the command line: the pilot is the default
    (simulated) panel on 300 BIRCH pairs, with a written card; configs/birch.yaml runs
    7,756 + 1,250 pairs, its first dataset 7,756 (BIRCH's power hook): every judge's IB
    error shrinks by sqrt(300 / 7,756), judges not in the pilot take the pilot's median."""
    pilot = tmp_path / "pilot"
    (pilot / "results").mkdir(parents=True)
    (pilot / "params.yaml").write_text(yaml.safe_dump(default_params, sort_keys=False))
    rows = [card_row(model, "birch", "ib", setting="synthetic", unit="accuracy difference",
                     estimate=0.1, ci_low=0.1 - half, ci_high=0.1 + half, n=200)
            for model, half in (("corvid-pro", Z975 * 0.05), ("lumen-mini", Z975 * 0.07))]
    card = pd.DataFrame(rows).assign(p_adjusted=math.nan, significant=False)
    write_table(card, pilot / "results" / "judges.parquet", CARD)
    out = subprocess.run([str(BIN / "judgebias"), "--params", str(REPO / "configs/birch.yaml"),
                          "plan", "--power", "--pilot", str(pilot), "--json",
                          "--target", "ib=0.05"],
                         capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    table = pd.DataFrame(json.loads(out.stdout)).set_index("model")
    assert (table["measure"] == "ib").all() and len(table) == 8  # the paper's eight judges
    shrink = math.sqrt(300 / 7756)
    assert table["n"].tolist() == pytest.approx([200 / shrink ** 2] * 8)
    assert table["se_pilot"].iloc[0] == pytest.approx(0.06)  # median of 0.05 and 0.07
    assert table["mde"].iloc[0] == pytest.approx((Z975 + Z80) * 0.06 * shrink)
    assert table["variance_from"].iloc[0] == "pilot median of 2 judges (simulated panel)"
    assert table["n_for_target"].iloc[0] == math.ceil(200 * ((Z975 + Z80) * 0.06 / 0.05) ** 2)
    no_pilot = subprocess.run([str(BIN / "judgebias"), "plan", "--power", "--pilot",
                               str(tmp_path / "none")], capture_output=True, text=True,
                              cwd=REPO)
    assert no_pilot.returncode != 0 and "no pilot run there" in no_pilot.stderr
