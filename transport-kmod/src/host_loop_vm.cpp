// HostLoop, the real VMs' part: each VM's ivshmem server socket (or, for
// ivshmem-plain, its region file), the QEMU connection that makes it a
// channel, the guest kernel's attach message, and per-client data areas.
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "host_loop_internal.h"
#include "vgpu/protocol/calls.h"
#include "vgpu/protocol/codec.h"
#include "vgpu/protocol/vm_region.h"
#include "vgpu/transport/ivshmem_server.h"

namespace vgpu::transport {

using namespace loop_tags;

static_assert(static_cast<uint16_t>(proto::Op::Goodbye) == VGPU_OP_GOODBYE,
              "the kernel module's Goodbye is calls.def's");

namespace {

bool power_of_two(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

}  // namespace

Result HostLoop::add_vm(const VmSpec& vm) {
  if (!valid_vm_name(vm.name.c_str(), vm.name.size() + 1) || vm.name.size() >= 64)
    return Result::invalid_argument("VM names are 1-63 characters of A-Z a-z 0-9 . _ -");
  const RegionGeometry g = RegionGeometry::for_vm(vm.region_size);
  if (!power_of_two(vm.region_size) || !g.valid() ||
      VGPU_VM_SLOT_SIZE(g.data_size) < VGPU_VM_MIN_SLOT)
    return Result::invalid_argument("a VM's region is a power of two of at least 8 MiB");
  auto server = std::make_shared<VmServer>();
  server->spec = vm;
  {
    MutexLock lock(vm_mu_);
    if (vm_names_.count(vm.name))
      return Result::already_exists("VM " + vm.name + " is already served");
    vm_names_[vm.name] = vm.path;
  }
  std::string why;
  bool made = false;
  if (vm.mode == VmMode::kDoorbell) {
    server->listen_fd = listen_unix_stream(vm.path, &why);
    made = server->listen_fd >= 0;
  } else {
    made = ok(HostChannel::create_in_file(vm.path, g, &server->plain_channel, &why));
  }
  MutexLock lock(vm_mu_);
  if (!made) {
    vm_names_.erase(vm.name);
    return Result::unavailable(why);
  }
  pending_vms_.push_back(std::move(server));
  ++vm_requests_;
  if (running_) wake_.ring();  // else start() serves it
  return {};
}

bool HostLoop::serves(const std::string& name) {
  MutexLock lock(vm_mu_);
  return vm_names_.count(name) != 0;
}

void HostLoop::remove_vm(const std::string& name) {
  MutexLock lock(vm_mu_);
  auto it = vm_names_.find(name);
  if (it == vm_names_.end()) return;
  unlink(it->second.c_str());  // now, so that the name can be added again at once
  vm_names_.erase(it);
  for (auto p = pending_vms_.begin(); p != pending_vms_.end(); ++p) {
    if ((*p)->spec.name != name) continue;
    if ((*p)->listen_fd >= 0) close((*p)->listen_fd);
    pending_vms_.erase(p);
    return;
  }
  vm_ops_.push_back({name, true, -1});
  ++vm_requests_;
  if (running_) wake_.ring();
}

void HostLoop::expect_replug(const std::string& name) {
  MutexLock lock(vm_mu_);
  replugging_.insert(name);
}

void HostLoop::disconnect_vm(const std::string& name, int pid) {
  MutexLock lock(vm_mu_);
  vm_ops_.push_back({name, false, pid});
  ++vm_requests_;
  if (running_) wake_.ring();
}

void HostLoop::wait_vm_requests() {
  MutexLock lock(vm_mu_);
  const uint64_t target = vm_requests_;
  while (running_ && vm_requests_done_ < target) vm_requests_cv_.wait(vm_mu_);
}

void HostLoop::apply_pending_vms() {
  std::vector<std::shared_ptr<VmServer>> added;
  std::vector<VmOp> ops;
  uint64_t taken = 0;
  {
    MutexLock lock(vm_mu_);
    added.swap(pending_vms_);
    ops.swap(vm_ops_);
    taken = vm_requests_;
  }
  // Removals and disconnections first: a VM removed and added again is
  // removed here and served again below.
  for (const VmOp& op : ops) {
    if (!op.remove) {
      for (const auto& [id, peer] : loop_channels()) {
        if (peer->creds.real_vm && !peer->plain && peer->vm == op.name &&
            (op.pid < 0 || peer->creds.pid == op.pid)) {
          close_channel(id);
          break;
        }
      }
      continue;
    }
    for (auto it = vm_servers_.begin(); it != vm_servers_.end(); ++it) {
      if (it->second->spec.name != op.name) continue;
      epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, it->first, nullptr);
      close(it->first);
      vm_servers_.erase(it);  // a QEMU still connected keeps its channel
      break;
    }
    for (auto it = plain_vms_.begin(); it != plain_vms_.end(); ++it) {
      if ((*it)->spec.name != op.name) continue;
      if ((*it)->channel != 0) close_channel((*it)->channel);
      plain_vms_.erase(it);
      break;
    }
  }
  for (auto& server : added) {
    if (server->spec.mode == VmMode::kDoorbell) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = tag(kVmListen, server->listen_fd);
      epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, server->listen_fd, &ev);
      vm_servers_[server->listen_fd] = server;
      continue;
    }
    // ivshmem-plain: the VM is there from now on (nothing tells when QEMU
    // maps the file, or stops); its guest kernel's attach resets it.
    auto peer = std::make_shared<Peer>();
    peer->channel = std::move(server->plain_channel);
    peer->vm = server->spec.name;
    peer->plain = true;
    plain_vms_.push_back(server);
    open_vm_channel(peer, &server->channel);
  }
  MutexLock lock(vm_mu_);
  vm_requests_done_ = taken;
  vm_requests_cv_.notify_all();
}

bool HostLoop::open_vm_channel(const std::shared_ptr<Peer>& peer, uint64_t* id_out) {
  peer->creds.real_vm = true;
  peer->slot_size = VGPU_VM_SLOT_SIZE(peer->channel->region().geometry().data_size);
  const uint64_t id = next_channel_++;
  std::string why;
  if (Status s = events_->on_open(id, peer->vm, peer->creds, peer->channel->region().data(), &why);
      !ok(s)) {
    // QEMU cannot be told why (the protocol only sends); the log says it.
    peer->channel->close();
    return false;
  }
  {
    WriterLock lock(mu_);
    channels_[id] = peer;
  }
  if (peer->sock >= 0) {
    by_socket_[peer->sock] = id;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.u64 = tag(kClientSocket, peer->sock);
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, peer->sock, &ev);
  }
  if (peer->plain) {
    plain_channels_++;
  } else {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = tag(kDoorbell, peer->channel->request_doorbell_fd());
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, peer->channel->request_doorbell_fd(), &ev);
  }
  opened_++;
  *id_out = id;
  return true;
}

void HostLoop::accept_vm(int listen_fd) {
  auto it = vm_servers_.find(listen_fd);
  if (it == vm_servers_.end()) return;
  VmServer& server = *it->second;
  for (;;) {
    const int sock = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (sock < 0) return;
    if (server.channel != 0) {
      close(sock);  // this VM's QEMU is already connected: one VM, one QEMU
      continue;
    }
    auto peer = std::make_shared<Peer>();
    peer->vm = server.spec.name;
    ucred cred{};
    socklen_t len = sizeof cred;
    if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
      peer->creds = {cred.pid, cred.uid, cred.gid};
    }
    const RegionGeometry g = RegionGeometry::for_vm(server.spec.region_size);
    if (!ok(HostChannel::create(g, &peer->channel))) {
      close(sock);
      continue;
    }
    const int host_vectors[VGPU_IVSHMEM_VECTORS] = {peer->channel->request_doorbell_fd()};
    const int guest_vectors[VGPU_IVSHMEM_VECTORS] = {peer->channel->response_doorbell_fd()};
    IvshmemSetup setup;
    setup.own_id = VGPU_IVSHMEM_GUEST_PEER;
    setup.shm_fd = peer->channel->region().fd();
    setup.peer_id = VGPU_IVSHMEM_HOST_PEER;
    setup.peer_vectors = host_vectors;
    setup.own_vectors = guest_vectors;
    {
      MutexLock lock(vm_mu_);
      setup.replug = replugging_.erase(server.spec.name) != 0;
    }
    if (!ok(ivshmem_send_setup(sock, setup))) {
      close(sock);
      continue;
    }
    peer->sock = sock;
    if (!open_vm_channel(peer, &server.channel)) {
      close(sock);
      continue;
    }
  }
}

bool HostLoop::kernel_attached(uint64_t id, const std::shared_ptr<Peer>& held,
                               std::span<const uint8_t> message) {
  Peer& peer = *held;
  vgpu_msg_header h;
  std::memcpy(&h, message.data(), sizeof h);
  if (h.opcode != VGPU_OP_GOODBYE || h.client != VGPU_VM_KERNEL_CLIENT ||
      (h.flags & VGPU_MSG_REPLY))
    return false;
  // The guest kernel (re)attached: whatever its processes held is released,
  // as if the VM had gone and come back on the same region.
  events_->on_close(id, held);
  std::string why;
  if (!ok(events_->on_open(id, peer.vm, peer.creds, peer.channel->region().data(), &why))) {
    peer.doomed = true;
    return true;
  }
  if (!(h.flags & VGPU_MSG_QUIET)) {
    vgpu_msg_header r = proto::make_header(VGPU_OP_GOODBYE, h.request_id, VGPU_MSG_REPLY,
                                           VGPU_GOODBYE_PAYLOAD, 0);
    r.client = VGPU_VM_KERNEL_CLIENT;
    const uint64_t reserved = 0;
    const std::span<const uint8_t> parts[2] = {
        {reinterpret_cast<const uint8_t*>(&r), sizeof r},
        {reinterpret_cast<const uint8_t*>(&reserved), sizeof reserved}};
    peer.channel->write_reply(parts);
  }
  return true;
}

bool HostLoop::client_data_area(uint64_t channel, uint32_t client,
                                std::span<uint8_t>* area) const {
  const Peer* found = loop_peer(channel);
  if (!found) return false;
  const Peer& peer = *found;
  const std::span<uint8_t> data = peer.channel->region().data();
  if (!peer.creds.real_vm) {
    if (client != 0) return false;  // a simulated VM is one process
    *area = data;
    return true;
  }
  const uint32_t slot = VGPU_VM_CLIENT_SLOT(client);
  if (slot >= VGPU_VM_SLOTS) return false;
  *area = data.subspan(slot * peer.slot_size, peer.slot_size);
  return true;
}

bool HostLoop::client_data_file(uint64_t channel, uint32_t client, int* fd,
                                uint64_t* offset) const {
  // The part client_data_area gives, located in the region's file.
  std::span<uint8_t> area;
  if (!client_data_area(channel, client, &area)) return false;
  Region& region = loop_peer(channel)->channel->region();
  *fd = region.fd();
  *offset =
      region.geometry().data_offset() + static_cast<uint64_t>(area.data() - region.data().data());
  return true;
}

void HostLoop::close_vm_servers() {
  for (auto& [fd, server] : vm_servers_) {
    close(fd);
    unlink(server->spec.path.c_str());
  }
  vm_servers_.clear();
  for (auto& server : plain_vms_) unlink(server->spec.path.c_str());
  plain_vms_.clear();
  MutexLock lock(vm_mu_);
  for (auto& server : pending_vms_) {
    if (server->listen_fd >= 0) close(server->listen_fd);
    unlink(server->spec.path.c_str());
  }
  pending_vms_.clear();
}

}  // namespace vgpu::transport
