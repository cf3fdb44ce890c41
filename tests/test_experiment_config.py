"""Config validation (one-line errors naming file, line and key) and grid syntax."""

import pytest

from ensclust.errors import UserError
from ensclust.experiment.config import load_config, load_config_text
from ensclust.experiment.grid import expand_grid, parse_grid

BASE = """name: t
datasets:
  - name: iris
methods:
  - name: eac-al
"""


def error_of(text):
    with pytest.raises(UserError) as info:
        load_config_text(text, "cfg.yaml")
    message = str(info.value)
    assert "\n" not in message
    return message


def test_valid_config_defaults():
    cfg = load_config_text(BASE + "  - name: km-avg\n    scope: ensemble\n", "cfg.yaml")
    assert cfg.name == "t" and cfg.datasets[0].label == "iris" and cfg.methods[0].points == [{}]
    assert cfg.methods[1].is_pseudo and cfg.methods[1].scope == "ensemble"
    assert cfg.pool["source"] == "generate" and cfg.ensemble["repetitions"] >= 1


def test_demo_config_is_valid():
    from ensclust.configs import packaged_dir

    cfg = load_config(packaged_dir() / "demo.yaml")
    assert cfg.name == "demo" and len(cfg.methods) >= 3


@pytest.mark.parametrize("text, expected", [
    ("name: t\ndatasets: [iris\n", "cfg.yaml:3:1: YAML syntax error"),
    (BASE + "metrix: [ari]\n", "cfg.yaml:6: metrix: unknown key 'metrix' (did you mean 'metrics'?)"),
    (BASE.replace("eac-al", "eac-all"), "cfg.yaml:5: methods[0].name: unknown method 'eac-all' (did you mean 'eac-al'?)"),
    (BASE + "    params: {dtyp: float32}\n", "cfg.yaml:6: methods[0].params.dtyp: unknown parameter"),
    (BASE + "    params:\n      dtype: float16\n", "cfg.yaml:7: methods[0].params.dtype: unknown value for parameter"),
    (BASE.replace("iris", "irsi"), "cfg.yaml:3: datasets[0].name: unknown dataset 'irsi' (did you mean 'iris'?)"),
    (BASE + "ensemble: {size: 0}\n", "cfg.yaml:6: ensemble.size: value 0 is out of range: must be >= 1"),
    (BASE + "ensemble:\n  repetitions: 2.5\n", "cfg.yaml:7: ensemble.repetitions: must be an integer"),
    (BASE + "metrics: [ari, nmx]\n", "unknown metric 'nmx' (did you mean 'nmi'?)"),
    (BASE + "pool: {k: [5, 2]}\n", "pool.k: range [lo, hi] needs lo <= hi"),
    (BASE + "pool: {feature_ratio: [0.5, 1.5]}\n", "pool.feature_ratio[1]: value 1.5 is out of range"),
    (BASE + "pool: {seed: -1}\n", "pool.seed: value -1 is out of range: must be >= 0"),
    (BASE + "pool: {file: pools/x.mat, seed: 2}\n", "pool.seed: applies to generated pools only"),
    ("name: t\nname: u\n", "cfg.yaml:2: duplicate key 'name'"),
    (BASE + "  - name: km-avg\n    scope: rep\n", "cfg.yaml:7: methods[1].scope: unknown scope 'rep'"),
    (BASE + "  - name: eac-al\n", "duplicate method label 'eac-al'"),
    (BASE + "    grid: {dtype: [float32, float64]}\n    tuning: fixed\n", "methods[0].tuning: a grid needs"),
    (BASE + "tune_metric: acc\nmetrics: [ari]\n", "tune_metric: unknown tune metric"),
    ("datasets: [iris]\nmethods: [eac-al]\n", "missing required key 'name'"),
    (BASE + "pool: {size: 5}\nensemble: {mode: disjoint, size: 5, repetitions: 3}\n", "pool size 5 is too small"),
    ("name: 'a b'\ndatasets: [iris]\nmethods: [eac-al]\n", "cfg.yaml:1: name: 'a b' must use only"),
])
def test_validation_errors(text, expected):
    assert expected in error_of(text)


def test_param_out_of_range_uses_method_check_params():
    # lwea's theta is declared with a range; a value outside it is reported with the line of the value
    from ensclust.methods import get_method_class

    cls = get_method_class("lwea")
    param = cls.params["theta"]
    bad = (param.high + 1) if param.high is not None else -1
    message = error_of(BASE + f"  - name: lwea\n    params:\n      theta: {bad}\n")
    assert message.startswith("cfg.yaml:8: methods[1].params.theta:") and "out of range" in message


def test_grid_values_are_validated():
    message = error_of(BASE + "  - name: lwea\n    grid: {theta: '-1:1:0.5'}\n")
    assert "cfg.yaml:7: methods[1].grid.theta" in message and "out of range" in message


def test_missing_file():
    with pytest.raises(UserError, match="config file not found"):
        load_config("no/such/config.yaml")


def test_grid_syntax():
    assert parse_grid("0:0.9:0.1") == [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
    assert parse_grid("0.5:0.95:0.05")[-1] == 0.95 and len(parse_grid("0.5:0.95:0.05")) == 10
    assert parse_grid("log:1e-3:1e3:7") == [0.001, 0.01, 0.1, 1.0, 10.0, 100.0, 1000.0]
    assert parse_grid("1:10:3") == [1, 4, 7, 10] and all(isinstance(v, int) for v in parse_grid("1:10:3"))
    assert parse_grid([0.1, 0.2]) == [0.1, 0.2]
    assert parse_grid(5) == [5]
    assert parse_grid("1:0:-0.5") == [1.0, 0.5, 0.0]
    for bad in ("0:1", "0:1:0", "1:0:0.1", "log:0:1:3", "log:1:10", "log:1:10:2.5", "a:b:c"):
        with pytest.raises(UserError):
            parse_grid(bad, "m.grid.x")
    with pytest.raises(UserError):
        parse_grid([], "m.grid.x")


def test_expand_grid_order_and_fixed():
    points = expand_grid({"a": [1, 2], "b": "0:0.2:0.1"}, {"c": 3})
    assert len(points) == 6 and points[0] == {"c": 3, "a": 1, "b": 0.0} and points[-1] == {"c": 3, "a": 2, "b": 0.2}


def test_yaml_scientific_floats_and_grid_in_config():
    cfg = load_config_text(BASE + "  - name: lwea\n    grid: {theta: [1e-1, 0.2]}\n", "cfg.yaml")
    method = cfg.methods[1]
    assert method.tuning == "oracle-best-mean"
    assert [p["theta"] for p in method.points] == [0.1, 0.2]


def test_a_methods_code_revision_enters_only_its_own_cells_fingerprints(monkeypatch):
    # a change of a method's code that changes its labels raises its revision: its stored cells are then
    # recomputed, while every other cell (and every method at revision 0) keeps its fingerprint
    from ensclust.experiment.config import ExperimentConfig
    from ensclust.experiment.plan import plan_cells
    from ensclust.methods import get_method_class

    text = BASE + "  - name: lwea\n"
    before = {c["method"]: c["fingerprint"] for c in plan_cells(load_config_text(text, "cfg.yaml"))}
    monkeypatch.setattr(get_method_class("eac-al"), "revision", 2)
    cfg = load_config_text(text, "cfg.yaml")
    after = {c["method"]: c["fingerprint"] for c in plan_cells(cfg)}
    assert after["eac-al"] != before["eac-al"] and after["lwea"] == before["lwea"]
    saved = cfg.to_dict()
    assert saved["methods"][0]["revision"] == 2 and "revision" not in saved["methods"][1]
    reloaded = [c["fingerprint"] for c in plan_cells(ExperimentConfig.from_dict(saved))]
    assert reloaded == [c["fingerprint"] for c in plan_cells(cfg)]


# -- extends -----------------------------------------------------------------------------------------------------

def _write(folder, name, text):
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def test_extends_takes_the_bases_keys_and_replaces_the_ones_it_sets(tmp_path):
    _write(tmp_path, "base.yaml", "name: base\nseed: 7\ndatasets:\n  - name: iris\nmethods:\n  - name: eac-al\n"
                                  "  - name: lwea\nensemble: {size: 5, repetitions: 2}\n")
    child = _write(tmp_path, "child.yaml", "extends: base.yaml\nname: child\nensemble: {size: 4}\n")
    cfg = load_config(child)
    assert cfg.name == "child" and cfg.seed == 7
    assert [m.label for m in cfg.methods] == ["eac-al", "lwea"]
    # a key the child sets replaces the base's whole value (no deep merge): repetitions falls back to the default
    assert cfg.ensemble["size"] == 4 and cfg.ensemble["repetitions"] == 10


def test_extends_a_packaged_config_differs_from_its_base_only_in_the_keys_it_sets():
    from ensclust.configs import packaged_config

    base = load_config(packaged_config("acmk_tr31")).to_dict()
    child = load_config(packaged_config("acmk_tr31_random_init")).to_dict()
    changed = {key for key in base.keys() | child.keys() if base.get(key) != child.get(key)}
    assert changed == {"name", "description", "pool", "datasets", "source"}
    assert child["pool"]["init"] == "random" and base["pool"].get("init") != "random"
    # the datasets differ only through the pool each one inherits
    assert [{k: v for k, v in d.items() if k != "pool"} for d in child["datasets"]] == \
        [{k: v for k, v in d.items() if k != "pool"} for d in base["datasets"]]


def test_extends_errors_are_one_line_and_name_the_file(tmp_path):
    child = _write(tmp_path, "child.yaml", "extends: acmk_tr3\nname: c\n")
    with pytest.raises(UserError, match=r"child.yaml:1: extends: unknown config to extend 'acmk_tr3'.*did you mean"):
        load_config(child)
    no_name = _write(tmp_path, "noname.yaml", "extends: acmk_tr31\n")
    with pytest.raises(UserError, match="must set its own 'name'"):
        load_config(no_name)
    _write(tmp_path, "a.yaml", "extends: b.yaml\nname: a\n")
    _write(tmp_path, "b.yaml", "extends: a.yaml\nname: b\n")
    with pytest.raises(UserError, match=r"cycle \(a -> b -> a\)"):
        load_config(tmp_path / "a.yaml")
    missing = _write(tmp_path, "m.yaml", "extends: nowhere/x.yaml\nname: m\n")
    with pytest.raises(UserError, match="config to extend not found"):
        load_config(missing)


def test_an_error_in_an_inherited_key_names_the_base_file_and_line(tmp_path):
    _write(tmp_path, "base.yaml", "name: base\ndatasets:\n  - name: iris\nmethods:\n  - name: eac-al\n"
                                  "    params: {no_such: 1}\n")
    child = _write(tmp_path, "child.yaml", "extends: base.yaml\nname: child\n")
    with pytest.raises(UserError) as info:
        load_config(child)
    assert str(info.value).startswith(f"{tmp_path / 'base.yaml'}:") and "\n" not in str(info.value)
