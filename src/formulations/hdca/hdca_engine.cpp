// HDCA's two stages; equations and symbols of include/treedyn/formulations/hdca.hpp.
#include "hdca_engine.hpp"

#include "planar_kinematics.hpp"
#include "spatial_kinematics.hpp"

namespace treedyn::hdca {

template <class Kin>
Engine<Kin>::Engine(const Model& model, const Topology& topology, const AssemblyTree& tree, const ExternalLoads* external,
                    const Threading& threading, InverseMethod inverse, bool merge_welds)
    : model_(model),
      kin_(model, topology, external),
      welded_(model, topology, Dim == 6 && merge_welds),
      merged_(welded_.any()),
      core_tree_(welded_, tree, threading.threads),
      core_(core_tree_.tree(), welded_.core_sides(kin_.sides()), inverse, dc::LeafBlocks::InRows,
            dc::BiasPasses::Never),  // full passes only
      parallel_(threading),
      loop_joints_(topology.loop_joints()),
      child_handle_(kin_.joints().tree().size(), -1),
      handle_offset_(static_cast<std::size_t>(welded_.leaf_count()) + 1, 0),
      rows_(static_cast<std::size_t>(welded_.core_joint_count())),
      p_(Eigen::Matrix<S, Eigen::Dynamic, 1>::Zero(kin_.joints().nv())),
      P_known_(model.bodies.size(), Vec::Zero()),
      V_(model.bodies.size(), Vec::Zero()),
      R_(model.bodies.size(), Vec::Zero()),
      A_(kin_.joints().tree().size(), Vec::Zero()),
      Hp_(kin_.joints().tree().size(), Vec::Zero()),
      rate_load_p_(loop_joints_.size(), Vec::Zero()),
      rate_load_c_(loop_joints_.size(), Vec::Zero()) {
  const auto& tree_joints = kin_.joints().tree();
  auto handle_in = [&](int body, int joint) {
    if (joint < 0) return -1;
    const int c = welded_.core_joint(joint);
    if (c < 0) return kMergedWeld;
    const int leaf = welded_.leaf_of(body);
    return leaf == kGround ? -1 : core_.handle_index(core_.leaf(leaf), c);  // a static body has no leaf
  };
  std::vector<std::vector<Incidence>> incidences(model.bodies.size());
  for (std::size_t k = 0; k < tree_joints.size(); ++k) {
    const TreeJoint& t = tree_joints[k];
    const int kk = static_cast<int>(k);
    const int child_handle = handle_in(t.child, t.joint);
    child_handle_[k] = std::max(child_handle, -1);  // what joint_rate reads: a merged weld has no velocity
    links_.push_back({t.parent, t.child, t.v_offset, t.nv});
    incidences[static_cast<std::size_t>(t.child)].push_back({kk, t.child, S(1), child_handle});
    if (t.parent != kGround) incidences[static_cast<std::size_t>(t.parent)].push_back({kk, t.child, S(-1), handle_in(t.parent, t.joint)});
  }
  std::vector<std::vector<LoopEnd>> loop_ends(model.bodies.size());
  for (std::size_t i = 0; i < loop_joints_.size(); ++i) {
    const Joint& joint = model.joints[static_cast<std::size_t>(loop_joints_[i])];
    if (joint.parent != kGround) loop_ends[static_cast<std::size_t>(joint.parent)].push_back({static_cast<int>(i), false});
    loop_ends[static_cast<std::size_t>(joint.child)].push_back({static_cast<int>(i), true});
  }
  flatten(incidences, incidences_, incidence_offset_);
  flatten(loop_ends, loop_ends_, loop_end_offset_);
  const int leaves = static_cast<int>(handle_offset_.size()) - 1;
  for (int b = 0; b < leaves; ++b)
    handle_offset_[static_cast<std::size_t>(b) + 1] = handle_offset_[static_cast<std::size_t>(b)] + core_.leaf(b).size();
  handle_l_.assign(static_cast<std::size_t>(handle_offset_.back()), Point::Zero());
  handle_joint_.reserve(handle_l_.size());
  for (int b = 0; b < leaves; ++b)
    for (const int j : core_.leaf(b).handles())
      handle_joint_.push_back(welded_.model_joint(j));
  handle_load_.assign(static_cast<std::size_t>(handle_offset_.back()), Vec::Zero());
  if (merged_) make_groups(topology);
}

/// The welded groups' set-up: the tree joint that places each group's root, and each member's
/// kept joints' handle slots (weld_forces reads their loads).
template <class Kin>
void Engine<Kin>::make_groups(const Topology& topology) {
  const auto groups = static_cast<std::size_t>(welded_.count());
  group_com_.assign(groups, Point::Zero());
  group_inverse_inertia_.resize(groups);
  group_P_.assign(groups, Vec::Zero());
  root_joint_ = welded_.root_tree_joints(kin_.joints());
  member_slot_offset_.assign(model_.bodies.size() + 1, 0);
  for (int b = 0; b < model_.body_count(); ++b) {
    const int g = welded_.of(b);
    if (g != kGround && welded_.members(g).size() > 1)
      for (int j : topology.joints_of(b))
        if (const int c = welded_.core_joint(j); c >= 0)
          if (const int h = core_.handle_index(core_.leaf(g), c); h >= 0)
            member_slots_.push_back(handle_offset_[static_cast<std::size_t>(g)] + h);
    member_slot_offset_[static_cast<std::size_t>(b) + 1] = static_cast<int>(member_slots_.size());
  }
  side_force_.assign(model_.bodies.size(), Point::Zero());
  weld_force_.assign(kin_.joints().tree().size(), Point::Zero());
}

/// One array of every body's lists, in the bodies' order and each list's own; offset[b] is where
/// body b's starts (offset has one entry more than per_body).
template <class T>
static void flatten(const std::vector<std::vector<T>>& per_body, std::vector<T>& all, std::vector<int>& offset) {
  offset.assign(per_body.size() + 1, 0);
  for (std::size_t b = 0; b < per_body.size(); ++b)
    offset[b + 1] = offset[b] + static_cast<int>(per_body[b].size());
  all.clear();
  all.reserve(static_cast<std::size_t>(offset.back()));
  for (const auto& list : per_body) all.insert(all.end(), list.begin(), list.end());
}

template <class Kin>
std::span<typename Engine<Kin>::Point> Engine<Kin>::handles_of(int b) {
  const auto from = static_cast<std::size_t>(handle_offset_[static_cast<std::size_t>(b)]);
  const auto to = static_cast<std::size_t>(handle_offset_[static_cast<std::size_t>(b) + 1]);
  return {handle_l_.data() + from, to - from};
}

template <class Kin>
typename Engine<Kin>::Point Engine<Kin>::handle_point(int joint) const {
  const int k = kin_.tree_index(joint);
  return k >= 0 ? kin_.tree_point(k) : kin_.loop_point(joint);
}

template <class Kin>
void Engine<Kin>::accumulate_outboard(std::vector<Vec>& w, std::vector<Vec>& out) {
  // Children before parents (reverse tree order): out_k = S(o_k <- c) (w_c + sum of c's children's
  // out), w_c summed in place (no copy of w: one sweep less over the bodies).
  for (auto k = static_cast<int>(kin_.joints().tree().size()); k-- > 0;) accumulate_joint(k, w, out);
}

template <class Kin>
void Engine<Kin>::accumulate_joint(int k, std::vector<Vec>& w, std::vector<Vec>& out) {
  const TreeJoint& t = kin_.joints().tree()[static_cast<std::size_t>(k)];
  const Point& o = kin_.tree_point(k);
  out[static_cast<std::size_t>(k)] = G::shift_load(w[static_cast<std::size_t>(t.child)], kin_.com(t.child) - o);
  if (t.parent != kGround) G::add_shifted_load(w[static_cast<std::size_t>(t.parent)], out[static_cast<std::size_t>(k)], o - kin_.com(t.parent));
}

template <class Kin>
void Engine<Kin>::momenta(const Eigen::Ref<const Eigen::VectorXd>& q, const Eigen::Ref<const Eigen::VectorXd>& v,
                          Eigen::Ref<Eigen::VectorXd> p) {
  kin_.place(q, parallel_);
  const auto& tree_joints = kin_.joints().tree();
  for (std::size_t k = 0; k < tree_joints.size(); ++k) {  // twists from joint velocities, root to leaves
    const TreeJoint& t = tree_joints[k];
    const Point& o = kin_.tree_point(static_cast<int>(k));
    Vec V_o = kin_.H(static_cast<int>(k)) * v.segment(t.v_offset, t.nv).template cast<S>();
    if (t.parent != kGround) V_o += G::shift_twist(V_[static_cast<std::size_t>(t.parent)], o - kin_.com(t.parent));
    V_[static_cast<std::size_t>(t.child)] = G::shift_twist(V_o, kin_.com(t.child) - o);
  }
  for (int b = 0; b < model_.body_count(); ++b)
    R_[static_cast<std::size_t>(b)] = kin_.momentum(b, V_[static_cast<std::size_t>(b)]);
  accumulate_outboard(R_, A_);
  local_inertia_.resize(kin_.joints().nv());
  for (std::size_t k = 0; k < tree_joints.size(); ++k) {
    const TreeJoint& t = tree_joints[k];
    const auto& H = kin_.H(static_cast<int>(k));
    p.segment(t.v_offset, t.nv) = (H.transpose() * A_[k]).template cast<double>();
    const Point d = kin_.com(t.child) - kin_.tree_point(static_cast<int>(k));
    for (int c = 0; c < t.nv; ++c) {  // h' M_c(o) h: the child's momentum at o for the unit twist h
      const Vec h = H.col(c);
      const Vec P_o = G::shift_load(kin_.momentum(t.child, G::shift_twist(h, d)), d);
      local_inertia_(t.v_offset + c) = double(h.dot(P_o));
    }
  }
}

// First stage ------------------------------------------------------------------------------------

template <class Kin>
void Engine<Kin>::velocities(const Eigen::Ref<const Eigen::VectorXd>& q, const Eigen::Ref<const Eigen::VectorXd>& p,
                             Eigen::Ref<Eigen::VectorXd> v, StageTimer* timer) {
  start(timer);
  p_ = p.template cast<S>();
  // A tree joint's rows and H p as soon as it is placed (one sweep over its H, D), on the threads
  // that follow the placing one; the loop-closing joints' once every body is placed.
  kin_.place(q, parallel_, [&](int k) {
    // Rows for a model joint (a virtual root has none, a merged weld none in the core); H p for
    // every tree joint, a floating sub-system's virtual free root included.
    if (const int j = kin_.joints().tree()[static_cast<std::size_t>(k)].joint; j >= 0 && (!merged_ || welded_.core_joint(j) >= 0)) joint_rows(j);
    joint_momentum(k);
  });
  mark(timer, 0);
  parallel_.for_each(static_cast<int>(loop_joints_.size()), [&](int i) { joint_rows(loop_joints_[static_cast<std::size_t>(i)]); });
  parallel_.for_each(model_.body_count(), [&](int b) { known_momentum(b); });
  mark(timer, 1);
  core_.assemble(rows_, parallel_, [&](int b) { leaf_coefficients(b); });
  mark(timer, 2);
  core_.connect_base(rows_);
  mark(timer, 3);
  core_.disassemble(rows_, parallel_, [&](int b) { body_twist(b); });
  if (merged_) weld_forces();
  mark(timer, 4);
  parallel_.for_each(static_cast<int>(kin_.joints().tree().size()), [&](int k) { joint_velocity(k, v); });
  mark(timer, 5);
}

template <class Kin>
void Engine<Kin>::joint_momentum(int k) {
  const Link& t = links_[static_cast<std::size_t>(k)];
  Hp_[static_cast<std::size_t>(k)] = subspace_times<Vec>(kin_.H(k), t.nv, p_.segment(t.v_offset, t.nv));
}

/// The momentum the canonical momenta bring to a body, at its centre of mass: P = sum over its
/// tree joints of +-S(l_k) H_k p_k (paper 001 Eq. 10 with sigma left to the solve; paper 004
/// Eqs. 17-18), and the offsets l_h of its handles.
template <class Kin>
void Engine<Kin>::known_momentum(int b) {
  const Point& r = kin_.com(b);
  typename G::Load P;
  for (const Incidence& x : incidences_of(b)) G::add_shifted_load(P, x.sign, Hp_[static_cast<std::size_t>(x.k)], kin_.tree_point(x.k) - r);
  G::store(P, P_known_[static_cast<std::size_t>(b)]);
  if (merged_) return;  // the leaves' arms: group_coefficients
  const std::span<Point> l = handles_of(b);
  const int* joint = handle_joint_.data() + handle_offset_[static_cast<std::size_t>(b)];
  for (std::size_t h = 0; h < l.size(); ++h) l[h] = handle_point(joint[h]) - r;
}

/// A tree joint: D' (V_c(o) - V_p(o)) = 0 (paper 001 Eq. 24); a loop-closing joint: its velocity
/// constraint at its handle.
template <class Kin>
void Engine<Kin>::joint_rows(int j) {
  const int k = kin_.tree_index(j);
  Rows& rows = rows_[static_cast<std::size_t>(merged_ ? welded_.core_joint(j) : j)];
  if (k < 0) {
    rows = kin_.loop_rows(j);
    return;
  }
  // A spatial joint whose D is [I; 0] at every state (spherical, fixed) keeps its unit rows
  // without D's entries compared each pass, as dca's tree_rows does.
  rows.set_tree_rows(kin_.D(k), Vec::RowsAtCompileTime == 6 && kin_.joints().tree()[static_cast<std::size_t>(k)].unit_constraints);
}

/// xi_hk = S(l_h)' M^-1 S(l_k) and xi_h0 = S(l_h)' M^-1 P (paper 001 Eqs. 15-16, paper 004
/// Eqs. 13-18), of a body or a welded group.
template <class Kin>
void Engine<Kin>::leaf_coefficients(int b) {
  if (!merged_) return leaf_in(b, kin_.inverse_inertia(b), P_known_[static_cast<std::size_t>(b)]);
  group_coefficients(b);
  const int body = welded_.body_of_leaf(b);
  if (body >= 0) return leaf_in(b, kin_.inverse_inertia(body), P_known_[static_cast<std::size_t>(body)]);
  leaf_in(b, group_inverse_inertia_[static_cast<std::size_t>(b)], group_P_[static_cast<std::size_t>(b)]);
}

template <class Kin>
[[gnu::always_inline]] inline void Engine<Kin>::leaf_in(int b, const typename G::InverseInertia& Mi, const Vec& P) {
  auto& leaf = core_.leaf(b);
  const std::span<Point> l = handles_of(b);
  G::mobility(Mi, l, rows_, leaf);
  const Vec V0 = G::apply(Mi, P);
  for (std::size_t h = 0; h < l.size(); ++h) core_.set_leaf_bias(leaf, static_cast<int>(h), G::shift_twist(V0, l[h]), rows_);
}

/// Leaf g's handle arms l_h from its centre of mass; for a group of several bodies, that centre
/// r = r_root + A_root c, M^-1 (J^-1 from the root's rotation) and P = the members' known momenta
/// moved to r.
template <class Kin>
void Engine<Kin>::group_coefficients(int g) {
  const int body = welded_.body_of_leaf(g);
  Point r = body >= 0 ? kin_.com(body) : Point::Zero();
  if constexpr (Dim == 6) {
    if (body < 0) {
      const auto gg = static_cast<std::size_t>(g);
      const Mat3& A = kin_.motions().child_rotation(root_joint_[gg]);
      const PrincipalInertia& J = welded_.inertia(g);
      r = kin_.com(welded_.root(g)) + (A * welded_.centre(g)).template cast<S>();
      group_com_[gg] = r;
      group_inverse_inertia_[gg].inverse_mass = S(1.0 / welded_.mass(g));
      group_inverse_inertia_[gg].J_inverse = J.inverse(J.axes(A)).template cast<S>();
      typename G::Load P;
      for (int m : welded_.members(g)) G::add_shifted_load(P, P_known_[static_cast<std::size_t>(m)], kin_.com(m) - r);
      G::store(P, group_P_[gg]);
    }
  }
  const std::span<Point> l = handles_of(g);
  const int* joint = handle_joint_.data() + handle_offset_[static_cast<std::size_t>(g)];
  for (std::size_t h = 0; h < l.size(); ++h) l[h] = handle_point(joint[h]) - r;
}

/// V = M^-1 (P + sum_h S(l_h) T_h); a welded group's members' twists from its.
template <class Kin>
void Engine<Kin>::body_twist(int b) {
  if (!merged_) return leaf_twist(b, kin_.inverse_inertia(b), P_known_[static_cast<std::size_t>(b)], V_[static_cast<std::size_t>(b)]);
  if (const int body = welded_.body_of_leaf(b); body >= 0)
    return leaf_twist(b, kin_.inverse_inertia(body), P_known_[static_cast<std::size_t>(body)], V_[static_cast<std::size_t>(body)]);
  Vec V;
  leaf_twist(b, group_inverse_inertia_[static_cast<std::size_t>(b)], group_P_[static_cast<std::size_t>(b)], V);
  for (int m : welded_.members(b)) V_[static_cast<std::size_t>(m)] = G::shift_twist(V, kin_.com(m) - group_com_[static_cast<std::size_t>(b)]);
}

template <class Kin>
[[gnu::always_inline]] inline void Engine<Kin>::leaf_twist(int b, const typename G::InverseInertia& Mi, const Vec& P_known, Vec& V) {
  const auto& leaf = core_.leaf(b);
  const std::span<Point> l = handles_of(b);
  typename G::Load P = G::halves(P_known);
  Vec* load = handle_load_.data() + handle_offset_[static_cast<std::size_t>(b)];  // kept for the second stage
  for (std::size_t h = 0; h < l.size(); ++h) {
    core_.load_into(leaf, static_cast<int>(h), rows_, load[h]);
    G::add_shifted_load(P, load[h], l[h]);
  }
  G::apply(Mi, P, V);
}

/// A merged weld's force on its tree child: what the bodies on the child's side need beyond their
/// known momenta and their kept joints' impulses, sum_i (m_i v_i - P_i - sum_h T_h) (the force half
/// of M V = P + sum_h S(l_h) T_h, paper 001 Eq. 10), summed up the welds from the lowest. The second
/// stage reads it where a joint's load moves with its point (momentum_residual); a weld has no
/// velocity of its own, so nothing reads its moment.
template <class Kin>
void Engine<Kin>::weld_forces() {
  constexpr int F = Point::RowsAtCompileTime;
  for (int g = 0; g < welded_.count(); ++g)
    if (welded_.members(g).size() > 1)
      for (int b : welded_.members(g)) {
        const auto bb = static_cast<std::size_t>(b);
        Point f = kin_.momentum(b, V_[bb]).template head<F>() - P_known_[bb].template head<F>();
        for (int i = member_slot_offset_[bb]; i < member_slot_offset_[bb + 1]; ++i)
          f -= handle_load_[static_cast<std::size_t>(member_slots_[static_cast<std::size_t>(i)])].template head<F>();
        side_force_[bb] = f;
      }
  for (const jc::WeldedBodies::Weld& w : welded_.welds()) {  // the lowest first
    if (welded_.of(w.child) == kGround) continue;  // static: nothing moves, nothing reads it
    const auto k = static_cast<std::size_t>(kin_.tree_index(w.joint));
    weld_force_[k] = side_force_[static_cast<std::size_t>(w.child)];
    side_force_[static_cast<std::size_t>(w.parent)] += weld_force_[k];
  }
}

/// qdot = H' (V_c(o) - V_p(o)) (paper 001 Eq. 23, paper 004 Eq. 49).
template <class Kin>
void Engine<Kin>::joint_velocity(int k, Eigen::Ref<Eigen::VectorXd> v) const {
  const Link& t = links_[static_cast<std::size_t>(k)];
  const Point& o = kin_.tree_point(k);
  Vec V_rel = G::shift_twist(V_[static_cast<std::size_t>(t.child)], o - kin_.com(t.child));
  if (t.parent != kGround) G::sub_shifted_twist(V_rel, V_[static_cast<std::size_t>(t.parent)], o - kin_.com(t.parent));
  subspace_project(kin_.H(k), t.nv, V_rel, v.segment(t.v_offset, t.nv));
}

// Second stage -----------------------------------------------------------------------------------

template <class Kin>
typename Engine<Kin>::Vec Engine<Kin>::tree_load(const Incidence& x, int b) const {
  Vec L = x.sign * Hp_[static_cast<std::size_t>(x.k)];
  if (x.handle >= 0) L += handle_load_[static_cast<std::size_t>(handle_offset_[static_cast<std::size_t>(merged_ ? welded_.leaf_of(b) : b)] + x.handle)];
  return L;
}

template <class Kin>
[[gnu::always_inline]] inline typename Engine<Kin>::Point Engine<Kin>::tree_force(const Incidence& x, int b) const {
  Point f = x.sign * Hp_[static_cast<std::size_t>(x.k)].template head<Point::RowsAtCompileTime>();
  if (x.handle >= 0)
    f += handle_load_[static_cast<std::size_t>(handle_offset_[static_cast<std::size_t>(merged_ ? welded_.leaf_of(b) : b)] + x.handle)]
             .template head<Point::RowsAtCompileTime>();
  else if (x.handle == kMergedWeld)
    f += x.sign * weld_force_[static_cast<std::size_t>(x.k)];
  return f;
}

/// R_b = Q_b - sum_k Sdot(l_k) L_k - sum_c Jdot_c' sigma_c: what is left of d/dt (M V) = Q + F
/// once the rates of the joint loads are taken out (hdca.hpp, "second stage").
template <class Kin>
void Engine<Kin>::momentum_residual(int b) {
  const Vec& V = V_[static_cast<std::size_t>(b)];
  typename G::Load R = G::halves(kin_.applied(b));
  const Point v = G::point_velocity(V, Point::Zero());
  for (const Incidence& x : incidences_of(b)) {
    const Point& o = kin_.tree_point(x.k);  // moves with the joint's child
    const Point o_dot = G::point_velocity(V_[static_cast<std::size_t>(x.child)], o - kin_.com(x.child));
    G::sub_shift_rate(R, o_dot - v, tree_force(x, b));
  }
  Vec& out = R_[static_cast<std::size_t>(b)];
  G::store(R, out);
  for (const LoopEnd& e : loop_ends_of(b))
    out -= e.child ? rate_load_c_[static_cast<std::size_t>(e.slot)] : rate_load_p_[static_cast<std::size_t>(e.slot)];
}

template <class Kin>
void Engine<Kin>::momentum_rates(double t, Eigen::Ref<Eigen::VectorXd> pdot, StageTimer* timer) {
  start(timer);
  kin_.move(t, V_);
  for (std::size_t i = 0; i < loop_joints_.size(); ++i) {
    const int j = loop_joints_[i];
    kin_.loop_rate_loads(j, core_.multiplier(welded_.core_joint(j)), rate_load_p_[i], rate_load_c_[i]);
  }
  parallel_.for_each(model_.body_count(), [&](int b) { momentum_residual(b); });
  // Articulated loads (paper 001 Eqs. 70-76), summed in reverse tree order, and each joint's rate
  // once its A_k is summed: on one thread in the same sweep (what a rate reads is still in
  // cache), on several on the threads that follow the summing one (Parallel::lead_and_follow).
  const auto joints = static_cast<int>(kin_.joints().tree().size());
  parallel_.lead_and_follow(joints, [&](int i) { accumulate_joint(joints - 1 - i, R_, A_); },
                            [&](int i) { joint_rate(joints - 1 - i, pdot); });
  mark(timer, 6);
}

/// pdot_k = Hdot' Pbar + H' A, Pbar = H p + D sigma (paper 001 Eq. 77), after A_k is summed.
template <class Kin>
void Engine<Kin>::joint_rate(int k, Eigen::Ref<Eigen::VectorXd> pdot) const {
  const TreeJoint& tj = kin_.joints().tree()[static_cast<std::size_t>(k)];
  const Vec P_bar = tree_load({k, tj.child, S(1), child_handle_[static_cast<std::size_t>(k)]}, tj.child);
  const auto& H = kin_.H(k);
  const Vec& A = A_[static_cast<std::size_t>(k)];
  kin_.Hdot_transpose_times(k, P_bar, V_, pdot.segment(tj.v_offset, tj.nv));
  for (int c = 0; c < tj.nv; ++c) pdot(tj.v_offset + c) += H.col(c).dot(A);
}

template class Engine<SpatialKinematics<double>>;
template class Engine<SpatialKinematics<float>>;
template class Engine<PlanarKinematics<double>>;
template class Engine<PlanarKinematics<float>>;

}  // namespace treedyn::hdca
