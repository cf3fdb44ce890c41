"""YAML loading that remembers where every value came from (file, line, column).

Config validation must name the file, line and key of a bad value. PyYAML's constructors drop the
positions, so we compose the node tree ourselves and convert it, recording the 1-based line of every
key path in a side table (:class:`Located`).

The loader also accepts ``1e-3`` style floats (PyYAML, following YAML 1.1, reads them as strings).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ensclust.errors import UserError


class _Loader(yaml.SafeLoader):
    """SafeLoader that also reads ``1e3`` / ``1e-3`` (no dot) as floats."""


_FLOAT_RE = re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$")
_Loader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT_RE, list("-+0123456789"))


@dataclass
class Located:
    """A parsed YAML document plus the line of every key path.

    ``lines[("methods", 2, "params", "theta")]`` is the 1-based line of that key (for a list item, of
    the item). ``where(path)`` formats ``file:line: a.b[2].c`` for error messages.
    """

    data: object
    file: str
    lines: dict = field(default_factory=dict)
    #: the file of a top-level key taken from another document (a config's ``extends`` base); others: ``file``
    files: dict = field(default_factory=dict)

    def file_of(self, key) -> str:
        return self.files.get(key, self.file)

    def line(self, path: tuple) -> int | None:
        path = tuple(path)
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return self.lines.get((), None)

    def where(self, path: tuple) -> str:
        line = self.line(path)
        file = self.file_of(path[0]) if path else self.file
        loc = f"{file}:{line}" if line is not None else file
        return f"{loc}: {format_path(path)}" if path else loc


def format_path(path) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def _convert(node, loader, path, lines):
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        loader.flatten_mapping(node)
        out = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            if not isinstance(key, str | int | float | bool) or key is None:
                raise UserError(f"{lines.get('__file__', '')}:{key_node.start_mark.line + 1}: "
                                f"mapping keys must be plain names, got {key!r}")
            key = str(key)
            if key in out:
                raise UserError(f"{lines['__file__']}:{key_node.start_mark.line + 1}: "
                                f"duplicate key '{format_path(path + (key,))}'")
            lines[path + (key,)] = key_node.start_mark.line + 1
            out[key] = _convert(value_node, loader, path + (key,), lines)
            lines[path + (key,)] = key_node.start_mark.line + 1
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_convert(item, loader, path + (i,), lines) for i, item in enumerate(node.value)]
    return loader.construct_object(node, deep=True)


def load_yaml(text: str, file: str = "<string>") -> Located:
    """Parse one YAML document, keeping line numbers; syntax errors become a one-line UserError."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        lines: dict = {"__file__": file}
        data = {} if node is None else _convert(node, loader, (), lines)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        pos = f"{file}:{mark.line + 1}:{mark.column + 1}" if mark is not None else file
        problem = exc.problem or exc.context or "invalid YAML"
        raise UserError(f"{pos}: YAML syntax error: {problem}") from None
    except yaml.YAMLError as exc:
        raise UserError(f"{file}: YAML error: {str(exc).splitlines()[0]}") from None
    finally:
        loader.dispose()
    lines.pop("__file__", None)
    return Located(data=data, file=file, lines=lines)


def load_yaml_file(path) -> Located:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"{path}: config file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: cannot read config ({exc.__class__.__name__}: {exc})") from None
    return load_yaml(text, str(path))
