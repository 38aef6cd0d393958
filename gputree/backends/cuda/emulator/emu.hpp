// emu.hpp — owns the CUDA C device model of gputree's CPU emulator.
//
// The loader force-includes this header (g++ -include) in front of an
// unchanged .cu text. Blocks of a launch run on a few OS threads; the threads
// of one block are ucontext fibers on one OS thread that switch only at
// __syncthreads, so `__shared__` is `static thread_local`, and threadIdx etc.
// are thread-locals the block scheduler sets before it resumes each fiber.
// Atomics go through std::atomic_ref. Warp intrinsics are not modelled.
// It checks what a kernel computes, not races or speed.
#pragma once
#include <ucontext.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <functional>
#include <memory>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __launch_bounds__(...)
#define __shared__ static thread_local
#define __align__(n) alignas(n)

struct uint3 { unsigned int x, y, z; };
struct dim3 {
    unsigned int x, y, z;
    constexpr dim3(unsigned int x_ = 1, unsigned int y_ = 1, unsigned int z_ = 1) : x(x_), y(y_), z(z_) {}
};

inline thread_local uint3 threadIdx;
inline thread_local uint3 blockIdx;
inline thread_local dim3 blockDim;
inline thread_local dim3 gridDim;

template <class A, class B> inline auto min(A a, B b) { return a < b ? a : b; }
template <class A, class B> inline auto max(A a, B b) { return a < b ? b : a; }
template <class T> inline T __ldg(const T* p) { return *p; }
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_block() { std::atomic_thread_fence(std::memory_order_seq_cst); }

template <class T> using emu_ref = std::atomic_ref<T>;
template <class T> using emu_arg = std::type_identity_t<T>;
template <class T> inline T atomicAdd(T* p, emu_arg<T> v) { return emu_ref<T>(*p).fetch_add(v); }
template <class T> inline T atomicSub(T* p, emu_arg<T> v) { return emu_ref<T>(*p).fetch_sub(v); }
template <class T> inline T atomicExch(T* p, emu_arg<T> v) { return emu_ref<T>(*p).exchange(v); }
template <class T> inline T atomicOr(T* p, emu_arg<T> v) { return emu_ref<T>(*p).fetch_or(v); }
template <class T> inline T atomicAnd(T* p, emu_arg<T> v) { return emu_ref<T>(*p).fetch_and(v); }
template <class T> inline T atomicCAS(T* p, emu_arg<T> expected, emu_arg<T> desired)
{
    emu_ref<T>(*p).compare_exchange_strong(expected, desired);
    return expected;
}
template <class T, class Pick> inline T emu_atomic_pick(T* p, T v, Pick pick)
{
    emu_ref<T> ref(*p);
    T old = ref.load();
    while (!ref.compare_exchange_weak(old, pick(old, v))) {}
    return old;
}
template <class T> inline T atomicMax(T* p, emu_arg<T> v) { return emu_atomic_pick(p, v, [](T a, T b) { return max(a, b); }); }
template <class T> inline T atomicMin(T* p, emu_arg<T> v) { return emu_atomic_pick(p, v, [](T a, T b) { return min(a, b); }); }

namespace emu {

constexpr std::size_t kFiberStack = 64 * 1024;

struct Fiber {
    ucontext_t context;
    std::unique_ptr<char[]> stack{new char[kFiberStack]};
    bool done = false;
};

// Per OS thread: the block scheduler's context, the fibers, the kernel body
// they run, and the block's dynamic shared memory.
inline thread_local ucontext_t scheduler;
inline thread_local std::vector<std::unique_ptr<Fiber>> fibers;
inline thread_local Fiber* current = nullptr;
inline thread_local const std::function<void()>* body = nullptr;
inline thread_local std::vector<long double> dynamic_shared_buffer;

inline void* dynamic_shared() { return dynamic_shared_buffer.data(); }

inline void fiber_main()
{
    (*body)();
    current->done = true;  // returning resumes uc_link, the scheduler
}

inline void set_thread_index(unsigned int t)
{
    threadIdx = {t % blockDim.x, (t / blockDim.x) % blockDim.y, t / (blockDim.x * blockDim.y)};
}

// Runs every thread of the current block (blockIdx, blockDim set) to its end,
// resuming fibers round-robin between barriers.
inline void run_block(unsigned int n_threads)
{
    while (fibers.size() < n_threads) fibers.push_back(std::make_unique<Fiber>());
    for (unsigned int t = 0; t < n_threads; ++t) {
        Fiber& f = *fibers[t];
        getcontext(&f.context);
        f.context.uc_stack.ss_sp = f.stack.get();
        f.context.uc_stack.ss_size = kFiberStack;
        f.context.uc_link = &scheduler;
        makecontext(&f.context, fiber_main, 0);
        f.done = false;
    }
    for (unsigned int running = n_threads; running > 0;) {
        for (unsigned int t = 0; t < n_threads; ++t) {
            if (fibers[t]->done) continue;
            current = fibers[t].get();
            set_thread_index(t);
            swapcontext(&scheduler, &current->context);
            running -= current->done ? 1 : 0;
        }
    }
}

// One OS thread: take block indices from `next` until the grid is done.
inline void run_blocks(const std::function<void()>& kernel, dim3 grid, dim3 block,
                       std::size_t shared_bytes, std::atomic<unsigned long long>& next)
{
    gridDim = grid;
    blockDim = block;
    body = &kernel;
    dynamic_shared_buffer.assign((shared_bytes + sizeof(long double) - 1) / sizeof(long double), 0);
    const unsigned long long n_blocks = (unsigned long long)grid.x * grid.y * grid.z;
    for (unsigned long long b = next++; b < n_blocks; b = next++) {
        blockIdx = {unsigned(b % grid.x), unsigned((b / grid.x) % grid.y), unsigned(b / (grid.x * grid.y))};
        run_block(block.x * block.y * block.z);
    }
}

// Launches `kernel` on a grid; returns 0, or 1 for an invalid configuration.
inline int launch(const std::function<void()>& kernel, const unsigned int* g, const unsigned int* b,
                  std::size_t shared_bytes, int n_workers)
{
    const dim3 grid(g[0], g[1], g[2]);
    const dim3 block(b[0], b[1], b[2]);
    if (block.x * block.y * block.z == 0 || block.x * block.y * block.z > 1024 ||
        grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.y > 65535 || grid.z > 65535) {
        return 1;
    }
    std::atomic<unsigned long long> next{0};
    const unsigned long long n_blocks = (unsigned long long)grid.x * grid.y * grid.z;
    const int n_threads = (int)std::min<unsigned long long>(std::max(n_workers, 1), n_blocks);
    std::vector<std::thread> workers;
    for (int w = 1; w < n_threads; ++w) {
        workers.emplace_back([&] { run_blocks(kernel, grid, block, shared_bytes, next); });
    }
    run_blocks(kernel, grid, block, shared_bytes, next);
    for (auto& w : workers) w.join();
    return 0;
}

// cuLaunchKernel-style call: args[i] points at the value of parameter i.
template <class... A, std::size_t... I>
inline void call(void (*fn)(A...), void** args, std::index_sequence<I...>)
{
    fn(*static_cast<std::remove_cv_t<A>*>(args[I])...);
}

template <class... A>
inline int launch_kernel(void (*fn)(A...), const unsigned int* grid, const unsigned int* block,
                         std::size_t shared_bytes, int n_workers, void** args)
{
    const std::function<void()> kernel = [&] { call(fn, args, std::index_sequence_for<A...>{}); };
    return launch(kernel, grid, block, shared_bytes, n_workers);
}

// Describes one type as (is_pointer, kind, size) with kind a numpy dtype kind
// ('i', 'u', 'f', 'b') of the value or pointee, or 'V' when it has none.
template <class T> inline void describe_value(int* out)
{
    using V = std::remove_cv_t<T>;
    out[1] = std::is_same_v<V, bool> ? 'b'
           : std::is_floating_point_v<V> ? 'f'
           : std::is_integral_v<V> ? (std::is_signed_v<V> ? 'i' : 'u') : 'V';
    if constexpr (std::is_void_v<V>) out[2] = 0; else out[2] = (int)sizeof(V);
}

template <class T> inline void describe(int* out)
{
    out[0] = std::is_pointer_v<T> ? 1 : 0;
    if constexpr (std::is_pointer_v<T>) describe_value<std::remove_pointer_t<T>>(out);
    else describe_value<T>(out);
}

// Writes 3 ints per parameter, for at most `cap` parameters, into out (see
// describe); returns the number of parameters.
template <class... A> inline int signature(void (*)(A...), int* out, int cap)
{
    int i = 0;
    ((i < cap ? describe<A>(out + 3 * i) : void(), ++i), ...);
    return i;
}

}  // namespace emu

// Block-wide barrier: park this fiber; the scheduler resumes it after every
// other live thread of the block has reached a barrier or exited.
inline void __syncthreads() { swapcontext(&emu::current->context, &emu::scheduler); }
