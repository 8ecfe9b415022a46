// Faults in the pages of a large buffer on a second thread, a little ahead of
// the thread that fills it. A million-node graph's node list is about 300 MB
// of fresh memory: faulting it in page by page (zeroing each, in the kernel)
// took a third of the parse, on the one core that parses.
#pragma once
#include <atomic>
#include <cstddef>
#include <thread>

namespace graphrun {

class Prefaulter {
public:
    // Starts the thread; it stays at most `ahead` bytes in front of progress().
    Prefaulter(void* base, size_t bytes, size_t ahead = size_t{8} << 20);
    Prefaulter(const Prefaulter&) = delete;
    Prefaulter& operator=(const Prefaulter&) = delete;
    ~Prefaulter() { stop(); }

    // The filling thread has used the first `bytes` bytes.
    // Called every few thousand items: the orderings are sequentially
    // consistent, so that a wake-up is never lost between the two flags.
    void progress(size_t bytes) {
        used_.store(bytes);
        if (waiting_.load()) used_.notify_one();
    }
    // Stops and joins the thread (what it faulted in stays).
    void stop();
    // False where the system cannot fault pages in ahead (no thread, or a
    // kernel without MADV_POPULATE_WRITE): nothing happens then.
    bool active() const { return thread_.joinable(); }

private:
    void loop();

    char* base_ = nullptr;
    size_t bytes_ = 0;
    size_t ahead_;
    std::atomic<size_t> used_{0};
    std::atomic<bool> waiting_{false};
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

}  // namespace graphrun
