"""The Python side of the conformance scenarios: a Worker with the scenario
handlers, driven by sdk/conformance (see doc.go there)."""
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python", "src"))

from stint import Client, RetryAfter, Worker  # noqa: E402

URL, TOKEN, QUEUE = os.environ["STINT_URL"], os.environ["STINT_TOKEN"], os.environ["STINT_QUEUE"]
REASONS = {"CancelRequested": "cancel", "Shutdown": "shutdown", "LeaseLost": "lease_lost",
           "TimeoutExceeded": "timeout", "DeadlinePassed": "deadline"}


def say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


# Bench mode (STINT_BENCH=N): a no-op handler; "benched" once N completions were accepted.
BENCH = int(os.environ.get("STINT_BENCH") or 0)
completed = [0]
count_lock = threading.Lock()


def outcome(o):
    if o.error is not None and o.op:
        say(f"rejected {o.job_id} {getattr(o.error, 'kind', '') or getattr(o.error, 'code', 'error')}")
    elif BENCH and o.op == "complete":
        with count_lock:  # outcomes arrive on the handlers' threads
            completed[0] += 1
            done = completed[0] == BENCH
        if done:
            say("benched")


raw = Client(URL, TOKEN)
released = set()
w = Worker(URL, TOKEN, queues={QUEUE: int(os.environ.get("STINT_CONCURRENCY") or 4)}, lease_ttl=600, claim_wait=5, shutdown_grace=0, on_outcome=outcome)


class Flaky(Exception):
    code = "flaky"


w.handle("noop", lambda job: None)


@w.handle("echo")
def echo(job):
    return {"echo": job.payload, "lang": "python", "attempt": job.attempt}


@w.handle("flaky")
def flaky(job):
    if job.attempt <= job.payload.get("fail", 0):
        raise Flaky(f"attempt {job.attempt} fails on purpose")
    if job.payload.get("retryAfterMs") and job.attempt == 1:
        raise RetryAfter(job.payload["retryAfterMs"] / 1000)
    return {"attempt": job.attempt}


@w.handle("block")
def block(job):
    say(f"started {job.id}")
    job.aborted.wait()
    say(f"aborted {job.id} {REASONS.get(type(job.abort_reason).__name__, 'unknown')}")
    job.raise_if_aborted()


@w.handle("stale")
def stale(job):
    if job.id in released:
        return "second"
    released.add(job.id)
    raw.transport.call("WorkerService/Release", {"owner": job.owner(), "requeue": True, "reason": "conformance: the lease goes stale"})
    return "first"


@w.handle("steps")
def steps(job):
    def one():
        say(f"ran {job.id} one")
        return 1

    n1 = job.step("one", one)
    received, payload = job.wait_signal("go", 3600)
    job.sleep_for("nap", 0.01)

    def two():
        say(f"ran {job.id} two")
        return n1 + 1

    n2 = job.step("two", two)
    return {"one": n1, "two": n2, "received": received, "payload": payload, "lang": "python"}


w.start()
say("ready")
sys.stdin.read()
w.stop()
say("stopped")
