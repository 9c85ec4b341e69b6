// The dispatcher's batches: consecutive items of one context that the
// backend batches (launches at least) go to it together, and a batch may
// leave its last items on the device
// (Backend::issue_batch): they go first in their context's next batch, are
// finished while the next tenant's batch is on its way, or before anything
// else runs; each is answered once, in order, and charged to its own tenant.
#include <algorithm>
#include <iterator>

#include "dispatcher_tenant.h"

namespace vgpu::scheduler {

size_t Dispatcher::run_batch(Tenant& t, Nanos budget, Nanos* gpu_time) {
  const executor::ContextId context = batch_.front().work.context;
  size_t carried = 0;
  if (!flight_.empty() && flight_.front().work.context == context) {
    // The launches this context left on the device go first: the backend
    // issues the new ones behind them and reports them all.
    carried = flight_.size();
    batch_.insert(batch_.begin(), std::make_move_iterator(flight_.begin()),
                  std::make_move_iterator(flight_.end()));
    flight_.clear();
    flight_owner_.reset();
    t.in_flight = 0;  // part of the running command now
    flight_context_ = kNothingRunning;
    flight_tenant_ = kNothingRunning;
  }
  batch_work_.clear();
  for (const Command& b : batch_) batch_work_.push_back(&b.work);
  batch_results_.assign(batch_.size(), {});
  const uint32_t depth = effective_overlap_depth();
  // Launches left on the device save a round trip only if something is
  // issued behind them: the rest of this tenant's launches (the batch is as
  // long as batches go), or another tenant's work.
  const bool follows = batch_.size() - carried >= config_.max_batch || with_work_.load() > 1;
  const executor::BatchLimits limits{static_cast<uint64_t>(std::max<Nanos>(budget, 0)), depth,
                                     depth > 1, follows};
  executor::BatchRun run{batch_work_, carried, batch_results_.data()};
  executor::BatchRun other;
  if (!flight_.empty()) {
    flight_work_.clear();
    for (const Command& f : flight_) flight_work_.push_back(&f.work);
    flight_results_.assign(flight_.size(), {});
    other = {flight_work_, flight_.size(), flight_results_.data()};
  }
  backend_->issue_batch(run, limits, flight_.empty() ? nullptr : &other);
  if (!flight_.empty()) complete_flight(other.finished);

  const size_t finished = std::min(run.finished, batch_.size());
  size_t in_flight = std::min(run.in_flight, batch_.size() - finished);
  const size_t ran = std::max<size_t>(finished, in_flight == 0 ? 1 : 0);
  Tally tally;
  const bool answered = !is_dead(t, context);  // as in run_next
  for (size_t i = 0; i < ran; ++i) {
    tally.add(batch_[i].work, batch_results_[i]);
    if (answered) on_complete_(batch_[i], batch_results_[i]);
  }
  tally.into(*t.usage);  // one update of the shared counters for the whole batch
  for (size_t i = batch_.size(); i > ran + in_flight; --i) t.taken.push_front(std::move(batch_[i - 1]));
  if (in_flight > 0) {
    // Published before end_running() says nothing runs (purge_context, remove_tenant).
    flight_owner_ = t.shared_from_this();
    for (size_t i = ran; i < ran + in_flight; ++i) flight_.push_back(std::move(batch_[i]));
    t.in_flight = in_flight;
    flight_tenant_ = t.id;
    flight_context_ = context;
  }
  *gpu_time = static_cast<Nanos>(tally.gpu_ns);
  return ran + in_flight - carried;
}

void Dispatcher::finish_flight() {
  if (flight_.empty()) return;
  flight_work_.clear();
  for (const Command& f : flight_) flight_work_.push_back(&f.work);
  flight_results_.assign(flight_.size(), {});
  executor::BatchRun run{flight_work_, flight_.size(), flight_results_.data()};
  backend_->finish_batch(run);
  complete_flight(run.finished);
}

void Dispatcher::complete_flight(size_t finished) {
  Tenant& t = *flight_owner_;
  // Finishing is waiting for them: none can still be on the device after it.
  for (size_t i = finished; i < flight_.size(); ++i) flight_results_[i] = {Status::kLaunchFailure, 0};
  const bool answered = !is_dead(t, flight_.front().work.context);
  Tally tally;
  for (size_t i = 0; i < flight_.size(); ++i) {
    tally.add(flight_[i].work, flight_results_[i]);
    if (answered) on_complete_(flight_[i], flight_results_[i]);
  }
  tally.into(*t.usage);
  // Charged as the tail of the tenant's last turn: its own time, whoever
  // runs now.
  policy_->charge(t.id, static_cast<Nanos>(tally.gpu_ns), clock_->now());
  gate_->settle(t.id, 0, static_cast<Nanos>(tally.gpu_ns));
  flight_.clear();
  t.in_flight = 0;
  flight_context_ = kNothingRunning;
  flight_tenant_ = kNothingRunning;
  if (t.queued.load() == 0) forget_dead(t);
  flight_owner_.reset();
}

void Dispatcher::settle_flight() {
  finish_flight();
  if (retired_count_.load() > 0) run_retired();
}

}  // namespace vgpu::scheduler
