// binning.cu — owns map_to_bins: raw float64 features -> uint8 or uint16
// bin indices.
//
// Numerical feature: NaN -> missing_bin; otherwise the bin is the number of
// thresholds strictly less than x (np.searchsorted(row, x, side="left")), so
// +inf and -inf are ordinary values. Categorical feature: the thresholds row
// holds the sorted category values seen at fit; the bin is the index j with
// row[j] == x, and NaN or an unseen category goes to missing_bin.
#include "common.cuh"

// Number of entries of the sorted row[0:n] that are strictly less than x.
//   row: IN (n,) float64, ascending (padded with +inf)
__device__ __forceinline__ int gt_count_less(const double* row, int n, double x)
{
    int lo = 0;
    int hi = n;
    while (lo < hi) {
        const int mid = (lo + hi) >> 1;
        if (row[mid] < x) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

// Bin of one value of one feature (see the file comment).
//   row: IN (n_thresholds,) float64 thresholds or sorted categories
__device__ __forceinline__ int gt_bin_of(const double* row, int n_thresholds, int categorical,
                                         double x, int missing_bin)
{
    if (x != x) {  // NaN (no isnan: NVRTC has no math header)
        return missing_bin;
    }
    const int pos = gt_count_less(row, n_thresholds, x);
    if (!categorical) {
        return pos;
    }
    return (pos < n_thresholds && row[pos] == x) ? pos : missing_bin;
}

// Parameters, for bin codes of type Bin (unsigned char or unsigned short):
#define GT_MAP_TO_BINS_PARAMS(Bin)                                                        \
    const double* __restrict__ X,                 /* IN  (n_samples, n_features) float64, C order */ \
    const double* __restrict__ thresholds,        /* IN  (n_features, n_thresholds) float64 */ \
    const unsigned char* __restrict__ is_categorical,  /* IN  (n_features,) uint8, 0 or 1 */ \
    Bin* __restrict__ X_binned,                   /* OUT (n_samples, n_features) F order */ \
    int n_samples, int n_features, int n_thresholds, int missing_bin
#define GT_MAP_TO_BINS_ARGS \
    X, thresholds, is_categorical, X_binned, n_samples, n_features, n_thresholds, missing_bin

// One thread per element, grid-stride; consecutive threads take consecutive
// samples of one feature so the bin writes coalesce and a warp searches one
// thresholds row.
template <typename Bin>
__device__ __forceinline__ void gt_map_to_bins(GT_MAP_TO_BINS_PARAMS(Bin))
{
    const long long n_elements = (long long)n_samples * n_features;
    for (long long e = gt_thread_x(); e < n_elements; e += gt_stride_x()) {
        const long long i = e % n_samples;
        const int f = (int)(e / n_samples);
        const double x = X[i * n_features + f];
        const double* row = thresholds + (long long)f * n_thresholds;
        X_binned[e] = (Bin)gt_bin_of(row, n_thresholds, is_categorical[f], x, missing_bin);
    }
}

extern "C" __global__ void map_to_bins(GT_MAP_TO_BINS_PARAMS(unsigned char))
{
    gt_map_to_bins(GT_MAP_TO_BINS_ARGS);
}

extern "C" __global__ void map_to_bins_u16(GT_MAP_TO_BINS_PARAMS(unsigned short))
{
    gt_map_to_bins(GT_MAP_TO_BINS_ARGS);
}
