#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""The "dq" netlink family three ways must agree.

docs/netlink/dq.yaml (the kernel's netlink spec format), the enums in
uapi/linux/dq.h and the per-operation policies in kmod/dq_netlink.c are
written by hand; this reads all three and checks, as TAP:

  - every attribute set, the event kinds and the operations have the same
    names in the same order with the same values as the uapi enums;
  - every operation's request attributes are exactly the attributes its
    kernel policy accepts, each with the spec's type and min/max checks;
  - admin-perm, uns-admin-perm, do and dump in the spec match the kernel's
    genl_ops.

Usage: nl_spec_test.py [REPO]
"""
import re
import sys

import yaml

REPO = sys.argv[1] if len(sys.argv) > 1 else __file__.rsplit("/selftests/", 1)[0]
results = []


def ok(cond, what, detail=""):
    results.append(bool(cond))
    print("%s %d - %s" % ("ok" if cond else "not ok", len(results), what))
    if not cond and detail:
        for line in str(detail).splitlines():
            print("#   " + line)


def c_name(prefix, name):
    return (prefix + name).upper().replace("-", "_")


def uapi_enum(text, name):
    """Entries of `enum NAME { ... }` with their values, in order."""
    body = re.search(r"enum %s \{(.*?)\};" % name, text, re.S).group(1)
    out, value = [], -1
    for line in body.splitlines():
        line = re.sub(r"/\*.*?\*/", "", line).strip().rstrip(",")
        if not line or line.startswith("__"):
            continue
        m = re.match(r"(\w+)(?:\s*=\s*(\w+))?$", line)
        value = int(m.group(2), 0) if m.group(2) else value + 1
        out.append((m.group(1), value))
    return out


def uapi_defines(text):
    defs = {}
    # A define continued with a backslash is one line.
    text = re.sub(r"\\\n\s*", " ", text)
    for m in re.finditer(r"^#define\s+(\w+)\s+(.+?)\s*(?:/\*.*)?$", text, re.M):
        defs[m.group(1)] = m.group(2)
    return defs


def c_eval(expr, defs):
    """An integer constant expression of the sources (defines resolved)."""
    expr = expr.strip()
    for _ in range(8):
        new = re.sub(r"\b[A-Z_][A-Z0-9_]*\b",
                     lambda m: "(%s)" % defs[m.group(0)] if m.group(0) in defs
                     else m.group(0), expr)
        if new == expr:
            break
        expr = new
    expr = re.sub(r"\b(0[0-7]+)\b", lambda m: str(int(m.group(1), 8)), expr)
    expr = re.sub(r"(\d+)[UL]+\b", r"\1", expr)
    return eval(expr, {"__builtins__": {}}, {})  # sources' constants only


def spec_value(v, consts):
    if isinstance(v, int):
        return v
    m = re.match(r"([a-z0-9-]+)(?:\s*-\s*(\d+))?$", v)
    base = consts[m.group(1)]
    return base - int(m.group(2) or 0)


def main():
    spec = yaml.safe_load(open(REPO + "/docs/netlink/dq.yaml"))
    uapi = open(REPO + "/uapi/linux/dq.h").read()
    nl = open(REPO + "/kmod/dq_netlink.c").read()
    defs = uapi_defines(uapi)
    defs.update({"NSEC_PER_SEC": "1000000000", "MAX_NUMNODES": "64"})
    consts = {d["name"]: d["value"] for d in spec["definitions"]
              if d["type"] == "const"}
    consts["max-numnodes"] = 64

    ok(spec["name"] == "dq" and spec["protocol"] == "genetlink",
       "family dq, protocol genetlink")
    ok(consts["name-max"] == int(defs["DQ_NAME_MAX"]), "name-max == DQ_NAME_MAX")

    sets = {s["name"]: s for s in spec["attribute-sets"]}
    for set_name, enum in (("queue", "dq_genl_attr"), ("stats", "dq_stats_attr")):
        s = sets[set_name]
        want = [(n, v) for n, v in uapi_enum(uapi, enum) if v > 0]
        got, value = [], 0
        for a in s["attributes"]:
            value = a.get("value", value + 1)
            got.append((c_name(s["name-prefix"], a["name"]), value))
        ok(got == want, "attribute set %s == enum %s" % (set_name, enum),
           "spec %s\nuapi %s" % (got, want))

    kinds = next(d for d in spec["definitions"] if d["name"] == "event-kind")
    got = [("DQ_EVENT_" + e.upper().replace("-", "_"), kinds["value-start"] + i)
           for i, e in enumerate(kinds["entries"])]
    ok(got == uapi_enum(uapi, "dq_event_kind"), "event-kind == enum dq_event_kind",
       got)

    ops = spec["operations"]
    got, value = [], 0
    for o in ops["list"]:
        value = o.get("value", value + 1)
        got.append((c_name(ops["name-prefix"], o["name"]), value))
    want = [(n, v) for n, v in uapi_enum(uapi, "dq_genl_cmd") if v > 0]
    ok(got == want, "operations == enum dq_genl_cmd", "spec %s\nuapi %s" % (got, want))

    # The kernel's policies, with its two attribute-group macros expanded.
    macros = {m.group(1): m.group(2) for m in re.finditer(
        r"#define (DQ_NLA_\w+)\s*\\\n(.*?)(?<!\\)\n", nl, re.S)}
    ranges = {}
    for m in re.finditer(r"struct netlink_range_validation (\w+) = \{(.*?)\};",
                         nl, re.S):
        r = dict(re.findall(r"\.(min|max)\s*=\s*([^,\n]+)", m.group(2)))
        ranges[m.group(1)] = {k: c_eval(v, defs) for k, v in r.items()}

    def policy(name):
        body = re.search(r"nla_policy %s\[DQ_A_MAX \+ 1\] = \{(.*?)\n\};" % name,
                         nl, re.S).group(1)
        for mac, text in macros.items():
            body = body.replace(mac, text.replace("\\\n", "\n"))
        out = {}
        for m in re.finditer(r"\[(DQ_A_\w+)\]\s*=\s*(.*?)(?=,\s*(?:\[|$))",
                             body + ",", re.S):
            out[m.group(1)] = " ".join(m.group(2).split()).rstrip(", ")
        return out

    nla_type = {"u32": "NLA_U32", "s32": "NLA_S32", "u64": "NLA_U64",
                "string": "NLA_NUL_STRING", "flag": "NLA_FLAG"}

    def kernel_checks(p):
        """(type, min, max) of one policy entry; a mask is (type, 0, mask)."""
        m = re.match(r"NLA_POLICY_MASK\((NLA_\w+), (.+)\)$", p)
        if m:
            return m.group(1), 0, c_eval(m.group(2), defs)
        m = re.match(r"\{ \.type = (NLA_\w+)(?:, \.len = (.+?))? \}$", p)
        if m:
            return m.group(1), None, (c_eval(m.group(2), defs)
                                      if m.group(2) else None)
        m = re.match(r"NLA_POLICY_(MIN|MAX)\((NLA_\w+), (.+)\)$", p)
        if m:
            v = c_eval(m.group(3), defs)
            return (m.group(2), v, None) if m.group(1) == "MIN" else \
                (m.group(2), None, v)
        m = re.match(r"NLA_POLICY_RANGE\((NLA_\w+), (.+?), (.+)\)$", p)
        if m:
            return m.group(1), c_eval(m.group(2), defs), c_eval(m.group(3), defs)
        m = re.match(r"NLA_POLICY_FULL_RANGE\((NLA_\w+), &(\w+)\)$", p)
        if m:
            r = ranges[m.group(2)]
            return m.group(1), r.get("min"), r.get("max")
        raise ValueError("unparsed policy entry: " + p)

    genl_ops = {}
    for m in re.finditer(r"\{\s*\.cmd = (DQ_CMD_\w+),(.*?)\n\t\}", nl, re.S):
        genl_ops[m.group(1)] = m.group(2)

    attrs = {a["name"]: a for a in sets["queue"]["attributes"]}
    for o in ops["list"]:
        cmd = c_name(ops["name-prefix"], o["name"])
        if "event" in o:
            ok(cmd not in genl_ops, "%s: multicast only, no genl_ops entry" % cmd)
            continue
        g = genl_ops.get(cmd, "")
        pm = re.search(r"\.policy = (\w+)", g)
        ok(pm, "%s has its own policy" % cmd, g)
        if not pm:
            continue
        pol = policy(pm.group(1))
        want = sorted(c_name("dq-a-", a) for a in o["do"]["request"]["attributes"])
        ok(sorted(pol) == want, "%s: the policy takes exactly the spec's request" % cmd,
           "kernel %s\nspec   %s" % (sorted(pol), want))
        bad = []
        for a in o["do"]["request"]["attributes"]:
            key = c_name("dq-a-", a)
            if key not in pol:
                continue
            t, lo, hi = kernel_checks(pol[key])
            chk = attrs[a].get("checks", {})
            if "flags-mask" in chk:
                # A flags definition's mask: entry i is bit i, each one
                # a DQ_* define of that value in the uapi.
                fl = next(d for d in spec["definitions"]
                          if d["name"] == chk["flags-mask"])
                mask = 0
                for i, e in enumerate(fl["entries"]):
                    cn = c_name(fl["name-prefix"], e)
                    ok(int(c_eval(cn, defs)) == 1 << i,
                       "%s == bit %d of %s" % (cn, i, fl["name"]))
                    mask |= 1 << i
                chk = dict(chk, min=0, max=mask)
            slo = spec_value(chk["min"], consts) if "min" in chk else None
            shi = spec_value(chk["max"], consts) if "max" in chk else \
                (spec_value(chk["max-len"], consts) if "max-len" in chk else None)
            if (t, lo, hi) != (nla_type[attrs[a]["type"]], slo, shi):
                bad.append("%s: kernel %s, spec %s" % (a, (t, lo, hi),
                                                       (attrs[a]["type"], slo, shi)))
        ok(not bad, "%s: every attribute's type and range as the spec's" % cmd,
           "\n".join(bad))
        for kflag, sflag in (("GENL_ADMIN_PERM", "admin-perm"),
                             ("GENL_UNS_ADMIN_PERM", "uns-admin-perm")):
            have = re.search(r"\b%s\b" % kflag, g) is not None
            ok(have == (sflag in o.get("flags", [])),
               "%s: %s as in the spec (%s)" % (cmd, sflag, have))
        ok((".dumpit" in g) == ("dump" in o) and (".doit" in g) == ("do" in o),
           "%s: do and dump as in the spec" % cmd)

    passed = sum(results)
    print("1..%d" % len(results))
    print("%d passed, %d failed, 0 skipped" % (passed, len(results) - passed))
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
