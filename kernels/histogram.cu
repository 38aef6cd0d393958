// histogram.cu — owns build_histograms: one launch accumulates the fixed-point
// per-row statistics of every row into hist[slot, feature, bin, channel] for
// every node of the current level that needs building.
//
// Row i lies in level node k = positions[i] - level_start; when
// 0 <= k < n_level_nodes and slot = node_to_build[k] >= 0, every feature f and
// channel c gets hist[slot, f, X_binned[i, f], c] += stats[i, c]. Sums are
// int64 and atomics are integer, so the result does not depend on the order
// in which threads or blocks run.
//
// build_histograms walks every row and reads its position; the kernels
// build_histograms_by_node (below) read only the rows of the built nodes.
//
// Grid: x strides over rows; y picks a group of features_per_group features;
// z picks a group of nodes_per_group build slots. With use_shared the block
// accumulates its (slots x features x n_bins x n_channels) slice in dynamic
// shared memory and then adds it to hist; without, it adds straight to hist
// (then the host passes one group spanning all slots and features).
#include "common.cuh"

// Build slot of row i's node, or -1 when the row's node is not built now.
//   node_to_build: IN (n_level_nodes,) int32 slot per level node, -1 = skip
__device__ __forceinline__ int gt_build_slot(int position, int level_start, int n_level_nodes,
                                             const int* node_to_build)
{
    const int k = gt_level_index(position, level_start, n_level_nodes);
    return k < 0 ? -1 : node_to_build[k];
}

// Zero the block's shared slice of n_cells int64 cells.
//   slice: OUT (n_cells,) shared int64
__device__ __forceinline__ void gt_zero_slice(long long* slice, long long n_cells)
{
    for (long long t = threadIdx.x; t < n_cells; t += blockDim.x) {
        slice[t] = 0;
    }
}

// Add the block's shared slice (slots x features x cells_per_feature) into
// hist at build slot slot0 and feature f0, skipping zero cells.
//   slice: IN    (n_slots, n_feats, cells_per_feature) shared int64
//   hist:  INOUT (n_build, n_features, cells_per_feature) global int64
__device__ __forceinline__ void gt_flush_slice(const long long* slice, long long* hist,
                                               int n_slots, int n_feats, int slot0, int f0,
                                               int n_features, long long cells_per_feature)
{
    const long long n_cells = (long long)n_slots * n_feats * cells_per_feature;
    for (long long t = threadIdx.x; t < n_cells; t += blockDim.x) {
        const long long value = slice[t];
        if (value == 0) {
            continue;
        }
        const long long cell = t % cells_per_feature;
        const long long slot_feature = t / cells_per_feature;
        const long long slot = slot0 + slot_feature / n_feats;
        const long long f = f0 + slot_feature % n_feats;
        gt_atomic_add_i64(hist + (slot * n_features + f) * cells_per_feature + cell, value);
    }
}

// Parameters, for bin codes of type Bin (unsigned char or unsigned short):
#define GT_BUILD_HISTOGRAMS_PARAMS(Bin)                                                     \
    const Bin* __restrict__ X_binned,            /* IN    (n_samples, n_features) F order */ \
    const long long* __restrict__ stats,         /* IN    (n_samples, n_channels) int64, C order */ \
    const int* __restrict__ positions,           /* IN    (n_samples,) int32 node id per row */ \
    const int* __restrict__ node_to_build,       /* IN    (n_level_nodes,) int32 slot, -1 = skip */ \
    long long* __restrict__ hist,                /* INOUT (n_build, n_features, n_bins, n_channels) */ \
                                                 /*       int64, C order, pre-zeroed by the caller */ \
    int n_samples, int n_features, int n_channels, int n_bins,                              \
    int level_start, int n_level_nodes, int n_build,                                        \
    int nodes_per_group, int features_per_group, int use_shared
#define GT_BUILD_HISTOGRAMS_ARGS                                                            \
    X_binned, stats, positions, node_to_build, hist, n_samples, n_features, n_channels, n_bins, \
    level_start, n_level_nodes, n_build, nodes_per_group, features_per_group, use_shared

template <typename Bin>
__device__ __forceinline__ void gt_build_histograms(GT_BUILD_HISTOGRAMS_PARAMS(Bin))
{
    extern __shared__ long long shared_slice[];  // (n_slots, n_feats, n_bins, n_channels) int64
    const int slot0 = blockIdx.z * nodes_per_group;
    const int f0 = blockIdx.y * features_per_group;
    const int n_slots = min(nodes_per_group, n_build - slot0);
    const int n_feats = min(features_per_group, n_features - f0);
    const long long cells_per_feature = (long long)n_bins * n_channels;

    if (use_shared) {
        gt_zero_slice(shared_slice, (long long)n_slots * n_feats * cells_per_feature);
        __syncthreads();
    }
    for (long long i = gt_thread_x(); i < n_samples; i += gt_stride_x()) {
        const int slot = gt_build_slot(positions[i], level_start, n_level_nodes, node_to_build);
        if (slot < slot0 || slot >= slot0 + n_slots) {
            continue;
        }
        const long long* row_stats = stats + i * n_channels;
        for (int f = f0; f < f0 + n_feats; ++f) {
            const int bin = X_binned[i + (long long)f * n_samples];
            long long* cells = use_shared
                ? shared_slice + ((long long)(slot - slot0) * n_feats + (f - f0)) * cells_per_feature
                : hist + ((long long)slot * n_features + f) * cells_per_feature;
            cells += (long long)bin * n_channels;
            for (int c = 0; c < n_channels; ++c) {
                gt_atomic_add_i64(cells + c, row_stats[c]);
            }
        }
    }
    if (use_shared) {
        __syncthreads();
        gt_flush_slice(shared_slice, hist, n_slots, n_feats, slot0, f0, n_features, cells_per_feature);
    }
}

extern "C" __global__ void build_histograms(GT_BUILD_HISTOGRAMS_PARAMS(unsigned char))
{
    gt_build_histograms(GT_BUILD_HISTOGRAMS_ARGS);
}

extern "C" __global__ void build_histograms_u16(GT_BUILD_HISTOGRAMS_PARAMS(unsigned short))
{
    gt_build_histograms(GT_BUILD_HISTOGRAMS_ARGS);
}

// ---------------------------------------------------------------------------
// build_histograms_by_node: the same sums from the row partition
// (kernels/row_partition.cu), reading only the rows of the nodes built.
//
// Build slot s holds the rows order[slot_begin[s] .. slot_end[s]) (its
// node's segment) and is built by blocks slot_block_end[s - 1] ..
// slot_block_end[s] - 1 of the grid's x axis (an inclusive scan; x may hold
// more blocks, which exit), each taking rows_per_block consecutive rows of
// the segment; y picks a group of features_per_group features. A row counts
// only when positions[row] == slot_node[s], so a segment that holds more
// rows than its node's (the root's [0, n)) gives the same sums.
//
// With use_shared, a block adds its rows into a shared (features x n_bins x
// n_channels) slice of Cell and flushes it into hist once; else it adds
// straight into hist. Cell is long long, or int ("narrow"): then a first pass
// sums |stats| of the block's rows per channel (saturating), and a channel is
// accumulated in 32 bits only when that sum is below 2**31, so no partial
// sum can overflow; the block's other channels go straight to hist.

//: channels a narrow block can check (its per-channel sums are static shared memory)
#define GT_NARROW_MAX_CHANNELS 8

// Slots of the level's build nodes: begin, end, node id and blocks (one per
// rows_per_block rows) of each. One thread per level node, grid-stride.
//   slots: OUT (4, n_build) int32 rows begin, end, node, blocks (pre-zeroed)
extern "C" __global__ void plan_histogram_slots(
    const int* __restrict__ seg_begin,      /* IN  (n_level,) int32 first index of node k */
    const int* __restrict__ seg_end,        /* IN  (n_level,) int32 end index of node k */
    const int* __restrict__ node_to_build,  /* IN  (n_level,) int32 slot, -1 = skip */
    int* __restrict__ slots,
    int n_level, int level_start, int n_build, int rows_per_block)
{
    for (long long k = gt_thread_x(); k < n_level; k += gt_stride_x()) {
        const int s = node_to_build[k];
        if (s < 0 || s >= n_build) {
            continue;
        }
        const int n_rows = seg_end[k] - seg_begin[k];
        slots[s] = seg_begin[k];
        slots[n_build + s] = seg_end[k];
        slots[2 * n_build + s] = level_start + (int)k;
        slots[3 * n_build + s] = (n_rows + rows_per_block - 1) / rows_per_block;
    }
}

// First slot s with block < slot_block_end[s], or n_build when none.
//   slot_block_end: IN (n_build,) int32 inclusive scan of the slots' blocks
__device__ __forceinline__ int gt_slot_of_block(int block, const int* slot_block_end, int n_build)
{
    return gt_upper_bound(slot_block_end, n_build, block);
}

// |value| capped at cap, as unsigned (exact for every int64).
__device__ __forceinline__ unsigned long long gt_capped_abs(long long value,
                                                            unsigned long long cap)
{
    const unsigned long long magnitude =
        value < 0 ? 0ull - (unsigned long long)value : (unsigned long long)value;
    return magnitude < cap ? magnitude : cap;
}

// Bit c set when channel c's |stats| over the block's rows sum below 2**31
// (every partial sum of them then fits a 32-bit cell). Every thread of the
// block calls it; it holds two barriers.
//   the block's rows: order[j] for j in [j0, j1) whose position is node
__device__ __forceinline__ unsigned int gt_narrow_channels(
    const long long* stats, const int* positions, const int* order, int identity, long long j0,
    long long j1, int node, int n_channels)
{
    __shared__ unsigned long long abs_sums[GT_NARROW_MAX_CHANNELS];
    const unsigned long long cap = 1ull << 32;  // n * cap cannot wrap for n < 2**32 threads
    if (threadIdx.x < GT_NARROW_MAX_CHANNELS) {
        abs_sums[threadIdx.x] = 0;
    }
    __syncthreads();
    unsigned long long sums[GT_NARROW_MAX_CHANNELS] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (long long j = j0 + threadIdx.x; j < j1; j += blockDim.x) {
        const int row = gt_row_at(order, j, identity);
        if (positions[row] != node) {
            continue;
        }
        for (int c = 0; c < n_channels; ++c) {
            const long long value = stats[(long long)row * n_channels + c];
            const unsigned long long sum = sums[c] + gt_capped_abs(value, cap);
            sums[c] = sum < cap ? sum : cap;
        }
    }
    for (int c = 0; c < n_channels; ++c) {
        atomicAdd(abs_sums + c, sums[c]);
    }
    __syncthreads();
    unsigned int narrow = 0;
    for (int c = 0; c < n_channels; ++c) {
        narrow |= (abs_sums[c] < (1ull << 31) ? 1u : 0u) << c;
    }
    return narrow;
}

// Add value to one cell: the block's shared Cell when shared (and, for
// 32-bit cells, when its channel is narrow), else the int64 cell of hist.
template <typename Cell>
__device__ __forceinline__ void gt_add_cell(Cell* shared_cell, long long* global_cell,
                                            long long value, int in_shared)
{
    if (!in_shared) {
        gt_atomic_add_i64(global_cell, value);
    } else if (sizeof(Cell) == sizeof(long long)) {
        gt_atomic_add_i64((long long*)shared_cell, value);
    } else {
        atomicAdd((int*)shared_cell, (int)value);
    }
}

// Add the block's shared slice (n_feats x cells_per_feature) of Cell into
// hist at build slot `slot` and feature f0, skipping zero cells.
//   hist: INOUT (n_build, n_features, cells_per_feature) global int64
template <typename Cell>
__device__ __forceinline__ void gt_flush_node_slice(const Cell* slice, long long* hist, int slot,
                                                    int n_feats, int f0, int n_features,
                                                    long long cells_per_feature)
{
    const long long n_cells = (long long)n_feats * cells_per_feature;
    long long* base = hist + ((long long)slot * n_features + f0) * cells_per_feature;
    for (long long t = threadIdx.x; t < n_cells; t += blockDim.x) {
        const long long value = (long long)slice[t];
        if (value != 0) {
            gt_atomic_add_i64(base + t, value);
        }
    }
}

// Parameters, for bin codes of type Bin (unsigned char or unsigned short):
#define GT_BY_NODE_PARAMS(Bin)                                                               \
    const Bin* __restrict__ X_binned,         /* IN    (n_samples, n_features) F order */      \
    const long long* __restrict__ stats,      /* IN    (n_samples, n_channels) int64 */         \
    const int* __restrict__ positions,        /* IN    (n_samples,) int32 node id per row */    \
    const int* __restrict__ order,            /* IN    (n_samples,) int32 row ids by node */    \
    const int* __restrict__ slots,            /* IN    (4, n_build) plan_histogram_slots' */    \
    const int* __restrict__ slot_block_end,   /* IN    (n_build,) int32 inclusive scan */       \
    long long* __restrict__ hist,             /* INOUT (n_build, n_features, n_bins, */         \
                                              /*       n_channels) int64, added to */           \
    int n_samples, int n_features, int n_channels, int n_bins, int n_build,                  \
    int rows_per_block, int features_per_group, int use_shared, int identity
#define GT_BY_NODE_ARGS                                                                      \
    X_binned, stats, positions, order, slots, slot_block_end, hist, n_samples, n_features,   \
    n_channels, n_bins, n_build, rows_per_block, features_per_group, use_shared, identity

template <typename Bin, typename Cell>
__device__ __forceinline__ void gt_build_histograms_by_node(GT_BY_NODE_PARAMS(Bin))
{
    extern __shared__ __align__(8) unsigned char node_slice_bytes[];
    Cell* slice = (Cell*)node_slice_bytes;  // (n_feats, n_bins, n_channels)
    const int slot = gt_slot_of_block(blockIdx.x, slot_block_end, n_build);
    if (slot >= n_build) {
        return;  // the whole block: no barrier is skipped by some threads only
    }
    const int first_block = slot > 0 ? slot_block_end[slot - 1] : 0;
    const long long j0 = slots[slot] + (long long)(blockIdx.x - first_block) * rows_per_block;
    const long long j1 = min((long long)slots[n_build + slot], j0 + rows_per_block);
    const int node = slots[2 * n_build + slot];
    const int f0 = blockIdx.y * features_per_group;
    const int n_feats = min(features_per_group, n_features - f0);
    const long long cells_per_feature = (long long)n_bins * n_channels;

    unsigned int in_shared = use_shared ? 0xFFFFFFFFu : 0u;  // bit c: channel c in shared
    if (use_shared && sizeof(Cell) < sizeof(long long)) {
        in_shared = gt_narrow_channels(stats, positions, order, identity, j0, j1, node,
                                            n_channels);
    }
    if (use_shared) {
        for (long long t = threadIdx.x; t < n_feats * cells_per_feature; t += blockDim.x) {
            slice[t] = 0;
        }
        __syncthreads();
    }
    long long* hist_slot = hist + ((long long)slot * n_features + f0) * cells_per_feature;
    for (long long j = j0 + threadIdx.x; j < j1; j += blockDim.x) {
        const int row = gt_row_at(order, j, identity);
        if (positions[row] != node) {
            continue;
        }
        const long long* row_stats = stats + (long long)row * n_channels;
        for (int f = 0; f < n_feats; ++f) {
            const int bin = X_binned[row + (long long)(f0 + f) * n_samples];
            const long long cell = f * cells_per_feature + (long long)bin * n_channels;
            for (int c = 0; c < n_channels; ++c) {
                gt_add_cell(slice + cell + c, hist_slot + cell + c, row_stats[c],
                            (int)((in_shared >> min(c, 31)) & 1u));
            }
        }
    }
    if (use_shared) {
        __syncthreads();
        gt_flush_node_slice(slice, hist, slot, n_feats, f0, n_features, cells_per_feature);
    }
}

extern "C" __global__ void build_histograms_by_node(GT_BY_NODE_PARAMS(unsigned char))
{
    gt_build_histograms_by_node<unsigned char, long long>(GT_BY_NODE_ARGS);
}

extern "C" __global__ void build_histograms_by_node_u16(GT_BY_NODE_PARAMS(unsigned short))
{
    gt_build_histograms_by_node<unsigned short, long long>(GT_BY_NODE_ARGS);
}

extern "C" __global__ void build_histograms_by_node32(GT_BY_NODE_PARAMS(unsigned char))
{
    gt_build_histograms_by_node<unsigned char, int>(GT_BY_NODE_ARGS);
}

extern "C" __global__ void build_histograms_by_node32_u16(GT_BY_NODE_PARAMS(unsigned short))
{
    gt_build_histograms_by_node<unsigned short, int>(GT_BY_NODE_ARGS);
}
