"""Paper 000's four-bar: the crank's speed at t = 2 s over a grid of the coupler's and the
rocker's masses, run as a sweep on Dask (a local cluster of this machine's cores), and drawn as a
map with matplotlib.

    python3 examples/python/four_bar_sweep.py [OUTPUT.png] [COUNT]

COUNT values per mass (default 6, so 36 samples); the table is results/four_bar_sweep/sweep.csv
(run again, the sweep finds its samples done and only redraws). The masses start from 1 kg each
(models/four_bar.json); the mechanism is released from rest under gravity.
"""

import pathlib
import sys

import numpy as np

import treedyn

MODEL = pathlib.Path(__file__).resolve().parents[2] / "models" / "four_bar.json"
output = sys.argv[1] if len(sys.argv) > 1 else "four_bar_sweep.png"
count = int(sys.argv[2]) if len(sys.argv) > 2 else 6

if __name__ == "__main__":  # the local cluster's worker processes import this file again
    masses = np.linspace(0.5, 3.0, count)
    # ali3, paper 000's formulation for this mechanism, which passes its singular (aligned) position;
    # the reference formulation's bdf fails there for some masses (m_B = m_C = 2 kg at t = 0.89 s).
    table = treedyn.sweep(MODEL, {"bodies.B.mass": masses, "bodies.C.mass": masses}, "ali3", t_end=2.0,
                          outputs=["qd:joint1.angle"], output="results/four_bar_sweep")
    print(table)
    speed = table.column("qd:joint1.angle").reshape(count, count)  # rows: B's mass, columns: C's (grid order)
    i, j = np.unravel_index(np.nanargmax(np.abs(speed)), speed.shape)
    print(f"largest crank speed at 2 s: {speed[i, j]:.4f} rad/s with m_B = {masses[i]:.2f} kg, m_C = {masses[j]:.2f} kg")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4.8))
    image = ax.pcolormesh(masses, masses, speed, shading="nearest", cmap="viridis")
    fig.colorbar(image, ax=ax, label="crank speed at t = 2 s [rad/s]")
    ax.set_xlabel("rocker mass m_C [kg]")
    ax.set_ylabel("coupler mass m_B [kg]")
    ax.set_title(f"four-bar, {len(table)} samples ({table.counts()['ok']} ok)")
    fig.tight_layout()
    fig.savefig(output, dpi=120)
    print(f"wrote {output}")
