#!/usr/bin/env python3
"""A PgBouncer of our own in front of a PostgreSQL server, for the pooler suite.

Debian's pgbouncer, started directly (not through the init system) with a
configuration written here: a Unix socket in a directory of its own and no TCP
listener, trust for the one user it knows (only that user can reach the socket's
directory), and each database alias with its pool mode.  As a module, PgBouncer is
used by the crash test, which kills it; as a command it runs another command with
the PG* variables pointed at a pooler in front of the server they named:

    pgbouncer.py --mode transaction --database drivers -- prove test/drivers/test_x.py

which connects to the alias "inbox_pooled" (pool_mode MODE, server database
--database) and sets INBOX_POOL_MODE=MODE, which the tests read to configure their
drivers as a pooled application must.
"""
import argparse
import os
import re
import socket
import subprocess
import sys
import tempfile
import time

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                             "..", "..", "examples", "redis_chaos"))
import children  # noqa: E402  (own session, dies with us)

PGBOUNCER = "/usr/sbin/pgbouncer"


def version():
    """PgBouncer's version as a tuple of ints, (1, 18, 0) for "PgBouncer 1.18.0"."""
    out = subprocess.run([PGBOUNCER, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"PgBouncer (\d+)\.(\d+)\.?(\d*)", out)
    return tuple(int(x or 0) for x in m.groups()) if m else (0, 0, 0)


def handles_prepared_statements():
    """PgBouncer 1.21 and later keep protocol-level prepared statements of clients in
    transaction pooling (max_prepared_statements); before, a named statement stays on
    whichever server connection prepared it."""
    return version() >= (1, 21)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PgBouncer:
    """databases: {alias: (server database, pool_mode)}.  Clients reach it at
    host=self.dir port=self.port as self.user."""

    def __init__(self, workdir, server_host, server_port, databases, pool_size=2,
                 user="postgres", tcp_login=None):
        """tcp_login: (role, password) to admit over TCP too, on 127.0.0.1 at
        self.port, by SCRAM (JDBC knows no Unix sockets); the pooler logs in to the
        server as that role through the server's socket."""
        self.dir = os.path.join(workdir, "pgbouncer")
        self.port = free_port()
        self.user = user
        self.proc = None
        os.makedirs(self.dir, mode=0o700, exist_ok=True)
        lines = ["[databases]"]
        for alias, (dbname, mode) in databases.items():
            # "*": any database, under its own name.
            target = "" if dbname == "*" else f" dbname={dbname}"
            lines.append(f"{alias} = host={server_host} port={server_port}{target} "
                         f"pool_mode={mode}")
        lines += [
            "[pgbouncer]",
            f"listen_addr = {'127.0.0.1' if tcp_login else ''}",
            f"listen_port = {self.port}",
            f"unix_socket_dir = {self.dir}",
            "auth_type = hba",
            f"auth_hba_file = {self.dir}/hba.conf",
            f"auth_file = {self.dir}/users.txt",
            f"default_pool_size = {pool_size}",
            "max_client_conn = 200",
            f"logfile = {self.dir}/pgbouncer.log",
            f"admin_users = {user}",
            # psycopg and JDBC send extra_float_digits at startup; PgBouncer before 1.20
            # cannot pass options on (pg_regress sets intervalstyle through it: the
            # pooler suite sets that on its database instead).
            "ignore_startup_parameters = extra_float_digits,options",
            "server_login_retry = 1",
        ]
        if handles_prepared_statements():
            lines.append("max_prepared_statements = 200")
        with open(os.path.join(self.dir, "pgbouncer.ini"), "w") as f:
            f.write("\n".join(lines) + "\n")
        users = [f'"{user}" ""']
        hba = [f"local all {user} trust"]
        if tcp_login:
            role, password = tcp_login
            users.append(f'"{role}" "{password}"')
            hba.append(f"host all {role} 127.0.0.1/32 scram-sha-256")
        # Written before anyone may read the directory's files: 0600 in a 0700 directory.
        for name, lines_ in (("users.txt", users), ("hba.conf", hba)):
            fd = os.open(os.path.join(self.dir, name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write("\n".join(lines_) + "\n")

    @property
    def socket(self):
        return os.path.join(self.dir, f".s.PGSQL.{self.port}")

    def start(self):
        if os.path.exists(self.socket):
            os.unlink(self.socket)     # left by a SIGKILL
        self.proc = children.spawn([PGBOUNCER, os.path.join(self.dir, "pgbouncer.ini")],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while not os.path.exists(self.socket):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"pgbouncer did not start; its log:\n{self.log()[-2000:]}")
            time.sleep(0.05)

    def kill9(self):
        """SIGKILL, as a crash would: every client and server connection is cut."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def stop(self):
        if self.proc is not None:
            children.stop(self.proc)
            self.proc = None

    def log(self):
        try:
            with open(os.path.join(self.dir, "pgbouncer.log")) as f:
                return f.read()
        except OSError:
            return ""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=("transaction", "session"), required=True)
    parser.add_argument("--database", required=True,
                        help="the server database behind it; '*' for every database under "
                             "its own name (as pg_regress needs)")
    parser.add_argument("--pool-size", type=int, default=2)
    parser.add_argument("--tcp-role", help="admit this role over TCP with the password in "
                        "INBOX_POOLER_PASSWORD; sets INBOX_POOLER_TCP_PORT for the command")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    with tempfile.TemporaryDirectory(prefix="inbox_pgbouncer_") as workdir:
        alias = "*" if args.database == "*" else "inbox_pooled"
        bouncer = PgBouncer(workdir, os.environ.get("PGHOST", "/var/run/postgresql"),
                            os.environ.get("PGPORT", "5432"),
                            {alias: (args.database, args.mode)}, args.pool_size,
                            os.environ.get("PGUSER", "postgres"),
                            (args.tcp_role, os.environ["INBOX_POOLER_PASSWORD"])
                            if args.tcp_role else None)
        bouncer.start()
        try:
            env = dict(os.environ, PGHOST=bouncer.dir, PGPORT=str(bouncer.port),
                       INBOX_POOL_MODE=args.mode)
            if alias != "*":
                env["PGDATABASE"] = alias
            if args.tcp_role:
                env["INBOX_POOLER_TCP_PORT"] = str(bouncer.port)
            return subprocess.run(command, env=env).returncode
        finally:
            bouncer.stop()


if __name__ == "__main__":
    sys.exit(main())
