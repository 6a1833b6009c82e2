"""The nightly workflow's driver and task worker, run by `lossproof nightly`.

The workflow is the Step Functions state machine in terraform/nightly.asl.json:
Compact -> Reconcile -> BuildMarts, each an SQS `waitForTaskToken` task (the
one kind of task that runs real work on moto: no Lambda, no Activities), any
failure caught into Alert. This script plays the AWS side's worker:

1. creates the two queues and the state machine if they are missing (on moto;
   on real AWS, Terraform made them and they are found by name); a job of
   mode `provision` (`lossproof up --profile aws`) also creates the buckets
   and the Glue database, reports what exists, and stops there;
2. starts one execution with the given name and input;
3. serves its task messages: runs the command the job gives for each task
   and answers SendTaskSuccess, or SendTaskFailure with an error name taken
   from the command's exit status and its output's end as the cause. A
   `Transient` failure (a compaction that lost the race to a consumer's
   commit) is run again here first, up to the job's `attempts`; the state
   machine's own Retry on `Transient` is for real AWS (moto reuses a retried
   task's token, below); anything else goes to Alert;
4. when the execution ends, prints ONE JSON report on stdout: status, each
   task attempt, the failed state's error and cause, the alert messages, and
   the queues and state machines that exist (with the definition), which the
   Terraform names test compares with terraform/.

The job is a JSON object on stdin (see nightly.rs, which writes it). Exit 0:
the report was printed (whatever the execution's status); 2: the driver could
not do its part (AWS error, timeout), the reason on stderr. Every wait is
bounded by the job's `timeout_s`; on timeout the execution is stopped.
Credentials: boto3's usual chain (on moto, any value works).
"""

import ctypes
import json
import os
import subprocess
import sys
import time
import urllib.request

import boto3

CAUSE_LIMIT = 32_000  # Step Functions caps a cause at 32,768 characters.


def main():
    die_with_parent()
    job = json.load(sys.stdin)
    endpoint = job.get("endpoint")
    session = boto3.session.Session(region_name=job["region"])
    sqs = session.client("sqs", endpoint_url=endpoint)
    sfn = session.client("stepfunctions", endpoint_url=endpoint)
    if job.get("emulator"):
        # moto only executes state machines when asked to (AWS_DBT.md).
        post_json(f"{endpoint}/moto-api/config", {"stepfunctions": {"execute_state_machine": True}})
    if job["mode"] == "provision":
        provision(session, endpoint, job["names"])
    tasks_url, alerts_url, machine = workflow(sqs, sfn, job)
    if job["mode"] == "provision":
        json.dump({"resources": resources(session, endpoint, job["names"])}, sys.stdout)
        sys.stdout.write("\n")
        return

    execution = sfn.start_execution(
        stateMachineArn=machine, name=job["execution"], input=json.dumps(job["input"])
    )["executionArn"]
    deadline = time.monotonic() + job["timeout_s"]
    attempts = []
    answered = set()
    status = "RUNNING"
    while status == "RUNNING":
        if time.monotonic() > deadline:
            sfn.stop_execution(executionArn=execution, error="Timeout", cause="lossproof nightly timed out")
            fail(f"the execution did not end within {job['timeout_s']} s (stopped)")
        for message in sqs.receive_message(
            QueueUrl=tasks_url, MaxNumberOfMessages=1, WaitTimeSeconds=1
        ).get("Messages", []):
            sqs.delete_message(QueueUrl=tasks_url, ReceiptHandle=message["ReceiptHandle"])
            body = json.loads(message["Body"])
            # moto 5.2.5 sends a Retry attempt of a callback task with the
            # SAME token and hands it the previous attempt's answer: the task
            # was already run (and retried here) for this token.
            if body["token"] in answered:
                continue
            answered.add(body["token"])
            attempts.extend(serve(sfn, job, body, deadline))
        status = sfn.describe_execution(executionArn=execution)["status"]

    described = sfn.describe_execution(executionArn=execution)
    alerts = []
    for _ in range(3):
        got = sqs.receive_message(QueueUrl=alerts_url, MaxNumberOfMessages=10, WaitTimeSeconds=1)
        for message in got.get("Messages", []):
            sqs.delete_message(QueueUrl=alerts_url, ReceiptHandle=message["ReceiptHandle"])
            alerts.append(json.loads(message["Body"]))
        if alerts:
            break
    failed = [a for a in attempts if a["error"]]
    report = {
        "execution": job["execution"],
        "status": status,
        "attempts": attempts,
        "failed_state": failed[-1]["state"] if status == "FAILED" and failed else None,
        "error": described.get("error"),
        "cause": described.get("cause"),
        "alerts": alerts,
        "resources": resources(session, endpoint, job["names"]),
    }
    json.dump(report, sys.stdout)
    sys.stdout.write("\n")


def serve(sfn, job, body, deadline):
    """Run one task's command, again (up to the job's `attempts`) while it
    fails with `Transient`; answer the state machine once; return the
    attempts."""
    task = body["task"]
    spec = job["tasks"][task]
    attempts = []
    while True:
        attempt = run(spec, task, deadline)
        attempts.append(attempt)
        if attempt["error"] != "Transient" or len(attempts) >= job["attempts"]:
            break
        time.sleep(len(attempts))
    if attempt["error"] is None:
        output = {"exit": 0, "seconds": attempt["seconds"], "attempts": len(attempts)}
        sfn.send_task_success(taskToken=body["token"], output=json.dumps(output))
    else:
        sfn.send_task_failure(taskToken=body["token"], error=attempt["error"], cause=attempt["output"])
    return attempts


def run(spec, task, deadline):
    """One run of a task's command."""
    started = time.monotonic()
    # The lossproof commands a task runs must die with this process, not
    # with the one that started it (supervisor::die_with_parent).
    env = dict(os.environ, LOSSPROOF_PARENT_PID=str(os.getpid()))
    try:
        done = subprocess.run(
            spec["argv"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env=env,
            timeout=max(1.0, deadline - started),
            # dbt too dies with this process, however it ends.
            preexec_fn=set_pdeathsig,
        )
        code, output = done.returncode, (done.stdout + done.stderr)
    except subprocess.TimeoutExpired as timeout:
        code, output = None, f"timed out: {timeout}"
    except OSError as error:
        code, output = None, f"could not start {spec['argv'][0]}: {error}"
    error = None if code == 0 else spec.get("errors", {}).get(str(code), "TaskFailed")
    return {
        "state": spec["state"],
        "task": task,
        "exit": code,
        "error": error,
        "seconds": round(time.monotonic() - started, 1),
        "output": output[-CAUSE_LIMIT:],
    }


def workflow(sqs, sfn, job):
    """The two queues and the state machine (created if missing, the
    definition brought up to date): their URLs and ARN."""
    names = job["names"]
    tasks_url = sqs.create_queue(QueueName=names["tasks_queue"])["QueueUrl"]
    alerts_url = sqs.create_queue(QueueName=names["alerts_queue"])["QueueUrl"]
    definition = fill(job["definition"], {"tasks_queue_url": tasks_url, "alerts_queue_url": alerts_url})
    machine = find_state_machine(sfn, names["state_machine"])
    if machine is None:
        machine = sfn.create_state_machine(
            name=names["state_machine"], definition=definition, roleArn=job["role_arn"]
        )["stateMachineArn"]
    else:
        sfn.update_state_machine(stateMachineArn=machine, definition=definition)
    return tasks_url, alerts_url, machine


def provision(session, endpoint, names):
    """The buckets and the Glue database terraform/ declares, if missing
    (`lossproof up --profile aws`; on real AWS Terraform makes them).

    Without versioning, unlike terraform/: moto keeps every object version
    in memory, and a lake rewrites and deletes files all day (measured: moto
    at 2.4 GB after 15 seeds with versioning on)."""
    s3 = session.client("s3", endpoint_url=endpoint)
    existing = {b["Name"] for b in s3.list_buckets().get("Buckets", [])}
    for bucket in (names["lake_bucket"], names["marts_bucket"], names["access_logs_bucket"]):
        if bucket not in existing:
            s3.create_bucket(Bucket=bucket)
    glue = session.client("glue", endpoint_url=endpoint)
    try:
        glue.get_database(Name=names["glue_database"])
    except glue.exceptions.EntityNotFoundException:
        glue.create_database(DatabaseInput={"Name": names["glue_database"]})


def resources(session, endpoint, names):
    """What exists on the AWS side (every list sorted)."""
    client = lambda name: session.client(name, endpoint_url=endpoint)  # noqa: E731
    sqs, sfn = client("sqs"), client("stepfunctions")
    queues = [url.rsplit("/", 1)[-1] for url in sqs.list_queues().get("QueueUrls", [])]
    machines = []
    for machine in sfn.list_state_machines()["stateMachines"]:
        described = sfn.describe_state_machine(stateMachineArn=machine["stateMachineArn"])
        machines.append({"name": machine["name"], "definition": described["definition"]})
    buckets = [b["Name"] for b in client("s3").list_buckets().get("Buckets", [])]
    databases = [d["Name"] for d in client("glue").get_databases().get("DatabaseList", [])]
    return {
        "queues": sorted(queues),
        "state_machines": sorted(machines, key=lambda m: m["name"]),
        "buckets": sorted(buckets),
        "glue_databases": sorted(databases),
    }


def find_state_machine(sfn, name):
    for page in sfn.get_paginator("list_state_machines").paginate():
        for machine in page["stateMachines"]:
            if machine["name"] == name:
                return machine["stateMachineArn"]
    return None


def fill(template, values):
    """Terraform's templatefile() for the ${name} placeholders the ASL uses."""
    for name, value in values.items():
        template = template.replace("${" + name + "}", value)
    if "${" in template:
        fail("the state machine definition has a placeholder nobody fills: "
             + template[template.index("${"):][:40])
    return template


def post_json(url, body):
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        response.read()


PR_SET_PDEATHSIG = 1
SIGKILL = 9


def set_pdeathsig():
    """PR_SET_PDEATHSIG: SIGKILLed when the parent process dies, however."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, SIGKILL)


def die_with_parent():
    """Die with `lossproof nightly`, even when it is SIGKILLed."""
    parent = os.environ.get("LOSSPROOF_PARENT_PID")
    if parent:
        set_pdeathsig()
        if os.getppid() != int(parent):
            fail("the process that started this one is gone")


def fail(reason):
    print(f"nightly: {reason}", file=sys.stderr)
    sys.exit(2)


if __name__ == "__main__":
    try:
        main()
    except Exception as error:  # boto3/botocore errors: one line, exit 2
        fail(f"{type(error).__name__}: {error}")
