#!/usr/bin/env python3
"""A stint worker in plain Python (standard library only), over the JSON API.

usage: worker.py URL TOKEN COUNT
Claims jobs from queue "py", starts, heartbeats and completes each with the
sum of its payload's a and b (recorded as a durable step), and exits after
COUNT jobs.
"""
import json
import sys
import urllib.error
import urllib.request
import uuid

URL, TOKEN, COUNT = sys.argv[1], sys.argv[2], int(sys.argv[3])


def call(method, body):
    req = urllib.request.Request(
        f"{URL}/stint.v1.{method}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"},
    )
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return json.load(resp)
    except urllib.error.HTTPError as e:
        sys.exit(f"{method}: HTTP {e.code}: {e.read().decode()}")


def owner(job):
    # A fresh request id per call; a retry of the same call would reuse it.
    return {"job_id": job["id"], "lease_id": job["leaseId"], "request_id": str(uuid.uuid4())}


done = 0
while done < COUNT:
    claimed = call("WorkerService/Claim", {"queues": ["py"], "limit": 5, "wait": "10s", "worker_id": "python"})
    for job in claimed.get("jobs", []):
        call("WorkerService/Start", {"owner": owner(job)})
        beat = call("WorkerService/Heartbeat", {"owner": owner(job), "lease_ttl": "30s", "progress": {"pct": 50}})
        if beat.get("cancelRequested"):
            call("WorkerService/AckCancel", {"owner": owner(job)})
            continue
        payload = job.get("payload", {})
        # The sum is a durable step (docs/steps.md, the wire protocol): a
        # later attempt would find it recorded and not compute it again.
        steps = call("WorkerService/GetSteps", {"owner": owner(job)}).get("steps", [])
        if steps:
            total = json.loads(steps[0]["output"])
        else:
            total = payload["a"] + payload["b"]
            call("WorkerService/RecordStep", {"owner": owner(job), "seq": 1, "name": "sum", "output": json.dumps(total)})
        result = {"sum": total, "by": "python"}
        call("WorkerService/Complete", {"owner": owner(job), "result": result, "execution_ms": 1})
        done += 1
print(f"completed {done} jobs")
