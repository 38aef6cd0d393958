// partition.cu — owns update_positions: after a level's splits are chosen,
// move every row of a split node to its left or right child.
//
// A row at level node k (= positions[i] - level_start) whose node is split on
// feature f = split_feature[k] >= 0 goes to left_child[k] when bin
// X_binned[i, f] is in the left set of split k (gt_goes_left_words: its
// split_bitset row, and words beyond for many categories), else to
// left_child[k] + 1. Rows of other nodes (other levels, finished rows,
// unsplit nodes) keep their position.
#include "common.cuh"

// Parameters, for bin codes of type Bin (unsigned char or unsigned short):
#define GT_UPDATE_POSITIONS_PARAMS(Bin)                                                      \
    const Bin* __restrict__ X_binned,              /* IN    (n_samples, n_features) F order */ \
    int* __restrict__ positions,                   /* INOUT (n_samples,) int32 node id per row */ \
    const int* __restrict__ split_feature,         /* IN    (n_level_nodes,) int32, -1 = not split */ \
    const unsigned int* __restrict__ split_bitset, /* IN    (n_level_nodes, GT_BITSET_WORDS) */ \
    const unsigned int* __restrict__ split_words,  /* IN    uint32 words beyond the bitsets */ \
    const long long* __restrict__ split_start,     /* IN    (n_level_nodes,) int64 first word */ \
    const int* __restrict__ split_n_words,         /* IN    (n_level_nodes,) int32 words */ \
    const int* __restrict__ left_child,            /* IN    (n_level_nodes,) int32 left child id */ \
    int n_samples, int level_start, int n_level_nodes
#define GT_UPDATE_POSITIONS_ARGS \
    X_binned, positions, split_feature, split_bitset, split_words, split_start, split_n_words, \
    left_child, n_samples, level_start, n_level_nodes

// One thread per row, grid-stride.
template <typename Bin>
__device__ __forceinline__ void gt_update_positions(GT_UPDATE_POSITIONS_PARAMS(Bin))
{
    for (long long i = gt_thread_x(); i < n_samples; i += gt_stride_x()) {
        const int k = gt_level_index(positions[i], level_start, n_level_nodes);
        if (k < 0) {
            continue;
        }
        const int f = split_feature[k];
        if (f < 0) {
            continue;
        }
        const int bin = X_binned[i + (long long)f * n_samples];
        positions[i] = gt_child(left_child[k], split_bitset, split_words, split_start,
                                split_n_words, k, bin);
    }
}

extern "C" __global__ void update_positions(GT_UPDATE_POSITIONS_PARAMS(unsigned char))
{
    gt_update_positions(GT_UPDATE_POSITIONS_ARGS);
}

extern "C" __global__ void update_positions_u16(GT_UPDATE_POSITIONS_PARAMS(unsigned short))
{
    gt_update_positions(GT_UPDATE_POSITIONS_ARGS);
}
