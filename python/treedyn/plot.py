"""Figures of runs with matplotlib (optional: Debian's python3-matplotlib).

    import treedyn.plot
    fig = treedyn.plot.run(result, q=["joint1.angle"])      # energy, drift, constraint errors, q
    fig = treedyn.plot.deviation({"dca": a, "ali3": b}, reference)
    fig.savefig("run.png")

Each function returns a matplotlib Figure and draws nothing on screen by itself; it uses whatever
backend matplotlib is set to (set MPLBACKEND=Agg where there is no display).
"""

from __future__ import annotations

from typing import Dict, Optional, Sequence

import numpy as np

#: y-axis label of each per-sample array of a Result.
LABELS = {
    "kinetic_energy": "kinetic energy [J]",
    "potential_energy": "potential energy [J]",
    "total_energy": "total energy [J]",
    "work_nonconservative": "work of non-conservative loads [J]",
    "energy_drift": "energy drift [J]",
    "position_error": "position constraint error",
    "velocity_error": "velocity constraint error",
    "acceleration_error": "acceleration constraint error",
}
#: Drawn on a logarithmic axis (errors span decades).
LOG_SCALE = {"position_error", "velocity_error", "acceleration_error"}


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as e:  # pragma: no cover - depends on the machine
        raise ImportError("treedyn.plot needs matplotlib (Debian: apt-get install python3-matplotlib)") from e
    return plt


def run(result, quantities: Sequence[str] = ("total_energy", "energy_drift", "position_error"),
        q: Optional[Sequence[str]] = None, title: Optional[str] = None):
    """One panel per quantity of `result` (names of its per-sample arrays, see LABELS) and, with
    `q`, one panel of the named joint coordinates (Result.q_names), all against time. A run that
    failed or was interrupted has its last time marked in every panel."""
    unknown = [name for name in quantities if name not in LABELS]
    if unknown:
        raise ValueError(f"plot.run: unknown quantity {unknown[0]!r}; one of {', '.join(LABELS)}")
    columns = []
    for name in q or []:
        if name not in result.q_names:
            raise ValueError(f"plot.run: the run has no joint coordinate {name!r}; it has {', '.join(result.q_names)}")
        columns.append(result.q_names.index(name))
    plt = _pyplot()
    panels = len(quantities) + (1 if columns else 0)
    fig, axes = plt.subplots(panels, 1, sharex=True, figsize=(7, 2.2 * panels + 0.6), squeeze=False)
    axes = axes[:, 0]
    for ax, name in zip(axes, quantities):
        values = np.asarray(getattr(result, name))
        if name in LOG_SCALE:
            ax.semilogy(result.t, np.maximum(np.abs(values), 1e-18))
        else:
            ax.plot(result.t, values)
        ax.set_ylabel(LABELS[name])
    if columns:
        ax = axes[-1]
        for name, c in zip(q, columns):
            ax.plot(result.t, result.q[:, c], label=name)
        ax.set_ylabel("joint coordinates")
        ax.legend(loc="best")
    if result.status != "ok" and len(result.t):
        for ax in axes:
            ax.axvline(result.t[-1], color="red", linestyle="--")
        axes[0].annotate(f"{result.status}: {result.message}"[:90], xy=(0.01, 0.98), xycoords="axes fraction",
                         va="top", color="red", fontsize=8)
    axes[-1].set_xlabel("t [s]")
    summary = result.summary
    fig.suptitle(title or f"{summary.get('model', '')}: {summary.get('formulation', '')} "
                 f"({summary.get('integrator', '')}), {result.status}")
    fig.tight_layout()
    return fig


def deviation(runs: Dict[str, object], reference, title: Optional[str] = None):
    """The largest body position deviation of each run from `reference` at their common samples
    (runs sampled at the same times, as simulate with one dt gives), on a log axis, one line per
    run; a run that stopped early ends where it stopped."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    for name, r in runs.items():
        k = min(len(r.t), len(reference.t))
        if k and not np.allclose(r.t[:k], reference.t[:k], rtol=1e-12, atol=1e-12):
            raise ValueError(f"plot.deviation: {name} is not sampled at the reference's times")
        d = np.linalg.norm(r.poses[:k, :, :3] - reference.poses[:k, :, :3], axis=2).max(axis=1)
        ax.semilogy(r.t[:k], np.maximum(d, 1e-16), label=f"{name} ({r.status})" if r.status != "ok" else name)
    ax.set_xlabel("t [s]")
    ax.set_ylabel("largest body position deviation [m]")
    ax.set_title(title or "deviation from the reference")
    ax.legend()
    fig.tight_layout()
    return fig
