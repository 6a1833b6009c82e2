"""moto server as `lossproof nightly` runs it: `python moto_server.py -H 127.0.0.1 -p PORT`.

Three things on top of `moto_server`:

- it dies with the process that started it (PR_SET_PDEATHSIG, as the
  consumers do through LOSSPROOF_PARENT_PID), so a SIGKILLed nightly leaves
  no emulator behind;
- moto 5.2.5's SendTaskFailure handler drops the `cause` it is given
  (stepfunctions/responses.py passes only `error` to the backend, whose
  send_task_failure takes both), so a failed task's reason would never reach
  the Catch, the alert or the execution's failure cause. The handler below
  is the same one with `cause` passed on;
- Glue's UpdateTable honours VersionId, as on AWS (below): the base check
  of the lake's commits on Glue depends on it.
"""

import ctypes
import os
import sys

PR_SET_PDEATHSIG = 1
parent = os.environ.get("LOSSPROOF_PARENT_PID")
if parent:
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, 9)
    if os.getppid() != int(parent):
        sys.exit("the process that started this one is gone: exiting")

import threading  # noqa: E402

from moto.core.responses import EmptyResult  # noqa: E402
from moto.glue.exceptions import GlueClientError  # noqa: E402
from moto.glue.responses import GlueResponse  # noqa: E402
from moto.server import main  # noqa: E402
from moto.stepfunctions.responses import StepFunctionResponse  # noqa: E402


def send_task_failure(self):
    self.stepfunction_backend.send_task_failure(
        self._get_param("taskToken"),
        error=self._get_param("error"),
        cause=self._get_param("cause"),
    )
    return EmptyResult()


StepFunctionResponse.send_task_failure = send_task_failure

# Glue's UpdateTable with a VersionId is a compare-and-swap on AWS: it fails
# with ConcurrentModificationException unless the table is still at that
# version. moto 5.2.5 ignores VersionId (glue/models.py update_table), so two
# writers racing on one Iceberg table would both "win" and one commit would
# vanish. The handler below checks it, under one lock with the update.
_glue_update_table = GlueResponse.update_table
_glue_lock = threading.Lock()


def update_table(self):
    expected = self.parameters.get("VersionId")
    with _glue_lock:
        if expected is not None:
            table = self.glue_backend.get_table(
                self.parameters.get("DatabaseName"), self.parameters["TableInput"]["Name"]
            )
            current = str(table._current_version)
            if current != str(expected):
                raise GlueClientError(
                    "ConcurrentModificationException",
                    f"Table version {expected} is not the current one ({current})",
                )
        return _glue_update_table(self)


GlueResponse.update_table = update_table

if __name__ == "__main__":
    main()
