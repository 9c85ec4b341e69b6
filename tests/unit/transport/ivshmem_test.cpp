// vgpud as an ivshmem server: the handshake QEMU's ivshmem-doorbell device
// expects, and the host loop serving real VMs. A fake QEMU here reads the
// handshake, maps the region and plays the guest kernel module's part: it
// writes stamped requests into the ring and rings the host's doorbell.
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>

#include <catch2/catch.hpp>

#include "vgpu/protocol/codec.h"
#include "vgpu/protocol/vm_region.h"
#include "vgpu/transport/host_loop.h"
#include "vgpu/transport/ivshmem_server.h"
#include "vgpu/transport/ring.h"
#include "vgpu/transport/unix_socket.h"

using namespace vgpu;
using namespace vgpu::transport;
using namespace std::chrono_literals;

namespace {

// One server message: the int64 and the descriptor (or -1) that came with it.
struct Msg {
  int64_t value = 0;
  int fd = -1;
};

bool read_msg(int sock, Msg* m) {
  std::vector<int> fds;
  const long n = recv_with_fds(sock, {reinterpret_cast<uint8_t*>(&m->value), sizeof m->value},
                               &fds, 1);
  if (n != static_cast<long>(sizeof m->value)) return false;
  m->fd = fds.empty() ? -1 : fds[0];
  return true;
}

// What QEMU gets on connecting.
struct Setup {
  int64_t version = -1, own_id = -1, peer_id = -1;
  int shm = -1, peer_vector = -1, own_vector = -1;
  ~Setup() {
    for (int fd : {shm, peer_vector, own_vector})
      if (fd >= 0) close(fd);
  }
};

// `replug`: the layout of a device plugged in place of an unplugged one
// (IvshmemSetup::replug): spare peers, the client's own vectors, spare peers,
// then the peer's.
void read_setup(int sock, Setup* s, bool replug = false) {
  Msg m;
  REQUIRE(read_msg(sock, &m));
  s->version = m.value;
  CHECK(m.fd == -1);
  REQUIRE(read_msg(sock, &m));
  s->own_id = m.value;
  REQUIRE(read_msg(sock, &m));
  CHECK(m.value == -1);
  s->shm = m.fd;
  if (replug) {
    int64_t spare = 2;  // neither the client (1) nor vgpud (0)
    const auto read_spares = [&](int n) {
      for (int i = 0; i < n; ++i) {
        REQUIRE(read_msg(sock, &m));
        CHECK(m.value == spare++);
        CHECK(m.fd >= 0);
        if (m.fd >= 0) close(m.fd);
      }
    };
    read_spares(kReplugSparePeers / 2);
    REQUIRE(read_msg(sock, &m));
    CHECK(m.value == s->own_id);
    s->own_vector = m.fd;
    read_spares(kReplugSparePeers - kReplugSparePeers / 2);
    REQUIRE(read_msg(sock, &m));
    s->peer_id = m.value;
    s->peer_vector = m.fd;
    return;
  }
  REQUIRE(read_msg(sock, &m));
  s->peer_id = m.value;
  s->peer_vector = m.fd;
  REQUIRE(read_msg(sock, &m));
  CHECK(m.value == s->own_id);
  s->own_vector = m.fd;
}

int eventfd_value(int fd) {  // reads (and clears) an eventfd without blocking
  uint64_t v = 0;
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, 0) != 1) return 0;
  return read(fd, &v, sizeof v) == sizeof v ? static_cast<int>(v) : 0;
}

TEST_CASE("the ivshmem handshake is what QEMU's ivshmem-doorbell reads") {
  int sv[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  const int shm = memfd_create("t", 0);
  REQUIRE(ftruncate(shm, 1 << 20) == 0);
  const int host_bell = eventfd(0, EFD_NONBLOCK);
  const int guest_bell = eventfd(0, EFD_NONBLOCK);
  const int host_vectors[1] = {host_bell};
  const int guest_vectors[1] = {guest_bell};
  IvshmemSetup setup;
  setup.own_id = 1;
  setup.shm_fd = shm;
  setup.peer_id = 0;
  setup.peer_vectors = host_vectors;
  setup.own_vectors = guest_vectors;
  REQUIRE(ivshmem_send_setup(sv[0], setup) == Status::kSuccess);

  Setup s;
  read_setup(sv[1], &s);
  CHECK(s.version == 0);
  CHECK(s.own_id == 1);
  CHECK(s.peer_id == 0);
  struct stat st {};
  REQUIRE(fstat(s.shm, &st) == 0);
  CHECK(st.st_size == 1 << 20);
  // The descriptors are the same eventfds: QEMU ringing peer 0 wakes the host.
  const uint64_t one = 1;
  REQUIRE(write(s.peer_vector, &one, sizeof one) == sizeof one);
  CHECK(eventfd_value(host_bell) == 1);
  REQUIRE(write(guest_bell, &one, sizeof one) == sizeof one);
  CHECK(eventfd_value(s.own_vector) == 1);

  SECTION("a malformed setup is refused before anything is sent") {
    setup.own_id = 0;  // the same id as the peer
    CHECK(ivshmem_send_setup(sv[0], setup) == Status::kInvalidValue);
    setup.own_id = 1;
    setup.own_vectors = {};
    CHECK(ivshmem_send_setup(sv[0], setup) == Status::kInvalidValue);
  }
  for (int fd : {sv[0], sv[1], shm, host_bell, guest_bell}) close(fd);
}

// Records what the loop reports; answers requests by echoing them.
struct Events : ChannelEvents {
  HostLoop* loop = nullptr;
  std::mutex mu;
  std::vector<std::string> opened;
  std::vector<uint32_t> clients;                // of each request
  std::vector<std::span<uint8_t>> areas;        // the client's data area, per request
  std::atomic<int> opens{0}, closes{0}, requests{0};
  Status on_open(uint64_t, const std::string& vm, const PeerCredentials&, std::span<uint8_t>,
                 std::string*) override {
    std::lock_guard lock(mu);
    opened.push_back(vm);
    opens++;
    return Status::kSuccess;
  }
  void on_request(uint64_t channel, std::span<const uint8_t> m) override {
    vgpu_msg_header h;
    std::memcpy(&h, m.data(), sizeof h);
    std::span<uint8_t> area;
    const bool ok = loop->client_data_area(channel, h.client, &area);
    {
      std::lock_guard lock(mu);
      clients.push_back(h.client);
      areas.push_back(ok ? area : std::span<uint8_t>{});
    }
    h.flags = VGPU_MSG_REPLY;
    const std::span<const uint8_t> parts[2] = {
        {reinterpret_cast<const uint8_t*>(&h), sizeof h}, m.subspan(sizeof h)};
    loop->reply(channel, parts);
    requests++;
  }
  bool accepting(uint64_t) override { return true; }
  void on_close(uint64_t, std::shared_ptr<const void>) override { closes++; }
};

std::string temp_dir() {
  static std::atomic<int> n{0};
  const std::string d =
      "/tmp/vgpu-ivshmem-test-" + std::to_string(getpid()) + "-" + std::to_string(n++);
  std::filesystem::create_directories(d);
  return d;
}

template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds limit = 5s) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// The guest kernel's side of a mapped region.
struct FakeKernel {
  uint8_t* base = nullptr;
  size_t size = 0;
  RingWriter requests;
  RingReader replies;
  explicit FakeKernel(int fd, size_t len) : size(len) {
    base = static_cast<uint8_t*>(mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
    REQUIRE(base != MAP_FAILED);
    auto* h = reinterpret_cast<vgpu_region_header*>(base);
    REQUIRE(h->magic == VGPU_REGION_MAGIC);
    requests = RingWriter(&h->req, base + h->req_ring_offset, h->ring_size);
    replies = RingReader(&h->resp, base + h->resp_ring_offset, h->ring_size);
  }
  ~FakeKernel() { munmap(base, size); }
  vgpu_region_header* header() { return reinterpret_cast<vgpu_region_header*>(base); }
  void send(uint16_t op, uint32_t client, uint64_t id) {
    auto h = proto::make_header(op, id, 0, 8, 0);
    h.client = client;
    const uint64_t payload = 0;
    const std::span<const uint8_t> parts[2] = {{reinterpret_cast<const uint8_t*>(&h), sizeof h},
                                               {reinterpret_cast<const uint8_t*>(&payload), 8}};
    REQUIRE(requests.write(parts) == RingWriter::Result::kOk);
  }
  bool reply(vgpu_msg_header* out) {
    std::vector<uint8_t> m;
    if (replies.read(&m) != RingReader::Result::kMessage) return false;
    std::memcpy(out, m.data(), sizeof *out);
    return true;
  }
};

struct Fixture {
  Events events;
  std::string dir = temp_dir();
  HostLoop loop{dir + "/vgpud.sock", RegionGeometry{1u << 17, 1u << 20}, &events};
  Fixture() { events.loop = &loop; }
  ~Fixture() {
    loop.stop();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  VmSpec vm(const std::string& name, VmMode mode, uint64_t size = 8ull << 20) {
    VmSpec s;
    s.name = name;
    s.mode = mode;
    s.path = dir + "/" + name + (mode == VmMode::kDoorbell ? ".sock" : ".shm");
    s.region_size = size;
    return s;
  }
  int connect_qemu(const std::string& path) {
    const int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    REQUIRE(connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    return s;
  }
};

}  // namespace

TEST_CASE("a real VM over ivshmem-doorbell: handshake, clients in slots, attach, hang-up") {
  Fixture f;
  REQUIRE(f.loop.add_vm(f.vm("vm1", VmMode::kDoorbell)).ok());
  REQUIRE(std::filesystem::exists(f.dir + "/vm1.sock"));  // before the loop even runs
  REQUIRE(f.loop.start().ok());

  const int qemu = f.connect_qemu(f.dir + "/vm1.sock");
  Setup s;
  read_setup(qemu, &s);
  CHECK(s.version == VGPU_IVSHMEM_PROTOCOL);
  CHECK(s.own_id == VGPU_IVSHMEM_GUEST_PEER);
  CHECK(s.peer_id == VGPU_IVSHMEM_HOST_PEER);
  struct stat st {};
  REQUIRE(fstat(s.shm, &st) == 0);
  CHECK(st.st_size == 8 << 20);  // a power of two: a PCI BAR
  REQUIRE(eventually([&] { return f.events.opens == 1; }));
  CHECK(f.events.opened[0] == "vm1");

  FakeKernel k(s.shm, static_cast<size_t>(st.st_size));
  const uint64_t data_size = k.header()->data_size;
  const uint64_t slot = VGPU_VM_SLOT_SIZE(data_size);
  const uint64_t one = 1;
  auto ring_host = [&] { REQUIRE(write(s.peer_vector, &one, sizeof one) == sizeof one); };

  SECTION("each client gets its own slot of the data area; client 0 none") {
    const uint32_t a = VGPU_VM_CLIENT(1, 0), b = VGPU_VM_CLIENT(7, 3);
    k.send(static_cast<uint16_t>(proto::Op::GetDeviceCount), a, 1);
    k.send(static_cast<uint16_t>(proto::Op::GetDeviceCount), b, 2);
    k.send(static_cast<uint16_t>(proto::Op::GetDeviceCount), 0, 3);
    k.send(static_cast<uint16_t>(proto::Op::GetDeviceCount), 0x1234ff, 4);  // slot 254
    ring_host();
    REQUIRE(eventually([&] { return f.events.requests == 4; }));
    std::lock_guard lock(f.events.mu);
    const uint8_t* data = f.events.areas[0].data();  // client a: slot 0
    REQUIRE(data != nullptr);
    CHECK(f.events.clients == std::vector<uint32_t>{a, b, 0, 0x1234ff});
    CHECK(f.events.areas[0].size() == slot);
    CHECK(f.events.areas[1].size() == slot);
    CHECK(f.events.areas[1].data() == data + 3 * slot);
    CHECK(f.events.areas[2].empty());
    CHECK(f.events.areas[3].empty());
    // Replies carry the client, for the kernel to route.
    vgpu_msg_header h;
    REQUIRE(eventually([&] { return k.reply(&h); }));
    CHECK(h.client == a);
  }

  SECTION("the guest kernel attaching releases everything and is answered") {
    k.replies.set_consumer_waiting(true);  // the guest sleeps: the host must ring
    k.send(VGPU_OP_GOODBYE, VGPU_VM_KERNEL_CLIENT, ~0ull);
    ring_host();
    REQUIRE(eventually([&] { return f.events.closes == 1 && f.events.opens == 2; }));
    CHECK(f.events.requests == 0);  // the daemon never saw it as a call
    vgpu_msg_header h;
    REQUIRE(eventually([&] { return k.reply(&h); }));
    CHECK(h.opcode == VGPU_OP_GOODBYE);
    CHECK(h.client == VGPU_VM_KERNEL_CLIENT);
    CHECK((h.flags & VGPU_MSG_REPLY) != 0);
    CHECK(eventually([&] { return eventfd_value(s.own_vector) > 0; }));  // the interrupt
  }

  SECTION("a second QEMU for the same VM is turned away") {
    const int other = f.connect_qemu(f.dir + "/vm1.sock");
    Msg m;
    CHECK_FALSE(read_msg(other, &m));  // closed without a handshake
    close(other);
    CHECK(f.events.opens == 1);
  }

  SECTION("QEMU hanging up is the VM going away; it may connect again") {
    close(qemu);
    REQUIRE(eventually([&] { return f.events.closes == 1; }));
    CHECK(k.header()->host_state == VGPU_HOST_CLOSED);
    const int again = f.connect_qemu(f.dir + "/vm1.sock");
    Setup s2;
    read_setup(again, &s2);
    CHECK(eventually([&] { return f.events.opens == 2; }));
    close(again);
    return;
  }

  SECTION("a QEMU plugging the device in again gets the replug layout, once") {
    close(qemu);
    REQUIRE(eventually([&] { return f.events.closes == 1; }));
    f.loop.expect_replug("vm1");
    const int replugged = f.connect_qemu(f.dir + "/vm1.sock");
    Setup s2;
    read_setup(replugged, &s2, true);
    CHECK(s2.peer_id == 0);
    REQUIRE(eventually([&] { return f.events.opens == 2; }));
    // Both vectors are eventfds again (an 8-byte count write), the spares aside.
    REQUIRE(write(s2.peer_vector, &one, sizeof one) == sizeof one);
    REQUIRE(write(s2.own_vector, &one, sizeof one) == sizeof one);
    close(replugged);
    REQUIRE(eventually([&] { return f.events.closes == 2; }));
    const int next = f.connect_qemu(f.dir + "/vm1.sock");
    Setup s3;
    read_setup(next, &s3);  // the next start is an ordinary one
    CHECK(s3.peer_id == 0);
    close(next);
    return;
  }
  close(qemu);
}

TEST_CASE("a real VM over ivshmem-plain: the region file, polled without doorbells") {
  Fixture f;
  REQUIRE(f.loop.start().ok());
  REQUIRE(f.loop.add_vm(f.vm("vm2", VmMode::kPlain)).ok());
  const std::string path = f.dir + "/vm2.shm";
  REQUIRE(std::filesystem::file_size(path) == 8u << 20);
  REQUIRE(eventually([&] { return f.events.opens == 1; }));

  const int fd = open(path.c_str(), O_RDWR);
  REQUIRE(fd >= 0);
  FakeKernel k(fd, 8u << 20);
  close(fd);
  // Nobody rings: the loop finds the requests by polling, quickly.
  for (uint64_t i = 1; i <= 20; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    k.send(static_cast<uint16_t>(proto::Op::GetDeviceCount), VGPU_VM_CLIENT(1, 2), i);
    vgpu_msg_header h;
    REQUIRE(eventually([&] { return k.reply(&h); }, 2s));
    CHECK(h.request_id == i);
    CHECK(std::chrono::steady_clock::now() - t0 < 500ms);
    if (i % 5 == 0) std::this_thread::sleep_for(20ms);  // let the loop back off
  }
  f.loop.stop();
  CHECK_FALSE(std::filesystem::exists(path));
}

TEST_CASE("VMs are checked before they are served") {
  Fixture f;
  using Code = vgpu::Result::Code;
  CHECK(f.loop.add_vm(f.vm("bad name", VmMode::kDoorbell)).is(Code::kInvalidArgument));
  CHECK(f.loop.add_vm(f.vm("vm", VmMode::kDoorbell, 12ull << 20)).is(Code::kInvalidArgument));
  CHECK(f.loop.add_vm(f.vm("vm", VmMode::kPlain, 1ull << 20)).is(Code::kInvalidArgument));
  REQUIRE(f.loop.add_vm(f.vm("vm", VmMode::kDoorbell)).ok());
  const vgpu::Result again = f.loop.add_vm(f.vm("vm", VmMode::kPlain));
  CHECK(again.is(Code::kAlreadyExists));
  CHECK_THAT(again.message(), Catch::Contains("already served"));
  VmSpec nowhere = f.vm("other", VmMode::kDoorbell);
  nowhere.path = "/nonexistent-dir/x.sock";
  const vgpu::Result no_dir = f.loop.add_vm(nowhere);
  CHECK(no_dir.is(Code::kUnavailable));
  CHECK_THAT(no_dir.message(), Catch::Contains("/nonexistent-dir/x.sock"));
  CHECK_FALSE(f.loop.serves("other"));  // nothing of it stays
}

TEST_CASE("a served VM can be disconnected and removed while the loop runs (libvirt lifecycle)") {
  Fixture f;
  const std::string path = f.dir + "/vm1.sock";
  SECTION("removing a VM that is not served yet, or never was, is harmless") {
    REQUIRE(f.loop.add_vm(f.vm("vm1", VmMode::kDoorbell)).ok());
    f.loop.remove_vm("vm1");
    f.loop.remove_vm("never");
    CHECK_FALSE(std::filesystem::exists(path));
    CHECK_FALSE(f.loop.serves("vm1"));
    REQUIRE(f.loop.start().ok());
    return;
  }
  REQUIRE(f.loop.add_vm(f.vm("vm1", VmMode::kDoorbell)).ok());
  REQUIRE(f.loop.start().ok());
  CHECK(f.loop.serves("vm1"));
  const int qemu = f.connect_qemu(path);
  Setup s;
  read_setup(qemu, &s);
  REQUIRE(eventually([&] { return f.events.opens == 1; }));

  // Another process's channel is left alone; then the VM's own is closed.
  f.loop.disconnect_vm("vm1", getpid() + 1000000);
  f.loop.disconnect_vm("other-vm");
  f.loop.wait_vm_requests();  // both carried out: they closed nothing
  CHECK(f.events.closes == 0);
  f.loop.disconnect_vm("vm1", getpid());  // the fake QEMU is this process
  f.loop.wait_vm_requests();
  CHECK(f.events.closes == 1);  // closed by the time the wait returns
  char byte;
  CHECK(read(qemu, &byte, 1) == 0);  // QEMU sees the hang-up
  close(qemu);

  // The socket stays for the VM's next QEMU.
  const int next = f.connect_qemu(path);
  Setup s2;
  read_setup(next, &s2);
  REQUIRE(eventually([&] { return f.events.opens == 2; }));

  // Removed: the socket is gone at once, the connected QEMU keeps its channel,
  // and the name can be served again right away.
  f.loop.remove_vm("vm1");
  CHECK_FALSE(std::filesystem::exists(path));
  CHECK_FALSE(f.loop.serves("vm1"));
  REQUIRE(f.loop.add_vm(f.vm("vm1", VmMode::kDoorbell)).ok());
  CHECK(std::filesystem::exists(path));
  f.loop.wait_vm_requests();  // the removal and the new server are in place
  CHECK(f.events.closes == 1);
  const int third = f.connect_qemu(path);
  Setup s3;
  read_setup(third, &s3);
  REQUIRE(eventually([&] { return f.events.opens == 3; }));
  close(next);
  REQUIRE(eventually([&] { return f.events.closes == 2; }));
  close(third);
  REQUIRE(eventually([&] { return f.events.closes == 3; }));
}
