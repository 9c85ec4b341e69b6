#include "eevdf_queue.h"

#include <algorithm>

namespace vgpu::scheduler::detail {
namespace {

int64_t floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

int64_t signed_diff(uint64_t a, uint64_t b) { return static_cast<int64_t>(a - b); }

}  // namespace

void EevdfQueue::set_slice(Nanos slice) {
  request_ = slice * kScale;
  max_credit_ = slice * kScale;
}

uint64_t EevdfQueue::vtime() const {
  if (weight_sum_ == 0) return base_;
  return base_ + static_cast<uint64_t>(floor_div(key_sum_, weight_sum_));
}

void EevdfQueue::rebase(uint64_t v) {
  key_sum_ -= weight_sum_ * signed_diff(v, base_);
  base_ = v;
}

void EevdfQueue::enter_sums(const Entity& e) {
  key_sum_ += static_cast<int64_t>(e.weight) * signed_diff(e.ve, base_);
  weight_sum_ += e.weight;
  ++active_count_;
}

void EevdfQueue::leave_sums(const Entity& e) {
  key_sum_ -= static_cast<int64_t>(e.weight) * signed_diff(e.ve, base_);
  weight_sum_ -= e.weight;
  --active_count_;
  if (weight_sum_ == 0) key_sum_ = 0;
}

int64_t EevdfQueue::clamp_lag(int64_t lag) const { return std::clamp(lag, -max_debt_, max_credit_); }

EevdfQueue::Slot EevdfQueue::add(uint32_t owner, uint32_t weight) {
  Slot slot;
  if (!free_.empty()) {
    slot = free_.back();
    free_.pop_back();
  } else {
    slot = static_cast<Slot>(entities_.size());
    entities_.emplace_back();
  }
  Entity& e = entities_[slot];
  e = Entity{};
  e.weight = weight;
  e.owner = owner;
  e.state = State::kIdle;
  return slot;
}

void EevdfQueue::remove(Slot slot) {
  deactivate(slot);
  entities_[slot].state = State::kFree;
  free_.push_back(slot);
}

void EevdfQueue::enqueue(Slot slot, uint64_t v) {
  Entity& e = entities_[slot];
  if (detail::before(v, e.ve)) {
    e.state = State::kPending;
    pending_.push(slot, e.ve);
  } else {
    e.state = State::kEligible;
    eligible_.push(slot, e.vd);
  }
}

void EevdfQueue::unqueue(Slot slot) {
  Entity& e = entities_[slot];
  if (e.state == State::kPending) pending_.erase(slot);
  if (e.state == State::kEligible) eligible_.erase(slot);
  if (e.state == State::kCurrent) current_ = kNone;
}

void EevdfQueue::place(Entity& e, int64_t lag) {
  if (weight_sum_ > 0 && lag != 0) {
    // Joining moves V by -lag/(W+w); inflate the lag so that, once the entity
    // is in, its lag is exactly `lag`.
    const long double inflated =
        static_cast<long double>(lag) * static_cast<long double>(weight_sum_ + e.weight) /
        static_cast<long double>(weight_sum_);
    lag = static_cast<int64_t>(inflated);
  }
  e.ve = vtime() - static_cast<uint64_t>(lag / static_cast<int64_t>(e.weight));
  enter_sums(e);
}

void EevdfQueue::activate(Slot slot) {
  Entity& e = entities_[slot];
  if (e.state != State::kIdle) return;
  place(e, e.saved_lag);
  e.vd = e.ve + request(e);
  e.saved_lag = 0;
  enqueue(slot, vtime());
  if (current_ != kNone && (!woken_ || detail::before(e.ve, woken_min_ve_))) {
    woken_ = true;
    woken_min_ve_ = e.ve;
  }
}

void EevdfQueue::add_lag(Slot slot, int64_t delta) {
  Entity& e = entities_[slot];
  if (e.state <= State::kIdle) {
    e.saved_lag = clamp_lag(e.saved_lag + delta);
    return;
  }
  if (weight_sum_ == e.weight || delta == 0) return;
  const int64_t target = lag(slot) + delta;
  const uint64_t old_ve = e.ve;
  leave_sums(e);
  place(e, target);
  e.vd += e.ve - old_ve;  // the request keeps its length
  if (e.state == State::kPending) pending_.rekey(slot, e.ve);
  if (e.state == State::kEligible) eligible_.rekey(slot, e.vd);
}

void EevdfQueue::deactivate(Slot slot) {
  Entity& e = entities_[slot];
  if (e.state <= State::kIdle) return;
  const int64_t lag = static_cast<int64_t>(e.weight) * signed_diff(vtime(), e.ve);
  unqueue(slot);
  leave_sums(e);
  e.saved_lag = clamp_lag(lag);
  e.state = State::kIdle;
}

void EevdfQueue::set_weight(Slot slot, uint32_t weight) {
  Entity& e = entities_[slot];
  if (weight == e.weight) return;
  e.remainder = 0;
  if (e.state <= State::kIdle) {
    e.weight = weight;
    return;
  }
  // Keep the lag (service owed, in ns) across the change.
  const int64_t kept = lag(slot);
  leave_sums(e);
  e.weight = weight;
  place(e, kept);
  e.vd = e.ve + request(e);
  if (e.state == State::kPending) pending_.rekey(slot, e.ve);
  if (e.state == State::kEligible) eligible_.rekey(slot, e.vd);
}

void EevdfQueue::finish_turn() {
  if (current_ == kNone) return;
  const Slot slot = current_;
  current_ = kNone;
  Entity& e = entities_[slot];
  e.vd = e.ve + request(e);
  enqueue(slot, vtime());
}

EevdfQueue::Slot EevdfQueue::pick() {
  finish_turn();
  woken_ = false;
  if (weight_sum_ == 0) return kNone;
  const uint64_t v = vtime();
  rebase(v);
  while (!pending_.empty() && !detail::before(v, pending_.top_key())) {
    const Slot s = pending_.pop();
    entities_[s].state = State::kEligible;
    eligible_.push(s, entities_[s].vd);
  }
  // V moves back when an entity with negative lag leaves: some that were
  // eligible may not be any more.
  while (!eligible_.empty() && detail::before(v, entities_[eligible_.top()].ve)) {
    const Slot s = eligible_.pop();
    entities_[s].state = State::kPending;
    pending_.push(s, entities_[s].ve);
  }
  // The entity with the least ve is always eligible (V is an average of the
  // ve's), so this only guards against rounding.
  const Slot slot = eligible_.empty() ? pending_.pop() : eligible_.pop();
  entities_[slot].state = State::kCurrent;
  current_ = slot;
  return slot;
}

void EevdfQueue::charge(Slot slot, Nanos used) {
  if (used <= 0) return;
  Entity& e = entities_[slot];
  e.longest = std::max(e.longest, used);
  if (e.state <= State::kIdle) {
    e.saved_lag = clamp_lag(e.saved_lag - used * kScale);
    return;
  }
  const uint64_t scaled = static_cast<uint64_t>(used) * kScale + e.remainder;
  const uint64_t advance = scaled / e.weight;
  e.remainder = scaled % e.weight;
  e.ve += advance;
  key_sum_ += static_cast<int64_t>(e.weight) * static_cast<int64_t>(advance);
  if (e.state == State::kPending) pending_.rekey(slot, e.ve);
  // An eligible entity keeps its place (keyed by vd); pick re-checks its ve.
}

bool EevdfQueue::should_yield() const {
  if (current_ == kNone || !woken_) return false;
  const uint64_t v = vtime();
  return !detail::before(v, woken_min_ve_) && !detail::before(entities_[current_].ve, v);
}

int64_t EevdfQueue::lag(Slot slot) const {
  const Entity& e = entities_[slot];
  if (e.state <= State::kIdle) return e.saved_lag;
  return static_cast<int64_t>(e.weight) * signed_diff(vtime(), e.ve);
}

void EevdfQueue::set_saved_lag(Slot slot, int64_t lag) {
  Entity& e = entities_[slot];
  if (e.state == State::kIdle) e.saved_lag = clamp_lag(lag);
}

}  // namespace vgpu::scheduler::detail
