import datetime
import threading
import unittest

from stint import (CancelRequested, Client, DeadLetter, DeadlinePassed, Halt, LeaseLost, Permanent, RetryAfter, Shutdown, StaleLeaseError,
                   TimeoutExceeded, Worker)

from .server import ServerTestCase, wait_for


class WorkerTest(ServerTestCase):
    def worker(self, queue: str, **kw) -> Worker:
        w = Worker(self.srv.url, self.srv.tokens["worker"], queues={queue: 4}, claim_wait=5, **kw)
        self.addCleanup(w.stop)
        return w

    @staticmethod
    def blocker(started: threading.Event, seen: list):
        """A handler that waits for its abort, records the reason and raises it."""
        def handler(job):
            started.set()
            job.aborted.wait(60)
            seen.append(job.abort_reason)
            job.raise_if_aborted()
        return handler

    def finished(self, job_id: str, state: str) -> dict:
        return wait_for(f"job {job_id} {state}", lambda: (lambda j: j if j["state"] == state else None)(self.client.get(job_id)))

    def test_complete_progress_checkpoint(self) -> None:
        w = self.worker("p-complete")

        @w.handle("add")
        def add(job):
            assert job.lease_id
            job.progress({"pct": 50}, "adding")
            job.checkpoint({"half": True}, steps=1)
            return {"sum": job.payload["a"] + job.payload["b"], "attempt": job.attempt}

        w.start()
        job = self.client.enqueue({"kind": "add", "queue": "p-complete", "payload": {"a": 2, "b": 3}}).job
        done = self.finished(job["id"], "JOB_STATE_SUCCEEDED")
        self.assertEqual(done["result"], {"sum": 5, "attempt": 1})
        self.assertEqual(done["checkpoint"], {"half": True})
        self.assertEqual(done["progress"], {"pct": 50})
        self.assertTrue(done["lastOwner"].startswith("py-worker/"))

    def test_retry_permanent_halt_dead_letter(self) -> None:
        w = self.worker("p-fail", backoff={"base": 0.01})

        def flaky(job):
            if job.attempt == 1:
                raise RetryAfter(0.01, "not yet")
            return "ok"

        class DiskFull(Exception):
            code = "disk_full"

        def broken(job):
            raise DiskFull("boom")

        def perm(job):
            raise Permanent("never works", code="bad_input")

        def halt(job):
            raise Halt("enough")

        def dlq(job):
            raise DeadLetter("parse_error", "cannot parse")

        for kind, fn in {"flaky": flaky, "broken": broken, "perm": perm, "halt": halt, "dlq": dlq}.items():
            w.handle(kind, fn)
        w.start()
        ids = {k: self.client.enqueue({"kind": k, "queue": "p-fail", "maxAttempts": 2}).job["id"]
               for k in ("flaky", "broken", "perm", "halt", "dlq")}
        flaky_job = self.finished(ids["flaky"], "JOB_STATE_SUCCEEDED")
        self.assertEqual((flaky_job["attempt"], flaky_job["failures"], flaky_job["lastError"]["code"]), (2, 1, "retry_after"))
        self.assertEqual(self.finished(ids["broken"], "JOB_STATE_DEAD_LETTERED")["lastError"]["code"], "disk_full")
        p = self.finished(ids["perm"], "JOB_STATE_FAILED")
        self.assertEqual((p["error"]["code"], p["error"]["class"]), ("bad_input", "ERROR_CLASS_PERMANENT"))
        self.finished(ids["halt"], "JOB_STATE_HALTED")
        self.assertEqual(self.finished(ids["dlq"], "JOB_STATE_DEAD_LETTERED")["reasonCode"], "parse_error")

    def test_cancel_reaches_handler_without_heartbeat(self) -> None:
        started, seen = threading.Event(), []
        # A 10-minute lease heartbeats every 200s: the cancel must come by the notices stream.
        w = self.worker("p-cancel", lease_ttl=600)
        w.handle("wait", self.blocker(started, seen))
        w.start()
        job = self.client.enqueue({"kind": "wait", "queue": "p-cancel"}).job
        self.assertTrue(started.wait(30))
        self.client.cancel(job["id"])
        self.finished(job["id"], "JOB_STATE_CANCELLED")
        self.assertIsInstance(seen[0], CancelRequested)

    def test_completed_jobs(self) -> None:
        """A completion's outcome carries the stored job only with completed_jobs=True."""
        for completed_jobs in (False, True):
            with self.subTest(completed_jobs=completed_jobs):
                outcomes = []
                queue = f"p-completed-{completed_jobs}".lower()
                w = self.worker(queue, completed_jobs=completed_jobs, on_outcome=outcomes.append)
                w.handle("add", lambda job: {"sum": 3})
                w.start()
                job = self.client.enqueue({"kind": "add", "queue": queue}).job
                self.finished(job["id"], "JOB_STATE_SUCCEEDED")
                w.stop()
                o = [o for o in outcomes if o.job_id == job["id"]][0]
                self.assertEqual((o.op, o.error), ("complete", None))
                if completed_jobs:
                    self.assertEqual((o.job["state"], o.job["result"]), ("JOB_STATE_SUCCEEDED", {"sum": 3}))
                else:
                    self.assertIsNone(o.job)

    def test_many_jobs_on_the_handler_pool(self) -> None:
        """More jobs than slots all complete, on a pool no larger than the slots."""
        w = self.worker("p-pool")
        w.handle("n", lambda job: job.payload["i"])
        w.start()
        ids = [r.job["id"] for r in self.client.enqueue_many([{"kind": "n", "queue": "p-pool", "payload": {"i": i}} for i in range(40)])]
        for i, job_id in enumerate(ids):
            self.assertEqual(self.finished(job_id, "JOB_STATE_SUCCEEDED")["result"], i)
        self.assertLessEqual(len(w._handler_threads), 4)

    def test_stale_lease_report_rejected(self) -> None:
        outcomes, released = [], set()
        raw = Client(self.srv.url, self.srv.tokens["worker"])  # the worker API, behind the Worker's back
        self.addCleanup(raw.close)
        w = self.worker("p-stale", on_outcome=outcomes.append)

        @w.handle("stale")
        def stale(job):
            if job.id not in released:
                released.add(job.id)
                raw.transport.call("WorkerService/Release", {"owner": job.owner(), "requeue": True, "reason": "test"})
                return "first"
            return "second"

        w.start()
        job = self.client.enqueue({"kind": "stale", "queue": "p-stale"}).job
        done = self.finished(job["id"], "JOB_STATE_SUCCEEDED")
        self.assertEqual((done["result"], done.get("failures", 0)), ("second", 0))
        rejected = [o for o in outcomes if o.job_id == job["id"] and o.error is not None]
        self.assertIsInstance(rejected[0].error, StaleLeaseError)

    def test_timeout(self) -> None:
        seen = []
        w = self.worker("p-timeout")

        @w.handle("slow")
        def slow(job):
            job.aborted.wait(60)
            seen.append(job.abort_reason)
            raise RuntimeError("stopped")

        w.start()
        job = self.client.enqueue({"kind": "slow", "queue": "p-timeout", "timeout": "0.2s", "maxAttempts": 1}).job
        self.finished(job["id"], "JOB_STATE_TIMED_OUT")
        self.assertIsInstance(seen[0], TimeoutExceeded)

    def test_shutdown_releases_without_spending_an_attempt(self) -> None:
        started, seen = threading.Event(), []
        w = self.worker("p-shutdown", shutdown_grace=0)
        w.handle("long", self.blocker(started, seen))
        w.start()
        job = self.client.enqueue({"kind": "long", "queue": "p-shutdown", "maxAttempts": 1}).job
        self.assertTrue(started.wait(30))
        w.stop()
        self.assertIsInstance(seen[0], Shutdown)
        j = self.client.get(job["id"])
        self.assertEqual((j["state"], j.get("failures", 0)), ("JOB_STATE_QUEUED", 0))
        w2 = self.worker("p-shutdown")
        w2.handle("long", lambda job: "done")
        w2.start()
        self.finished(job["id"], "JOB_STATE_SUCCEEDED")

    def test_hard_cancel_loses_the_lease(self) -> None:
        started, seen, outcomes = threading.Event(), [], []
        w = self.worker("p-lost", lease_ttl=600, on_outcome=outcomes.append)
        w.handle("wait", self.blocker(started, seen))
        w.start()
        job = self.client.enqueue({"kind": "wait", "queue": "p-lost"}).job
        self.assertTrue(started.wait(30))
        self.client.cancel(job["id"], hard=True)
        wait_for("the handler's abort", lambda: seen)
        w.stop()
        self.assertIsInstance(seen[0], LeaseLost)
        self.assertEqual([o.op for o in outcomes], [""])
        self.assertEqual(self.client.get(job["id"])["state"], "JOB_STATE_CANCELLED")

    def test_deadline_passed(self) -> None:
        seen = []
        w = self.worker("p-deadline")

        @w.handle("slow")
        def slow(job):
            job.aborted.wait(60)
            seen.append(job.abort_reason)
            job.raise_if_aborted()

        deadline = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=3)
        job = self.client.enqueue({"kind": "slow", "queue": "p-deadline", "deadline": deadline.isoformat().replace("+00:00", "Z")}).job
        w.start()
        self.assertEqual(self.finished(job["id"], "JOB_STATE_TIMED_OUT")["reasonCode"], "deadline")
        self.assertIsInstance(seen[0], DeadlinePassed)


if __name__ == "__main__":
    unittest.main()
