"""What a device backend spends, counted where it happens: host<->device
copies and synchronisations (:class:`TransferCounter`) and the bytes held by
the arrays it allocates (:class:`AllocationTracker`).

The CUDA backend, real or simulated, routes every copy and every large
allocation through these, so tests on the simulated device can hold the
grower to a budget of copies per level and per tree, and the pre-fit memory
estimate to the bytes a fit really holds.
"""
import weakref
from collections import Counter


class TransferCounter(Counter):
    """Counts of ``upload`` (host -> device copies), ``download`` (device ->
    host copies), ``sync`` (the host waiting for the device: every download
    does), the bytes moved (``upload_bytes``, ``download_bytes``) and the
    blocks of rows large uploads were made in (``upload_blocks``)."""

    def upload(self, nbytes, blocks=1):
        """One host -> device copy of ``nbytes``, made in ``blocks`` parts."""
        self["upload"] += 1
        self["upload_bytes"] += int(nbytes)
        self["upload_blocks"] += int(blocks)

    def download(self, nbytes):
        self["download"] += 1
        self["download_bytes"] += int(nbytes)
        self["sync"] += 1

    def copies(self):
        """(uploads, downloads) so far."""
        return self["upload"], self["download"]


class AllocationTracker:
    """Bytes of the live arrays handed to :meth:`track` (``live``) and the
    most held at once since the last :meth:`reset_peak` (``peak``).

    An array is released when it is garbage (a view keeps its base alive, as
    it keeps the memory on a device). Arrays that take no weak reference are
    not tracked.
    """

    def __init__(self):
        self.live = 0
        self.peak = 0

    def track(self, array):
        """Count ``array``'s bytes until it is released; returns ``array``."""
        nbytes = int(array.nbytes)
        try:
            weakref.finalize(array, self._release, nbytes)
        except TypeError:
            return array
        self.live += nbytes
        self.peak = max(self.peak, self.live)
        return array

    def _release(self, nbytes):
        self.live -= nbytes

    def reset_peak(self):
        """Start a new peak from the bytes held now."""
        self.peak = self.live
