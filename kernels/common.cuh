// common.cuh — owns what every gputree CUDA C kernel shares: the fixed layout
// constants (bitset words per node), the grid-stride loop helpers, the int64
// fixed-point atomic add, and the one rule that maps a row to its child node.
//
// NVRTC has no host headers, so this file (and every kernel file) includes
// nothing and uses only built-in types: unsigned char = uint8, unsigned short =
// uint16, int = int32, unsigned int = uint32, long long = int64 (see
// gputree/_dtypes.py). Kernels that read bin codes are templates over the
// code type, instantiated as `name` (uint8) and `name_u16` (uint16).
#ifndef GPUTREE_COMMON_CUH
#define GPUTREE_COMMON_CUH

// uint32 words in the per-node "goes left" set (gputree/backends/splitset.py):
// words 0..7 a bitmap of bins 0..255, word 8 the last bin of the range 256..
// that goes left, word 9 one more bin >= 256 that goes left (0: none). A
// categorical split on more than 256 categories has further words (its
// LeftSets words: n_words of them from words[start]), word j a bitmap of
// bins 256 + 32 j .. 256 + 32 j + 31.
#define GT_BITMAP_BINS 256
#define GT_RANGE_WORD 8
#define GT_EXTRA_WORD 9
#define GT_BITSET_WORDS 10

// Index of this thread in the flattened x dimension of the grid.
__device__ __forceinline__ long long gt_thread_x()
{
    return (long long)blockIdx.x * blockDim.x + threadIdx.x;
}

// Number of threads in the x dimension of the grid (the grid-stride step).
__device__ __forceinline__ long long gt_stride_x()
{
    return (long long)gridDim.x * blockDim.x;
}

// Position of global node `node` within the current level, or -1 when the
// node is not one of the level's n_level_nodes nodes (finished rows carry -1).
__device__ __forceinline__ int gt_level_index(int node, int level_start, int n_level_nodes)
{
    const int k = node - level_start;
    return (k >= 0 && k < n_level_nodes) ? k : -1;
}

// Row id at index j of a row partition (kernels/row_partition.cu).
//   order: IN (n_samples,) int32 row ids grouped by node, unread when identity is set
__device__ __forceinline__ int gt_row_at(const int* order, long long j, int identity)
{
    return identity ? (int)j : order[j];
}

// First index i in [0, n) with sorted[i] > value, or n (sorted non-decreasing).
//   sorted: IN (n,) int32
__device__ __forceinline__ int gt_upper_bound(const int* sorted, int n, long long value)
{
    int lo = 0, hi = n;
    while (lo < hi) {
        const int mid = (lo + hi) >> 1;
        if (sorted[mid] <= value) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

// 1 when `bin` goes to the left child under `bitset`.
//   bitset: IN (GT_BITSET_WORDS,) uint32 words of one node
__device__ __forceinline__ int gt_goes_left(const unsigned int* bitset, int bin)
{
    if (bin < GT_BITMAP_BINS) {
        return (int)((bitset[bin >> 5] >> (bin & 31)) & 1u);
    }
    const unsigned int b = (unsigned int)bin;
    return (b <= bitset[GT_RANGE_WORD] || b == bitset[GT_EXTRA_WORD]) ? 1 : 0;
}

// 1 when `bin` goes to the left child of node k of a LeftSets.
//   bitsets: IN (n, GT_BITSET_WORDS) uint32; words: IN uint32, every node's
//   words beyond its bitset; start: IN (n,) int64, n_words: IN (n,) int32
__device__ __forceinline__ int gt_goes_left_words(const unsigned int* bitsets,
                                                  const unsigned int* words,
                                                  const long long* start, const int* n_words,
                                                  long long k, int bin)
{
    if (gt_goes_left(bitsets + k * GT_BITSET_WORDS, bin)) {
        return 1;
    }
    const int j = (bin - GT_BITMAP_BINS) >> 5;
    if (bin < GT_BITMAP_BINS || j >= n_words[k]) {
        return 0;
    }
    return (int)((words[start[k] + j] >> (bin & 31)) & 1u);
}

// Child node reached from split node k of a LeftSets (as gt_goes_left_words):
// the right child is always left + 1.
__device__ __forceinline__ int gt_child(int left, const unsigned int* bitsets,
                                        const unsigned int* words, const long long* start,
                                        const int* n_words, long long k, int bin)
{
    return left + (gt_goes_left_words(bitsets, words, start, n_words, k, bin) ? 0 : 1);
}

// Order-free int64 accumulation: two's-complement addition wraps exactly like
// unsigned addition, so the unsigned 64-bit atomic gives the int64 sum.
//   cell: INOUT one int64 histogram cell (shared or global memory)
__device__ __forceinline__ void gt_atomic_add_i64(long long* cell, long long value)
{
    atomicAdd((unsigned long long*)cell, (unsigned long long)value);
}

#endif  // GPUTREE_COMMON_CUH
