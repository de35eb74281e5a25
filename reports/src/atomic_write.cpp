// Atomic output of a set of files (report.json, .md, .html; bench.json; JUnit
// XML). Each file is atomic by temporary + rename(2); the set is atomic
// against other writers by a lock on the directory held over the whole write,
// against signals by blocking them over the renames, and against kills by
// sweeping the temporaries of dead processes the next time (report.hpp).
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "softcheck/report.hpp"

namespace softcheck {

namespace fs = std::filesystem;

namespace {

// ---- Temporaries in flight, for remove_temporaries_in_flight() -----------
//
// A signal handler may read this table at any moment, so it holds plain char
// arrays and lock-free atomics only: a slot is claimed (free -> filling), its
// path copied, then published (-> ready); the handler unlinks ready slots.
constexpr int slot_free = 0, slot_filling = 1, slot_ready = 2;
constexpr int registry_slots = 64;
constexpr std::size_t registry_path_bytes = 4096;

struct Slot {
  std::atomic<int> state{slot_free};
  char path[registry_path_bytes];
};
Slot registry[registry_slots];
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler needs lock-free atomics");

int register_temporary(const fs::path& p) noexcept {
  const std::string& s = p.native();
  if (s.size() >= registry_path_bytes) return -1;
  for (int i = 0; i < registry_slots; ++i) {
    int expected = slot_free;
    if (!registry[i].state.compare_exchange_strong(expected, slot_filling, std::memory_order_acquire)) continue;
    std::memcpy(registry[i].path, s.c_str(), s.size() + 1);
    registry[i].state.store(slot_ready, std::memory_order_release);
    return i;
  }
  return -1;
}

void unregister_temporary(int slot) noexcept {
  if (slot >= 0) registry[slot].state.store(slot_free, std::memory_order_release);
}

// ---- Files -----------------------------------------------------------------

std::string describe(const fs::path& p, const std::string& what) {
  return "cannot write " + p.string() + ": " + what;
}

std::string temporary_name(const std::string& name, long pid) { return "." + name + ".tmp." + std::to_string(pid); }

fs::path temporary_beside(const fs::path& target) {
  return target.parent_path() / temporary_name(target.filename().string(), static_cast<long>(::getpid()));
}

fs::path directory_of(const fs::path& target) {
  return target.parent_path().empty() ? fs::path(".") : target.parent_path();
}

// Temporaries softcheck makes itself besides those of the files it renames
// into place: ensure_writable_dir's probe and `softcheck bench`'s raw output.
constexpr const char* own_temporary_names[] = {"probe", "benchmark-raw.json"};

void write_whole_file(const fs::path& p, const std::string& content) {
  // O_NOFOLLOW: a link planted at the temporary's name is not written through.
  const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0666);
  if (fd < 0) throw std::runtime_error(describe(p, std::strerror(errno)));
  const char* data = content.data();
  std::size_t left = content.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, data, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int e = errno;
      ::close(fd);
      throw std::runtime_error(describe(p, n < 0 ? std::strerror(e) : "write failed"));
    }
    data += n;
    left -= static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) throw std::runtime_error(describe(p, std::strerror(errno)));
}

// SIGINT, SIGTERM and SIGHUP held back from this thread while it renames, so
// an interrupt cannot land between two renames and leave a mixed set; a
// pending one is delivered when the mask is restored.
class SignalsBlocked {
 public:
  SignalsBlocked() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    blocked_ = ::pthread_sigmask(SIG_BLOCK, &set, &old_) == 0;
  }
  ~SignalsBlocked() {
    if (blocked_) ::pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SignalsBlocked(const SignalsBlocked&) = delete;
  SignalsBlocked& operator=(const SignalsBlocked&) = delete;

 private:
  sigset_t old_{};
  bool blocked_ = false;
};

// ---- The directory lock ------------------------------------------------------

constexpr const char* lock_name = ".softcheck.lock";
constexpr auto lock_wait_limit = std::chrono::seconds(60);

// An exclusive flock(2) on DIR/.softcheck.lock. The holder unlinks the file
// before closing it (no lock file is left behind), so a waiter that opened the
// old file checks after locking that the name still refers to the file it
// locked, and starts over otherwise: only one holder at a time per name.
class DirectoryLock {
 public:
  explicit DirectoryLock(const fs::path& dir) : path_(dir / lock_name) {
    const auto deadline = std::chrono::steady_clock::now() + lock_wait_limit;
    auto pause = std::chrono::milliseconds(1);
    for (;;) {
      {
        // From creating the file to registering it for a signal handler to
        // remove: an interrupt in between would leave the file behind.
        const SignalsBlocked quiet;
        fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd_ < 0) throw std::runtime_error("cannot write into " + dir.string() + ": cannot create " +
                                              path_.filename().string() + ": " + std::strerror(errno));
        const bool locked = ::flock(fd_, LOCK_EX | LOCK_NB) == 0;
        // A file system without flock (ENOLCK, EOPNOTSUPP: some network and
        // FUSE mounts) serialises nobody; the set is still written whole, and
        // its digests tell a mixed one. Refusing to write there would be worse.
        const bool unsupported = !locked && (errno == ENOLCK || errno == EOPNOTSUPP || errno == ENOSYS);
        if ((locked && still_named()) || unsupported) {
          // Registered only while held: a signal handler unlinking it then is
          // the holder's own release; unlinking someone else's would not be.
          slot_ = register_temporary(path_);
          return;
        }
        if (!locked && errno != EWOULDBLOCK && errno != EINTR) {
          const int e = errno;
          close_fd();
          throw std::runtime_error("cannot lock " + path_.string() + ": " + std::strerror(e));
        }
      }
      close_fd();
      if (std::chrono::steady_clock::now() > deadline)
        throw std::runtime_error("cannot write into " + dir.string() + ": another process has held " +
                                 path_.string() + " for " + std::to_string(lock_wait_limit.count()) +
                                 " s (a softcheck writing there, or one stopped mid-write)");
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::milliseconds(50));
    }
  }

  ~DirectoryLock() {
    const SignalsBlocked quiet;   // the release as a whole, or a lock file could be left
    unregister_temporary(slot_);  // before the unlink: see the constructor
    ::unlink(path_.c_str());
    close_fd();
  }

  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;

 private:
  bool still_named() const {
    struct stat held {}, named {};
    return ::fstat(fd_, &held) == 0 && ::lstat(path_.c_str(), &named) == 0 && held.st_dev == named.st_dev &&
           held.st_ino == named.st_ino;
  }
  void close_fd() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  fs::path path_;
  int fd_ = -1;
  int slot_ = -1;
};

// Removes ".NAME.tmp.PID" files of `dir` whose NAME is one of `names` (or
// softcheck's own) and whose PID is no live process: what a process killed
// between writing its temporaries and renaming them left. Runs under the
// directory lock, when no live writer has temporaries of these names there
// (the probe and bench's raw file are made outside it, by live processes).
void remove_stale_temporaries(const fs::path& dir, const std::vector<std::string>& names) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  const long self = static_cast<long>(::getpid());
  std::vector<std::string> stale;
  while (const dirent* e = ::readdir(d)) {
    const std::string entry = e->d_name;
    const std::size_t mark = entry.rfind(".tmp.");
    if (entry.size() < 2 || entry[0] != '.' || mark == std::string::npos || mark < 1) continue;
    const std::string name = entry.substr(1, mark - 1);
    const std::string digits = entry.substr(mark + 5);
    if (digits.empty() || digits.size() > 9 || !std::all_of(digits.begin(), digits.end(), [](char c) {
          return c >= '0' && c <= '9';
        }))
      continue;
    const bool ours = std::find(names.begin(), names.end(), name) != names.end() ||
                      std::any_of(std::begin(own_temporary_names), std::end(own_temporary_names),
                                  [&](const char* n) { return name == n; });
    if (!ours) continue;
    const long pid = std::stol(digits);
    if (pid <= 0 || pid == self) continue;
    // ESRCH only: EPERM means the process exists (another user's).
    if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) stale.push_back(entry);
  }
  ::closedir(d);
  for (const std::string& s : stale) ::unlink((dir / s).c_str());
}

}  // namespace

void remove_temporaries_in_flight() noexcept {
  for (Slot& s : registry)
    if (s.state.load(std::memory_order_acquire) == slot_ready) ::unlink(s.path);
}

TemporaryInFlight::TemporaryInFlight(const fs::path& file) noexcept : slot_(register_temporary(file)) {}
TemporaryInFlight::~TemporaryInFlight() { unregister_temporary(slot_); }

void ensure_writable_dir(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error("cannot create output directory " + dir.string() + ": " + ec.message());
  if (!fs::is_directory(dir)) throw std::runtime_error("output path is not a directory: " + dir.string());
  // Probe with a real file: access(2) lies for root on read-only mounts.
  const fs::path probe = temporary_beside(dir / "probe");
  const TemporaryInFlight registered(probe);
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0666);
  if (fd < 0)
    throw std::runtime_error("output directory is not writable: " + dir.string() + ": " + std::strerror(errno));
  ::close(fd);
  fs::remove(probe, ec);
}

void write_files_atomically(const std::vector<std::pair<fs::path, std::string>>& files) {
  {
    std::vector<fs::path> targets;
    for (const auto& f : files) targets.push_back(f.first);
    check_outputs_against_inputs({}, targets);  // two of them the same file: the set could not be whole
  }
  // One lock per directory, taken in one order (canonical path) so that two
  // writers of the same directories cannot each wait for the other.
  struct Directory {
    fs::path canonical, given;
    std::vector<std::string> names;  // of the files written there
  };
  std::vector<Directory> dirs;
  for (const auto& f : files) {
    const fs::path dir = directory_of(f.first);
    std::error_code ec;
    fs::path key = fs::weakly_canonical(fs::absolute(dir, ec), ec);
    if (ec) key = dir;
    auto it = std::find_if(dirs.begin(), dirs.end(), [&](const Directory& d) { return d.canonical == key; });
    if (it == dirs.end()) it = dirs.insert(dirs.end(), Directory{key, dir, {}});
    it->names.push_back(f.first.filename().string());
  }
  std::sort(dirs.begin(), dirs.end(), [](const Directory& a, const Directory& b) { return a.canonical < b.canonical; });
  std::vector<std::unique_ptr<DirectoryLock>> locks;
  for (const Directory& d : dirs) {
    locks.push_back(std::make_unique<DirectoryLock>(d.given));
    remove_stale_temporaries(d.given, d.names);
  }

  std::vector<fs::path> temps;
  std::vector<std::unique_ptr<TemporaryInFlight>> registered;
  auto cleanup = [&temps] {
    for (const fs::path& t : temps) ::unlink(t.c_str());
  };
  try {
    for (const auto& [path, content] : files) {
      temps.push_back(temporary_beside(path));
      registered.push_back(std::make_unique<TemporaryInFlight>(temps.back()));  // before the file exists
      write_whole_file(temps.back(), content);
    }
    // rename(2) within one directory is atomic per file; all temporaries
    // exist and are complete before the first rename. From the first rename
    // to the release of the locks, signals wait.
    const SignalsBlocked quiet;
    for (std::size_t i = 0; i < files.size(); ++i) {
      if (::rename(temps[i].c_str(), files[i].first.c_str()) != 0)
        throw std::runtime_error(describe(files[i].first, std::strerror(errno)));
    }
    registered.clear();  // renamed: nothing left for a signal handler
    locks.clear();
  } catch (...) {
    cleanup();
    throw;
  }
}

}  // namespace softcheck

namespace softcheck {

std::vector<std::pair<fs::path, std::string>> report_files(const Report& r, const fs::path& dir) {
  std::string json = to_json(r);
  const std::string digest = report_digest(json);
  return {{dir / "report.json", std::move(json)},
          {dir / "report.md", to_markdown(r, digest)},
          {dir / "report.html", to_html(r, digest)}};
}

}  // namespace softcheck
