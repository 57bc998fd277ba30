#!/usr/bin/env python3
"""Runs every query of the Grafana dashboard and every alert expression
through a Prometheus server's HTTP API and prints whether each returns data.

    check_queries.py PROMETHEUS_URL DASHBOARD_JSON ALERTS_YAML

Dashboard queries (each panel target's expr, and each query variable's
label_values(METRIC, LABEL), run as count by (LABEL) (METRIC)) have Grafana's template variables replaced first:
$__rate_interval (and $__interval, $__range) by RATE_INTERVAL (env, default
15s), and every dashboard variable ($instance, $topic, ...) by ".*", as
"All" selects. Each must return at least one series.

Alert expressions return nothing while the cluster is healthy, which is the
point of them. Each is run as written, and then its underlying series: the
expression with its comparisons taken off at the top level (`a > 0` is run
as `a`; `a > 0 and b > 1000` as `a` and as `b`). Every underlying series
must return data; whether the alert itself fires is printed, not checked.

Exits 1 if any query returns no data or fails, naming it and why.
Standard library only; the alert file is read with a small reader of the
subset of YAML alerts.yml uses (see read_alerts).
"""

import json
import os
import re
import sys
import urllib.parse
import urllib.request

RATE_INTERVAL = os.environ.get("RATE_INTERVAL", "15s")


def query(base, expr):
    """Returns (series count, error or None) of an instant query."""
    url = base.rstrip("/") + "/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            body = json.load(resp)
    except urllib.error.HTTPError as e:
        try:
            body = json.load(e)
        except ValueError:
            return 0, f"HTTP {e.code}"
    except OSError as e:
        return 0, str(e)
    if body.get("status") != "success":
        return 0, body.get("error", "query failed")
    return len(body["data"]["result"]), None


def dashboard_queries(path):
    """Yields (panel title, refId, expr) of every target of every panel."""
    with open(path) as f:
        d = json.load(f)
    variables = [v["name"] for v in d.get("templating", {}).get("list", [])]

    def panels(ps):
        for p in ps:
            yield p
            yield from panels(p.get("panels", []))

    for p in panels(d.get("panels", [])):
        for t in p.get("targets", []):
            expr = t.get("expr")
            if not expr:
                continue
            for name in ("__rate_interval", "__interval", "__range"):
                expr = expr.replace("${" + name + "}", RATE_INTERVAL).replace("$" + name, RATE_INTERVAL)
            for v in sorted(variables, key=len, reverse=True):
                expr = expr.replace("${" + v + "}", ".*").replace("$" + v, ".*")
            yield p.get("title", "?"), t.get("refId", "?"), expr


def variable_queries(path):
    """Yields (variable name, expr) for the dashboard's query variables of
    the form label_values(METRIC, LABEL), as count by (LABEL) (METRIC)."""
    with open(path) as f:
        d = json.load(f)
    for v in d.get("templating", {}).get("list", []):
        q = v.get("query")
        if isinstance(q, dict):
            q = q.get("query")
        m = re.match(r"^label_values\((.+),\s*(\w+)\)$", (q or "").strip())
        if v.get("type") == "query" and m:
            yield v["name"], f"count by ({m.group(2)}) ({m.group(1)})"


def read_alerts(path):
    """Yields (alert name, expr) from a Prometheus rule file.

    Reads the subset of YAML the rule files here use: `- alert: NAME`
    followed by `expr: ...` on one line, or `expr: >-` / `expr: |` with
    the expression on the more indented lines after it."""
    with open(path) as f:
        lines = f.read().splitlines()
    name = None
    i = 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^\s*-\s+alert:\s*(\S+)\s*$", line)
        if m:
            name = m.group(1)
        m = re.match(r"^(\s*)expr:\s*(.*)$", line)
        if m and name:
            indent, rest = len(m.group(1)), m.group(2).strip()
            if rest in (">-", ">", "|", "|-"):
                body = []
                i += 1
                while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > indent):
                    body.append(lines[i].strip())
                    i += 1
                sep = "\n" if rest.startswith("|") else " "
                yield name, sep.join(b for b in body if b)
                name = None
                continue
            yield name, rest.strip("'\"") if rest[:1] in "'\"" else rest
            name = None
        i += 1


def top_level_split(expr, words):
    """Splits expr at the top-level (outside (), [], {} and quotes) binary
    operators in words, returning the operands."""
    parts, depth, start, i, quote = [], 0, 0, 0, None
    ops = sorted(words, key=len, reverse=True)
    while i < len(expr):
        c = expr[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = None
        elif c in "\"'`":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0:
            for op in ops:
                if not expr.startswith(op, i):
                    continue
                if op[0].isalpha():
                    before = expr[i - 1] if i else " "
                    after = expr[i + len(op)] if i + len(op) < len(expr) else " "
                    if before.isalnum() or before == "_" or after.isalnum() or after == "_":
                        continue
                if op == "=" and (expr[i - 1:i] in ("=", "!", "<", ">") or expr[i + 1:i + 2] in ("=", "~")):
                    continue
                parts.append(expr[start:i])
                i += len(op)
                start = i
                break
            else:
                i += 1
                continue
            continue
        i += 1
    parts.append(expr[start:])
    return [p.strip() for p in parts]


def underlying(expr):
    """The series an alert expression compares: its operands of `and`,
    `or` and `unless`, each with a top-level comparison against a number
    taken off."""
    out = []
    for operand in top_level_split(expr, ["and", "or", "unless"]):
        sides = top_level_split(operand, ["==", "!=", ">=", "<=", ">", "<"])
        if len(sides) > 1:
            number = re.compile(r"^(bool\s+)?-?[0-9.e+]+$")
            sides = [s for s in sides if not number.match(s)]
        out.extend(sides)
    return out


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__.split("\n\n")[1])
    base, dashboard, alerts = sys.argv[1:]
    rows, failed = [], []

    for title, ref, expr in dashboard_queries(dashboard):
        n, err = query(base, expr)
        name = f"panel {title!r} {ref}"
        ok = n > 0 and err is None
        rows.append((name, "yes" if ok else "NO", f"{n} series" if err is None else "error: " + err, expr))
        if not ok:
            failed.append((name, expr, err or "no series"))

    for var, expr in variable_queries(dashboard):
        n, err = query(base, expr)
        name = f"variable ${var}"
        ok = n > 0 and err is None
        rows.append((name, "yes" if ok else "NO", f"{n} values" if err is None else "error: " + err, expr))
        if not ok:
            failed.append((name, expr, err or "no values"))

    for alert, expr in read_alerts(alerts):
        n, err = query(base, expr)
        state = "error: " + err if err else ("fires" if n else "quiet")
        rows.append((f"alert {alert}", "-", f"as written: {state}", expr))
        if err:
            failed.append((f"alert {alert}", expr, err))
        for sub in underlying(expr):
            n, err = query(base, sub)
            ok = n > 0 and err is None
            name = f"alert {alert} underlying"
            rows.append((name, "yes" if ok else "NO", f"{n} series" if err is None else "error: " + err, sub))
            if not ok:
                failed.append((name, sub, err or "no series"))

    w = max(len(r[0]) for r in rows)
    print(f"{'QUERY':<{w}}  DATA  RESULT")
    for name, data, result, expr in rows:
        print(f"{name:<{w}}  {data:<4}  {result}")
        print(f"{'':<{w}}        {expr}")
    dash = sum(1 for r in rows if r[0].startswith(("panel", "variable")))
    under = sum(1 for r in rows if r[0].endswith("underlying"))
    print(f"\n{dash} dashboard queries (panels and variables), {under} underlying series of "
          f"{sum(1 for r in rows if r[1] == '-')} alerts; {len(failed)} without data")
    for name, expr, why in failed:
        print(f"NO DATA: {name}: {why}: {expr}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
