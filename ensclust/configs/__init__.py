"""Experiment configs shipped with ensclust (package data): ``demo.yaml``, the paper tables' configs in
``paper/`` and the paper figures' configs in ``figures/``.

``ensclust run demo`` or ``ensclust run eccms_table4_ari`` names one of them by its file stem
(:func:`resolve_config`); a path to a YAML file is used as given.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

from ensclust.errors import UserError, unknown_name_error

#: the folders searched for a bare config name, in this order
SUBFOLDERS = ("", "paper", "figures")


def packaged_dir(subfolder: str = "") -> Path:
    """The folder of the packaged configs (``subfolder``: "", "paper" or "figures")."""
    root = Path(str(resources.files(__name__)))
    return root / subfolder if subfolder else root


def packaged_names() -> list[str]:
    """Every packaged config's name (file stem), in search order."""
    names = []
    for sub in SUBFOLDERS:
        names += [p.stem for p in sorted(packaged_dir(sub).glob("*.yaml"))]
    return names


def packaged_config(name: str) -> Path | None:
    """The packaged config called ``name`` (a stem such as ``demo``; a ``.yaml`` suffix is allowed), or None."""
    stem = name.removesuffix(".yaml").removesuffix(".yml")
    if not stem or "/" in stem or os.sep in stem:
        return None
    for sub in SUBFOLDERS:
        path = packaged_dir(sub) / f"{stem}.yaml"
        if path.is_file():
            return path
    return None


def _display(path: Path) -> Path:
    """``path`` relative to the current folder when it lies below it (stable, short ``source`` fields)."""
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path


def resolve_config(text: str) -> Path:
    """The YAML file meant by ``text`` on the command line.

    An existing file is used as given. Otherwise a bare name (``demo``, ``eccms_table4_ari``) is a packaged
    config, and a path under ``configs/`` (where the configs lived before they became package data, e.g.
    ``configs/paper/eccms_table4_ari.yaml``) is the packaged file of the same relative path.
    """
    path = Path(text)
    if path.is_file():
        return path
    found = packaged_config(text)
    if found is not None:
        return _display(found)
    parts = path.parts
    if len(parts) >= 2 and parts[0] == "configs":
        legacy = packaged_dir().joinpath(*parts[1:])
        if legacy.is_file():
            return _display(legacy)
    if path.parent != Path(".") or path.suffix:
        raise UserError(f"{text}: config file not found (or name a packaged config, e.g. 'demo'; "
                        "see 'ensclust run --help')")
    raise unknown_name_error("config (no such file, nor a packaged config)", text, packaged_names(), "CONFIG")
