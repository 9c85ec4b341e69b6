// Budget leases in the daemon (policy/lease.h): a thread that takes, renews
// and gives back the leases the accounting asks for, on a connection of its
// own to the shared store, so that neither a slice nor a usage batch waits
// for a lease's transaction. It runs when a tenant waits for a lease (wake)
// and every quarter second for renewals and returns; after an answer that
// brought time it calls `granted` (the dispatcher asks its held tenants again).
#pragma once

#include <functional>
#include <string>
#include <thread>

#include "vgpu/policy/accounting.h"
#include "vgpu/policy/lease.h"
#include "vgpu/policy/store.h"
#include "vgpu/thread_annotations.h"

namespace vgpu::host {

class LeaseKeeper {
 public:
  LeaseKeeper(policy::Store* store, policy::Accounting* accounting, std::string host,
              policy::LeaseRules rules, std::function<void()> granted);
  ~LeaseKeeper();  // stop()

  void start();
  // Ends the thread, then gives back every unspent lease (so that a host
  // stopped cleanly does not hold budgets until its leases expire).
  void stop() EXCLUDES(mu_);
  // Ask now (any thread, any lock held: it only signals).
  void wake() EXCLUDES(mu_);
  // One round: every lease the accounting needs (with `all_back`, every
  // unspent one given back), asked in turn. Public for tests.
  void round(bool all_back = false);

 private:
  void run() EXCLUDES(mu_);

  policy::Store* const store_;
  policy::Accounting* const accounting_;
  const std::string host_;
  const policy::LeaseRules rules_;
  const std::function<void()> granted_;
  bool failing_ = false;  // the store refused the last lease: logged once per outage

  Mutex mu_;
  CondVar cv_;
  bool woken_ GUARDED_BY(mu_) = false;
  bool stopping_ GUARDED_BY(mu_) = false;
  bool stopped_ = false;  // the leases were given back
  std::thread thread_;
};

}  // namespace vgpu::host
