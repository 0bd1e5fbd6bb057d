"""Starting and stopping the demo's child processes: redis-server and the consumers.

A child gets a session of its own, so a Ctrl-C in the terminal reaches only the driver,
which then stops every child in its cleanup.  And should the driver itself die without
cleaning up (kill -9), the kernel kills its children (PR_SET_PDEATHSIG): no Redis server
or consumer outlives the demo.
"""
import ctypes
import os
import signal
import subprocess

PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True)


def spawn(argv, **popen_args):
    parent = os.getpid()

    def die_with_parent():
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        # The parent may have died between fork and prctl: then no signal would come.
        if os.getppid() != parent:
            os._exit(1)

    return subprocess.Popen(argv, start_new_session=True, preexec_fn=die_with_parent,
                            **popen_args)


def stop(proc, grace=5.0):
    """SIGTERM, then SIGKILL if the child has not gone within grace seconds."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def exit_on_signals():
    """Turn SIGINT, SIGTERM and SIGHUP into exceptions, so that the driver's finally
    blocks stop the children.  Python does it for SIGINT only when SIGINT was not
    ignored at start, as it is in a background job of a script."""
    def leave(signum, _frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, leave)
    signal.signal(signal.SIGHUP, leave)
