"""The harness shared by the python suite's two programs.

Each program (confluent_suite.py, kafka_python_suite.py) calls main() with its
client's name, its version string and its scenarios. main() runs in one of two
roles:

  suite.py BOOTSTRAP                  the driver: runs every scenario, each in
                                      a child process of its own, and appends
                                      one result line per scenario to
                                      $COMPAT_RESULTS;
  suite.py --one SCENARIO BOOTSTRAP OUT
                                      the child: runs one scenario and writes
                                      its outcome as JSON to the file OUT.

A child process per scenario is what makes every scenario bounded in time: a
client stuck inside a C library or a blocking call cannot be interrupted from
a thread, but a process can be killed. It also keeps the scenarios apart: a
crash, a leaked consumer or a wedged background thread of one cannot touch the
next. Each child's output (the client libraries' own logs included) goes to
$COMPAT_WORK/<client>-<scenario>.log.

The rest is what the scenarios of both clients need: deterministic records
with every shape worth sending (binary and empty values, a null value, binary,
empty, null and repeated headers), a polling helper, and exact comparison of
what was read against what was written.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import re
import socket
import struct
import subprocess
import sys
import threading
import time
import traceback
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

# Bounds from the suite's brief: a step of a scenario (a produce, a read, an
# admin call) gets STEP_TIMEOUT seconds, a whole scenario SCENARIO_TIMEOUT.
STEP_TIMEOUT = 60.0
SCENARIO_TIMEOUT = 120.0

# The names all suites of the lab share (compat-tests/README.md), in the
# order they run.
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")

Header = Tuple[str, Optional[bytes]]


class Failure(Exception):
    """A scenario's check did not hold; the message is the one-line reason."""


@dataclasses.dataclass(frozen=True)
class Record:
    """One record as the scenarios produce it and expect it back.

    headers is a tuple, in order: Kafka keeps a record's headers as a list,
    so order and repeated keys must survive the round trip.
    """

    key: Optional[bytes]
    value: Optional[bytes]
    headers: Tuple[Header, ...]
    timestamp: int


@dataclasses.dataclass(frozen=True)
class Placed:
    """A record with where the broker put it, as produced or as read."""

    partition: int
    offset: int
    record: Record


class Context:
    """What a scenario gets: the broker's address and its own names."""

    def __init__(self, bootstrap: str, client_tag: str, scenario: str):
        self.bootstrap = bootstrap
        self.scenario = scenario
        prefix = os.environ.get("COMPAT_PREFIX") or "py%d" % int(time.time())
        # Every topic and group starts with COMPAT_PREFIX, then says which
        # client and scenario made it, so that a leftover is easy to trace.
        self._base = "%s-%s-%s" % (prefix, client_tag, scenario)

    def name(self, suffix: str = "") -> str:
        """A topic or group name for this scenario; suffix tells several apart."""
        return self._base + ("-" + suffix if suffix else "")

    def log(self, fmt: str, *args) -> None:
        """A line in the scenario's log (not in the results)."""
        msg = fmt % args if args else fmt
        print("%s %s" % (time.strftime("%H:%M:%S"), msg), file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------
# Records

def now_ms() -> int:
    return int(time.time() * 1000)


def make_records(count: int, seed: int, base_ts: Optional[int] = None,
                 null_header: bool = True) -> List[Record]:
    """count records, the same for the same seed, with every shape we check.

    Record 0 has a null value (a tombstone), record 1 an empty value, record 2
    a binary key; the rest have values mixing repeated text (so that codecs
    have something to compress) with random bytes (so that a codec bug cannot
    hide behind an all-ASCII payload). Most records carry headers with a
    binary value, an empty value, a null value and a repeated key; every
    seventh has none at all. Timestamps are explicit, distinct and in the
    recent past (brokers reject CreateTime too far in the future).

    null_header=False leaves out the null-valued header, for a client whose
    API cannot send one (kafka-python's send() accepts bytes values only).
    """
    rng = random.Random(seed)
    if base_ts is None:
        base_ts = now_ms() - 600_000
    records = []
    for i in range(count):
        key = bytes(range(256)) if i == 2 else b"key-%05d" % i
        if i == 0:
            value = None
        elif i == 1:
            value = b""
        else:
            text = (b"gregor compat record %d " % i) * rng.randint(0, 40)
            value = text + rng.randbytes(rng.randint(0, 400))
        headers: List[Header] = []
        if i % 7 != 0:
            headers = [("seq", b"%d" % i),
                       ("bin", rng.randbytes(rng.randint(1, 32)) + b"\x00\xff"),
                       ("empty", b"")]
            if null_header:
                headers.append(("null", None))
            headers += [("dup", b"first"), ("dup", b"second"),
                        ("cl\u00e9-\u043a\u043b\u044e\u0447", "\u00fcnicode".encode())]
        records.append(Record(key, value, tuple(headers), base_ts + i))
    return records


def by_partition(placed: Iterable[Placed]) -> Dict[int, List[Placed]]:
    out: Dict[int, List[Placed]] = {}
    for p in placed:
        out.setdefault(p.partition, []).append(p)
    return out


def check_produced_dense(produced: Sequence[Placed], start: int = 0) -> Dict[int, List[Placed]]:
    """Checks the producer's acknowledgements and groups them by partition.

    Within a partition, the records must have been given the offsets start,
    start+1, ... in the order they were produced: that is what "in order,
    once" means on the producing side.
    """
    parts = by_partition(produced)
    for p, placed in sorted(parts.items()):
        offsets = [x.offset for x in placed]
        want = list(range(start, start + len(placed)))
        if offsets != want:
            raise Failure("produce acks on partition %d: offsets %s, want %s in produce order"
                          % (p, _span(offsets), _span(want)))
    return parts


def compare(expected: Dict[int, List[Placed]], got: Dict[int, List[Placed]], what: str = "read") -> None:
    """Fails with the first difference between two partition-to-records maps.

    Both are compared record by record: partition, offset, key, value,
    headers (order included) and timestamp. A missing, extra or reordered
    record shows as the first offset where they part.
    """
    for p in sorted(set(expected) | set(got)):
        want = expected.get(p, [])
        have = got.get(p, [])
        for i, (w, h) in enumerate(zip(want, have)):
            if w.offset != h.offset:
                raise Failure("%s partition %d, record #%d: offset %d, want %d (%s)"
                              % (what, p, i, h.offset, w.offset, _describe_gap(want, have)))
            diff = _record_diff(w.record, h.record)
            if diff:
                raise Failure("%s partition %d offset %d: %s" % (what, p, w.offset, diff))
        if len(have) != len(want):
            if len(have) < len(want):
                raise Failure("%s partition %d: %d records, want %d (missing from offset %d)"
                              % (what, p, len(have), len(want), want[len(have)].offset))
            raise Failure("%s partition %d: %d records, want %d (extra from offset %d)"
                          % (what, p, len(have), len(want), have[len(want)].offset))


def check_dense(got: Dict[int, List[Placed]], what: str = "read") -> None:
    """Offsets read from each partition must be consecutive."""
    for p, placed in got.items():
        for a, b in zip(placed, placed[1:]):
            if b.offset != a.offset + 1:
                raise Failure("%s partition %d: offset %d follows %d (not dense)"
                              % (what, p, b.offset, a.offset))


def counts(parts: Dict[int, List[Placed]]) -> str:
    return "/".join(str(len(parts.get(p, []))) for p in range(max(parts, default=-1) + 1))


def _record_diff(want: Record, have: Record) -> str:
    if want.key != have.key:
        return "key %s, want %s" % (_show(have.key), _show(want.key))
    if want.value != have.value:
        return "value %s, want %s" % (_show(have.value), _show(want.value))
    if want.headers != have.headers:
        return "headers %s, want %s" % (_show_headers(have.headers), _show_headers(want.headers))
    if want.timestamp != have.timestamp:
        return "timestamp %d, want %d" % (have.timestamp, want.timestamp)
    return ""


def _describe_gap(want: List[Placed], have: List[Placed]) -> str:
    return "read offsets %s, want %s" % (_span([x.offset for x in have]), _span([x.offset for x in want]))


def _span(offsets: Sequence[int]) -> str:
    """A short rendering of an offset list: [0..99] when dense, else the start."""
    if not offsets:
        return "[]"
    if list(offsets) == list(range(offsets[0], offsets[0] + len(offsets))):
        return "[%d..%d]" % (offsets[0], offsets[-1])
    head = ",".join(str(o) for o in offsets[:8])
    return "[%s%s] (%d)" % (head, ",..." if len(offsets) > 8 else "", len(offsets))


def _show(b: Optional[bytes]) -> str:
    if b is None:
        return "null"
    if len(b) <= 24:
        return repr(b)
    return "%d bytes %r..." % (len(b), b[:16])


def _show_headers(headers: Tuple[Header, ...]) -> str:
    return "[" + ", ".join("%s=%s" % (k, _show(v)) for k, v in headers) + "]"


# ---------------------------------------------------------------------------
# Waiting

def wait_until(what: str, fn: Callable[[], object], timeout: float = STEP_TIMEOUT,
               interval: float = 0.2):
    """Calls fn until it returns something truthy, and returns that.

    Fails after timeout seconds with what was awaited and the last answer (or
    exception) fn gave, so that a stuck step says where it stuck.
    """
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        try:
            result = fn()
            if result:
                return result
            last = result
        except Failure:
            raise
        except Exception as e:  # the last error is the reason if time runs out
            last = "%s: %s" % (type(e).__name__, e)
        if time.monotonic() >= deadline:
            raise Failure("timed out after %.0fs waiting for %s (last: %s)" % (timeout, what, last))
        time.sleep(interval)


def expect(cond: bool, fmt: str, *args) -> None:
    """Fails the scenario with the formatted reason unless cond holds."""
    if not cond:
        raise Failure(fmt % args if args else fmt)


# ---------------------------------------------------------------------------
# Broker versions

def api_versions(bootstrap: str, timeout: float = 10.0) -> Dict[str, Dict[int, Tuple[int, int]]]:
    """Each broker of bootstrap's answer to ApiVersions v0, sent by hand: its
    API keys and their (min, max) versions. For a scenario whose client
    does not say when the broker lacks an API it needs (librdkafka retries
    the coordinator of a consumer protocol group forever, logging at debug
    level only), so that the scenario can say it at once."""
    out: Dict[str, Dict[int, Tuple[int, int]]] = {}
    for addr in bootstrap.split(","):
        host, _, port = addr.rpartition(":")
        client_id = b"compat-lab"
        req = struct.pack(">hhih", 18, 0, 1, len(client_id)) + client_id
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout) as s:
            s.sendall(struct.pack(">i", len(req)) + req)
            size = struct.unpack(">i", _recv_exactly(s, 4))[0]
            body = _recv_exactly(s, size)
        _, error, count = struct.unpack_from(">ihi", body)
        if error != 0:
            raise Failure("ApiVersions v0 to %s: error code %d" % (addr, error))
        out[addr] = {k: (lo, hi) for k, lo, hi in
                     (struct.unpack_from(">hhh", body, 10 + 6 * i) for i in range(count))}
    return out


def _recv_exactly(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise Failure("connection closed after %d of %d bytes of an ApiVersions response" % (len(buf), n))
        buf += chunk
    return buf


# ---------------------------------------------------------------------------
# Running

Scenario = Callable[[Context], str]


class GroupMember(threading.Thread):
    """A consumer group member polling in its own thread; the main thread
    only reads its state, under the lock. A client's subclass opens the
    consumer (subscribed to the topic), polls it and closes it."""

    def __init__(self, tag: str):
        super().__init__(daemon=True, name=tag)
        self.tag = tag
        self.lock = threading.Lock()
        self.assigned: frozenset = frozenset()
        self.records: List[Placed] = []
        self.error: Optional[str] = None
        self.stop = threading.Event()

    def open(self):
        raise NotImplementedError

    def poll(self, consumer) -> Tuple[frozenset, List[Placed]]:
        """One poll: the member's assignment and the records it returned.
        A client error is raised."""
        raise NotImplementedError

    def finish(self, consumer) -> None:
        """Called once polling has stopped, before the consumer is closed
        (which leaves the group): a member that commits its position as it
        leaves does it here. A client error is raised."""

    def run(self):
        c = None
        try:
            c = self.open()
            while not self.stop.is_set():
                assigned, placed = self.poll(c)
                with self.lock:
                    self.assigned = assigned
                    self.records.extend(placed)
            self.finish(c)
        except Exception as e:  # reported by the main thread
            with self.lock:
                self.error = "%s: %s" % (type(e).__name__, e)
        finally:
            if c is not None:
                c.close()

    def state(self):
        with self.lock:
            if self.error:
                raise Failure("member %s: %s" % (self.tag, self.error))
            return self.assigned, list(self.records)


def group_rebalance(members: List[GroupMember], records: List[Record],
                    produce: Callable[[List[Record], List[int]], Sequence[Placed]]) -> str:
    """The group-rebalance scenario over a 4-partition topic: once the two
    members hold disjoint halves of it, records are produced round-robin
    over the partitions (produce gets the records and their partitions and
    returns where they landed);
    together the members must read each exactly once, each only from its
    own partitions, with the assignment unchanged."""
    a_member, b_member = members
    for m in members:
        m.start()
    try:
        def split():
            (a, _), (b, _) = a_member.state(), b_member.state()
            return a and b and not (a & b) and (a | b) == frozenset(range(4)) and (a, b)
        a, b = wait_until("both members assigned, partitions split between them", split)
        expected = check_produced_dense(produce(records, [i % 4 for i in range(len(records))]))

        def all_read():
            return sum(len(m.state()[1]) for m in members) >= len(records)
        try:
            wait_until("the two members to read %d records" % len(records), all_read)
        except Failure as e:
            raise Failure("%s; read %s" % (e, [len(m.state()[1]) for m in members]))
        assignments = [m.state()[0] for m in members]
        expect(assignments == [a, b], "assignment changed while reading: %s then %s",
               [sorted(a), sorted(b)], [sorted(x) for x in assignments])
        seen: Dict[int, List[Placed]] = {}
        for m, mine in zip(members, (a, b)):
            _, recs = m.state()
            others = sorted({r.partition for r in recs} - mine)
            expect(not others, "member %s read partitions %s it was not assigned (%s)",
                   m.tag, others, sorted(mine))
            for p, v in by_partition(recs).items():
                seen[p] = v
        compare(expected, seen)
    finally:
        for m in members:
            m.stop.set()
        for m in members:
            m.join(timeout=30)
    return "member a got %s, b got %s; %d records read once each" % (
        sorted(a), sorted(b), len(records))


def main(client: str, client_tag: str, version: Callable[[], str],
         scenarios: Sequence[Tuple[str, Scenario]]) -> int:
    """The entry point of both programs; see the module comment for the roles."""
    args = sys.argv[1:]
    if len(args) == 4 and args[0] == "--one":
        return _run_child(client_tag, dict(scenarios), args[1], args[2], args[3])
    if len(args) != 1:
        print("usage: %s BOOTSTRAP  (or --one SCENARIO BOOTSTRAP OUT)" % sys.argv[0], file=sys.stderr)
        return 2
    return _run_driver(client, version(), [name for name, _ in scenarios], args[0])


def _run_child(client_tag: str, scenarios: Dict[str, Scenario], name: str,
               bootstrap: str, out: str) -> int:
    ctx = Context(bootstrap, client_tag, name)
    ctx.log("scenario %s against %s, names %s*", name, bootstrap, ctx.name())
    try:
        detail = scenarios[name](ctx)
        outcome = {"status": "pass", "detail": detail}
    except Failure as e:
        outcome = {"status": "fail", "detail": str(e)}
        ctx.log("FAIL: %s", e)
    except Exception as e:  # any error of the client is a failed scenario
        outcome = {"status": "fail", "detail": "%s: %s" % (type(e).__name__, e)}
        traceback.print_exc()
    ctx.log("%s: %s", outcome["status"], outcome["detail"])
    with open(out, "w") as f:
        json.dump(outcome, f)
    sys.stderr.flush()
    # A client may leave threads behind that would hold the process open
    # (a consumer that failed to close, a producer with undelivered records);
    # the outcome is written, so leave without waiting for them.
    os._exit(0)


# The client security of a secure lab run (compat-tests/run.sh --security):
# "" (none), "sasl_ssl" (SCRAM over TLS) or "mtls" (a client certificate).
SECURITY = os.environ.get("COMPAT_SECURITY", "")
# The scenarios a secure run covers: produce, consume and groups.
SECURE_SCENARIOS = re.compile(
    r"produce-consume-.*|idempotent-producer|consume-from-offset|group-commit-resume|group-rebalance")


def security() -> Dict[str, str]:
    """The run's client security from the COMPAT_* environment, in neutral
    names each program maps to its client's settings: protocol (SASL_SSL or
    SSL), ca, and cert and key (mtls) or mechanism, user, password
    (sasl_ssl); empty when the run has none."""
    if not SECURITY:
        return {}
    env = os.environ
    if SECURITY == "sasl_ssl":
        return {"protocol": "SASL_SSL", "ca": env["COMPAT_CA"], "mechanism": env["COMPAT_SASL_MECHANISM"],
                "user": env["COMPAT_SASL_USER"], "password": env["COMPAT_SASL_PASSWORD"]}
    if SECURITY == "mtls":
        return {"protocol": "SSL", "ca": env["COMPAT_CA"], "cert": env["COMPAT_CLIENT_CERT"],
                "key": env["COMPAT_CLIENT_KEY"]}
    raise SystemExit("COMPAT_SECURITY %r is not sasl_ssl or mtls" % SECURITY)


def security_config(keys: Dict[str, str]) -> Dict[str, str]:
    """The run's client security (security()) as one client's settings:
    keys maps each neutral name (protocol, ca, cert, key, mechanism, user,
    password) to that client's setting for it. Only the names the run has
    are set: cert and key for mtls, mechanism, user and password for
    sasl_ssl, nothing when the run has no security."""
    return {keys[name]: value for name, value in security().items()}


def _run_driver(client: str, version: str, names: List[str], bootstrap: str) -> int:
    results_path = os.environ.get("COMPAT_RESULTS")
    work = os.environ.get("COMPAT_WORK") or "."
    os.makedirs(work, exist_ok=True)
    me = os.path.abspath(sys.argv[0])
    passed = skipped = 0
    for name in names:
        if SECURITY and not SECURE_SCENARIOS.fullmatch(name):
            skipped += 1
            _report(results_path, [client, version, name, "skip", "0.0",
                                   "not run over %s (produce/consume/group scenarios only)" % SECURITY])
            continue
        log_path = os.path.join(work, "%s-%s.log" % (client, name))
        out_path = os.path.join(work, "%s-%s.json" % (client, name))
        if os.path.exists(out_path):
            os.remove(out_path)
        started = time.monotonic()
        unreachable = _unreachable(bootstrap)
        if unreachable:
            # Every client step would wait out its full bound against a broker
            # that is gone; say so at once instead.
            _report(results_path, [client, version, name, "fail", "0.0",
                                   "broker at %s not reachable: %s" % (bootstrap, unreachable)])
            continue
        with open(log_path, "w") as log:
            try:
                proc = subprocess.run([sys.executable, me, "--one", name, bootstrap, out_path],
                                      stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                      timeout=SCENARIO_TIMEOUT)
                rc: Optional[int] = proc.returncode
            except subprocess.TimeoutExpired:
                rc = None  # subprocess.run has killed it
        seconds = time.monotonic() - started
        if rc is None:
            status, detail = "fail", "timed out after %.0fs (scenario bound); see %s" % (
                SCENARIO_TIMEOUT, os.path.basename(log_path))
        else:
            try:
                with open(out_path) as f:
                    outcome = json.load(f)
                status, detail = outcome["status"], outcome["detail"]
            except (OSError, ValueError, KeyError):
                status, detail = "fail", "scenario process exited %d without an outcome: %s" % (
                    rc, _tail(log_path))
        passed += status == "pass"
        _report(results_path, [client, version, name, status, "%.1f" % seconds, detail])
    print("%s: %d passed, %d failed, %d skipped" % (client, passed, len(names) - passed - skipped, skipped),
          flush=True)
    return 0


def _report(results_path: Optional[str], fields: List[str]) -> None:
    """Prints a result line and appends it to the results file."""
    line = "\t".join(_one_line(f) for f in fields)
    print(line, flush=True)
    if results_path:
        with open(results_path, "a") as f:
            f.write(line + "\n")


def _unreachable(bootstrap: str) -> str:
    """Why a TCP connection to a broker of bootstrap (host:port, or a comma
    list of them) fails, or "" when every one succeeds."""
    for addr in bootstrap.split(","):
        host, _, port = addr.rpartition(":")
        try:
            socket.create_connection((host.strip("[]"), int(port)), timeout=10).close()
        except (OSError, ValueError) as e:
            return "%s: %s: %s" % (addr, type(e).__name__, e)
    return ""


def _one_line(s: str, limit: int = 600) -> str:
    s = " ".join(str(s).split())
    return s if len(s) <= limit else s[:limit - 3] + "..."


def _tail(path: str, lines: int = 3) -> str:
    try:
        with open(path, errors="replace") as f:
            return " | ".join(f.read().splitlines()[-lines:])
    except OSError:
        return "(no log)"
