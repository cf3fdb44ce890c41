"""Parameter grids: ``[0.1, 0.2]``, ``"0:0.9:0.1"`` (start:stop:step, inclusive end) and
``"log:1e-3:1e3:7"`` (7 points evenly spaced in log10 between 1e-3 and 1e3, both ends included).

Range values are rounded to 12 significant digits so that ``0:0.9:0.1`` yields exactly 0.3 and not
0.30000000000000004 (float drift would otherwise leak into seeds, cache keys and table captions).
"""

from __future__ import annotations

import itertools
import math

from ensclust.errors import UserError


def _round(value: float) -> float:
    if value == 0 or not math.isfinite(value):
        return float(value)
    digits = 12 - int(math.floor(math.log10(abs(value)))) - 1
    out = round(value, digits)
    return float(out)


def _number(text: str, spec: str, where: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise UserError(f"{where}: grid '{spec}': '{text}' is not a number") from None


def parse_grid(spec, where: str = "") -> list:
    """Expand one grid specification into the list of its values.

    Accepts a list (returned as is, must be non-empty), a scalar (a one-point grid), ``"start:stop:step"``
    (inclusive end) or ``"log:low:high:count"``.
    """
    prefix = where or "grid"
    if isinstance(spec, list | tuple):
        if not spec:
            raise UserError(f"{prefix}: grid must not be empty")
        return list(spec)
    if not isinstance(spec, str) or ":" not in spec:
        return [spec]
    parts = [p.strip() for p in spec.split(":")]
    if parts[0].lower() == "log":
        if len(parts) != 4:
            raise UserError(f"{prefix}: log grid '{spec}' must look like 'log:LOW:HIGH:COUNT', e.g. 'log:1e-3:1e3:7'")
        low, high = _number(parts[1], spec, prefix), _number(parts[2], spec, prefix)
        count = _number(parts[3], spec, prefix)
        if low <= 0 or high <= 0:
            raise UserError(f"{prefix}: log grid '{spec}' needs positive bounds")
        if not count.is_integer() or count < 1:
            raise UserError(f"{prefix}: log grid '{spec}': COUNT must be a positive integer")
        count = int(count)
        if count == 1:
            return [_round(low)]
        a, b = math.log10(low), math.log10(high)
        return [_round(10 ** (a + (b - a) * i / (count - 1))) for i in range(count)]
    if len(parts) != 3:
        raise UserError(f"{prefix}: range grid '{spec}' must look like 'START:STOP:STEP', e.g. '0:0.9:0.1'")
    start, stop, step = (_number(p, spec, prefix) for p in parts)
    if step == 0 or (stop - start) * step < 0:
        raise UserError(f"{prefix}: range grid '{spec}': STEP must be non-zero and point from START to STOP")
    count = int(math.floor((stop - start) / step + 1e-9)) + 1
    if count > 100000:
        raise UserError(f"{prefix}: range grid '{spec}' has {count} points (limit 100000)")
    values = [_round(start + i * step) for i in range(count)]
    if all(float(v).is_integer() for v in (start, stop, step)):
        values = [int(v) for v in values]
    return values


def expand_grid(grid: dict, fixed: dict | None = None, where: str = "") -> list[dict]:
    """All parameter points: the cartesian product of the grids (in declaration order) merged with ``fixed``.

    The first grid parameter varies slowest, so points are listed in a stable, readable order.
    """
    fixed = dict(fixed or {})
    if not grid:
        return [fixed]
    names = list(grid)
    axes = [parse_grid(grid[n], f"{where}.{n}" if where else n) for n in names]
    return [{**fixed, **dict(zip(names, combo, strict=True))} for combo in itertools.product(*axes)]
