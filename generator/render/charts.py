"""Measured bandwidth as SVG charts, drawn at build time from the bench's own numbers.

Input: the lesson bench's JSON as the GPU verification recorded it. Generic shape::

    {"device": "NVIDIA H200", "torch": "...", "triton": "...", "n": 268435456,
     "tables": {TABLE_ID: [{"name": str, "ms": float, "gbps": float, "vs_copy": float,
                            "role": "copy" | "baseline" | "kernel", "param": int | None}, ...]}}

A compute-bound table has "tflops" (and "vs_base") in its rows instead of "gbps" (and "vs_copy"),
and its reference row (cuBLAS, say) has the role "base"; it is drawn the same way, in TFLOP/s,
with the base row named by its own name where a bandwidth chart says "device copy".

A table whose kernel rows carry two or more distinct numeric params (a BLOCK sweep) becomes a
line chart of GB/s against the param on a log2 axis, with a horizontal line for the copy row and
for each baseline row. Any other table becomes horizontal bars of GB/s per row, with the copy
bandwidth marked. The SVG is deterministic (same input, same bytes: no ids, fixed number
formats) and uses `currentColor` for text and axes, so it follows the page's light or dark scheme.

Labels (localized by the caller; `ENGLISH_LABELS` has the defaults):

- ``chart_bandwidth``  axis title for GB/s
- ``chart_tflops``     axis title for TFLOP/s (a compute-bound table)
- ``chart_block``      axis title for the param of a sweep (BLOCK); ``param:TABLE_ID`` overrides it
                       for one table (say, BLOCK_M × BLOCK_N)
- ``chart_copy``       legend name of the copy row
- ``chart_kernel``     legend name of the kernel series when its rows share no name prefix
- ``chart_subtitle``   second title line; ``{device}``, ``{torch}``, ``{triton}`` are filled in
- ``table:TABLE_ID``   a table's title (optional; the id is shown when missing)
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from html import escape

ENGLISH_LABELS = {
    "chart_bandwidth": "bandwidth (GB/s)",
    "chart_tflops": "throughput (TFLOP/s)",
    "chart_block": "BLOCK (elements per program, log scale)",
    "chart_copy": "device copy",
    "chart_kernel": "Triton kernel",
    "chart_subtitle": "measured on {device} · torch {torch} · triton {triton}",
}
CHART_LABELS = tuple(ENGLISH_LABELS)

WIDTH = 640
FONT = (
    "system-ui, -apple-system, 'Segoe UI', Roboto, 'Noto Sans', 'Noto Sans CJK SC', "
    "'Source Han Sans SC', 'PingFang SC', 'Microsoft YaHei', sans-serif"
)
KERNEL, COPY = "#2563eb", "#7c7c7c"
BASELINES = ("#d97706", "#059669", "#db2777", "#7c3aed")
DASHES = ("6 4", "2 3", "8 3 2 3", "1 4")


class ChartError(ValueError):
    pass


@dataclass(frozen=True)
class Row:
    name: str
    gbps: float  # the row's value: GB/s, or TFLOP/s in a compute-bound table
    role: str
    param: int | None
    unit: str = "GB/s"

    @property
    def reference(self) -> bool:
        """The row a table's ratios compare against: the device copy, or a compute table's base."""
        return self.role in ("copy", "base")


def bench_tables(bench: dict) -> list[tuple[str, list[Row]]]:
    """The bench's tables in a fixed order (sorted by id: a record read back from the
    verification cache has its keys sorted, a fresh one may not; the bytes must not differ)."""
    raw = bench.get("tables") or {}
    tables = []
    for table_id in sorted(raw):
        rows = []
        flops = (
            bool(raw[table_id])
            and isinstance(raw[table_id][0], dict)
            and "tflops" in raw[table_id][0]
        )
        key, unit, roles = (
            ("tflops", "TFLOP/s", ("base", "baseline", "kernel"))
            if flops
            else ("gbps", "GB/s", ("copy", "baseline", "kernel"))
        )
        for index, row in enumerate(raw[table_id]):
            try:
                param = row.get("param")
                rows.append(
                    Row(
                        str(row["name"]),
                        float(row[key]),
                        str(row["role"]),
                        None if param is None else int(param),
                        unit,
                    )
                )
            except (KeyError, TypeError, ValueError) as exc:
                raise ChartError(f"bench table {table_id!r}, row {index + 1}: {exc!r}") from exc
            if rows[-1].role not in roles:
                raise ChartError(
                    f"bench table {table_id!r}, row {index + 1}: unknown role {rows[-1].role!r}"
                )
            if not math.isfinite(rows[-1].gbps) or rows[-1].gbps < 0:
                raise ChartError(
                    f"bench table {table_id!r}, row {index + 1}: {key} {rows[-1].gbps!r}"
                )
        if rows:
            tables.append((table_id, rows))
    return tables


def is_sweep(rows: list[Row]) -> bool:
    params = [r.param for r in rows if r.role == "kernel"]
    return (
        len(params) >= 2
        and None not in params
        and len(set(params)) == len(params)
        and min(params) > 0
    )


def charts(bench: dict | None, labels: dict[str, str]) -> list[tuple[str, str, str]]:
    """(table id, table title, SVG) for every table of the bench; none when nothing was measured."""
    if not bench:
        return []
    missing = [key for key in CHART_LABELS if key not in labels]
    if missing:
        raise ChartError(f"chart labels missing: {', '.join(missing)}")
    out = []
    for table_id, rows in bench_tables(bench):
        title = labels.get("table:" + table_id, table_id)
        subtitle = _fill(labels["chart_subtitle"], bench)
        draw = line_chart if is_sweep(rows) else bar_chart
        table_labels = {
            **labels,
            "_param": labels.get("param:" + table_id, labels["chart_block"]),
            "_value": labels["chart_tflops" if rows[0].unit == "TFLOP/s" else "chart_bandwidth"],
        }
        out.append((table_id, title, draw(rows, title, subtitle, table_labels)))
    return out


def _fill(template: str, bench: dict) -> str:
    values = {key: bench.get(key, "?") for key in ("device", "torch", "triton")}
    return re.sub(r"\{(device|torch|triton)\}", lambda m: str(values[m.group(1)]), template)


# --- drawing -----------------------------------------------------------------------------------


def _num(value: float) -> str:
    """Coordinates with one decimal, no trailing zeros: stable text for the same input."""
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


def _text_width(text: str, size: float) -> float:
    """A rough width for wrapping titles: wide (CJK) characters count as one em, others 0.55."""
    return sum(size if ord(ch) > 0x2E7F else size * 0.55 for ch in text)


def _wrap(text: str, size: float, width: float) -> list[str]:
    lines, current = [], ""
    for word in re.split(r"(?<=[\s,，、：:])", text):
        if current and _text_width(current + word, size) > width:
            lines.append(current.rstrip())
            current = word.lstrip()
        else:
            current += word
        while _text_width(current, size) > width:  # one unbreakable run (CJK): cut it
            cut = max(1, int(len(current) * width / _text_width(current, size)))
            lines.append(current[:cut])
            current = current[cut:]
    if current.strip():
        lines.append(current.rstrip())
    return lines or [""]


def _nice_max(value: float) -> tuple[float, float]:
    """An axis end at or above value*1.05, and a tick step (1, 2 or 5 times a power of ten)."""
    top = max(value * 1.05, 1e-9)
    raw = top / 5
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    return math.ceil(top / step) * step, step


def _text(
    x: float, y: float, body: str, size: int = 12, anchor: str = "start", extra: str = ""
) -> str:
    return (
        f'<text x="{_num(x)}" y="{_num(y)}" font-size="{size}" text-anchor="{anchor}" '
        f'fill="currentColor"{extra}>{escape(body)}</text>'
    )


def _header(title: str, subtitle: str, height: float, lines: list[str]) -> list[str]:
    aria = escape(f"{title} ({subtitle})")
    svg = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {WIDTH} {_num(height)}" '
        f'width="{WIDTH}" height="{_num(height)}" role="img" aria-label="{aria}" '
        f'font-family="{escape(FONT)}">',
        f"<title>{escape(title)} ({escape(subtitle)})</title>",
    ]
    y = 22.0
    for line in lines:
        svg.append(_text(16, y, line, 15, extra=' font-weight="600"'))
        y += 20
    svg.append(_text(16, y, subtitle, 12, extra=' fill-opacity="0.75"'))
    return svg


def _title_lines(title: str) -> list[str]:
    return _wrap(title, 15, WIDTH - 32)


def line_chart(rows: list[Row], title: str, subtitle: str, labels: dict[str, str]) -> str:
    kernels = sorted((r for r in rows if r.role == "kernel"), key=lambda r: r.param)
    lines_ = [r for r in rows if r.role != "kernel"]
    heads = _title_lines(title)
    top = 22 + 20 * len(heads) + 20
    left, right, plot_h = 70.0, WIDTH - 24.0, 240.0
    bottom = top + plot_h
    legend = [
        (labels["chart_copy"] if r.role == "copy" else r.name, r) for r in lines_
    ]  # base rows: their name
    kernel_name = _common_name([r.name for r in kernels]) or labels["chart_kernel"]
    height = bottom + 56 + 20 * (len(legend) + 1) + 8
    ymax, step = _nice_max(max(r.gbps for r in rows))
    lo, hi = math.log2(kernels[0].param), math.log2(kernels[-1].param)
    pad = 0.5 if hi > lo else 1.0

    def sx(param: float) -> float:
        return left + (math.log2(param) - lo + pad) / (hi - lo + 2 * pad) * (right - left)

    def sy(gbps: float) -> float:
        return bottom - gbps / ymax * plot_h

    svg = _header(title, subtitle, height, heads)
    svg += _y_axis(left, right, top, bottom, ymax, step, sy, labels["_value"])
    for r in kernels:
        x = sx(r.param)
        svg.append(
            f'<line x1="{_num(x)}" y1="{_num(bottom)}" x2="{_num(x)}" y2="{_num(bottom + 4)}" '
            'stroke="currentColor"/>'
        )
        svg.append(_text(x, bottom + 18, str(r.param), 12, "middle"))
    svg.append(_text((left + right) / 2, bottom + 40, labels["_param"], 12, "middle"))
    styles = {}
    for index, (_, r) in enumerate(legend):
        color, dash = (
            (COPY, "6 4")
            if r.reference
            else (BASELINES[index % len(BASELINES)], DASHES[(index + 1) % len(DASHES)])
        )
        styles[id(r)] = (color, dash)
        svg.append(
            f'<line x1="{_num(left)}" y1="{_num(sy(r.gbps))}" x2="{_num(right)}" y2="{_num(sy(r.gbps))}" '
            f'stroke="{color}" stroke-width="2" stroke-dasharray="{dash}"/>'
        )
    points = " ".join(f"{_num(sx(r.param))},{_num(sy(r.gbps))}" for r in kernels)
    svg.append(f'<polyline points="{points}" fill="none" stroke="{KERNEL}" stroke-width="2.5"/>')
    for r in kernels:
        x, y = sx(r.param), sy(r.gbps)
        svg.append(f'<circle cx="{_num(x)}" cy="{_num(y)}" r="4" fill="{KERNEL}"/>')
        above = y > bottom - 24  # below the point, clear of the copy and baseline lines above it
        svg.append(_text(x, y - 10 if above else y + 20, f"{r.gbps:.0f}", 12, "middle"))
    y = bottom + 64
    svg.append(
        f'<line x1="{_num(left)}" y1="{_num(y - 4)}" x2="{_num(left + 28)}" y2="{_num(y - 4)}" '
        f'stroke="{KERNEL}" stroke-width="2.5"/><circle cx="{_num(left + 14)}" cy="{_num(y - 4)}" r="4" fill="{KERNEL}"/>'
    )
    svg.append(_text(left + 36, y, kernel_name, 12))
    for name, r in legend:
        y += 20
        color, dash = styles[id(r)]
        svg.append(
            f'<line x1="{_num(left)}" y1="{_num(y - 4)}" x2="{_num(left + 28)}" y2="{_num(y - 4)}" '
            f'stroke="{color}" stroke-width="2" stroke-dasharray="{dash}"/>'
        )
        svg.append(_text(left + 36, y, f"{name}: {r.gbps:.0f} {r.unit}", 12))
    svg.append("</svg>")
    return "\n".join(svg)


def bar_chart(rows: list[Row], title: str, subtitle: str, labels: dict[str, str]) -> str:
    heads = _title_lines(title)
    top = 22 + 20 * len(heads) + 20
    left, right = 16.0, WIDTH - 70.0
    band = 42.0
    bottom = top + band * len(rows) + 6
    height = bottom + 56
    ymax, step = _nice_max(max(r.gbps for r in rows))

    def sx(gbps: float) -> float:
        return left + gbps / ymax * (right - left)

    svg = _header(title, subtitle, height, heads)
    tick = 0.0
    while tick <= ymax + 1e-9:
        x = sx(tick)
        svg.append(
            f'<line x1="{_num(x)}" y1="{_num(top)}" x2="{_num(x)}" y2="{_num(bottom)}" '
            'stroke="currentColor" stroke-opacity="0.15"/>'
        )
        svg.append(_text(x, bottom + 16, f"{tick:.0f}", 11, "middle"))
        tick += step
    svg.append(_text((left + right) / 2, bottom + 38, labels["_value"], 12, "middle"))
    copy = next((r for r in rows if r.reference), None)
    y = top
    baseline_index = 0
    for r in rows:
        if r.reference:
            color, name = COPY, labels["chart_copy"] if r.role == "copy" else r.name
        elif r.role == "kernel":
            color, name = KERNEL, r.name
        else:
            color, name = BASELINES[baseline_index % len(BASELINES)], r.name
            baseline_index += 1
        svg.append(_text(left, y + 13, name, 12))
        width = max(sx(r.gbps) - left, 1.0)
        svg.append(
            f'<rect x="{_num(left)}" y="{_num(y + 18)}" width="{_num(width)}" height="16" fill="{color}"/>'
        )
        svg.append(_text(left + width + 6, y + 31, f"{r.gbps:.0f}", 11))
        y += band
    if copy is not None:
        x = sx(copy.gbps)
        svg.append(
            f'<line x1="{_num(x)}" y1="{_num(top - 4)}" x2="{_num(x)}" y2="{_num(bottom)}" '
            f'stroke="{COPY}" stroke-width="1.5" stroke-dasharray="6 4"/>'
        )
    svg.append("</svg>")
    return "\n".join(svg)


def _y_axis(left, right, top, bottom, ymax, step, sy, title) -> list[str]:
    out = []
    tick = 0.0
    while tick <= ymax + 1e-9:
        y = sy(tick)
        out.append(
            f'<line x1="{_num(left)}" y1="{_num(y)}" x2="{_num(right)}" y2="{_num(y)}" '
            f'stroke="currentColor" stroke-opacity="{0.5 if tick == 0 else 0.15}"/>'
        )
        out.append(_text(left - 6, y + 4, f"{tick:.0f}", 11, "end"))
        tick += step
    mid = (top + bottom) / 2
    out.append(_text(16, mid, title, 12, "middle", f' transform="rotate(-90 16 {_num(mid)})"'))
    return out


def _common_name(names: list[str]) -> str:
    """'kernel.py' from 'kernel.py, BLOCK=128', 'kernel.py, BLOCK=256', ..."""
    if len(names) < 2:
        return ""
    prefix = re.sub(r"\d+$", "", os.path.commonprefix(names))
    return re.sub(r"\w+\s*=\s*$", "", prefix).strip(" ,;:(")
