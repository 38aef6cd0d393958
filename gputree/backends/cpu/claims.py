"""Jobs cut in slots that threads claim as they come (the split scan's):
the claims array, the claim that never takes a slot past its job, the
count of slots done, and the team of a compiled loop (its calling thread
publishing one job after another, the other threads spinning for slots
until told to leave).

``claims`` int64 (N_CLAIMS,): NEXT, the next claim number; END, one past
the current job's last; DONE, the claims whose slots are done; ROWS, the
job's size as its kernel reads it (the split scan: the histogram rows it
scans); LEAVE, 1 once the team's calling thread is done. The counters only
grow: a job of n_slots slots owns the claim numbers [END - n_slots, END).
A thread whose compare-and-swap moves NEXT from c to c + 1 with c below
the END it read holds slot c of the job in progress: the next job is
published only once every slot of this one is done, so the job's inputs
stay as they are until the slot is done, whichever thread holds it, and
which thread does a slot changes nothing written.
"""
import numpy as np

from .intrinsics import atomic_load, atomic_store, compare_swap, fetch_add, spin_pause, yield_core
from .jit import ir_inline

NEXT, END, DONE, ROWS, LEAVE = range(5)
N_CLAIMS = 5

#: pauses of a waiting thread between two yields of its core
#: (:func:`wait`): a yield where no other thread is ready costs about as
#: much as these pauses; where more threads are ready than cores (processes
#: fitting side by side), the waiting thread leaves them the core
SPINS_PER_YIELD = 32

#: yields a team thread waits for a slot before it leaves the team (its
#: calling thread then does every slot): some milliseconds, many times a
#: best-first step's split and build
MOST_IDLE_YIELDS = 1 << 12


def slot_claims(n_slots, n_rows):
    """int64 (N_CLAIMS,): the claims of one job of ``n_slots`` slots over
    ``n_rows`` rows, none claimed yet (the array a kernel's parts share)."""
    return start_job(np.empty(N_CLAIMS, dtype=np.int64), n_slots, n_rows)


def start_job(claims, n_slots, n_rows):
    """``claims`` OUT (no thread using them): one job of ``n_slots`` slots
    over ``n_rows`` rows, none claimed yet (n_slots 0: none, as a team's
    calling thread starts them); returns them."""
    claims[:] = 0
    claims[END], claims[ROWS] = n_slots, n_rows
    return claims


@ir_inline
def claim_slot(claims):
    """The next claim number of the job in progress (``claims`` INOUT), or
    -1 when each of its slots is taken."""
    while True:
        claim = atomic_load(claims, NEXT)
        if claim >= atomic_load(claims, END):
            return np.int64(-1)
        if compare_swap(claims, NEXT, claim, claim + 1) == claim:
            return claim


@ir_inline
def slot_of(claims, claim, n_slots):
    """The slot (0 .. n_slots-1) of a held ``claim`` in its job."""
    return claim - (atomic_load(claims, END) - n_slots)


@ir_inline
def slot_done(claims):
    """Count a held slot done (after its results are written)."""
    fetch_add(claims, DONE, 1)


@ir_inline
def publish(claims, n_slots, n_rows):
    """The team's calling thread: open a job of ``n_slots`` slots over
    ``n_rows`` rows (the last one's slots all done); returns its END."""
    end = atomic_load(claims, END) + n_slots
    atomic_store(claims, ROWS, n_rows)
    atomic_store(claims, END, end)
    return end


@ir_inline
def pause(spins):
    """One wait of a spinning thread, its ``spins``-th: a pause, and every
    SPINS_PER_YIELD-th time a yield of its core."""
    spin_pause()
    if spins % SPINS_PER_YIELD == SPINS_PER_YIELD - 1:
        yield_core()


@ir_inline
def wait_done(claims, end):
    """The team's calling thread: wait until every slot up to ``end`` is done."""
    spins = 0
    while atomic_load(claims, DONE) < end:
        pause(spins)
        spins += 1


@ir_inline
def wait_for_slots(claims):
    """A team thread: wait until a slot may be claimed (True), or until the
    calling thread is done or no job came for :data:`MOST_IDLE_YIELDS`
    yields (False: leave the team)."""
    for spins in range(MOST_IDLE_YIELDS * SPINS_PER_YIELD):
        if atomic_load(claims, LEAVE) != 0:
            return False
        if atomic_load(claims, NEXT) < atomic_load(claims, END):
            return True
        pause(spins)
    return False


@ir_inline
def leave(claims):
    """The team's calling thread is done: the other threads leave."""
    atomic_store(claims, LEAVE, 1)
