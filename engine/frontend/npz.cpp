// .npz: a zip archive of .npy members (numpy.savez stores them,
// numpy.savez_compressed deflates them). The reader walks the central
// directory (zip64 fields included, as NumPy writes them) and checks every
// size, offset and CRC; the writer stores members uncompressed.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>

#include "engine/base/atomic_file.h"
#include "engine/frontend/npy.h"
#include "engine/frontend/npy_internal.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef GRAPHRUN_HAVE_ZLIB
#include <zlib.h>
#endif

namespace graphrun {

namespace {

constexpr uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEndSig = 0x06054b50;
constexpr uint32_t kZip64EndSig = 0x06064b50, kZip64LocatorSig = 0x07064b50;
constexpr uint16_t kDosDate = (1 << 5) | 1;  // 1980-01-01: the date is not kept

uint64_t le(std::string_view b, uint64_t at, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = v << 8 | static_cast<unsigned char>(b[static_cast<size_t>(at) + static_cast<size_t>(i)]);
    return v;
}

bool fits(std::string_view b, uint64_t at, uint64_t n) { return at <= b.size() && n <= b.size() - at; }

std::string off(uint64_t at) { return "offset " + std::to_string(at) + ": "; }

// Finds the end-of-central-directory record (the last one: a comment may follow it).
std::optional<uint64_t> find_end_record(std::string_view b) {
    if (b.size() < 22) return std::nullopt;
    const uint64_t lowest = b.size() > 22 + 65535 ? b.size() - 22 - 65535 : 0;
    for (uint64_t at = b.size() - 22 + 1; at-- > lowest;)
        if (le(b, at, 4) == kEndSig) return at;
    return std::nullopt;
}

#ifdef GRAPHRUN_HAVE_ZLIB
// Inflates raw deflate data into exactly `size` bytes (fed to zlib in pieces:
// its counters are 32-bit).
bool inflate_raw(std::string_view in, std::vector<uint8_t>& out, uint64_t size, std::string& error) {
    out.assign(static_cast<size_t>(size), 0);
    z_stream z{};
    if (inflateInit2(&z, -MAX_WBITS) != Z_OK) {
        error = "zlib could not start";
        return false;
    }
    constexpr uint64_t kPiece = uint64_t{1} << 30;
    uint64_t in_at = 0, out_at = 0;
    int rc = Z_OK;
    while (rc == Z_OK) {
        if (z.avail_in == 0 && in_at < in.size()) {
            const uint64_t n = std::min<uint64_t>(kPiece, in.size() - in_at);
            z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data() + in_at));
            z.avail_in = static_cast<uInt>(n);
            in_at += n;
        }
        if (z.avail_out == 0 && out_at < size) {
            const uint64_t n = std::min<uint64_t>(kPiece, size - out_at);
            z.next_out = reinterpret_cast<Bytef*>(out.data() + out_at);
            z.avail_out = static_cast<uInt>(n);
            out_at += n;
        }
        const bool last_in = in_at == in.size();
        rc = inflate(&z, last_in ? Z_FINISH : Z_NO_FLUSH);
        if (rc == Z_BUF_ERROR && z.avail_out == 0 && out_at < size) rc = Z_OK;  // room for more output
        else if (rc == Z_BUF_ERROR && z.avail_in == 0 && !last_in) rc = Z_OK;   // more input to give
    }
    const uint64_t produced = out_at - z.avail_out;
    const char* msg = z.msg;
    inflateEnd(&z);
    if (rc != Z_STREAM_END || produced != size) {
        error = rc == Z_STREAM_END || rc == Z_BUF_ERROR
                    ? "the deflated data does not give the " + std::to_string(size) + " bytes its header states"
                    : std::string("the deflated data is corrupt (") + (msg ? msg : "zlib error") + ")";
        return false;
    }
    return true;
}

// The first `size` bytes of raw deflate data (an .npy member's header):
// inflated until that many are out, the rest left alone.
bool inflate_head(std::string_view in, std::vector<uint8_t>& out, uint64_t size, std::string& error) {
    out.assign(static_cast<size_t>(size), 0);
    z_stream z{};
    if (inflateInit2(&z, -MAX_WBITS) != Z_OK) {
        error = "zlib could not start";
        return false;
    }
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z.avail_in = static_cast<uInt>(std::min<uint64_t>(in.size(), uint64_t{1} << 30));
    z.next_out = out.data();
    z.avail_out = static_cast<uInt>(size);
    int rc = Z_OK;
    while (rc == Z_OK && z.avail_out > 0) rc = inflate(&z, Z_NO_FLUSH);
    const uint64_t produced = size - z.avail_out;
    const char* msg = z.msg;
    inflateEnd(&z);
    if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) {
        error = std::string("the deflated data is corrupt (") + (msg ? msg : "zlib error") + ")";
        return false;
    }
    out.resize(static_cast<size_t>(produced));
    return true;
}
#endif

// An .npy header is within the magic, version, length and 64 KiB.
constexpr uint64_t kNpyHeadBytes = uint64_t{65536} + 12;

// One member as the central directory and its local header describe it, checked.
struct Member {
    std::string name;      // as stored ("x.npy")
    std::string shown;     // "member 'x.npy'", escaped, for messages
    uint64_t entry = 0;    // the central directory entry's offset
    uint64_t local = 0;    // the local header's offset
    uint64_t data_at = 0;  // the data's offset
    uint64_t csize = 0, usize = 0, method = 0, crc = 0;
};

// The name without ".npy": the key an .npz member is known by.
std::string key_of(const std::string& name) {
    return name.size() >= 4 && name.compare(name.size() - 4, 4, ".npy") == 0 ? name.substr(0, name.size() - 4) : name;
}

}  // namespace

bool looks_like_zip(std::string_view b) {
    return b.size() >= 4 && (le(b, 0, 4) == kLocalSig || le(b, 0, 4) == kEndSig);
}

namespace {

// Every member of the archive `b`, each checked (sizes, offsets, overlaps,
// names) and their declared sizes together within the limits; nothing inflated.
std::optional<std::vector<Member>> read_members(std::string_view b, std::string& error, const ArrayLimits& limits) {
    auto end = find_end_record(b);
    if (!end) {
        error = "offset " + std::to_string(b.size()) +
                ": no zip end-of-central-directory record in the last 65557 bytes: not an .npz, or truncated";
        return std::nullopt;
    }
    uint64_t count = le(b, *end + 10, 2), cd_size = le(b, *end + 12, 4), cd_at = le(b, *end + 16, 4);
    if (count == 0xffff || cd_size == 0xffffffff || cd_at == 0xffffffff) {  // zip64
        const uint64_t loc = *end >= 20 ? *end - 20 : 0;
        if (*end < 20 || le(b, loc, 4) != kZip64LocatorSig) {
            error = off(*end) + "the end record's fields say zip64, but no zip64 locator precedes it";
            return std::nullopt;
        }
        const uint64_t z = le(b, loc + 8, 8);
        if (!fits(b, z, 56) || le(b, z, 4) != kZip64EndSig) {
            error = off(loc + 8) + "the zip64 end record's offset " + std::to_string(z) + " holds no zip64 end record";
            return std::nullopt;
        }
        count = le(b, z + 32, 8);
        cd_size = le(b, z + 40, 8);
        cd_at = le(b, z + 48, 8);
    }
    if (!fits(b, cd_at, cd_size)) {
        error = off(*end + 16) + "the central directory (" + std::to_string(cd_size) + " bytes at offset " +
                std::to_string(cd_at) + ") lies past the end of the file (" + std::to_string(b.size()) +
                " bytes): truncated";
        return std::nullopt;
    }
    // First every member's place and sizes, checked, before any is inflated.
    std::vector<Member> members;
    uint64_t at = cd_at;
    for (uint64_t i = 0; i < count; ++i) {
        if (!fits(b, at, 46) || le(b, at, 4) != kCentralSig) {
            error = off(at) + "central directory entry " + std::to_string(i) + " of " + std::to_string(count) +
                    " is missing or has a bad signature";
            return std::nullopt;
        }
        Member m;
        m.entry = at;
        const uint64_t flags = le(b, at + 8, 2);
        m.method = le(b, at + 10, 2);
        m.crc = le(b, at + 16, 4);
        m.csize = le(b, at + 20, 4);
        m.usize = le(b, at + 24, 4);
        m.local = le(b, at + 42, 4);
        const uint64_t name_len = le(b, at + 28, 2), extra_len = le(b, at + 30, 2), comment_len = le(b, at + 32, 2);
        if (!fits(b, at + 46, name_len + extra_len + comment_len)) {
            error = off(at) + "central directory entry " + std::to_string(i) + " runs past the end of the file";
            return std::nullopt;
        }
        m.name = std::string(b.substr(static_cast<size_t>(at + 46), static_cast<size_t>(name_len)));
        m.shown = "member " + quote_bytes(m.name);
        // The zip64 extra field holds, in order, the 32-bit fields that are all ones.
        for (uint64_t e = at + 46 + name_len; e + 4 <= at + 46 + name_len + extra_len;) {
            const uint64_t id = le(b, e, 2), len = le(b, e + 2, 2);
            if (e + 4 + len > at + 46 + name_len + extra_len) break;
            if (id == 1) {
                uint64_t p = e + 4;
                for (uint64_t* f : {&m.usize, &m.csize, &m.local}) {
                    if (*f != 0xffffffff) continue;
                    if (p + 8 > e + 4 + len) {
                        error = off(e) + m.shown + ": its zip64 extra field is too short";
                        return std::nullopt;
                    }
                    *f = le(b, p, 8);
                    p += 8;
                }
            }
            e += 4 + len;
        }
        if (flags & 1) {
            error = off(at) + m.shown + " is encrypted";
            return std::nullopt;
        }
        if (!fits(b, m.local, 30) || le(b, m.local, 4) != kLocalSig) {
            error = off(m.local) + m.shown + ": no local file header where the central directory says it starts";
            return std::nullopt;
        }
        m.data_at = m.local + 30 + le(b, m.local + 26, 2) + le(b, m.local + 28, 2);
        if (!fits(b, m.data_at, m.csize)) {
            error = off(m.data_at) + m.shown + ": its " + std::to_string(m.csize) +
                    " bytes of data run past the end of the file (" + std::to_string(b.size()) + " bytes): truncated";
            return std::nullopt;
        }
        if (m.data_at + m.csize > cd_at) {
            error = off(m.local) + m.shown + ": its bytes (offsets " + std::to_string(m.local) + " to " +
                    std::to_string(m.data_at + m.csize) + ") run into the central directory, which starts at offset " +
                    std::to_string(cd_at);
            return std::nullopt;
        }
        if (m.method == 8) {
#ifdef GRAPHRUN_HAVE_ZLIB
            // Deflate expands at most about 1032 to 1: a larger claim is a lie, not an allocation to make.
            if (m.usize > m.csize * 1032 + 1024) {
                error = off(at + 24) + m.shown + " claims " + std::to_string(m.usize) + " bytes from " +
                        std::to_string(m.csize) + " deflated ones, more than deflate can give";
                return std::nullopt;
            }
#else
            error = off(at + 10) + m.shown + " is deflated (numpy.savez_compressed), and this graphrun was built "
                    "without zlib; save it with numpy.savez";
            return std::nullopt;
#endif
        } else if (m.method != 0) {
            error = off(at + 10) + m.shown + " uses compression method " + std::to_string(m.method) +
                    "; graphrun reads stored (0) and deflated (8) members";
            return std::nullopt;
        } else if (m.usize != m.csize) {
            error = off(at + 20) + m.shown + " is stored, but its sizes differ (" + std::to_string(m.csize) + " and " +
                    std::to_string(m.usize) + ")";
            return std::nullopt;
        }
        members.push_back(std::move(m));
        at += 46 + name_len + extra_len + comment_len;
    }
    // No two members share a name or bytes: an archive whose entries point at one
    // member, or overlap, would make a small file inflate many times over.
    std::vector<const Member*> by_place;
    for (const Member& m : members) by_place.push_back(&m);
    std::stable_sort(by_place.begin(), by_place.end(),
                     [](const Member* x, const Member* y) { return x->local < y->local; });
    for (size_t k = 1; k < by_place.size(); ++k) {
        const Member& p = *by_place[k - 1];
        const Member& m = *by_place[k];
        if (m.local == p.local) {
            error = off(m.entry) + m.shown + " starts at offset " + std::to_string(m.local) + ", as " + p.shown +
                    " does: two central directory entries for one member's bytes";
            return std::nullopt;
        }
        if (m.local < p.data_at + p.csize) {
            error = off(m.local) + m.shown + "'s local header overlaps the bytes of " + p.shown + " (offsets " +
                    std::to_string(p.local) + " to " + std::to_string(p.data_at + p.csize) + ")";
            return std::nullopt;
        }
    }
    std::map<std::string, const Member*> by_key;
    for (const Member& m : members)
        if (auto [it, fresh] = by_key.emplace(key_of(m.name), &m); !fresh) {
            error = off(m.entry) + m.shown + " has the name of " + it->second->shown + " (at offset " +
                    std::to_string(it->second->local) + "): two members for one array";
            return std::nullopt;
        }
    // Every array is held at once: the members' declared sizes together stay within the bound.
    uint64_t total = 0;
    for (const Member& m : members) {
        total += m.usize;  // members do not overlap: at most 1032 times the file's bytes, no wrap
        if (total > limits.array_cap()) {
            limits.note_array_cap_hit();
            error = off(m.entry + 24) + m.shown +
                    (&m == &members.front() ? " declares " : " brings the members' declared sizes to ") +
                    size_text(total) + " uncompressed, more than " + limits.array_cap_text() + "; nothing was inflated";
            return std::nullopt;
        }
    }
    return members;
}

}  // namespace

std::optional<std::vector<NpzEntry>> parse_npz(std::string_view b, std::string& error, const ArrayLimits& limits) {
    std::optional<std::vector<Member>> members = read_members(b, error, limits);
    if (!members) return std::nullopt;
    std::vector<NpzEntry> entries;
    for (const Member& m : *members) {
        std::string_view data = b.substr(static_cast<size_t>(m.data_at), static_cast<size_t>(m.csize));
        std::vector<uint8_t> inflated;
#ifdef GRAPHRUN_HAVE_ZLIB
        if (m.method == 8) {
            std::string why;
            if (!inflate_raw(data, inflated, m.usize, why)) {
                error = off(m.data_at) + m.shown + ": " + why;
                return std::nullopt;
            }
            data = std::string_view(reinterpret_cast<const char*>(inflated.data()), inflated.size());
        }
#endif
        if (crc32_update(0, data.data(), data.size()) != m.crc) {
            error = off(m.data_at) + m.shown + ": CRC-32 mismatch: the data is corrupt";
            return std::nullopt;
        }
        std::string why;
        auto array = parse_npy_owned(data, m.method == 8 ? &inflated : nullptr, why, limits);
        if (!array) {
            error = m.shown + " (at offset " + std::to_string(m.data_at) + "): " + why;
            return std::nullopt;
        }
        entries.push_back(NpzEntry{key_of(m.name), std::move(*array)});
    }
    return entries;
}

std::optional<std::vector<std::pair<std::string, Shape>>> npz_member_shapes(std::string_view b, std::string& error,
                                                                           const ArrayLimits& limits) {
    std::optional<std::vector<Member>> members = read_members(b, error, limits);
    if (!members) return std::nullopt;
    std::vector<std::pair<std::string, Shape>> shapes;
    for (const Member& m : *members) {
        std::string_view data = b.substr(static_cast<size_t>(m.data_at), static_cast<size_t>(m.csize));
        std::vector<uint8_t> head;
        if (m.method == 8) {
#ifdef GRAPHRUN_HAVE_ZLIB
            if (!inflate_head(data, head, std::min<uint64_t>(m.usize, kNpyHeadBytes), error)) {
                error = off(m.data_at) + m.shown + ": " + error;
                return std::nullopt;
            }
            data = std::string_view(reinterpret_cast<const char*>(head.data()), head.size());
#endif
        } else {
            data = data.substr(0, static_cast<size_t>(std::min<uint64_t>(data.size(), kNpyHeadBytes)));
        }
        NpyLayout h;
        std::string why;
        if (parse_npy_layout(data, h, why, limits) != NpyHeaderStatus::Ok) {
            error = m.shown + " (at offset " + std::to_string(m.data_at) + "): " + why;
            return std::nullopt;
        }
        shapes.emplace_back(key_of(m.name), std::move(h.shape));
    }
    return shapes;
}

std::optional<std::vector<std::pair<std::string, Shape>>> npz_file_shapes(const std::string& path,
                                                                         const ArrayLimits& limits) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return std::nullopt;
    struct stat st {};
    void* map = MAP_FAILED;
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
        map = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (map == MAP_FAILED) return std::nullopt;
    std::string error;
    std::string_view b(static_cast<const char*>(map), static_cast<size_t>(st.st_size));
    auto shapes = looks_like_zip(b) ? npz_member_shapes(b, error, limits) : std::nullopt;
    ::munmap(map, static_cast<size_t>(st.st_size));
    return shapes;
}

bool write_npz_file(const std::string& path, const std::vector<NpzMember>& members, std::string& error) {
    struct Placed {
        std::string name, header;
        uint64_t bytes = 0;  // of the array data
        uint32_t crc = 0;
        uint64_t offset = 0;
    };
    if (members.size() > 0xffff) {
        error = "cannot write " + path + ": " + std::to_string(members.size()) +
                " members need zip64 (not written by graphrun); save the outputs as .npy files (--save=DIR)";
        return false;
    }
    std::vector<Placed> placed;
    uint64_t offset = 0;
    for (const NpzMember& m : members) {
        Placed p;
        p.name = m.name + ".npy";
        p.header = npy_header(m.dtype, m.shape);
        p.bytes = static_cast<uint64_t>(checked_numel(m.shape).value_or(0)) * dtype_size(m.dtype);
        p.crc = crc32_update(crc32_update(0, p.header.data(), p.header.size()), m.data, static_cast<size_t>(p.bytes));
        p.offset = offset;
        offset += 30 + p.name.size() + p.header.size() + p.bytes;
        if (p.name.size() > 0xffff || p.header.size() + p.bytes >= 0xffffffff || offset >= 0xffffffff) {
            error = "cannot write " + path + ": " + p.name +
                    " would put the archive over 4 GiB, which needs zip64 (not written by graphrun); "
                    "save the outputs as .npy files (--save=DIR)";
            return false;
        }
        placed.push_back(std::move(p));
    }
    AtomicFile f;  // whole or not at all: an error leaves what was at `path`
    if (!f.open(path, error)) return false;
    bool ok = true;
    auto put = [&](const void* d, size_t n) {
        if (ok && n) ok = f.write(d, n);
    };
    auto put_le = [&](uint64_t v, int n) {
        unsigned char buf[8];
        for (int i = 0; i < n; ++i) buf[i] = static_cast<unsigned char>(v >> (8 * i));
        put(buf, static_cast<size_t>(n));
    };
    // The fields a local header and a central entry share, from "version needed" to the name length.
    auto common = [&](const Placed& p) {
        const uint64_t size = p.header.size() + p.bytes;
        put_le(20, 2), put_le(0, 2), put_le(0, 2), put_le(0, 2), put_le(kDosDate, 2);
        put_le(p.crc, 4), put_le(size, 4), put_le(size, 4), put_le(p.name.size(), 2), put_le(0, 2);
    };
    for (size_t i = 0; i < placed.size(); ++i) {
        const Placed& p = placed[i];
        put_le(kLocalSig, 4);
        common(p);
        put(p.name.data(), p.name.size());
        put(p.header.data(), p.header.size());
        put(members[i].data, static_cast<size_t>(p.bytes));
    }
    uint64_t cd_size = 0;
    for (const Placed& p : placed) {
        put_le(kCentralSig, 4), put_le(20, 2);
        common(p);
        put_le(0, 2), put_le(0, 2), put_le(0, 2), put_le(0, 4), put_le(p.offset, 4);
        put(p.name.data(), p.name.size());
        cd_size += 46 + p.name.size();
    }
    put_le(kEndSig, 4), put_le(0, 2), put_le(0, 2), put_le(placed.size(), 2), put_le(placed.size(), 2);
    put_le(cd_size, 4), put_le(offset, 4), put_le(0, 2);
    return f.commit(error);
}

}  // namespace graphrun
