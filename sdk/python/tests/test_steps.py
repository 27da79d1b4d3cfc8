import threading

from stint import SignalTakenError, StepFailed, ValidationError, Worker

from .server import ServerTestCase, wait_for


class StepsTest(ServerTestCase):
    def worker(self, queue: str, **kw) -> Worker:
        w = Worker(self.srv.url, self.srv.tokens["worker"], queues={queue: 4}, claim_wait=5, **kw)
        self.addCleanup(w.stop)
        return w

    def state(self, job_id: str, state: str) -> dict:
        return wait_for(f"job {job_id} {state}", lambda: (lambda j: j if j["state"] == state else None)(self.client.get(job_id)))

    def test_a_step_runs_once_across_a_worker_restart(self) -> None:
        runs = []
        lock = threading.Lock()

        def ran(name, value):
            with lock:
                runs.append(name)
            return value

        def handler(job):
            one = job.step("one", lambda: ran("one", 1))
            received, payload = job.wait_signal("go", 3600)
            job.sleep_for("nap", 0.01)
            two = job.step("two", lambda: ran("two", one + 1))
            return {"one": one, "two": two, "received": received, "payload": payload}

        w1 = self.worker("p-steps")
        w1.handle("steps", handler)
        w1.start()
        job = self.client.enqueue({"kind": "steps", "queue": "p-steps"}).job
        self.state(job["id"], "JOB_STATE_SCHEDULED")  # waiting for its signal, no lease held
        w1.stop()
        self.assertEqual(runs, ["one"])

        # Sent before any worker waits again: kept, and the first one wins.
        self.client.signal(job["id"], "go", {"n": 12345678901234567})
        with self.assertRaises(SignalTakenError):
            self.client.signal(job["id"], "go", {"n": 2})

        w2 = self.worker("p-steps")
        w2.handle("steps", handler)
        w2.start()
        done = self.state(job["id"], "JOB_STATE_SUCCEEDED")
        self.assertEqual(runs, ["one", "two"])
        # (The job's result is a protobuf Value, a double for numbers; the step's record is exact.)
        self.assertEqual({k: done["result"][k] for k in ("one", "two", "received")}, {"one": 1, "two": 2, "received": True})
        steps = self.client.steps(job["id"])
        self.assertEqual([f'{s["kind"]}:{s["name"]}' for s in steps], ["run:one", "wait:go", "signal:go", "sleep:nap", "run:two"])
        self.assertEqual(steps[2]["output"], '{"received":true,"payload":{"n":12345678901234567}}')
        self.assertNotIn("failures", done)  # waiting spent no attempt

    def test_nondeterministic_and_continue(self) -> None:
        outcomes = []
        w = self.worker("p-steps-nd", on_outcome=outcomes.append)

        @w.handle("flip")
        def flip(job):
            # The second attempt asks for another step at place 1.
            job.step("first" if job.attempt == 1 else "other", lambda: 1)
            raise RuntimeError("fail the attempt after the step")

        @w.handle("cont")
        def cont(job):
            class Declined(Exception):
                code = "declined"

            try:
                job.step("charge", lambda: (_ for _ in ()).throw(Declined("card declined")), on_error="continue")
            except StepFailed as err:
                return {"code": err.code, "attempt": job.attempt}
            return "unreachable"

        w.start()
        flipped = self.client.enqueue({"kind": "flip", "queue": "p-steps-nd", "maxAttempts": 3}).job
        failed = self.state(flipped["id"], "JOB_STATE_FAILED")
        self.assertEqual(failed["lastError"]["code"], "nondeterministic")
        self.assertEqual(failed["attempt"], 2)
        done = self.state(self.client.enqueue({"kind": "cont", "queue": "p-steps-nd"}).job["id"], "JOB_STATE_SUCCEEDED")
        self.assertEqual(done["result"], {"code": "declined", "attempt": 1})

    def test_bad_signal_is_refused(self) -> None:
        job = self.client.enqueue({"kind": "none", "queue": "p-steps-bad"}).job
        with self.assertRaises(ValidationError):
            self.client.signal(job["id"], "", None)
        self.assertEqual(self.client.steps(job["id"]), [])


class ChildStepsTest(ServerTestCase):
    def test_start_and_await_a_child_with_a_worker_token(self) -> None:
        seen = []
        release = threading.Event()
        w = Worker(self.srv.url, self.srv.tokens["worker"], queues={"p-family": 4}, claim_wait=5)
        self.addCleanup(w.stop)

        @w.handle("parent")
        def parent(job):
            child = job.start_child("kid", {"kind": "kid", "queue": "p-family", "payload": {"n": 20}})
            seen.append(child)
            outcome = job.await_child("await kid", child)
            return {"child": outcome["state"], "n": outcome["result"]["n"]}

        @w.handle("kid")
        def kid(job):
            release.wait(30)
            return {"n": job.payload["n"] + 1}

        w.start()
        job = self.client.enqueue({"kind": "parent", "queue": "p-family"}).job
        wait_for("the parent awaiting its child", lambda: self.client.get(job["id"])["state"] == "JOB_STATE_SCHEDULED")
        release.set()
        done = wait_for("the parent to succeed",
                        lambda: (lambda j: j if j["state"] == "JOB_STATE_SUCCEEDED" else None)(self.client.get(job["id"])))
        self.assertEqual(done["result"], {"child": "succeeded", "n": 21})
        self.assertGreaterEqual(len(seen), 2)
        self.assertEqual(len(set(seen)), 1, "the replay after the wake finds the same child")
        child = self.client.get(seen[0])
        self.assertEqual((child["parentJobId"], child["stepIndex"]), (job["id"], 1))
        steps = self.client.steps(job["id"])
        self.assertEqual([f'{s["kind"]}:{s["name"]}' for s in steps], ["child:kid", "await:await kid"])
        self.assertEqual(steps[1]["output"], '{"job_id":"%s","state":"succeeded","result":{"n":21}}' % seen[0])
