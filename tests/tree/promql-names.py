#!/usr/bin/env python3
"""promql-names.py - the metric names that cgpool's Prometheus rules and
Grafana dashboard use, checked.

  promql-names.py [--exported NAMES_FILE] [--list] RULES_YML DASHBOARD_JSON

Collects every metric name of the rules file's `expr:` values and of the
dashboard's queries (each `expr`, and the `label_values(...)` and
`query_result(...)` of its template variables), and every `cgpool_...` token
anywhere in either file (descriptions and annotations name metrics too).
Prints one line per name that is not allowed, as `FILE: NAME (why)`, and
exits 1 when there is one:
  - a `cgpool:...` name must be a recording rule of the rules file;
  - `up` (made by Prometheus itself) is allowed;
  - any other name must be a `cgpool_...` name, and, with --exported, one of
    NAMES_FILE (one name a line: what `cgpoolctl metrics` prints).
With --list it prints every name used instead, with the files using it.
The dashboard must be valid JSON, every panel but rows and text panels must
have a target, and every target a non-empty expr; each problem is a line too.
Needs no YAML module: the rules file's `record:` and `expr:` values are read
as plain, quoted or block (| or >) scalars.
"""
import json
import re
import sys

BUILTIN = {"up"}
KEYWORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right",
            "bool", "offset", "inf", "nan", "atan2"}
NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"


def yaml_values(path, key):
    """The values of every `key:` in a YAML file written as block style."""
    lines = open(path, encoding="utf-8").read().split("\n")
    out = []
    pat = re.compile(r"^(\s*(?:-\s+)?)" + key + r":\s*(.*)$")
    i = 0
    while i < len(lines):
        m = pat.match(lines[i])
        i += 1
        if not m:
            continue
        indent = len(m.group(1))
        first = m.group(2).strip()
        body = []
        while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > indent):
            body.append(lines[i].strip())
            i += 1
        while body and not body[-1]:
            body.pop()
        if first[:1] in ("|", ">"):
            value = ("\n" if first[0] == "|" else " ").join(body)
        else:
            value = " ".join([first] + body)
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
                if m.group(2).strip()[0] == "'":
                    value = value.replace("''", "'")
        out.append(value)
    return out


def promql_names(expr):
    """Metric names in a PromQL expression (Grafana's $variables allowed)."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`', '""', expr)
    e = re.sub(r"\$\{[^}]*\}|\$\w+", "1m", e)
    e = re.sub(r"\{[^}]*\}", "{}", e)
    e = re.sub(r"\[[^\]]*\]", "[]", e)
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    e = re.sub(r"\boffset\s+-?[0-9a-z]+", " ", e)
    names = set()
    for m in re.finditer(r"(?<![\w:.])(" + NAME + r")(?!\w)(\s*\()?", e):
        n = m.group(1)
        if m.group(2) or n.lower() in KEYWORDS:
            continue
        names.add(n)
    return names


def variable_names(query):
    """Metric names in a Grafana Prometheus template variable's query."""
    m = re.match(r"\s*label_values\(\s*(.*?)\s*,\s*\w+\s*\)\s*$", query)
    if m:
        return promql_names(m.group(1))
    m = re.match(r"\s*(?:query_result|metrics)\(\s*(.*)\)\s*$", query)
    if m:
        return promql_names(m.group(1))
    m = re.match(r"\s*label_values\(\s*\w+\s*\)\s*$", query)
    return set() if m else promql_names(query)


def dashboard(path, problems):
    try:
        d = json.load(open(path, encoding="utf-8"))
    except ValueError as err:
        problems.append("%s: not valid JSON: %s" % (path, err))
        return set()
    names = set()

    def walk_panels(panels):
        for p in panels:
            kind = p.get("type")
            title = p.get("title", "?")
            if kind == "row":
                walk_panels(p.get("panels", []))
                continue
            targets = p.get("targets") or []
            if kind not in ("text", "news", "dashlist") and not targets:
                problems.append("%s: panel %r has no target" % (path, title))
            for t in targets:
                expr = t.get("expr")
                if not isinstance(expr, str) or not expr.strip():
                    problems.append("%s: panel %r: target %s has no expr" % (path, title, t.get("refId", "?")))
                    continue
                names.update(promql_names(expr))

    walk_panels(d.get("panels", []))
    if not d.get("panels"):
        problems.append("%s: no panels" % path)
    for v in d.get("templating", {}).get("list", []):
        if v.get("type") != "query":
            continue
        q = v.get("query")
        if isinstance(q, dict):
            q = q.get("query", "")
        names.update(variable_names(q or ""))
    for a in d.get("annotations", {}).get("list", []):
        if isinstance(a.get("expr"), str):
            names.update(promql_names(a["expr"]))
    return names


def main(argv):
    exported = None
    listing = False
    while len(argv) > 1 and argv[1].startswith("--"):
        if argv[1] == "--exported" and len(argv) > 2:
            exported = set(open(argv[2], encoding="utf-8").read().split())
            argv = argv[:1] + argv[3:]
        elif argv[1] == "--list":
            listing = True
            argv = argv[:1] + argv[2:]
        else:
            break
    if len(argv) != 3:
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 64
    rules, dash = argv[1], argv[2]
    problems = []
    recorded = set(yaml_values(rules, "record"))
    used = {}
    for e in yaml_values(rules, "expr"):
        for n in promql_names(e):
            used.setdefault(n, set()).add(rules)
    for n in dashboard(dash, problems):
        used.setdefault(n, set()).add(dash)
    for f in (rules, dash):
        for n in re.findall(r"(?<![\w:])cgpool_[a-z0-9_]+", open(f, encoding="utf-8").read()):
            used.setdefault(n, set()).add(f)
    for n in sorted(used):
        for f in sorted(used[n]):
            if n.startswith("cgpool:"):
                if n not in recorded:
                    problems.append("%s: %s (no recording rule of %s makes it)" % (f, n, rules))
            elif n in BUILTIN:
                continue
            elif not n.startswith("cgpool_"):
                problems.append("%s: %s (not a cgpool metric; of the others only %s is allowed)"
                                % (f, n, ", ".join(sorted(BUILTIN))))
            elif exported is not None and n not in exported:
                problems.append("%s: %s (cgpoolctl metrics does not print it)" % (f, n))
    if listing:
        for n in sorted(used):
            print("%s %s" % (n, " ".join(sorted(used[n]))))
        return 0
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
