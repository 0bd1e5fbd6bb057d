"""The pipeline's two servers, private to one run: a PostgreSQL cluster and a RabbitMQ
broker, each in a directory of the run's temp dir, on loopback ports of their own (the
cluster on a Unix socket only), stopped when the run ends.  Both can be killed with
SIGKILL and started again on the same files, as after a crash.

RabbitMQ runs from Debian's rabbitmq-server package, started directly (not through the
init system) with its node, distribution and epmd ports chosen here, so that it never
meets a broker someone else runs on this machine.
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "redis_chaos"))
import children  # noqa: E402  (the Redis demo's process helpers: own session, die with us)

RABBITMQ_SERVER = "/usr/lib/rabbitmq/bin/rabbitmq-server"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise RuntimeError(f"{what} did not come up within {timeout} s")


class Postgres:
    """A cluster of our own: initdb'd on start(), reachable at socket_dir:port."""

    def __init__(self, workdir, settings=""):
        self.dir = os.path.join(workdir, "pg")
        self.data = os.path.join(self.dir, "data")
        self.port = free_port()
        self.settings = settings    # more postgresql.conf lines

    def dsn(self, dbname="outbox_demo"):
        return f"host={self.dir} port={self.port} dbname={dbname} user=postgres"

    def _pg_ctl(self, *args):
        # After a kill its stale postmaster.pid makes pg_ctl warn: that is expected.
        subprocess.run(["pg_ctl", "-D", self.data, "-l", os.path.join(self.dir, "server.log"),
                        "-w", "-t", "120", "-s", *args], check=True, stderr=subprocess.DEVNULL)

    def start(self):
        if not os.path.exists(self.data):
            os.makedirs(self.dir, exist_ok=True)
            subprocess.run(["initdb", "-D", self.data, "-A", "trust", "-U", "postgres",
                            "-E", "UTF8", "--locale=C", "--no-sync"],
                           check=True, stdout=subprocess.DEVNULL)
            with open(os.path.join(self.data, "postgresql.conf"), "a") as conf:
                conf.write(f"port = {self.port}\nlisten_addresses = ''\n"
                           f"unix_socket_directories = '{self.dir}'\n{self.settings}")
        self._pg_ctl("start")

    def postmaster_pid(self):
        try:
            with open(os.path.join(self.data, "postmaster.pid")) as f:
                return int(f.readline())
        except (OSError, ValueError):
            return None

    def kill9(self):
        """SIGKILL the postmaster and every backend, as a crash would, then start again:
        crash recovery replays the WAL.  The postmaster is stopped first so that it
        starts no new child meanwhile."""
        pid = self.postmaster_pid()
        if pid is None:
            return
        os.kill(pid, signal.SIGSTOP)
        for child in _children_of(pid):
            _kill(child)
        _kill(pid)
        _wait(lambda: not os.path.exists(f"/proc/{pid}"), 30, "the killed postmaster's exit")
        self.start()

    def stop(self):
        if self.postmaster_pid() is not None:
            subprocess.run(["pg_ctl", "-D", self.data, "-m", "immediate", "-w", "-s", "stop"],
                           check=False)


def _children_of(pid):
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        found.append(int(entry))
            except (OSError, IndexError, ValueError):
                pass
    return found


def _kill(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


class RabbitMQ:
    """A broker of our own; kill9() kills its whole process group, restart() starts it
    again on the same database, where durable queues keep the persistent messages it
    confirmed."""

    def __init__(self, workdir):
        self.dir = os.path.join(workdir, "rabbitmq")
        self.port = free_port()
        self.env = {
            "HOME": self.dir, "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8",
            "RABBITMQ_NODENAME": f"outbox{self.port}@localhost",
            "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
            "RABBITMQ_NODE_PORT": str(self.port),
            "RABBITMQ_DIST_PORT": str(free_port()),
            "ERL_EPMD_PORT": str(free_port()),
            "RABBITMQ_MNESIA_BASE": os.path.join(self.dir, "mnesia"),
            "RABBITMQ_LOG_BASE": os.path.join(self.dir, "log"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": os.path.join(self.dir, "enabled_plugins"),
            "RABBITMQ_CONFIG_FILE": os.path.join(self.dir, "rabbitmq"),
            "RABBITMQ_ADVANCED_CONFIG_FILE": os.path.join(self.dir, "advanced.config"),
        }
        self.proc = None

    def start(self):
        if not os.path.exists(RABBITMQ_SERVER):
            raise RuntimeError("rabbitmq-server not found: apt-get install rabbitmq-server")
        os.makedirs(self.dir, exist_ok=True)
        with open(self.env["RABBITMQ_ENABLED_PLUGINS_FILE"], "w") as f:
            f.write("[].\n")
        log = open(os.path.join(self.dir, "server.out"), "a")
        self.proc = children.spawn([RABBITMQ_SERVER], env=self.env, stdout=log,
                                   stderr=subprocess.STDOUT)
        _wait(self._accepting, 90, "rabbitmq-server")

    def _accepting(self):
        if self.proc.poll() is not None:
            raise RuntimeError(f"rabbitmq-server exited; see {self.dir}/server.out")
        import pika
        try:
            pika.BlockingConnection(self.parameters()).close()
            return True
        except pika.exceptions.AMQPError:
            return False

    def parameters(self):
        import pika
        return pika.ConnectionParameters("127.0.0.1", self.port, heartbeat=2,
                                         blocked_connection_timeout=10,
                                         socket_timeout=5, connection_attempts=1)

    def kill9(self):
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def restart(self):
        self.kill9()
        self.start()

    def stop(self):
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(20)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                self.kill9()
        # epmd, which the broker started on its own port, outlives it: stop ours.
        epmd = shutil.which("epmd") or "/usr/lib/erlang/bin/epmd"
        subprocess.run([epmd, "-kill"], env=self.env, check=False,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
