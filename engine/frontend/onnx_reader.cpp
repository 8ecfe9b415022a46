// The ONNX front end (onnx_reader.h).
#include "engine/frontend/onnx_reader.h"

#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>

#include "engine/base/interrupt.h"
#include "engine/frontend/onnx_fold.h"
#include "engine/frontend/onnx_importer.h"

namespace graphrun {

bool onnx_supported() { return true; }

bool parse_onnx(std::string_view bytes, Graph& g, Diagnostics& diag, const InputLimits& limits,
                const OnnxReadOptions& opts) {
    onnx_import::Importer importer(g, diag, limits.memory_limit, &opts);
    importer.run(bytes);
    return !diag.has_errors();
}

bool parse_onnx(std::string&& bytes, Graph& g, Diagnostics& diag, const InputLimits& limits,
                const OnnxReadOptions& opts) {
    std::string owned = std::move(bytes);
    onnx_import::Importer importer(g, diag, limits.memory_limit, &opts);
    importer.run(owned, [&owned] { std::string().swap(owned); });
    return !diag.has_errors();
}

namespace {

// The file's bytes for protobuf's parser, read as it asks for them (64 KiB at
// a time); a signal stops the reading.
class FdReader final : public google::protobuf::io::CopyingInputStream {
  public:
    explicit FdReader(int fd) : fd_(fd) {}
    int Read(void* buffer, int size) override {
        for (;;) {
            if (interrupted()) return -1;
            const ssize_t n = ::read(fd_, buffer, static_cast<size_t>(size));
            if (n >= 0) return static_cast<int>(n);
            if (errno != EINTR) {
                error_ = errno;
                return -1;
            }
        }
    }
    std::string error() const { return error_ ? std::strerror(error_) : ""; }

  private:
    int fd_;
    int error_ = 0;
};

}  // namespace

bool parse_onnx_fd(int fd, uint64_t size, Graph& g, Diagnostics& diag, const InputLimits& limits,
                   const OnnxReadOptions& opts) {
    FdReader reader(fd);
    google::protobuf::io::CopyingInputStreamAdaptor in(&reader, 1 << 16);
    onnx_import::Importer importer(g, diag, limits.memory_limit, &opts);
    importer.run(in, size, [&reader] { return reader.error(); });
    return !diag.has_errors();
}

std::optional<NpzEntry> parse_tensor_pb(std::string_view bytes, std::string& why, const ArrayLimits& limits) {
    onnx::TensorProto t;
    if (bytes.size() > static_cast<size_t>(INT32_MAX) || !t.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
        why = "not an ONNX TensorProto: the file does not parse as one";
        return std::nullopt;
    }
    if (t.data_location() == onnx::TensorProto::EXTERNAL) {
        why = "its data is in an external file, which a tensor file may not refer to";
        return std::nullopt;
    }
    if (std::string problem = onnx_fold::tensor_size_problem(t); !problem.empty()) {
        why = problem;
        return std::nullopt;
    }
    const uint64_t bytes_needed = onnx_fold::tensor_bytes(t);
    if (bytes_needed > limits.array_bytes || (limits.memory_limit && bytes_needed > limits.memory_limit)) {
        if (limits.memory_limit && bytes_needed > limits.memory_limit && limits.stopped_at_memory_limit)
            *limits.stopped_at_memory_limit = true;
        why = "its tensor needs " + size_text(bytes_needed) + ", more than the limit of " + limits.array_cap_text();
        return std::nullopt;
    }
    auto hv = onnx_fold::tensor_value(t, why);
    if (!hv) return std::nullopt;
    NpzEntry e;
    e.name = t.name();
    e.array.dtype = hv->dtype;
    e.array.shape = std::move(hv->shape);
    e.array.data = std::move(hv->bytes);
    return e;
}

}  // namespace graphrun
