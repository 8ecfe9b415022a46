// A vector that keeps its first N elements inside itself: a node's inputs.
// Nearly every node has one or two, and a graph may have a million nodes, so a
// heap block per node (std::vector) cost a malloc, a free and a cache miss each.
#pragma once
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace graphrun {

template <class T, size_t N>
class SmallVector {
    static_assert(N > 0);

public:
    using value_type = T;
    using iterator = T*;
    using const_iterator = const T*;

    SmallVector() = default;
    SmallVector(std::initializer_list<T> items) {
        reserve(items.size());
        for (const T& x : items) push_back(x);
    }
    SmallVector(const SmallVector& o) {
        reserve(o.size_);
        for (const T& x : o) push_back(x);
    }
    SmallVector(SmallVector&& o) noexcept { take(std::move(o)); }
    SmallVector& operator=(const SmallVector& o) {
        if (this != &o) {
            SmallVector copy(o);
            *this = std::move(copy);
        }
        return *this;
    }
    SmallVector& operator=(SmallVector&& o) noexcept {
        if (this != &o) {
            destroy();
            take(std::move(o));
        }
        return *this;
    }
    ~SmallVector() { destroy(); }

    size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    T* data() { return heap() ? heap_ : inline_ptr(); }
    const T* data() const { return heap() ? heap_ : inline_ptr(); }
    T* begin() { return data(); }
    T* end() { return data() + size_; }
    const T* begin() const { return data(); }
    const T* end() const { return data() + size_; }
    T& operator[](size_t i) { return data()[i]; }
    const T& operator[](size_t i) const { return data()[i]; }
    T& front() { return data()[0]; }
    const T& front() const { return data()[0]; }
    T& back() { return data()[size_ - 1]; }
    const T& back() const { return data()[size_ - 1]; }

    void reserve(size_t n) {
        if (n > capacity_) grow(n);
    }
    void push_back(const T& x) { emplace_back(x); }
    void push_back(T&& x) { emplace_back(std::move(x)); }
    template <class... Args>
    T& emplace_back(Args&&... args) {
        if (size_ == capacity_) {
            T item(std::forward<Args>(args)...);  // args may refer into this vector
            grow(capacity_ * 2);
            T* p = ::new (data() + size_) T(std::move(item));
            ++size_;
            return *p;
        }
        T* p = ::new (data() + size_) T(std::forward<Args>(args)...);
        ++size_;
        return *p;
    }
    void pop_back() {
        --size_;
        std::destroy_at(data() + size_);
    }
    void clear() {
        std::destroy_n(data(), size_);
        size_ = 0;
    }

private:
    bool heap() const { return capacity_ > N; }
    T* inline_ptr() { return std::launder(reinterpret_cast<T*>(inline_)); }
    const T* inline_ptr() const { return std::launder(reinterpret_cast<const T*>(inline_)); }

    void grow(size_t want) {
        const size_t cap = want > N ? want : N;
        T* fresh = static_cast<T*>(::operator new(cap * sizeof(T), std::align_val_t(alignof(T))));
        T* old = data();
        std::uninitialized_move_n(old, size_, fresh);
        std::destroy_n(old, size_);
        if (heap()) ::operator delete(heap_, std::align_val_t(alignof(T)));
        heap_ = fresh;
        capacity_ = static_cast<uint32_t>(cap);
    }
    void destroy() {
        std::destroy_n(data(), size_);
        if (heap()) ::operator delete(heap_, std::align_val_t(alignof(T)));
        size_ = 0;
        capacity_ = N;
    }
    // Requires this vector to be empty and hold no heap block.
    void take(SmallVector&& o) noexcept {
        if (o.heap()) {
            heap_ = o.heap_;
            capacity_ = o.capacity_;
            size_ = o.size_;
        } else {
            std::uninitialized_move_n(o.inline_ptr(), o.size_, inline_ptr());
            std::destroy_n(o.inline_ptr(), o.size_);
            size_ = o.size_;
        }
        o.size_ = 0;
        o.capacity_ = N;
    }

    union {
        alignas(T) unsigned char inline_[N * sizeof(T)];
        T* heap_;
    };
    uint32_t size_ = 0;
    uint32_t capacity_ = N;
};

}  // namespace graphrun
