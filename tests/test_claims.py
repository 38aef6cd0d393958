"""The claims of jobs cut in slots (gputree/backends/cpu/claims.py): a
team of threads working on many jobs that its calling thread publishes one
after another does each slot of each job exactly once, reads that job's
inputs (not the next job's), and the calling thread sees every slot done
when it moves on; a team thread that is late or leaves changes nothing."""
import numpy as np
import pytest
from numba import njit

from gputree._threads import run_parts
from gputree.backends.cpu.claims import (DONE, END, N_CLAIMS, NEXT, ROWS, claim_slot, leave,
                                         publish, slot_done, slot_of, wait_done,
                                         wait_for_slots)
from gputree.backends.cpu.intrinsics import atomic_load, atomic_store, fetch_add

N_SLOTS = 4
#: a slot's busy work, so that the team threads meet the calling thread's jobs
BUSY = 300


@njit(nogil=True)
def _do_slots(claims, seen_rows, seen_slot, times_done, who, part):
    """Claim and do slots until the job in progress has none left: record
    the job's ROWS and the slot as read, count the claim done."""
    while True:
        claim = claim_slot(claims)
        if claim < 0:
            return
        seen_slot[claim] = slot_of(claims, claim, N_SLOTS)
        value = np.float64(claim)
        for _ in range(BUSY):                 # the slot's work
            value = value * 0.5 + 1.0
        seen_rows[claim] = atomic_load(claims, ROWS) + np.int64(value > 1e9)
        fetch_add(times_done, claim, 1)
        who[claim] = part
        slot_done(claims)


#: the first jobs' slots are the team's alone (the calling thread waits): the
#: team takes part however its threads are scheduled
TEAM_ONLY = 16


@njit(nogil=True)
def _team(claims, rows, checked, ready, seen_rows, seen_slot, times_done, who, part,
          n_parts):
    """The team: part 0 publishes job j over rows[j], does slots (but of
    the first TEAM_ONLY jobs where it has a team) and waits for all of them,
    checking each done once (``checked[j]`` the slots seen done); the
    first other part checks in (``ready``) and does those first jobs; then
    the others do slots until it leaves (claims.wait_for_slots)."""
    if part > 0:
        if atomic_load(ready, 0) == 0:         # the first team thread
            atomic_store(ready, 0, 1)
            while atomic_load(claims, DONE) < TEAM_ONLY * N_SLOTS:
                _do_slots(claims, seen_rows, seen_slot, times_done, who, part)
        while wait_for_slots(claims):
            _do_slots(claims, seen_rows, seen_slot, times_done, who, part)
        return
    while n_parts > 1 and atomic_load(ready, 0) == 0:
        pass
    for j in range(rows.shape[0]):
        end = publish(claims, N_SLOTS, rows[j])
        if j >= TEAM_ONLY or n_parts == 1:
            _do_slots(claims, seen_rows, seen_slot, times_done, who, part)
        wait_done(claims, end)
        for claim in range(end - N_SLOTS, end):
            checked[j] += times_done[claim] == 1
    leave(claims)


@pytest.mark.parametrize("n_parts", [1, 2, 3])
def test_team_does_every_slot_of_every_job_once_with_its_inputs(n_parts):
    n_jobs = 4000
    rows = np.arange(n_jobs, dtype=np.int64) * 7 + 3
    claims = np.zeros(N_CLAIMS, dtype=np.int64)
    n = n_jobs * N_SLOTS
    seen_rows, seen_slot = np.full(n, -1, np.int64), np.full(n, -1, np.int64)
    times_done, who = np.zeros(n, np.int64), np.full(n, -1, np.int64)
    checked, ready = np.zeros(n_jobs, np.int64), np.zeros(1, np.int64)
    run_parts(_team, n_parts, claims, rows, checked, ready, seen_rows, seen_slot, times_done,
              who, claimed=True)
    np.testing.assert_array_equal(times_done, 1)
    np.testing.assert_array_equal(checked, N_SLOTS)
    np.testing.assert_array_equal(seen_rows, np.repeat(rows, N_SLOTS))
    np.testing.assert_array_equal(seen_slot, np.tile(np.arange(N_SLOTS), n_jobs))
    assert claims[NEXT] == claims[END] == claims[DONE] == n
    assert set(np.unique(who)) <= set(range(n_parts))
    if n_parts > 1:
        assert np.all(who[:TEAM_ONLY * N_SLOTS] > 0)

