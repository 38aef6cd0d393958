// row_partition.cu — owns the row partition: the row ids grouped by node, each
// node's rows contiguous and in ascending row order, kept level by level so
// that a histogram launch reads only the rows of the nodes it builds.
//
// order (n_samples,) int32 holds row ids. The level's node k owns the
// segment order[seg_begin[k] .. seg_end[k]); segments are disjoint and begin
// in increasing order of k (the segments of finished nodes lie between them,
// referenced by no level node). When `identity` is set, order is the
// identity (order[j] = j) and is not read: the root's one segment is [0, n).
//
// After update_positions moved the rows of a level's split nodes to their
// children, each split node's segment is partitioned stably: the rows now at
// left_child[k] first, every other row after them. Three launches and one
// scan between them (the host's xp.cumsum):
//   partition_flags     flags[j] = 1 when order[j]'s row went left;
//   (inclusive scan)    scan[j]  = flags[0] + ... + flags[j], in place;
//   partition_scatter   new_order[destination of j] = order[j];
//   partition_segments  the children's segments, for the next level, where
//                       left_child[k] - next_start indexes the next level.
// Rows of nodes that did not split keep their place.
#include "common.cuh"

// Level node whose segment holds index j, or -1 (j in a finished node's rows).
//   seg_begin, seg_end: IN (n_level,) int32, seg_begin non-decreasing
__device__ __forceinline__ int gt_segment_of(long long j, const int* seg_begin, const int* seg_end,
                                             int n_level)
{
    const int k = gt_upper_bound(seg_begin, n_level, j) - 1;
    return (k >= 0 && j < seg_end[k]) ? k : -1;
}

// Inclusive scan of the flags before index j (0 for j = 0).
//   scan: IN (n_samples,) int32 inclusive scan of the flags
__device__ __forceinline__ int gt_scan_before(const int* scan, long long j)
{
    return j > 0 ? scan[j - 1] : 0;
}

#define GT_PARTITION_LEVEL_PARAMS                                                          \
    const int* __restrict__ order,         /* IN  (n_samples,) int32 row ids by node */       \
    const int* __restrict__ seg_begin,     /* IN  (n_level,) int32 first index of node k */  \
    const int* __restrict__ seg_end,       /* IN  (n_level,) int32 end index of node k */    \
    const int* __restrict__ split_feature, /* IN  (n_level,) int32, -1 = not split */        \
    const int* __restrict__ left_child     /* IN  (n_level,) int32 left child id */

// flags[j] = 1 when the row at index j belongs to a split node's segment and
// now sits at that node's left child, else 0. One thread per index, grid-stride.
extern "C" __global__ void partition_flags(
    GT_PARTITION_LEVEL_PARAMS,
    const int* __restrict__ positions,     /* IN  (n_samples,) int32 node id per row, updated */
    int* __restrict__ flags,               /* OUT (n_samples,) int32 0 or 1 */
    int n_samples, int n_level, int identity)
{
    for (long long j = gt_thread_x(); j < n_samples; j += gt_stride_x()) {
        const int k = gt_segment_of(j, seg_begin, seg_end, n_level);
        int left = 0;
        if (k >= 0 && split_feature[k] >= 0) {
            left = positions[gt_row_at(order, j, identity)] == left_child[k] ? 1 : 0;
        }
        flags[j] = left;
    }
}

// new_order[d] = order[j]: within a split node's segment [b, e) the rows
// that went left keep their order at b.., the others theirs after them; other
// indices keep their place. One thread per index, grid-stride.
extern "C" __global__ void partition_scatter(
    GT_PARTITION_LEVEL_PARAMS,
    const int* __restrict__ scan,          /* IN  (n_samples,) int32 inclusive scan of flags */
    int* __restrict__ new_order,           /* OUT (n_samples,) int32 row ids by child node */
    int n_samples, int n_level, int identity)
{
    for (long long j = gt_thread_x(); j < n_samples; j += gt_stride_x()) {
        const int k = gt_segment_of(j, seg_begin, seg_end, n_level);
        long long destination = j;
        if (k >= 0 && split_feature[k] >= 0) {
            const int b = seg_begin[k];
            const int left_before_b = gt_scan_before(scan, b);
            const int left_before_j = gt_scan_before(scan, j) - left_before_b;
            const int n_left = scan[seg_end[k] - 1] - left_before_b;
            const int goes_left = scan[j] - gt_scan_before(scan, j);
            destination = goes_left ? b + left_before_j : b + n_left + (j - b - left_before_j);
        }
        new_order[destination] = gt_row_at(order, j, identity);
    }
}

// The children's segments: split node k's left child (next level index
// left_child[k] - next_start) gets its segment's first n_left indices, the
// right child the rest. One thread per level node, grid-stride.
extern "C" __global__ void partition_segments(
    GT_PARTITION_LEVEL_PARAMS,
    const int* __restrict__ scan,          /* IN  (n_samples,) int32 inclusive scan of flags */
    int* __restrict__ next_begin,          /* OUT (n_next,) int32 first index per next node */
    int* __restrict__ next_end,            /* OUT (n_next,) int32 end index per next node */
    int n_level, int next_start, int n_next)
{
    for (long long k = gt_thread_x(); k < n_level; k += gt_stride_x()) {
        const int left = left_child[k] - next_start;
        if (split_feature[k] < 0 || left < 0 || left + 1 >= n_next) {
            continue;
        }
        const int b = seg_begin[k], e = seg_end[k];
        const int n_left = e > b ? scan[e - 1] - gt_scan_before(scan, b) : 0;
        next_begin[left] = b;
        next_end[left] = b + n_left;
        next_begin[left + 1] = b + n_left;
        next_end[left + 1] = e;
    }
}
