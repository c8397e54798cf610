#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Strict parser of the Prometheus text exposition format 0.0.4.

Usage: prom_parse.py FILE   ("-" reads stdin)

Checks: every line ends with a newline; "# HELP" and "# TYPE" at most once
per family, TYPE before the family's first sample, type one of counter,
gauge, histogram, summary, untyped; help text escapes only \\\\ and \\n;
metric and label names are valid, label names do not start with "__" and
do not repeat; label values are quoted with only \\\\, \\" and \\n escapes;
values are floats (decimal, +Inf, -Inf, NaN), timestamps integers; the
samples of a family are contiguous and no series appears twice; counters
are not negative; a counter or gauge family holds only samples of its own
name, a histogram or summary only its suffixed ones.

On success prints each sample as `NAME LABELS_JSON VALUE` (labels decoded,
keys sorted) and exits 0; otherwise prints "FILE:LINE: reason" on stderr
and exits 1.
"""
import json
import math
import re
import sys

NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
TIMESTAMP = re.compile(r"-?[0-9]+")
TYPES = ("counter", "gauge", "histogram", "summary", "untyped")
SUFFIXES = {"histogram": ("_bucket", "_sum", "_count"),
            "summary": ("", "_sum", "_count")}


class Bad(Exception):
    pass


def parse_value(s):
    if s in ("+Inf", "-Inf", "NaN"):
        return float(s.replace("Inf", "inf").replace("NaN", "nan"))
    if not NUMBER.fullmatch(s):
        raise Bad("bad value %r" % s)
    return float(s)


def unescape_help(s):
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c == "\\":
            if i + 1 >= len(s) or s[i + 1] not in "\\n":
                raise Bad("bad escape in help text")
            out.append("\\" if s[i + 1] == "\\" else "\n")
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def parse_labels(s, i):
    """Labels starting after '{' at s[i:]; returns (dict, index after '}')."""
    labels = {}
    while True:
        if i < len(s) and s[i] == "}":
            return labels, i + 1
        m = LABEL.match(s, i)
        if not m:
            raise Bad("bad label name at column %d" % (i + 1))
        name = m.group(0)
        if name.startswith("__"):
            raise Bad("reserved label name %r" % name)
        if name in labels:
            raise Bad("repeated label %r" % name)
        i = m.end()
        if s[i:i + 2] != '="':
            raise Bad("expected =\" after label %r" % name)
        i += 2
        val = []
        while True:
            if i >= len(s):
                raise Bad("unterminated label value")
            c = s[i]
            if c == '"':
                i += 1
                break
            if c == "\\":
                nxt = s[i + 1:i + 2]
                if nxt not in ("\\", '"', "n"):
                    raise Bad("bad escape \\%s in label value" % nxt)
                val.append("\n" if nxt == "n" else nxt)
                i += 2
                continue
            val.append(c)
            i += 1
        labels[name] = "".join(val)
        if i < len(s) and s[i] == ",":
            i += 1
        elif i >= len(s) or s[i] != "}":
            raise Bad("expected , or } after label %r" % name)


def family_of(name, types):
    if name in types and types[name] not in ("histogram",):
        return name
    for fam, t in types.items():
        for suf in SUFFIXES.get(t, ()):
            if suf and name == fam + suf:
                return fam
    return name


def parse(text):
    if text and not text.endswith("\n"):
        raise Bad("last line has no newline", )
    types, helps, done, seen = {}, {}, set(), set()
    current = None
    samples = []
    for lineno, line in enumerate(text.split("\n")[:-1], 1):
        try:
            if line == "":
                continue
            if line.startswith("#"):
                parts = line.split(" ", 3)
                if len(parts) >= 3 and parts[0] == "#" and parts[1] in ("HELP", "TYPE"):
                    kind, name = parts[1], parts[2]
                    if not NAME.fullmatch(name):
                        raise Bad("bad metric name %r" % name)
                    if name in done:
                        raise Bad("family %r is not contiguous" % name)
                    if current is not None and current != name:
                        done.add(current)
                    current = name
                    rest = parts[3] if len(parts) > 3 else ""
                    if kind == "HELP":
                        if name in helps:
                            raise Bad("second HELP for %r" % name)
                        helps[name] = unescape_help(rest)
                    else:
                        if name in types:
                            raise Bad("second TYPE for %r" % name)
                        if rest not in TYPES:
                            raise Bad("bad type %r" % rest)
                        if any(s[0] == name for s in samples):
                            raise Bad("TYPE after samples of %r" % name)
                        types[name] = rest
                continue    # other comments are allowed
            m = NAME.match(line)
            if not m:
                raise Bad("bad metric name")
            name = m.group(0)
            i = m.end()
            labels = {}
            if line[i:i + 1] == "{":
                labels, i = parse_labels(line, i + 1)
            if line[i:i + 1] != " ":
                raise Bad("expected one space before the value")
            fields = line[i + 1:].split(" ")
            if len(fields) not in (1, 2):
                raise Bad("expected VALUE [TIMESTAMP]")
            value = parse_value(fields[0])
            if len(fields) == 2 and not TIMESTAMP.fullmatch(fields[1]):
                raise Bad("bad timestamp %r" % fields[1])
            fam = family_of(name, types)
            if fam in done:
                raise Bad("family %r is not contiguous" % fam)
            if current is not None and current != fam:
                done.add(current)
            current = fam
            t = types.get(fam, "untyped")
            if t in ("counter", "gauge", "untyped") and name != fam:
                raise Bad("sample %r in %s family %r" % (name, t, fam))
            if t == "histogram" and name == fam:
                raise Bad("histogram %r sample without a suffix" % name)
            if t == "counter" and value < 0:
                raise Bad("negative counter %r" % name)
            key = (name, tuple(sorted(labels.items())))
            if key in seen:
                raise Bad("series %s%s appears twice" % (name, labels))
            seen.add(key)
            samples.append((fam, name, labels, value))
        except Bad as e:
            raise Bad("%d: %s" % (lineno, e))
    return types, helps, samples


def fmt(v):
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return repr(v)


def main():
    if len(sys.argv) != 2:
        print("usage: prom_parse.py FILE", file=sys.stderr)
        return 2
    path = sys.argv[1]
    raw = sys.stdin.buffer.read() if path == "-" else open(path, "rb").read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        print("%s: not UTF-8: %s" % (path, e), file=sys.stderr)
        return 1
    try:
        types, helps, samples = parse(text)
    except Bad as e:
        print("%s:%s" % (path, e), file=sys.stderr)
        return 1
    for _, name, labels, value in samples:
        print(name, json.dumps(labels, sort_keys=True), fmt(value))
    print("%s: %d families, %d samples" % (path, len(set(types) | set(helps)),
                                           len(samples)), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
