"""moto server as `lossproof nightly` runs it: `python moto_server.py -H 127.0.0.1 -p PORT`.

Two things on top of `moto_server`:

- it dies with the process that started it (PR_SET_PDEATHSIG, as the
  consumers do through LOSSPROOF_PARENT_PID), so a SIGKILLed nightly leaves
  no emulator behind;
- moto 5.2.5's SendTaskFailure handler drops the `cause` it is given
  (stepfunctions/responses.py passes only `error` to the backend, whose
  send_task_failure takes both), so a failed task's reason would never reach
  the Catch, the alert or the execution's failure cause. The handler below
  is the same one with `cause` passed on.
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

from moto.core.responses import EmptyResult  # noqa: E402
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

if __name__ == "__main__":
    main()
