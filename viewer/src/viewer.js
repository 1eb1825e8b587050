// treedyn's viewer: one or several runs of one model (a `treedyn compare` folder), drawn with
// three.js from the model's shapes and the run's poses, with the run's time plots (uPlot) under a
// cursor that follows the playing time. Bundled with its libraries into one script
// (scripts/build-viewer.sh) that `treedyn view` embeds, with the data, in a self-contained
// viewer.html. The data: <script id="treedyn-data" type="application/json"> (python/treedyn/viewer.py
// writes it). window.treedyn is a small API for tests and for users' consoles.
import * as THREE from 'three';
import { OrbitControls } from 'three/examples/jsm/controls/OrbitControls.js';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

const RUN_COLOURS = [0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd, 0x8c564b, 0xe377c2, 0x7f7f7f];
const BODY_COLOURS = [0x4e79a7, 0xf28e2b, 0x59a14f, 0xe15759, 0x76b7b2, 0xedc948, 0xb07aa1, 0xff9da7, 0x9c755f];
const LOOP_COLOUR = 0xe0115f;
const errors = [];
window.addEventListener('error', (e) => errors.push(String(e.message)));

function decode(base64, Type) {
  const text = atob(base64);
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; ++i) bytes[i] = text.charCodeAt(i);  // no per-byte callback: 30 MB in well under a second
  return new Type(bytes.buffer);
}

/// The smallest value a log plot draws (smaller ones, round-off, are drawn at it).
const LOG_FLOOR = 1e-15;

/// An axis label: exponents for a log axis and for small numbers, which uPlot would round to 0.
function tick(v, log) {
  if (v == null) return '';
  if (log) return v.toExponential(0);
  if (v !== 0 && Math.abs(v) < 1e-3) return v.toExponential(1);
  return String(+v.toPrecision(6));
}

function hex(c) {
  return '#' + c.toString(16).padStart(6, '0');
}

/// The index of the last frame at or before t (times ascending).
function frameAt(times, t) {
  let lo = 0, hi = times.length - 1;
  if (t <= times[0]) return 0;
  if (t >= times[hi]) return hi;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (times[mid] <= t) lo = mid; else hi = mid;
  }
  return lo;
}

/// The geometry of a model shape (a body without one: a small sphere at its centre of mass).
function shapeGeometry(shape, scale, detail) {
  const along = (g, axis) => {  // three's cylinders and capsules run along y
    if (axis === 'x') g.rotateZ(-Math.PI / 2);
    if (axis === 'z' || axis === undefined) g.rotateX(Math.PI / 2);
    return g;
  };
  switch (shape && shape.type) {
    case 'box': return new THREE.BoxGeometry(...shape.size);
    case 'sphere': return new THREE.SphereGeometry(shape.radius, 24 * detail, 16 * detail);
    case 'cylinder': return along(new THREE.CylinderGeometry(shape.radius, shape.radius, shape.length, 24 * detail), shape.axis);
    case 'capsule': return along(new THREE.CapsuleGeometry(shape.radius, shape.length, 8 * detail, 16 * detail), shape.axis);
    default: return new THREE.SphereGeometry(0.03 * scale, Math.max(12 * detail, 6), Math.max(8 * detail, 4));
  }
}

function frameOf(f) {  // {position, orientation: {matrix}} -> Matrix4 (a frame in its body)
  const m = f.orientation.matrix;
  return new THREE.Matrix4().set(m[0][0], m[0][1], m[0][2], f.position[0], m[1][0], m[1][1], m[1][2], f.position[1],
    m[2][0], m[2][1], m[2][2], f.position[2], 0, 0, 0, 1);
}

/// Instances of one geometry and material, one per item; items[i] = {body, offset (Matrix4 in
/// the body's frame, or null)}. Many bodies or joints of one kind are then one draw call.
class Instances {
  constructor(scene, geometry, material, items) {
    this.items = items;
    this.mesh = new THREE.InstancedMesh(geometry, material, items.length);
    this.mesh.instanceMatrix.setUsage(THREE.DynamicDrawUsage);
    this.mesh.frustumCulled = false;
    scene.add(this.mesh);
  }

  update(poses) {  // poses[b]: the body's Matrix4
    const m = new THREE.Matrix4();
    this.items.forEach((item, i) => {
      this.mesh.setMatrixAt(i, item.offset ? m.multiplyMatrices(poses[item.body], item.offset) : poses[item.body]);
    });
    this.mesh.instanceMatrix.needsUpdate = true;
  }
}

class Viewer {
  constructor(data) {
    this.data = data;
    this.runs = data.runs.map((r) => ({
      ...r,
      times: decode(r.times, Float64Array),
      poses: decode(r.poses, Float32Array),
      visible: true,
    }));
    this.bodies = data.model.bodies;
    this.n = this.bodies.length;
    this.t = this.runs[0].times[0];
    this.tEnd = Math.max(...this.runs.map((r) => r.times[r.times.length - 1]));
    this.tStart = Math.min(...this.runs.map((r) => r.times[0]));
    this.playing = false;
    this.speed = 1;
    this.follow = -1;
    this.scale = data.scale;
    this.buildScene();
    this.buildControls();
    this.buildPlots();
    this.seek(this.t);
    this.lastFrame = null;
    this.fpsStamps = null;
    requestAnimationFrame((ms) => this.tick(ms));
  }

  buildScene() {
    const view = document.getElementById('view');
    // Software WebGL (SwiftShader, llvmpipe: a headless browser, a remote desktop): no
    // antialiasing, which costs it a third of its frame rate.
    const probe = document.createElement('canvas').getContext('webgl2');
    const info = probe && probe.getExtension('WEBGL_debug_renderer_info');
    const software = !info || /swiftshader|llvmpipe|software/i.test(probe.getParameter(info.UNMASKED_RENDERER_WEBGL));
    // Without WebGL (turned off, blocked, no GPU and no software fallback) three.js cannot draw:
    // the page says so in the view and keeps the controls and the plots, which need none.
    try {
      this.renderer = new THREE.WebGLRenderer({ antialias: !software });
      this.renderer.setPixelRatio(window.devicePixelRatio);
      view.appendChild(this.renderer.domElement);
    } catch (e) {
      this.renderer = null;
      const note = document.createElement('div');
      note.id = 'no-webgl';
      note.className = 'banner warning';
      note.textContent = `No 3-D view: this browser could not start WebGL (${e.message || e}). ` +
        'The plots below hold the whole run. To see the motion, turn on WebGL or hardware acceleration ' +
        "in the browser's settings, or open this file in another browser.";
      view.appendChild(note);
    }
    this.scene = new THREE.Scene();
    this.scene.background = new THREE.Color(0xf4f5f7);
    const g = new THREE.Vector3(...this.data.model.gravity);
    const up = g.lengthSq() > 0 ? g.clone().normalize().negate() : new THREE.Vector3(0, 0, 1);
    this.camera = new THREE.PerspectiveCamera(40, 1, 0.001 * this.scale, 1000 * this.scale);
    this.camera.up.copy(up);
    this.controls = new OrbitControls(this.camera, this.renderer ? this.renderer.domElement : view);
    const c = new THREE.Vector3(...this.data.centre);
    const side = new THREE.Vector3(1, 0.6, 0.8).normalize();
    if (Math.abs(side.dot(up)) > 0.9) side.set(0.6, 1, 0.8).normalize();
    this.camera.position.copy(c).addScaledVector(side, 1.7 * this.scale).addScaledVector(up, 0.5 * this.scale);
    this.controls.target.copy(c);
    this.controls.update();
    this.scene.add(new THREE.HemisphereLight(0xffffff, 0x8899aa, 1.6));
    const sun = new THREE.DirectionalLight(0xffffff, 1.4);
    sun.position.copy(up).multiplyScalar(5 * this.scale).add(new THREE.Vector3(2, 1, 3).multiplyScalar(this.scale));
    this.scene.add(sun);
    // The ground: a grid normal to gravity, below the model; gravity's arrow beside it.
    const grid = new THREE.GridHelper(4 * this.scale, 20, 0x999999, 0xcccccc);
    grid.quaternion.setFromUnitVectors(new THREE.Vector3(0, 1, 0), up);
    grid.position.copy(c).addScaledVector(up, -up.dot(c) + this.data.floor);
    this.scene.add(grid);
    if (g.lengthSq() > 0) {
      const from = grid.position.clone().addScaledVector(up, 0.6 * this.scale).add(new THREE.Vector3().crossVectors(up, side).multiplyScalar(1.5 * this.scale));
      this.scene.add(new THREE.ArrowHelper(up.clone().negate(), from, 0.5 * this.scale, 0x555555, 0.12 * this.scale, 0.06 * this.scale));
    }
    this.scene.add(new THREE.AxesHelper(0.3 * this.scale));
    const loops = new Set(this.data.model.loop_joints);
    const joints = this.data.model.joints
      .map((j) => ({ j, body: this.bodies.findIndex((b) => b.name === j.child) }))
      .filter((x) => x.body >= 0);
    // Fewer triangles for big models: software WebGL (a headless browser, a remote desktop) draws
    // about a million triangles a second on two cores.
    const detail = this.n > 100 ? 0.34 : 1;
    const sphere = new THREE.SphereGeometry(0.025 * this.scale, Math.max(16 * detail, 6), Math.max(10 * detail, 4));
    const axis = new THREE.CylinderGeometry(0.006 * this.scale, 0.006 * this.scale, 0.2 * this.scale, Math.max(8 * detail, 4)).rotateX(Math.PI / 2);
    const axial = (j) => ['revolute', 'prismatic', 'cylindrical', 'universal'].includes(j.type);
    this.poses = this.runs.map(() => this.bodies.map(() => new THREE.Matrix4()));
    this.drawn = this.runs.map((run, k) => {
      const several = this.runs.length > 1;
      const material = new THREE.MeshLambertMaterial({ transparent: several, opacity: several ? 0.75 : 1 });
      const byShape = new Map();  // bodies of the same shape: one InstancedMesh
      this.bodies.forEach((b, i) => {
        const key = JSON.stringify(b.shape || null);
        if (!byShape.has(key)) byShape.set(key, []);
        byShape.get(key).push({ body: i, offset: null });
      });
      const sets = [];
      for (const [key, items] of byShape) {
        const set = new Instances(this.scene, shapeGeometry(JSON.parse(key), this.scale, detail), material, items);
        items.forEach((item, i) => set.mesh.setColorAt(i, new THREE.Color(several ? RUN_COLOURS[k % RUN_COLOURS.length]
          : BODY_COLOURS[item.body % BODY_COLOURS.length])));
        sets.push(set);
      }
      if (byShape.has('null') && this.n <= 100) {  // bodies without a shape: their frames too (x red, y green, z blue)
        const items = byShape.get('null').map((x) => ({ body: x.body, offset: new THREE.Matrix4() }));
        const length = 0.15 * this.scale, r = 0.004 * this.scale;
        const arm = (rotate, colour) => {
          const g = new THREE.CylinderGeometry(r, r, length, 6).translate(0, length / 2, 0);
          rotate(g);
          sets.push(new Instances(this.scene, g, new THREE.MeshBasicMaterial({ color: colour }), items));
        };
        arm((g) => g.rotateZ(-Math.PI / 2), 0xd62728);
        arm(() => {}, 0x2ca02c);
        arm((g) => g.rotateX(Math.PI / 2), 0x1f77b4);
      }
      const marker = (loop) => new THREE.MeshLambertMaterial({ color: loop ? LOOP_COLOUR : 0x333333 });
      for (const loop of [false, true]) {  // big models: only the loop-closing joints marked
        if (!loop && this.n > 100) continue;
        const mine = joints.filter((x) => loops.has(x.j.name) === loop);
        const items = mine.map((x) => ({ body: x.body, offset: frameOf(x.j.child_frame) }));
        if (items.length) sets.push(new Instances(this.scene, loop ? sphere.clone().scale(1.4, 1.4, 1.4) : sphere, marker(loop), items));
        const axes = mine.filter((x) => axial(x.j)).map((x) => ({ body: x.body, offset: frameOf(x.j.child_frame) }));
        if (axes.length) sets.push(new Instances(this.scene, axis, marker(loop), axes));
      }
      return { sets, material, ended: false };
    });
    this.labels = this.bodies.map((b) => {
      const el = document.createElement('div');
      el.className = 'label';
      el.textContent = b.name;
      document.getElementById('labels').appendChild(el);
      return el;
    });
    new ResizeObserver(() => this.resize()).observe(view);
    this.resize();
  }

  resize() {
    const view = document.getElementById('view');
    const w = view.clientWidth, h = view.clientHeight;
    if (this.renderer) this.renderer.setSize(w, h);
    this.camera.aspect = w / Math.max(h, 1);
    this.camera.updateProjectionMatrix();
  }

  buildControls() {
    const $ = (id) => document.getElementById(id);
    this.slider = $('time');
    this.slider.min = this.tStart;
    this.slider.max = this.tEnd;
    this.slider.step = (this.tEnd - this.tStart) / 2000 || 1;
    this.slider.addEventListener('input', () => this.seek(parseFloat(this.slider.value)));
    $('play').addEventListener('click', () => this.setPlaying(!this.playing));
    $('back').addEventListener('click', () => this.stepFrames(-1));
    $('forward').addEventListener('click', () => this.stepFrames(1));
    $('speed').addEventListener('change', (e) => { this.speed = parseFloat(e.target.value); });
    $('show-labels').addEventListener('change', (e) => { $('labels').style.display = e.target.checked ? '' : 'none'; });
    if (!this.renderer) $('show-labels').disabled = true;  // nothing drawn to label
    const follow = $('follow');
    this.bodies.forEach((b, i) => follow.add(new Option(b.name, i)));
    follow.addEventListener('change', (e) => { this.follow = parseInt(e.target.value, 10); });
    window.addEventListener('keydown', (e) => {
      if (e.target.tagName === 'SELECT' || e.target.tagName === 'INPUT' && e.target.type !== 'range') return;
      if (e.key === ' ') { this.setPlaying(!this.playing); e.preventDefault(); }
      if (e.key === 'ArrowRight') this.stepFrames(1);
      if (e.key === 'ArrowLeft') this.stepFrames(-1);
    });
    const legend = $('legend');
    this.runs.forEach((run, k) => {
      const row = document.createElement('label');
      const box = document.createElement('input');
      box.type = 'checkbox';
      box.checked = true;
      box.addEventListener('change', () => { run.visible = box.checked; this.seek(this.t); });
      const swatch = document.createElement('span');
      swatch.className = 'swatch';
      swatch.style.background = this.runs.length > 1 ? hex(RUN_COLOURS[k % RUN_COLOURS.length]) : '#888';
      row.append(box, swatch, ` ${run.name}: ${run.status}`);
      if (run.status !== 'ok') row.className = 'bad';
      legend.appendChild(row);
    });
    const bad = this.runs.filter((r) => r.status !== 'ok');
    const banner = $('status');
    if (bad.length) {
      banner.className = 'banner ' + (bad.some((r) => r.status === 'failed') ? 'failed' : 'warning');
      banner.textContent = bad.map((r) => `${r.name}: ${r.status}` + (r.failure_time != null ? ` at t = ${r.failure_time} s` : '') +
        (r.message ? ` — ${r.message}` : '')).join(' · ');
    }
    if (this.data.notes.length) {
      const notes = $('notes');
      notes.textContent = this.data.notes.join(' · ');
      notes.style.display = '';
    }
  }

  buildPlots() {
    const self = this;
    const cursor = {
      hooks: {
        draw: [(u) => {  // the playing time and, where a run failed, its time
          const ctx = u.ctx;
          const line = (t, colour, width) => {
            const x = u.valToPos(t, 'x', true);
            if (!(x >= u.bbox.left && x <= u.bbox.left + u.bbox.width)) return;
            ctx.save();
            ctx.strokeStyle = colour;
            ctx.lineWidth = width;
            ctx.beginPath();
            ctx.moveTo(x, u.bbox.top);
            ctx.lineTo(x, u.bbox.top + u.bbox.height);
            ctx.stroke();
            ctx.restore();
          };
          for (const r of self.runs) if (r.failure_time != null) line(r.failure_time, '#d62728', 2 * devicePixelRatio);
          line(self.t, '#111', devicePixelRatio);
        }],
      },
    };
    this.plots = [];
    const holder = document.getElementById('plots');
    const width = () => Math.max(240, Math.floor(holder.clientWidth / Math.min(this.data.plots.length, 4)) - 10);
    for (const p of this.data.plots) {
      const el = document.createElement('div');
      el.className = 'plot';
      holder.appendChild(el);
      if (p.choices) {  // a joint coordinate the user picks
        const select = document.createElement('select');
        p.choices.forEach((c, i) => select.add(new Option(c.label, i)));
        el.appendChild(select);
        select.addEventListener('change', () => {
          const c = p.choices[select.selectedIndex];
          entry.plot.setData([entry.x, curve(c.y)]);
          entry.plot.series[1].label = c.label;
        });
      }
      const x = decode(p.x, Float64Array);
      // NaN: a gap; on a log axis 0 and below too, and values under LOG_FLOOR drawn at it (uPlot's
      // log ticks do not reach below ~1e-16: from 1e-26, a constraint error at round-off, its tick
      // loop never ends and throws RangeError)
      const curve = (y) => Array.from(decode(y, Float32Array), (v) => {
        if (!Number.isFinite(v)) return null;
        if (!p.log) return v;
        return v > 0 ? Math.max(v, LOG_FLOOR) : null;
      });
      const series = p.series.map((s, k) => ({
        label: s.label, stroke: hex(s.colour != null ? s.colour : RUN_COLOURS[k % RUN_COLOURS.length]), width: 1.5,
      }));
      const ys = p.choices ? [curve(p.choices[0].y)] : p.series.map((s) => curve(s.y));
      const entry = { title: p.title, x, ys };
      entry.plot = new uPlot({
        title: p.title, width: width(), height: 170, plugins: [cursor],
        scales: { x: { time: false }, y: p.log ? { distr: 3 } : {} },
        axes: [{ label: 't [s]', size: 36 },
          { label: p.unit, size: 64, values: (u, vals) => vals.map((v) => tick(v, p.log)) }],
        series: [{ label: 't' }, ...(p.choices ? [{ label: p.choices[0].label, stroke: hex(RUN_COLOURS[0]), width: 1.5 }] : series)],
      }, [x, ...ys], el);
      this.plots.push(entry);
    }
    new ResizeObserver(() => { for (const e of this.plots) e.plot.setSize({ width: width(), height: 170 }); }).observe(holder);
  }

  setPlaying(on) {
    this.playing = on;
    document.getElementById('play').textContent = on ? '❚❚' : '▶';
    if (on && this.t >= this.tEnd) this.seek(this.tStart);
  }

  stepFrames(k) {
    const times = this.runs[0].times;
    const i = frameAt(times, this.t + 1e-12 * Math.abs(this.t));
    this.setPlaying(false);
    this.seek(times[Math.max(0, Math.min(times.length - 1, i + k))]);
  }

  /// Poses every visible run at time t (between two kept frames: position linear, orientation
  /// slerp; at a kept frame: that frame's numbers).
  seek(t) {
    this.t = Math.min(Math.max(t, this.tStart), this.tEnd);
    const q0 = new THREE.Quaternion(), q1 = new THREE.Quaternion();
    const position = new THREE.Vector3(), unit = new THREE.Vector3(1, 1, 1);
    this.runs.forEach((run, k) => {
      const i = frameAt(run.times, this.t);
      const j = Math.min(i + 1, run.times.length - 1);
      const span = run.times[j] - run.times[i];
      const a = span > 0 ? Math.min(Math.max((this.t - run.times[i]) / span, 0), 1) : 0;
      const drawn = this.drawn[k];
      for (const set of drawn.sets) set.mesh.visible = run.visible;
      const ended = this.t > run.times[run.times.length - 1];
      if (ended !== drawn.ended) {  // a run that ended early: drawn as wire after its end
        drawn.ended = ended;
        drawn.material.wireframe = ended;
      }
      const p = run.poses;
      for (let b = 0; b < this.n; ++b) {
        const o = (i * this.n + b) * 7, o1 = (j * this.n + b) * 7;
        position.set(p[o] + a * (p[o1] - p[o]), p[o + 1] + a * (p[o1 + 1] - p[o + 1]), p[o + 2] + a * (p[o1 + 2] - p[o + 2]));
        q0.set(p[o + 4], p[o + 5], p[o + 6], p[o + 3]).normalize();
        q1.set(p[o1 + 4], p[o1 + 5], p[o1 + 6], p[o1 + 3]).normalize();
        this.poses[k][b].compose(position, q0.slerp(q1, a), unit);
      }
      for (const set of drawn.sets) set.update(this.poses[k]);
    });
    this.slider.value = this.t;
    document.getElementById('clock').textContent = `t = ${this.t.toFixed(3)} s`;
    this.plotsDirty = true;
  }

  tick(ms) {
    if (this.lastFrame !== null) {
      const dt = (ms - this.lastFrame) / 1000;
      if (this.fpsStamps) this.fpsStamps.push(ms);
      if (this.playing) {
        this.seek(this.t + dt * this.speed);
        if (this.t >= this.tEnd) this.setPlaying(false);
      }
    }
    this.lastFrame = ms;
    if (this.follow >= 0) {
      const shift = new THREE.Vector3().setFromMatrixPosition(this.poses[0][this.follow]).sub(this.controls.target);
      this.controls.target.add(shift);
      this.camera.position.add(shift);
    }
    this.controls.update();
    if (this.renderer) {
      this.renderer.render(this.scene, this.camera);
      if (document.getElementById('labels').style.display !== 'none') this.placeLabels();
    }
    if (this.plotsDirty && (!this.playing || ms - (this.plotsDrawn || 0) > 250)) {
      for (const e of this.plots) e.plot.redraw(false);
      this.plotsDirty = false;
      this.plotsDrawn = ms;
    }
    requestAnimationFrame((t) => this.tick(t));
  }

  placeLabels() {
    const view = document.getElementById('view');
    const v = new THREE.Vector3();
    this.labels.forEach((el, b) => {
      v.setFromMatrixPosition(this.poses[0][b]).project(this.camera);
      el.style.left = `${(v.x * 0.5 + 0.5) * view.clientWidth}px`;
      el.style.top = `${(-v.y * 0.5 + 0.5) * view.clientHeight}px`;
    });
  }
}

function start() {
  let data;
  try {
    data = JSON.parse(document.getElementById('treedyn-data').textContent);
  } catch (e) {
    document.getElementById('status').textContent = 'viewer.html holds no readable data: ' + e.message;
    return;
  }
  document.title = data.title;
  document.getElementById('title').textContent = data.title;
  const viewer = new Viewer(data);
  window.treedyn = {
    ready: true,
    errors,
    /// Whether the 3-D view draws (false: no WebGL; the page says so and shows the plots).
    webgl: viewer.renderer !== null,
    seek: (t) => viewer.seek(t),
    time: () => viewer.t,
    frameTimes: (run = 0) => Array.from(viewer.runs[run].times),
    runs: () => viewer.runs.map((r) => ({ name: r.name, status: r.status, visible: r.visible, frames: r.times.length })),
    setVisible: (run, on) => { viewer.runs[run].visible = on; viewer.seek(viewer.t); },
    /// Bodies the scene draws for a run: instances of its body meshes.
    bodyCount: (run = 0) => viewer.drawn[run].sets.filter((s) => s.items[0].offset === null).reduce((n, s) => n + s.mesh.count, 0),
    /// Each body's position as the scene holds it: read back from its instance's matrix.
    bodyPositions: (run = 0) => {
      const out = new Array(viewer.n);
      const m = new THREE.Matrix4();
      for (const set of viewer.drawn[run].sets.filter((s) => s.items[0].offset === null))
        set.items.forEach((item, i) => {
          set.mesh.getMatrixAt(i, m);
          const p = new THREE.Vector3().setFromMatrixPosition(m);
          out[item.body] = [p.x, p.y, p.z];
        });
      return out;
    },
    visibleBodies: () => viewer.drawn.map((d, k) => (d.sets.every((s) => s.mesh.visible) ? window.treedyn.bodyCount(k) : 0)),
    plots: () => viewer.plots.map((e) => ({ title: e.title, series: e.plot.series.slice(1).map((s, k) => ({ label: s.label, points: e.plot.data[k + 1].length, finite: Array.from(e.plot.data[k + 1]).filter(Number.isFinite).length })) })),
    play: (on = true) => viewer.setPlaying(on),
    /// Frames per second over the next `ms` milliseconds of playing (requestAnimationFrame times).
    measureFps: (ms = 2000) => new Promise((resolve) => {
      viewer.seek(viewer.tStart);
      viewer.setPlaying(true);
      const from = performance.now();
      viewer.fpsStamps = [];
      setTimeout(() => {
        const stamps = viewer.fpsStamps;
        viewer.fpsStamps = null;
        const span = (stamps[stamps.length - 1] - stamps[0]) / 1000;
        resolve({ frames: stamps.length, fps: (stamps.length - 1) / span, elapsed: (performance.now() - from) / 1000 });
      }, ms);
    }),
  };
}

start();
