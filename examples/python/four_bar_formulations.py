"""Paper 000's four-bar under every formulation, and a figure of how far each one is from the
reference formulation over time.

    python3 examples/python/four_bar_formulations.py [OUTPUT.png]

Each formulation runs at its paper's settings (treedyn.compare picks them, as `treedyn compare`
does); each run's position deviation from the reference is recomputed here from the runs'
trajectories at common sample times and drawn with matplotlib.
"""

import pathlib
import sys

import treedyn

MODEL = pathlib.Path(__file__).resolve().parents[2] / "models" / "four_bar.json"
output = sys.argv[1] if len(sys.argv) > 1 else "four_bar_formulations.png"
model = treedyn.load_model(MODEL)
t_end = 5.0

table = treedyn.compare(model, t_end=t_end, as_dataframe=False)
print(f"{'formulation':16}{'status':10}{'deviation [m]':>15}{'wall [s]':>10}")
for row in table:
    deviation = row["position_deviation_m"]
    print(f"{row['formulation']:16}{row['status']:10}{deviation if deviation is not None else float('nan'):15.3e}"
          f"{row['wall_s'] if row['wall_s'] is not None else float('nan'):10.4f}")

# The same deviations over time, from the runs themselves.
settings = {
    "reference": {},
    "dca": {"integrator": "dopri5"},
    "hdca": {"integrator": "dopri5"},
    "ali3": {"alpha": 1e6},
    "half-implicit": {},
    "fully-implicit": {},
}
reference = treedyn.simulate(model, "reference", t_end=t_end, dt=0.01)
import matplotlib

matplotlib.use("Agg")
import treedyn.plot

runs = {}
for name, options in settings.items():
    if name == "reference":
        continue
    try:  # the model file's step, 0.01 s, for every method (as compare uses it)
        runs[name] = treedyn.simulate(model, name, t_end=t_end, dt=0.01, **options)
    except treedyn.SimulationFailed as failure:
        runs[name] = failure.result
        print(f"{name}: {failure}")
fig = treedyn.plot.deviation(runs, reference, title="four-bar (paper 000): every formulation against the reference")
fig.savefig(output, dpi=120)
print(f"wrote {output}")
