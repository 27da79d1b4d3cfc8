import unittest

from stint import Client, NotFoundError, PermissionDeniedError, UnauthenticatedError, ValidationError

from .server import ServerTestCase


class ClientTest(ServerTestCase):
    def test_enqueue_every_field_get_list(self) -> None:
        spec = {"kind": "email", "queue": "mail", "topic": "job.mail.welcome", "priority": 7, "payload": {"to": "a", "n": 1},
                "contextPtr": "s3://ctx", "adapterId": "smtp", "env": {"REGION": "eu"}, "dedupeKey": "welcome-a",
                "runAt": "2099-01-01T00:00:00Z", "timeout": "30s", "deadline": "2099-01-02T00:00:00Z", "maxAttempts": 4,
                "onExhausted": "JOB_STATE_FAILED", "cancelGrace": "5s",
                "budget": {"maxRuntime": "60s", "maxSteps": "10", "maxCost": "100"}, "correlationId": "c", "traceId": "t"}
        res = self.client.enqueue(spec)
        self.assertFalse(res.existing)
        got = self.client.get(res.job["id"])
        for k, v in spec.items():
            self.assertEqual(got[k], v, k)
        again = self.client.enqueue({"kind": "email", "queue": "mail", "dedupe_key": "welcome-a"})
        self.assertTrue(again.existing)
        self.assertEqual(again.job["id"], res.job["id"])
        page = self.client.list(states=["JOB_STATE_SCHEDULED"], queue="mail")
        self.assertEqual([j["id"] for j in page["jobs"]], [res.job["id"]])
        self.assertEqual(self.client.events(res.job["id"])[0]["type"], "EVENT_TYPE_ENQUEUED")

    def test_enqueue_many_request_id_and_paging(self) -> None:
        specs = [{"kind": "a", "queue": "many"}, {"kind": "b", "queue": "many"}]
        first = self.client.enqueue_many(specs, request_id="batch-1")
        again = self.client.enqueue_many(specs, request_id="batch-1")
        self.assertEqual([r.job["id"] for r in again], [r.job["id"] for r in first])
        with self.assertRaises(ValidationError):
            self.client.enqueue_many([{"kind": "ok", "queue": "many2"}, {"kind": "", "queue": "many2"}])
        self.assertEqual(self.client.list(queue="many2")["jobs"], [])
        self.assertEqual(len(list(self.client.list_all(queue="many", page_size=1))), 2)

    def test_cancel_dead_letters(self) -> None:
        job = self.client.enqueue({"kind": "x", "queue": "cancel"}).job
        self.assertEqual(self.client.cancel(job["id"], reason="no longer needed")["state"], "JOB_STATE_CANCELLED")
        self.assertEqual(self.client.dead_letters(queue="cancel")["jobs"], [])
        with Client(self.srv.url, self.srv.tokens["admin"]) as admin:
            self.assertIsInstance(admin.dead_letter_counts(), list)

    def test_typed_errors(self) -> None:
        with self.assertRaises(NotFoundError) as cm:
            self.client.get("00000000-0000-0000-0000-000000000000")
        self.assertEqual((cm.exception.code, cm.exception.kind), ("not_found", "not_found"))
        with self.assertRaises(ValidationError):
            self.client.enqueue({"kind": ""})
        with self.assertRaises(ValidationError):  # the server refuses an unknown field rather than drop it
            self.client.enqueue({"kind": "a", "deadlin": "2099-01-01T00:00:00Z"})
        with self.assertRaises(UnauthenticatedError):
            with Client(self.srv.url, "stint_nope") as c:
                c.get("x")
        with self.assertRaises(PermissionDeniedError):
            self.client.dead_letter_counts()
        with self.assertRaises(ValueError):
            Client("localhost:1")

    def test_runs(self) -> None:
        run = self.client.create_run([{"name": "a", "job": {"kind": "step", "queue": "runs"}},
                                      {"name": "b", "job": {"kind": "step", "queue": "runs"}, "dependsOn": ["a"]}],
                                     name="pipeline")
        rid = run["run"]["id"]
        self.assertEqual(self.client.get_run(rid)["run"]["name"], "pipeline")
        self.assertIn(rid, [r["id"] for r in self.client.list_runs()["runs"]])
        self.assertTrue(self.client.run_events(rid))
        self.assertIn(self.client.cancel_run(rid, "stop")["run"]["state"], ("RUN_STATE_CANCELLED", "RUN_STATE_CANCEL_REQUESTED"))


if __name__ == "__main__":
    unittest.main()
