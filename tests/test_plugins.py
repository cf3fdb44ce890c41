"""User plug-in methods: a class in a file or module, or an installed entry point (group ensclust.methods),
usable wherever a method name is accepted; a plug-in that cannot be used is one line on stderr."""

import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import ensclust.methods as registry
from ensclust.errors import UserError
from ensclust.methods import get_method, get_method_class, list_methods, method_names
from ensclust.testing import assert_user_error, planted_ensemble
from ensclust.testing import invoke_cli as invoke

README = Path(__file__).resolve().parents[1] / "README.md"


def _readme_plugin() -> str:
    """The plug-in example of README.md (the test runs exactly what the README shows)."""
    match = re.search(r"```python\n(# my_methods\.py\n.*?)```", README.read_text(), re.S)
    assert match, "README.md has no '# my_methods.py' example"
    return match.group(1)


CONFIG = """name: plugdemo
seed: 0
datasets:
  - name: blobs
    label: Blobs
    params: {n_samples: 40, centers: 3, random_state: 0}
pool: {generator: kmeans, k: c, size: 6}
ensemble: {mode: random, size: 4, repetitions: 2, seed: 1}
methods:
  - {name: "METHOD", label: PowerCA, grid: {power: [1, 2]}, tuning: each}
  - {name: eac-al, label: EAC}
metrics: [ari]
"""


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A working directory holding the README's plug-in file; plug-ins loaded by a test are forgotten after it."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(registry, "_PLUGINS", dict(registry._PLUGINS))
    monkeypatch.setattr(registry, "_SOURCES", dict(registry._SOURCES))
    (tmp_path / "my_methods.py").write_text(_readme_plugin())
    return tmp_path


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """A distribution 'myplug 1.0' on sys.path with entry points in the group ensclust.methods."""
    site = tmp_path / "site"
    (site / "myplug-1.0.dist-info").mkdir(parents=True)
    (site / "myplug-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: myplug\nVersion: 1.0\n")
    (site / "myplug-1.0.dist-info" / "entry_points.txt").write_text(
        "[ensclust.methods]\npower-ca = ensclust_test_plugin_mod:PowerCA\n")
    (site / "ensclust_test_plugin_mod.py").write_text(_readme_plugin())
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, "ensclust_test_plugin_mod", raising=False)
    monkeypatch.setattr(registry, "_PLUGINS", dict(registry._PLUGINS))
    monkeypatch.setattr(registry, "_SOURCES", dict(registry._SOURCES))
    return site


def _add_entry_point(site: Path, line: str):
    path = site / "myplug-1.0.dist-info" / "entry_points.txt"
    path.write_text(path.read_text() + line + "\n")


def test_file_plugin_runs_through_ensclust_run(workdir, capsys):
    (workdir / "cfg.yaml").write_text(CONFIG.replace("METHOD", "my_methods.py:PowerCA"))
    code, out, err = invoke(capsys, "run", "cfg.yaml", "--quiet")
    assert code == 0, err
    cells = pd.read_csv(workdir / "results" / "plugdemo" / "cells.csv")
    plug = cells[cells["method_name"] == "my_methods.py:PowerCA"]
    assert len(plug) == 4 and (plug["status"] == "ok").all()    # 2 grid points x 2 repetitions
    assert sorted(set(plug["params"])) == ['{"power":1.0}', '{"power":2.0}']
    assert plug["ari"].notna().all() and plug["labels_sha256"].notna().all()


def test_file_plugin_in_python_and_in_the_cli(workdir, capsys):
    cls = get_method_class("my_methods.py:PowerCA")
    assert cls is get_method_class(str(workdir / "my_methods.py") + ":PowerCA")   # imported once
    assert cls.name == "my_methods.py:PowerCA"     # no name declared: the name it was loaded by
    members, y = planted_ensemble(n=30, c=3, m=6, random_state=0)
    labels = get_method("my_methods.py:PowerCA", power=2).fit_predict(members, 3)
    assert labels.shape == (30,) and labels.max() == 2
    code, out, err = invoke(capsys, "methods", "my_methods.py:PowerCA")
    assert code == 0, err
    assert f"[plug-in: file {workdir / 'my_methods.py'}]" in out.splitlines()[0]
    assert "power: float, default 1.0" in out
    np.savetxt(workdir / "labels.csv", members, fmt="%d", delimiter=",")
    code, out, err = invoke(capsys, "consensus", "--pool", "labels.csv", "-k", "3", "-m", "my_methods.py:PowerCA",
                            "--param", "power=2", "--out", "out.txt")
    assert code == 0, err
    np.testing.assert_array_equal(np.loadtxt(workdir / "out.txt", dtype=int), labels)


def test_module_plugin(workdir, monkeypatch):
    monkeypatch.syspath_prepend(str(workdir))
    monkeypatch.delitem(sys.modules, "my_methods", raising=False)
    cls = get_method_class("my_methods:PowerCA")
    assert cls.__module__ == "my_methods" and registry.method_source(cls) == "module my_methods"


def test_entry_point_plugin(installed, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert "power-ca" in method_names() and "power-ca" in list_methods()
    cls = get_method_class("Power-CA")
    assert cls.__module__ == "ensclust_test_plugin_mod" and cls.name == "power-ca"
    assert registry.method_source(cls) == ("entry point power-ca = ensclust_test_plugin_mod:PowerCA "
                                           "(distribution myplug 1.0)")
    code, out, err = invoke(capsys, "methods")
    assert code == 0, err
    line = next(x for x in out.splitlines() if x.startswith("power-ca:"))
    assert "[plug-in: entry point power-ca = ensclust_test_plugin_mod:PowerCA (distribution myplug 1.0)]" in line
    (tmp_path / "cfg.yaml").write_text(CONFIG.replace("METHOD", "power-ca"))
    code, out, err = invoke(capsys, "run", "cfg.yaml", "--quiet")
    assert code == 0, err
    cells = pd.read_csv(tmp_path / "results" / "plugdemo" / "cells.csv")
    assert (cells.loc[cells["method_name"] == "power-ca", "status"] == "ok").sum() == 4


BAD_FILES = {
    "missing": (None, "nope.py:PowerCA", "plug-in file 'nope.py' not found"),
    "import error": ("import not_installed_package_xyz\n", "bad.py:PowerCA",
                     "cannot load plug-in file", "ModuleNotFoundError: No module named 'not_installed_package_xyz'"),
    "syntax error": ("def broken(:\n", "bad.py:PowerCA", "cannot load plug-in file", "SyntaxError"),
    "no such class": (None, "my_methods.py:PowerCa", "plug-in 'my_methods.py' has no class 'PowerCa'",
                      "did you mean 'PowerCA'?"),
    "not a method": ("class PowerCA:\n    pass\n", "bad.py:PowerCA",
                     "is not a consensus method", "must be a class that subclasses ensclust.methods.ConsensusMethod"),
    "no _fit": ("from ensclust.methods import ConsensusMethod\nclass PowerCA(ConsensusMethod):\n    pass\n",
                "bad.py:PowerCA", "does not implement _fit"),
    "built-in name": ("from ensclust.methods import ConsensusMethod\nclass PowerCA(ConsensusMethod):\n"
                      "    name = 'lwea'\n    def _fit(self, members, n_clusters, X, rng):\n        return members[:, 0]\n",
                      "bad.py:PowerCA", "declares name 'lwea', which is a built-in method"),
    "no module": (None, "no_such_module_xyz:PowerCA", "cannot import plug-in module 'no_such_module_xyz'"),
    "malformed": (None, "my_methods.py:", "must be written module:Class or path/to/file.py:Class"),
}


@pytest.mark.parametrize("case", list(BAD_FILES))
def test_bad_plugins_are_one_line(workdir, capsys, case):
    text, spec, *fragments = BAD_FILES[case]
    if text is not None:
        (workdir / "bad.py").write_text(text)
    with pytest.raises(UserError):
        get_method_class(spec)
    assert_user_error(invoke(capsys, "methods", spec), *fragments)
    (workdir / "cfg.yaml").write_text(CONFIG.replace("METHOD", spec))
    assert_user_error(invoke(capsys, "run", "cfg.yaml"), "cfg.yaml:10: methods[0].name: ", *fragments)


def test_bad_entry_points_are_one_line(installed, capsys):
    _add_entry_point(installed, "broken = ensclust_missing_module_xyz:Nope")
    assert "broken" in method_names()                 # listed by name without importing anything
    assert_user_error(invoke(capsys, "methods", "broken"), "cannot load plug-in method 'broken'",
                      "distribution myplug 1.0", "No module named 'ensclust_missing_module_xyz'")
    assert_user_error(invoke(capsys, "methods"), "cannot load plug-in method 'broken'")


def test_entry_point_with_a_builtin_name(installed, capsys):
    _add_entry_point(installed, "lwea = ensclust_test_plugin_mod:PowerCA")
    assert get_method_class("lwea").__module__ == "ensclust.methods.lwea"   # a built-in name is never shadowed
    assert_user_error(invoke(capsys, "methods"), "plug-in entry point 'lwea'", "has the name of a built-in method")


BLAS_PROBE = '''
import numpy as np
from threadpoolctl import threadpool_info
from ensclust.methods import ConsensusMethod


class BlasProbe(ConsensusMethod):
    """Labels of the first member; records the BLAS thread count it was fitted under."""

    def _fit(self, members, n_clusters, X, rng):
        threads = [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]
        self.diagnostics_["n_iter"] = max(threads)  # recorded in cells.csv
        return np.asarray(members)[:, 0] % n_clusters
'''


def test_fits_run_with_the_requested_blas_threads(workdir, capsys):
    # one BLAS thread per fit by default (small matrices on a shared machine cost up to 30x the CPU time with
    # several; the bytes of unconverged fits would depend on the core count); --blas-threads 0 lifts the limit
    from threadpoolctl import threadpool_info, threadpool_limits

    if not any(p["user_api"] == "blas" for p in threadpool_info()):
        pytest.skip("no BLAS library visible to threadpoolctl")
    (workdir / "probe.py").write_text(BLAS_PROBE)
    (workdir / "cfg.yaml").write_text(CONFIG.replace("METHOD", "probe.py:BlasProbe").replace(
        ", grid: {power: [1, 2]}, tuning: each", ""))
    cells_csv = workdir / "results" / "plugdemo" / "cells.csv"
    with threadpool_limits(limits=2, user_api="blas"):  # the process's own setting, whatever the machine
        code, _, err = invoke(capsys, "run", "cfg.yaml", "--quiet")
        assert code == 0, err
        cells = pd.read_csv(cells_csv)
        assert set(cells.loc[cells["method"] == "PowerCA", "n_iter"]) == {1}
        code, _, err = invoke(capsys, "run", "cfg.yaml", "--quiet", "--force", "--blas-threads", "0")
        assert code == 0, err
        cells = pd.read_csv(cells_csv)
        assert set(cells.loc[cells["method"] == "PowerCA", "n_iter"]) == {2}
    assert_user_error(invoke(capsys, "run", "cfg.yaml", "--blas-threads", "-1"), "--blas-threads")
