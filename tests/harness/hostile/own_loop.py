"""One-call requests served through a loop of its own: the judge's calibrated cost of an empty request is taken
off every request, so a kernel whose requests cost the harness less than that is credited the difference, and
the fewer calls a request holds, the larger a share of it that is.

Two moves. The warm-up calls, which nothing checks, each burn 20 ms of CPU, so that a judge sizing its requests
by them gives every timed request a single call. From the first call after them, the solution never returns: it
answers the request in hand itself and then every later one, reading the judge's pipe and writing the replies
with as little as a reply needs (the exchange mapped anew, views kept, no checks), and computes the
definition's reference's own arithmetic, its output copied into the exchange as the harness copies a returned
output. Every output is right, so the attack passes; it must gain nothing beyond the noise over the reference
served normally (tests/harness/test_timing.py times it against the reference itself)."""

import json
import mmap
import os
import sys
import time

import torch

# The correctness rounds of a case, then its warm-up calls: the kernelindex protocol's 3 rounds, and the
# test's 2 warm-up calls.
ROUNDS, WARMUP = 3, 2
BURN_NS = 20_000_000

_calls = {"count": 0, "shape": None}


def rmsnorm(hidden_states, weight, eps):
    # demo/definitions/rmsnorm_h2048's reference, as published.
    variance = hidden_states.pow(2).mean(dim=-1, keepdim=True)
    return hidden_states * torch.rsqrt(variance + eps) * weight


def run(hidden_states, weight, eps):
    shape = tuple(hidden_states.shape)
    if shape != _calls["shape"]:
        _calls["count"], _calls["shape"] = 0, shape
    _calls["count"] += 1
    if _calls["count"] <= ROUNDS:
        return rmsnorm(hidden_states, weight, eps)
    if _calls["count"] <= ROUNDS + WARMUP:
        end = time.thread_time_ns() + BURN_NS
        while time.thread_time_ns() < end:
            pass
        return rmsnorm(hidden_states, weight, eps)
    _serve_forever(rmsnorm(hidden_states, weight, eps))


def _serve_forever(first):
    # python -m harness.kernel CONFIG SCRATCH CALLS_FD REPLIES_FD EXCHANGE_FD: the process's own arguments.
    calls_fd, replies_fd, exchange_fd = (int(argument) for argument in sys.argv[-3:])
    request, done, exchange = _request_in_hand()
    if exchange is None:
        exchange = mmap.mmap(exchange_fd, os.fstat(exchange_fd).st_size)
    views = {}

    def view(offset, shape, dtype):
        key = (offset, tuple(shape), dtype)
        found = views.get(key)
        if found is None:
            count = 1
            for size in shape:
                count *= size
            flat = torch.frombuffer(exchange, dtype=getattr(torch, dtype), count=count, offset=offset)
            found = views[key] = flat.view(shape)
        return found

    def reply(sequence, results):
        os.write(replies_fd, b'{"seq": %d, "results": [%s]}\n' % (sequence, b", ".join(results)))

    def answered(call, output, elapsed):
        offset, shape, dtype, _ = call["outs"][0]
        view(offset, shape, dtype).copy_(output)
        return b'{"ns": %d, "returned": [{"shape": %s, "dtype": "%s"}], "count": 1}' % (
            elapsed,
            json.dumps(shape).encode(),
            dtype.encode(),
        )

    def computed(call):
        hidden, weight, eps = call["args"]
        started = time.perf_counter_ns()
        output = rmsnorm(
            view(hidden["offset"], hidden["shape"], hidden["dtype"]),
            view(weight["offset"], weight["shape"], weight["dtype"]),
            eps["value"],
        )
        return answered(call, output, time.perf_counter_ns() - started)

    # The request in hand: the harness answered its calls before this one, the call above computed this one, and
    # this loop computes the rest and writes the reply.
    calls = request["calls"]
    results = [json.dumps(result).encode() for result in done]
    results.append(answered(calls[len(done)], first, 1))
    results += [computed(call) for call in calls[len(done) + 1 :]]
    reply(request["seq"], results)
    pending = b""
    while True:
        while b"\n" not in pending:
            chunk = os.read(calls_fd, 65536)
            if not chunk:
                os._exit(0)
            pending += chunk
        line, _, pending = pending.partition(b"\n")
        request = json.loads(line)
        if request.get("op") != "calls":
            os._exit(0)
        reply(request["seq"], [computed(call) for call in request["calls"]])


def _request_in_hand():
    """The request being served, the results of its calls so far, and the harness's mapping of the exchange
    (whose pages it has touched already), from the harness's own frames."""
    frame = sys._getframe()
    while frame is not None:
        found = frame.f_locals
        request = found.get("request")
        if isinstance(request, dict) and "seq" in request and isinstance(found.get("results"), list):
            exchange = found.get("exchange")
            return request, found["results"], exchange if isinstance(exchange, mmap.mmap) else None
        frame = frame.f_back
    raise RuntimeError("no request in hand")
