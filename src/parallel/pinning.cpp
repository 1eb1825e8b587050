#include <omp.h>
#include <pthread.h>
#include <sched.h>

#include <cstdlib>
#include <mutex>
#include <vector>

#include "treedyn/parallel.hpp"

namespace treedyn {

std::vector<int> allowed_cpus() {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return {};
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  return cpus;
}

namespace {

std::mutex pinning_mutex;
bool caller_mask_saved = false;  // the process's mask before pin_threads pinned the caller
cpu_set_t caller_mask;
int caller_cpu = 0;

}  // namespace

void pin_threads(int threads) {
  static int pinned = 1;  // largest team already pinned
  std::lock_guard<std::mutex> lock(pinning_mutex);
  if (threads <= pinned || std::getenv("OMP_PROC_BIND") != nullptr) return;
  const std::vector<int> cpus = allowed_cpus();
  if (cpus.size() < 2) return;
  if (!caller_mask_saved && sched_getaffinity(0, sizeof caller_mask, &caller_mask) == 0) {
    caller_mask_saved = true;
    caller_cpu = cpus[0];
  }
#pragma omp parallel num_threads(threads)
  {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpus[static_cast<std::size_t>(omp_get_thread_num()) % cpus.size()], &one);
    pthread_setaffinity_np(pthread_self(), sizeof one, &one);  // best effort: failures leave threads unpinned
  }
  pinned = threads;
}

void pin_caller(bool pinned) {
  std::lock_guard<std::mutex> lock(pinning_mutex);
  if (!caller_mask_saved) return;
  cpu_set_t mask = caller_mask;
  if (pinned) {
    CPU_ZERO(&mask);
    CPU_SET(caller_cpu, &mask);
  }
  pthread_setaffinity_np(pthread_self(), sizeof mask, &mask);  // best effort, as pin_threads
}

}  // namespace treedyn
