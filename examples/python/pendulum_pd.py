"""A pendulum held at a target angle by a PD controller written in Python.

    python3 examples/python/pendulum_pd.py

The pendulum is built in Python (ModelBuilder): a 1 m, 1 kg rod on a pin, released 0.3 rad from
hanging. Every millisecond the controller reads the joint angle and rate (sim.q, sim.qd), sets the
pin's torque, and the simulator takes one step (dca, rk4). At rest, the controller's torque
balances gravity: kp (target - q) = m g L/2 sin(theta0 + q), which the script solves to compare.
"""

import math

import treedyn

m, L, g, theta0 = 1.0, 1.0, 9.81, 0.3
builder = treedyn.ModelBuilder("pendulum")
builder.gravity([0, -g, 0])
builder.body(
    "rod",
    mass=m,
    inertia=m * L**2 / 12,
    position=[0.5 * L * math.sin(theta0), -0.5 * L * math.cos(theta0), 0],
    orientation=[math.cos(theta0 / 2), 0, 0, math.sin(theta0 / 2)],  # quaternion w, x, y, z
    shape={"type": "cylinder", "radius": 0.02, "length": L, "axis": "y"},
)
builder.joint("pin", "revolute", "ground", "rod", location=[0, 0, 0], axis=[0, 0, 1])
model = builder.build()

kp, kd, target = 50.0, 10.0, 0.8  # N m/rad, N m s/rad, rad from the release angle
sim = treedyn.Simulator(model, "dca", integrator="rk4", dt=1e-3)
while sim.time < 6.0 - 1e-9:
    q, qd = sim.q[0], sim.qd[0]
    sim.set_joint_effort("pin", [kp * (target - q) - kd * qd])
    sim.step()

# The equilibrium the controller should settle at, by Newton's method.
q_eq = target
for _ in range(50):
    f = kp * (target - q_eq) - m * g * 0.5 * L * math.sin(theta0 + q_eq)
    q_eq -= f / (-kp - m * g * 0.5 * L * math.cos(theta0 + q_eq))

print(f"t = {sim.time:.3f} s after {sim.stats['steps']} steps")
print(f"angle {sim.q[0]:.9f} rad, static equilibrium {q_eq:.9f} rad, difference {abs(sim.q[0] - q_eq):.2e} rad")
print(f"angular rate {sim.qd[0]:.2e} rad/s")
