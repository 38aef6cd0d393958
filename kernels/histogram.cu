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
