"""A scheduler driven by hand, in one process, step by step (the tests of async
scheduling and of the device inputs run a workload so, with no sockets)."""

from __future__ import annotations


def admit(sched, wl) -> bool:
    """Add the arrivals of workload ``wl`` at ``sched``'s step; True where it has a
    request to schedule, else (nothing to run yet) its step moved on to the next
    arrival, if any."""
    for r in wl.arrivals(sched.step):
        sched.add_request(r.req_id, r.index, r.prompt_token_ids, r.max_tokens)
    if sched.has_unfinished_requests():
        return True
    nxt = wl.next_arrival_step()
    if nxt is not None:
        sched.step = max(nxt, sched.step + 1)
    return False
