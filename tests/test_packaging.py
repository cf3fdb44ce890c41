"""Package data: the registry, the configs and the paper manifests are read with importlib.resources, so an
installed wheel works outside the checkout; configs are named on the command line by their stem."""

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import ensclust
from ensclust.configs import packaged_config, packaged_dir, packaged_names, resolve_config
from ensclust.data.registry import list_registry, load_registry, registry_path
from ensclust.errors import UserError
from ensclust.papers.manifest import PAPERS, config_dir, config_path, load_manifest
from ensclust.testing import assert_user_error
from ensclust.testing import invoke_cli as invoke

PACKAGE = Path(ensclust.__file__).resolve().parent
REPO = PACKAGE.parent


def test_package_data_lives_inside_the_package():
    assert registry_path() == PACKAGE / "data" / "registry.yaml"
    assert config_dir() == PACKAGE / "configs" / "paper"
    assert packaged_dir() == PACKAGE / "configs"
    assert {"demo", "eccms_table4_ari", "awec_fig5_ensemble_size"} <= set(packaged_names())
    assert "ecoli" in list_registry() and list_registry("pools")
    for paper in PAPERS:  # every config a manifest names is packaged
        manifest = load_manifest(paper)
        for config in manifest.configs("full"):
            assert config_path(config).parent == config_dir()


def test_resolve_config_by_name_path_and_old_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert resolve_config("demo") == PACKAGE / "configs" / "demo.yaml"
    assert resolve_config("demo.yaml") == PACKAGE / "configs" / "demo.yaml"
    assert resolve_config("eccms_table4_ari") == config_dir() / "eccms_table4_ari.yaml"
    assert resolve_config("awec_fig5_ensemble_size").parent.name == "figures"
    # the paths of before the configs became package data still run
    assert resolve_config("configs/paper/eccms_table4_ari.yaml") == config_dir() / "eccms_table4_ari.yaml"
    assert resolve_config("configs/demo.yaml") == PACKAGE / "configs" / "demo.yaml"
    # a file of the user's wins over a packaged config of the same name
    (tmp_path / "demo.yaml").write_text("name: mine\n")
    assert resolve_config("demo.yaml") == Path("demo.yaml")
    assert packaged_config("paper/demo") is None
    with pytest.raises(UserError, match=r"unknown config .*'dmeo' \(did you mean 'demo'\?\)"):
        resolve_config("dmeo")
    with pytest.raises(UserError, match="nowhere/x.yaml: config file not found"):
        resolve_config("nowhere/x.yaml")


def test_packaged_config_source_is_relative_inside_the_checkout(monkeypatch):
    monkeypatch.chdir(REPO)
    assert resolve_config("demo") == Path("ensclust/configs/demo.yaml")


def test_run_by_name(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code, out, err = invoke(capsys, "run", "demo", "--dry-run", "--results", "R")
    assert code == 0, err
    assert "cells planned" in out and not (tmp_path / "R").exists()
    code, out, err = invoke(capsys, "run", "eccms_table4_ari", "--dry-run", "--dataset", "Ecoli", "--method", "LWEA")
    assert code == 0, err
    assert "cells planned" in out
    assert_user_error(invoke(capsys, "run", "dmeo"), "unknown config (no such file, nor a packaged config) 'dmeo'")


def test_missing_registry_is_a_one_line_error(tmp_path, monkeypatch, capsys):
    missing = tmp_path / "no_registry.yaml"
    monkeypatch.setenv("ENSCLUST_REGISTRY", str(missing))
    monkeypatch.setenv("ENSCLUST_DATA", str(tmp_path))  # an existing data folder, with or without the data
    with pytest.raises(UserError, match="dataset registry not found"):
        load_registry()
    assert_user_error(invoke(capsys, "data", "list"), f"{missing}: dataset registry not found")
    other = tmp_path / "registry.yaml"
    other.write_text("datasets:\n  - {name: mine, n: 3, c: 2}\n")
    monkeypatch.setenv("ENSCLUST_REGISTRY", str(other))
    assert list(list_registry()) == ["mine"]


# ---------------------------------------------------------------------------------------------------------
# The wheel, installed into a fresh virtual environment outside the checkout.

_IGNORE = shutil.ignore_patterns(".git", ".venv", "results", "build", "dist", "*.egg-info", "__pycache__",
                                 ".pytest_cache", ".ruff_cache")


def _build_isolation_flag() -> list[str]:
    """``--no-build-isolation`` when this environment can build the wheel itself (setuptools >= 77, as in
    the dev extra): no build environment is downloaded then."""
    try:
        import setuptools
        import wheel  # noqa: F401
    except ImportError:
        return []
    return ["--no-build-isolation"] if int(setuptools.__version__.split(".")[0]) >= 77 else []


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """``(run, venv)``: ensclust's wheel installed into a new venv in a temporary folder; ``run(*args)`` runs
    the venv's ``ensclust`` there. The venv sees this environment's site-packages through a .pth line (the
    dependencies, without installing them again); ensclust itself is imported from the venv only."""
    if not (REPO / "pyproject.toml").is_file():
        pytest.skip("ensclust is not imported from a source checkout")
    base = tmp_path_factory.mktemp("wheel")
    src = base / "src"
    shutil.copytree(REPO, src, ignore=_IGNORE)  # build from a copy: the checkout gets no build/ folder
    wheels = base / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", *_build_isolation_flag(), ".", "-w",
                    str(wheels), "--quiet"], cwd=src, check=True)
    (wheel_file,) = wheels.glob("ensclust-*.whl")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               check=True, capture_output=True, text=True).stdout.strip())
    (site / "dev_environment.pth").write_text(sysconfig.get_path("purelib") + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index",
                    "--quiet", str(wheel_file)], check=True)
    work = base / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ENSCLUST_REGISTRY", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    (base / "no_data").mkdir()  # an empty data folder: the registry is listed without hashing any data file
    env["ENSCLUST_DATA"] = str(base / "no_data")

    def run(*args):
        return subprocess.run(list(args), cwd=work, env=env, capture_output=True, text=True, timeout=900)

    return run, venv


def test_wheel_ships_the_package_data_and_runs_outside_the_checkout(installed):
    run, venv = installed
    done = run("python", "-c", "import ensclust, ensclust.data.registry as r, ensclust.papers.manifest as m; "
                               "import ensclust.core.partition as p; "
                               "print(ensclust.__file__, r.registry_path(), m.config_path('eccms_table4_ari'), "
                               "p._MTK_PRESET_INI)")
    assert done.returncode == 0, done.stderr
    # ensclust, its registry, the paper configs and HGPA's partitioner preset: all from the venv
    for path in done.stdout.split():
        assert Path(path).is_relative_to(venv) and Path(path).is_file(), path
    done = run("ensclust", "data", "list")
    assert done.returncode == 0, done.stderr
    assert "ecoli" in done.stdout and "usps" in done.stdout and "eccms_ecoli" in done.stdout
    # the packaged demo by name, one dataset and one method of it (the whole demo: the slow test below)
    done = run("ensclust", "run", "demo", "--results", "R", "--dataset", "Iris", "--method", "LWEA", "--quiet")
    assert done.returncode == 0, done.stderr
    assert "0 failed" in done.stderr
    assert (Path(venv).parent / "work" / "R" / "demo" / "table_ari.csv").exists()


@pytest.mark.slow
def test_wheel_runs_the_whole_demo(installed):
    run, venv = installed
    done = run("ensclust", "run", "demo", "--results", "R_all", "--quiet")
    assert done.returncode == 0, done.stderr
    assert ", 0 failed" in done.stderr
    assert (Path(venv).parent / "work" / "R_all" / "demo" / "tables.png").exists()
