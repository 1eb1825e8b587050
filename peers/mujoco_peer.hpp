// MuJoCo (Debian's libmujoco-dev, 2.2) as a peer engine, for the benchmark against it
// (bench/bench_mujoco.cpp) and the tests that it and treedyn compute the same dynamics
// (tests/import/test_import_mjcf.cpp). Header only: its users link MuJoCo themselves.
//
// chain_mjcf: paper 000's n-link spherical chain (treedyn::make_chain(n, JointType::Spherical))
// as MJCF. The same system as make_chain's: links named link1..linkN of 1 kg and unit central inertia,
// 1 m long along +x, each hung on a ball joint (joint1..jointN) at its left end, the first at the
// origin, gravity -9.81 y. Each MuJoCo body frame sits at its link's centre of mass with the
// link's axes, so MuJoCo's qpos0 is make_chain's straight initial pose. No geoms: nothing collides.
//
// MuJoCo 2.2's XML reader (TinyXML-2) refuses elements nested more than 100 deep, and an MJCF
// chain nests one <body> per link: at most kMaxMjcfChainLinks links (Debian 12's MuJoCo 2.2.2 has
// no model-editing API to build a longer one without XML).
#pragma once

#include <mujoco/mujoco.h>

#include <memory>
#include <stdexcept>
#include <string>

namespace treedyn::peers {

inline constexpr int kMaxMjcfChainLinks = 96;

inline std::string chain_mjcf(int n) {
  if (n < 1 || n > kMaxMjcfChainLinks)
    throw std::invalid_argument("chain_mjcf: " + std::to_string(n) + " links; MuJoCo 2.2's XML reader takes 1 to " +
                                std::to_string(kMaxMjcfChainLinks) + " (it nests at most 100 elements)");
  std::string text = "<mujoco model=\"chain" + std::to_string(n) + "\">\n  <option gravity=\"0 -9.81 0\"/>\n  <worldbody>\n";
  for (int i = 1; i <= n; ++i) {
    const std::string k = std::to_string(i);
    text += "<body name=\"link" + k + "\" pos=\"" + (i == 1 ? "0.5" : "1") + " 0 0\"><joint name=\"joint" + k +
            "\" type=\"ball\" pos=\"-0.5 0 0\"/><inertial pos=\"0 0 0\" mass=\"1\" diaginertia=\"1 1 1\"/>\n";
  }
  for (int i = 0; i < n; ++i) text += "</body>";
  text += "\n  </worldbody>\n</mujoco>\n";
  return text;
}

/// MuJoCo's humanoid.xml (humanoids = 1) or 22_humanoids.xml (22) with each ankle's two hinges
/// at one point and perpendicular: every ankle_x's pos="0 0 .04" axis="1 0 .5" made the
/// pos="0 0 .08" axis="1 0 0" of its ankle_y, so that treedyn imports each foot's hinges as one
/// universal joint (no connector body) and the two engines' models are the same. Throws
/// std::invalid_argument unless the text has two such ankles a humanoid.
inline std::string with_exact_ankles(std::string text, int humanoids) {
  const std::string from = "pos=\"0 0 .04\" axis=\"1 0 .5\"", to = "pos=\"0 0 .08\" axis=\"1 0 0\"";
  int replaced = 0;
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()), ++replaced)
    text.replace(at, from.size(), to);
  if (replaced != 2 * humanoids)
    throw std::invalid_argument("with_exact_ankles: expected " + std::to_string(2 * humanoids) + " ankles, found " +
                                std::to_string(replaced));
  return text;
}

using MjModelPtr = std::unique_ptr<mjModel, void (*)(mjModel*)>;
using MjDataPtr = std::unique_ptr<mjData, void (*)(mjData*)>;

/// MuJoCo's model of an MJCF file with what treedyn does not model switched off (contacts,
/// limits, passive forces, actuation, friction loss, armature), so that it and treedyn's import
/// of the file solve the same equations. Throws std::runtime_error with MuJoCo's message.
inline MjModelPtr mujoco_model(const std::string& path) {
  char error[1000] = "";
  MjModelPtr m(mj_loadXML(path.c_str(), nullptr, error, sizeof error), mj_deleteModel);
  if (!m) throw std::runtime_error("MuJoCo cannot load " + path + ": " + error);
  m->opt.disableflags |= mjDSBL_CONTACT | mjDSBL_LIMIT | mjDSBL_PASSIVE | mjDSBL_ACTUATION | mjDSBL_FRICTIONLOSS;
  for (int i = 0; i < m->nv; ++i) m->dof_armature[i] = 0.0;
  return m;
}

}  // namespace treedyn::peers
