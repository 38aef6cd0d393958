// predict.cu — owns predict_leaves: route binned rows down a batch of trees
// stored as one set of concatenated node arrays, returning leaf node ids.
//
// Tree t starts at node tree_roots[t]; while node_feature[node] >= 0 the row
// moves to node_left[node] when its bin is in the node's left set (its
// node_bitset row and words beyond: gt_goes_left_words), else to
// node_left[node] + 1. The leaf id written is a
// global index into the concatenated node arrays.
#include "common.cuh"

// Parameters, for bin codes of type Bin (unsigned char or unsigned short):
#define GT_PREDICT_LEAVES_PARAMS(Bin)                                                      \
    const Bin* __restrict__ X_binned,              /* IN  (n_samples, n_features) F order */ \
    const int* __restrict__ node_feature,          /* IN  (n_total_nodes,) int32, -1 = leaf */ \
    const unsigned int* __restrict__ node_bitset,  /* IN  (n_total_nodes, GT_BITSET_WORDS) */ \
    const unsigned int* __restrict__ node_words,   /* IN  uint32 words beyond the bitsets */ \
    const long long* __restrict__ node_start,      /* IN  (n_total_nodes,) int64 first word */ \
    const int* __restrict__ node_n_words,          /* IN  (n_total_nodes,) int32 words */ \
    const int* __restrict__ node_left,             /* IN  (n_total_nodes,) int32 left child id */ \
    const int* __restrict__ tree_roots,            /* IN  (n_trees,) int32 global id of each root */ \
    int* __restrict__ leaves,                      /* OUT (n_samples, n_trees) int32, C order */ \
    int n_samples, int n_trees
#define GT_PREDICT_LEAVES_ARGS \
    X_binned, node_feature, node_bitset, node_words, node_start, node_n_words, node_left, \
    tree_roots, leaves, n_samples, n_trees

// 2-D grid: x strides over rows, y strides over trees, so a warp walks one tree.
template <typename Bin>
__device__ __forceinline__ void gt_predict_leaves(GT_PREDICT_LEAVES_PARAMS(Bin))
{
    for (int t = blockIdx.y; t < n_trees; t += gridDim.y) {
        for (long long i = gt_thread_x(); i < n_samples; i += gt_stride_x()) {
            int node = tree_roots[t];
            int f = node_feature[node];
            while (f >= 0) {
                const int bin = X_binned[i + (long long)f * n_samples];
                node = gt_child(node_left[node], node_bitset, node_words, node_start,
                                node_n_words, node, bin);
                f = node_feature[node];
            }
            leaves[i * n_trees + t] = node;
        }
    }
}

extern "C" __global__ void predict_leaves(GT_PREDICT_LEAVES_PARAMS(unsigned char))
{
    gt_predict_leaves(GT_PREDICT_LEAVES_ARGS);
}

extern "C" __global__ void predict_leaves_u16(GT_PREDICT_LEAVES_PARAMS(unsigned short))
{
    gt_predict_leaves(GT_PREDICT_LEAVES_ARGS);
}
