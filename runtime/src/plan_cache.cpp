// Plan cache: mmap'd reader with binary search, and the atomic writer.
#include "meshplan/runtime/plan_cache.hpp"

#include "cache_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "meshplan/schemas/log.hpp"

namespace meshplan::runtime {

namespace {

constexpr char kMagic[8] = {'M', 'P', 'C', 'A', 'C', 'H', 'E', '\0'};
constexpr uint16_t kCacheMajor = 1;
constexpr uint16_t kCacheMinor = 0;
constexpr flatbuffers::uoffset_t kIndexMaxDepth = 8;
constexpr flatbuffers::uoffset_t kIndexMaxTables = 1u << 20;

/// The fixed 64-byte file header (little-endian, as x86 and ARM store it).
struct FileHeader {
  char magic[8];
  uint16_t major;
  uint16_t minor;
  uint32_t entry_count;
  uint64_t file_size;
  uint64_t index_offset;
  uint64_t index_size;
  uint64_t index_checksum_lo;
  uint64_t index_checksum_hi;
  uint64_t reserved;
};
static_assert(sizeof(FileHeader) == 64);

constexpr uint64_t align64(uint64_t v) {
  return (v + 63) & ~uint64_t{63};
}

Hash128 key_of(const fb::CacheEntry* e) {
  return Hash128{e->key()->lo(), e->key()->hi()};
}

std::string sys_error(std::string_view what, const std::string& path) {
  return str(what, " '", path, "': ", std::strerror(errno));
}

/// invalid_argument unless `st` is a regular file, naming what it is instead.
Status require_regular_file(const struct stat& st, std::string_view what, const std::string& path) {
  if (S_ISREG(st.st_mode)) return {};
  std::string_view kind = S_ISDIR(st.st_mode)    ? "is a directory"
                          : S_ISFIFO(st.st_mode) ? "is a FIFO, not a regular file"
                          : S_ISSOCK(st.st_mode) ? "is a socket, not a regular file"
                          : S_ISCHR(st.st_mode)  ? "is a character device, not a regular file"
                          : S_ISBLK(st.st_mode)  ? "is a block device, not a regular file"
                                                 : "is not a regular file";
  return fail(ErrorCode::invalid_argument, what, " '", path, "' ", kind);
}

}  // namespace

struct PlanCache::Impl {
  std::string path;
  const uint8_t* base = nullptr;
  size_t size = 0;
  const fb::CacheIndex* index = nullptr;
  std::unique_ptr<std::atomic<uint8_t>[]> verified;  // 0 unknown, 1 ok.
  PlanCacheOptions options;

  ~Impl() {
    if (base) munmap(const_cast<uint8_t*>(base), size);
  }
};

PlanCache::PlanCache(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PlanCache::PlanCache(PlanCache&&) noexcept = default;
PlanCache& PlanCache::operator=(PlanCache&&) noexcept = default;
PlanCache::~PlanCache() = default;

Result<PlanCache> PlanCache::open(const std::string& path, PlanCacheOptions options) {
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->options = options;
  // Refuse what is not a regular file before opening it: open() blocks on a FIFO until a
  // writer appears, and mmap of a directory fails with a confusing "No such device".
  // O_NONBLOCK and the fstat below close the window where the path is swapped in between.
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return fail(errno == ENOENT ? ErrorCode::not_found : ErrorCode::io,
                sys_error("cannot open plan cache", path));
  MESHPLAN_TRY(require_regular_file(st, "plan cache", path));
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return fail(errno == ENOENT ? ErrorCode::not_found : ErrorCode::io,
                sys_error("cannot open plan cache", path));
  if (fstat(fd, &st) != 0) {
    ::close(fd);
    return fail(ErrorCode::io, sys_error("cannot stat plan cache", path));
  }
  if (auto regular = require_regular_file(st, "plan cache", path); !regular) {
    ::close(fd);
    return std::unexpected(regular.error());
  }
  impl->size = static_cast<size_t>(st.st_size);
  if (impl->size < sizeof(FileHeader)) {
    ::close(fd);
    return fail(ErrorCode::corrupt, "plan cache '", path, "' is truncated: ", impl->size,
                " bytes, the header alone is 64");
  }
  if (options.private_copy) {
    // Anonymous pages (page-aligned, so the plans keep their 64-byte alignment), filled by
    // reading the file; a file that shrinks while it is read is refused.
    void* m = mmap(nullptr, impl->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
      ::close(fd);
      return fail(ErrorCode::io, sys_error("cannot allocate memory for plan cache", path));
    }
    impl->base = static_cast<const uint8_t*>(m);
    size_t done = 0;
    while (done < impl->size) {
      ssize_t got =
          ::pread(fd, static_cast<uint8_t*>(m) + done, impl->size - done, static_cast<off_t>(done));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) {
        ::close(fd);
        return fail(ErrorCode::io, sys_error("cannot read plan cache", path));
      }
      if (got == 0) {
        ::close(fd);
        return fail(ErrorCode::corrupt, "plan cache '", path, "' shrank to ", done,
                    " bytes while it was read (", impl->size, " when opened)");
      }
      done += static_cast<size_t>(got);
    }
    ::close(fd);
    mprotect(m, impl->size, PROT_READ);
  } else {
    void* m = mmap(nullptr, impl->size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    ::close(fd);
    if (m == MAP_FAILED) return fail(ErrorCode::io, sys_error("cannot map plan cache", path));
    impl->base = static_cast<const uint8_t*>(m);
  }

  FileHeader h;
  std::memcpy(&h, impl->base, sizeof h);
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0)
    return fail(ErrorCode::corrupt, "'", path, "' is not a meshplan plan cache (bad magic)");
  if (h.major != kCacheMajor)
    return fail(ErrorCode::incompatible, "plan cache '", path, "' has format ", h.major, ".",
                h.minor, ", this runtime reads ", kCacheMajor, ".x");
  if (h.file_size != impl->size)
    return fail(ErrorCode::corrupt, "plan cache '", path,
                "' is truncated or extended: header says ", h.file_size, " bytes, file has ",
                impl->size);
  if (h.index_offset < sizeof(FileHeader) || h.index_offset > impl->size ||
      h.index_size > impl->size - h.index_offset || h.index_size < 12)
    return fail(ErrorCode::corrupt, "plan cache '", path, "': index [", h.index_offset, ", +",
                h.index_size, ") out of range");
  const uint8_t* index = impl->base + h.index_offset;
  if (xxh3_128(index, h.index_size) != Hash128{h.index_checksum_lo, h.index_checksum_hi})
    return fail(ErrorCode::corrupt, "plan cache '", path, "': index checksum mismatch");
  if (!flatbuffers::BufferHasIdentifier(index, fb::CacheIndexIdentifier(), true))
    return fail(ErrorCode::corrupt, "plan cache '", path, "': index has the wrong identifier");
  flatbuffers::Verifier v(index, h.index_size, kIndexMaxDepth, kIndexMaxTables);
  if (!fb::VerifySizePrefixedCacheIndexBuffer(v))
    return fail(ErrorCode::corrupt, "plan cache '", path, "': index fails FlatBuffer verification");
  impl->index = fb::GetSizePrefixedCacheIndex(index);
  const auto* entries = impl->index->entries();
  const auto* by_name = impl->index->by_name();
  uint32_t n = entries ? entries->size() : 0;
  if (n != h.entry_count || (by_name ? by_name->size() : 0) != n)
    return fail(ErrorCode::corrupt, "plan cache '", path, "': entry counts disagree");
  for (uint32_t i = 0; i < n; ++i) {
    const fb::CacheEntry* e = entries->Get(i);
    if (e->offset() % 64 != 0)
      return fail(ErrorCode::corrupt, "plan cache '", path, "': entry ", i, " starts at offset ",
                  e->offset(), ", which is not a multiple of 64");
    if (e->offset() > impl->size || e->size() > impl->size - e->offset())
      return fail(ErrorCode::corrupt, "plan cache '", path, "': entry ", i, " [", e->offset(),
                  ", +", e->size(), ") lies outside the file's ", impl->size, " bytes");
    // Equal keys are aliases: names of one plan (written once, at one offset).
    if (i > 0 && key_less(key_of(e), key_of(entries->Get(i - 1))))
      return fail(ErrorCode::corrupt, "plan cache '", path, "': index is not sorted by key");
    if (by_name->Get(i) >= n)
      return fail(ErrorCode::corrupt, "plan cache '", path, "': name index out of range");
  }
  auto name_of = [&](uint32_t i) {
    const auto* s = entries->Get(by_name->Get(i))->name();
    return s ? s->string_view() : std::string_view();
  };
  for (uint32_t i = 1; i < n; ++i)
    if (!(name_of(i - 1) < name_of(i)))
      return fail(ErrorCode::corrupt, "plan cache '", path, "': name index is not sorted");
  impl->verified = std::make_unique<std::atomic<uint8_t>[]>(n);
  log(LogLevel::info, "opened plan cache '", path, "': ", n, " plan(s), ", impl->size, " bytes");
  return PlanCache(std::move(impl));
}

size_t PlanCache::size() const {
  return impl_->index->entries() ? impl_->index->entries()->size() : 0;
}
const std::string& PlanCache::path() const {
  return impl_->path;
}

CacheEntryInfo PlanCache::entry(size_t i) const {
  const fb::CacheEntry* e = impl_->index->entries()->Get(static_cast<uint32_t>(i));
  auto sv = [](const flatbuffers::String* s) { return s ? s->string_view() : std::string_view(); };
  return CacheEntryInfo{key_of(e),       sv(e->name()), sv(e->device()),
                        sv(e->policy()), e->offset(),   e->size()};
}

Result<PlanRef> PlanCache::load(size_t i) const {
  if (i >= size())
    return fail(ErrorCode::not_found, "plan cache '", impl_->path, "' has no entry ", i);
  const fb::CacheEntry* e = impl_->index->entries()->Get(static_cast<uint32_t>(i));
  std::span<const uint8_t> bytes(impl_->base + e->offset(), e->size());
  std::string_view name = e->name() ? e->name()->string_view() : std::string_view();
  if (impl_->verified[i].load(std::memory_order_acquire) == 1) return PlanRef::trusted(bytes);
  if (xxh3_128(bytes.data(), bytes.size()) != Hash128{e->checksum()->lo(), e->checksum()->hi()}) {
    log(LogLevel::warning, "plan '", name, "' in '", impl_->path,
        "' fails its checksum: the entry is damaged");
    return fail(ErrorCode::corrupt, "plan '", name, "' in '", impl_->path,
                "': checksum mismatch (the file is damaged)");
  }
  // The context for error messages lives on the stack: a successful load allocates nothing.
  char what[512];
  std::snprintf(what, sizeof what, "'%.*s' in '%s'",
                static_cast<int>(std::min<size_t>(name.size(), 200)), name.data(),
                impl_->path.c_str());
  auto ref = verify_plan(bytes, what, impl_->options.verify);
  if (!ref) return std::unexpected(ref.error());
  if (ref->key() != key_of(e))
    return fail(ErrorCode::corrupt, "plan '", name, "' in '", impl_->path,
                "': key in the index differs from the plan's own");
  impl_->verified[i].store(1, std::memory_order_release);
  return ref;
}

Result<PlanRef> PlanCache::find(const Hash128& key) const {
  const auto* entries = impl_->index->entries();
  uint32_t lo = 0, hi = entries ? entries->size() : 0;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (key_less(key_of(entries->Get(mid)), key))
      lo = mid + 1;
    else
      hi = mid;
  }
  if (entries && lo < entries->size() && key_of(entries->Get(lo)) == key) return load(lo);
  return fail(ErrorCode::not_found, "no plan with key ", key.hex(), " in '", impl_->path, "' (",
              size(), " entries)");
}

Result<PlanRef> PlanCache::find(std::string_view name) const {
  const auto* entries = impl_->index->entries();
  const auto* by_name = impl_->index->by_name();
  uint32_t lo = 0, hi = entries ? entries->size() : 0;
  auto name_at = [&](uint32_t i) {
    const auto* s = entries->Get(by_name->Get(i))->name();
    return s ? s->string_view() : std::string_view();
  };
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (name_at(mid) < name)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (entries && lo < entries->size() && name_at(lo) == name) return load(by_name->Get(lo));
  return fail(ErrorCode::not_found, "no plan named '", name, "' in '", impl_->path, "' (", size(),
              " entries)");
}

Result<PlanRef> PlanCache::find(std::string_view name, const PlanQuery& query) const {
  PlanRef plan = MESHPLAN_TRY(find(name));
  MESHPLAN_TRY(check_plan_matches(plan, query));
  return plan;
}

Status write_cache(const std::string& path, std::vector<CacheEntryData> entries) {
  struct Item {
    Hash128 key;
    const CacheEntryData* data;
    std::string device, policy;
  };
  std::vector<Item> items;
  for (const CacheEntryData& e : entries) {
    auto ref = verify_plan(e.plan, str("'", e.name, "'"));
    if (!ref) return std::unexpected(ref.error());
    const fb::PlanHeader* h = ref->plan().header();
    items.push_back(
        Item{ref->key(), &e, h->device()->name() ? h->device()->name()->str() : "",
             h->options() && h->options()->policy() ? h->options()->policy()->str() : ""});
  }
  std::stable_sort(items.begin(), items.end(),
                   [](const Item& a, const Item& b) { return key_less(a.key, b.key); });
  // Entries with one key are aliases of one plan: their bytes must agree, and are stored once.
  for (size_t i = 1; i < items.size(); ++i)
    if (items[i].key == items[i - 1].key && items[i].data->plan != items[i - 1].data->plan)
      return fail(ErrorCode::invalid_argument, "plans '", items[i - 1].data->name, "' and '",
                  items[i].data->name, "' have the same key ", items[i].key.hex(),
                  " but different bytes; store one plan under both names");
  std::vector<uint32_t> by_name(items.size());
  for (uint32_t i = 0; i < by_name.size(); ++i) by_name[i] = i;
  std::sort(by_name.begin(), by_name.end(),
            [&](uint32_t a, uint32_t b) { return items[a].data->name < items[b].data->name; });
  for (size_t i = 1; i < by_name.size(); ++i)
    if (items[by_name[i]].data->name == items[by_name[i - 1]].data->name)
      return fail(ErrorCode::invalid_argument, "two plans are named '",
                  items[by_name[i]].data->name, "'");

  // The index's size does not depend on the offsets' values as long as none is zero (FlatBuffers
  // omits fields equal to their default, and 0 is the default), so build it once with offsets
  // counted from a non-zero placeholder to learn its size, then again with the real ones.
  auto build_index = [&](uint64_t first_plan) {
    flatbuffers::FlatBufferBuilder b;
    // Offsets of 0 (the first pass) must still be stored, or the two passes differ in size.
    b.ForceDefaults(true);
    std::vector<flatbuffers::Offset<fb::CacheEntry>> fe;
    uint64_t offset = first_plan, next = first_plan;
    for (size_t i = 0; i < items.size(); ++i) {
      const Item& it = items[i];
      if (i == 0 || it.key != items[i - 1].key) {  // an alias shares the previous entry's bytes
        offset = next;
        next = align64(offset + it.data->plan.size());
      }
      fb::Hash128 key(it.key.lo, it.key.hi);
      Hash128 sum = xxh3_128(it.data->plan.data(), it.data->plan.size());
      fb::Hash128 checksum(sum.lo, sum.hi);
      fe.push_back(fb::CreateCacheEntryDirect(b, &key, it.data->name.c_str(), offset,
                                              it.data->plan.size(), &checksum, it.device.c_str(),
                                              it.policy.c_str()));
    }
    b.FinishSizePrefixed(fb::CreateCacheIndexDirect(b, &fe, &by_name), fb::CacheIndexIdentifier());
    return std::vector<uint8_t>(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
  };
  std::vector<uint8_t> index = build_index(64);
  uint64_t first_plan = align64(sizeof(FileHeader) + index.size());
  index = build_index(first_plan);
  if (align64(sizeof(FileHeader) + index.size()) != first_plan)
    return fail(ErrorCode::internal, "cache index size changed between passes");

  std::vector<uint8_t> file(first_plan, 0);
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0 && items[i].key == items[i - 1].key) continue;  // alias: stored once
    file.resize(align64(file.size()), 0);
    file.insert(file.end(), items[i].data->plan.begin(), items[i].data->plan.end());
  }
  FileHeader h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.major = kCacheMajor;
  h.minor = kCacheMinor;
  h.entry_count = static_cast<uint32_t>(items.size());
  h.file_size = file.size();
  h.index_offset = sizeof(FileHeader);
  h.index_size = index.size();
  Hash128 sum = xxh3_128(index.data(), index.size());
  h.index_checksum_lo = sum.lo;
  h.index_checksum_hi = sum.hi;
  std::memcpy(file.data(), &h, sizeof h);
  std::memcpy(file.data() + sizeof h, index.data(), index.size());

  std::filesystem::path target(path);
  std::filesystem::path dir =
      target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return fail(ErrorCode::io, sys_error("cannot create", tmp));
  size_t done = 0;
  while (done < file.size()) {
    ssize_t n = ::write(fd, file.data() + done, file.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      std::string msg = sys_error("cannot write", tmp);
      ::close(fd);
      ::unlink(tmp.c_str());
      return fail(ErrorCode::io, msg);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    std::string msg = sys_error("cannot sync", tmp);
    ::unlink(tmp.c_str());
    return fail(ErrorCode::io, msg);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string msg = sys_error("cannot rename temp file onto", path);
    ::unlink(tmp.c_str());
    return fail(ErrorCode::io, msg);
  }
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return {};
}

Status check_plan_name(std::string_view name) {
  if (name.empty()) return fail(ErrorCode::invalid_argument, "a plan name may not be empty");
  if (name.size() > kMaxPlanNameBytes)
    return fail(ErrorCode::invalid_argument, "plan name '", name.substr(0, 40), "...' has ",
                name.size(), " bytes, more than ", kMaxPlanNameBytes);
  for (size_t i = 0; i < name.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(name[i]);
    if (c < 0x21 || c > 0x7e) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02x", c);
      std::string shown;
      for (char k : name.substr(0, 40)) shown += (k >= 0x21 && k <= 0x7e) ? k : '?';
      return fail(ErrorCode::invalid_argument, "plan name '", shown, "' has byte ", hex,
                  c == ' ' ? " (a space)" : "", " at offset ", i,
                  "; names are printable ASCII without spaces");
    }
  }
  return {};
}

Status add_to_cache(const std::string& path, CacheEntryData entry) {
  MESHPLAN_TRY(check_plan_name(entry.name));
  CacheLock lock = MESHPLAN_TRY(CacheLock::acquire(path));
  remove_dead_temp_files(path);  // left by killed writers
  auto new_ref = verify_plan(entry.plan, str("'", entry.name, "'"));
  if (!new_ref) return std::unexpected(new_ref.error());
  Hash128 new_key = new_ref->key();
  std::vector<CacheEntryData> entries;
  auto existing = PlanCache::open(path, PlanCacheOptions{.verify = VerifyMode::full});
  if (existing) {
    for (size_t i = 0; i < existing->size(); ++i) {
      CacheEntryInfo info = existing->entry(i);
      if (info.name == entry.name) continue;
      if (info.key == new_key) {  // another name of the same plan: an alias of the new bytes
        entries.push_back(CacheEntryData{std::string(info.name), entry.plan});
        continue;
      }
      auto ref = existing->load(i);
      if (!ref)
        return std::unexpected(with_context(
            ref.error(), str("not rewriting '", path, "': an existing entry does not verify")));
      entries.push_back(CacheEntryData{
          std::string(info.name), std::vector<uint8_t>(ref->bytes().begin(), ref->bytes().end())});
    }
  } else if (existing.error().code != ErrorCode::not_found) {
    return std::unexpected(with_context(
        existing.error(), str("not overwriting '", path, "'; remove it to start a new cache")));
  }
  entries.push_back(std::move(entry));
  return write_cache(path, std::move(entries));
}

}  // namespace meshplan::runtime
