#!/usr/bin/env python3
"""Offline checks of ccld's deployment artefacts (tests/deploy/test_manifests.sh).

Without a cluster, kubeconform or network: the Kubernetes objects are held
to a subset of the API schema covering every field they use (unknown keys
are errors, so a typo does not pass silently), plus the cross-references
the API server or kubelet would refuse at run time (selectors, volume and
port names, capability names, $(VAR) references).  Then: the Helm chart
rendered with its defaults equals deploy/k8s/*.yaml; the systemd units;
the Dockerfile (built when a docker daemon answers, linted otherwise).

Prints one "did:" line per check it ran and one "skipped:" line per check
it could not run; exit 0 when all pass, 1 with every failure listed.
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.dont_write_bytecode = True   # no __pycache__ in deploy/
sys.path.insert(0, os.path.join(TOP, "deploy"))
import render  # noqa: E402  (deploy/render.py)

ERRORS = []


def err(where, msg):
    ERRORS.append("%s: %s" % (where, msg))


def did(msg):
    print("did: " + msg)


def skipped(msg):
    print("skipped: " + msg)


# ---- facts the artefacts must agree with ----------------------------------
# linux/capability.h, CAP_CHOWN (0) .. CAP_CHECKPOINT_RESTORE (40)
LINUX_CAPS = set("""CHOWN DAC_OVERRIDE DAC_READ_SEARCH FOWNER FSETID KILL SETGID
SETUID SETPCAP LINUX_IMMUTABLE NET_BIND_SERVICE NET_BROADCAST NET_ADMIN NET_RAW
IPC_LOCK IPC_OWNER SYS_MODULE SYS_RAWIO SYS_CHROOT SYS_PTRACE SYS_PACCT
SYS_ADMIN SYS_BOOT SYS_NICE SYS_RESOURCE SYS_TIME SYS_TTY_CONFIG MKNOD LEASE
AUDIT_WRITE AUDIT_CONTROL SETFCAP MAC_OVERRIDE MAC_ADMIN SYSLOG WAKE_ALARM
BLOCK_SUSPEND AUDIT_READ PERFMON BPF CHECKPOINT_RESTORE""".split())
# what the node agent needs, exactly (docs/deploy.md, "Capabilities"):
# KILL besides with --stop-new; SYSLOG besides in the systemd unit (in a
# non-privileged container the device cgroup refuses /dev/kmsg anyway)
AGENT_CAPS = {"BPF", "PERFMON", "SYS_ADMIN", "SYS_PTRACE", "DAC_READ_SEARCH"}
# host paths the agent must see: (path, must be read-only); no others
AGENT_HOST_PATHS = {"/sys/kernel/btf": True, "/proc": True,
                    "/dev/kmsg": True, "/var/cache/ccld": False}
RUNTIME_PKGS = {"libbpf1", "libelf1", "libdw1", "zlib1g", "libhiredis0.14",
                "libmicrohttpd12"}
BASE_PKGS = {"libc6", "libgcc-s1"}      # in every debian:12 image
BINARIES = ["build/bin/ccld-trace", "build/bin/ccld-analyzer"]
AGENT_METRICS, ANALYZER_METRICS = 9464, 9465

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
QUANTITY = re.compile(r"^([+-]?(?:\d+(?:\.\d*)?|\.\d+))"
                      r"(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$")
SUFFIX = {"": 1, "n": 1e-9, "u": 1e-6, "m": 1e-3, "k": 1e3, "M": 1e6,
          "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18, "Ki": 2**10,
          "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
LABEL_KEY = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?"
                       r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$")

# ---- the schema subset: allowed keys per object type ------------------------
K = {
    "metadata": {"name", "namespace", "labels", "annotations"},
    "ServiceAccount": {"apiVersion", "kind", "metadata",
                       "automountServiceAccountToken", "imagePullSecrets"},
    "DaemonSet": {"apiVersion", "kind", "metadata", "spec"},
    "Deployment": {"apiVersion", "kind", "metadata", "spec"},
    "Service": {"apiVersion", "kind", "metadata", "spec"},
    "NetworkPolicy": {"apiVersion", "kind", "metadata", "spec"},
    "NetworkPolicy.spec": {"podSelector", "policyTypes", "ingress", "egress"},
    "npIngress": {"from", "ports"},
    "npPeer": {"podSelector", "namespaceSelector", "ipBlock"},
    "npPort": {"port", "protocol", "endPort"},
    "secretVolume": {"secretName", "defaultMode", "items", "optional"},
    "emptyDirVolume": {"medium", "sizeLimit"},
    "DaemonSet.spec": {"selector", "template", "updateStrategy",
                       "minReadySeconds", "revisionHistoryLimit"},
    "Deployment.spec": {"replicas", "selector", "template", "strategy",
                        "minReadySeconds", "revisionHistoryLimit",
                        "progressDeadlineSeconds"},
    "template": {"metadata", "spec"},
    "podSpec": {"containers", "initContainers", "volumes",
                "serviceAccountName", "automountServiceAccountToken",
                "hostPID", "hostNetwork", "hostIPC", "nodeSelector",
                "tolerations", "affinity", "priorityClassName",
                "securityContext", "terminationGracePeriodSeconds",
                "imagePullSecrets", "dnsPolicy", "restartPolicy"},
    "container": {"name", "image", "imagePullPolicy", "command", "args",
                  "env", "envFrom", "ports", "resources", "securityContext",
                  "volumeMounts", "readinessProbe", "livenessProbe",
                  "startupProbe", "workingDir"},
    "securityContext": {"privileged", "capabilities", "runAsUser",
                        "runAsGroup", "runAsNonRoot", "readOnlyRootFilesystem",
                        "allowPrivilegeEscalation", "seccompProfile",
                        "appArmorProfile", "seLinuxOptions", "procMount"},
    "podSecurityContext": {"runAsUser", "runAsGroup", "runAsNonRoot",
                           "fsGroup", "supplementalGroups", "seccompProfile",
                           "appArmorProfile", "seLinuxOptions", "sysctls"},
    "profile": {"type", "localhostProfile"},
    "capabilities": {"add", "drop"},
    "probe": {"httpGet", "tcpSocket", "exec", "grpc", "initialDelaySeconds",
              "periodSeconds", "timeoutSeconds", "successThreshold",
              "failureThreshold"},
    "port": {"name", "containerPort", "protocol", "hostPort"},
    "env": {"name", "value", "valueFrom"},
    "volumeMount": {"name", "mountPath", "readOnly", "subPath",
                    "mountPropagation"},
    "volume": {"name", "hostPath", "emptyDir", "configMap", "secret",
               "persistentVolumeClaim", "projected"},
    "hostPath": {"path", "type"},
    "resources": {"requests", "limits"},
    "toleration": {"key", "operator", "value", "effect", "tolerationSeconds"},
    "Service.spec": {"type", "selector", "ports", "clusterIP"},
    "servicePort": {"name", "port", "targetPort", "protocol", "nodePort",
                    "appProtocol"},
}
API_VERSION = {"ServiceAccount": "v1", "Service": "v1",
               "DaemonSet": "apps/v1", "Deployment": "apps/v1",
               "NetworkPolicy": "networking.k8s.io/v1"}
# where the chart mounts the auth Secret, and the files it holds
AUTH_DIR = "/etc/ccld/auth"
AUTH_FILES = {"--redis-auth-file": AUTH_DIR + "/redis-auth",
              "--hmac-key-file": AUTH_DIR + "/hmac-key"}
HOSTPATH_TYPES = {"", "DirectoryOrCreate", "Directory", "FileOrCreate",
                  "File", "Socket", "CharDevice", "BlockDevice"}


def keys(obj, kind, where):
    if not isinstance(obj, dict):
        err(where, "expected a mapping, got %r" % (obj,))
        return False
    for k in obj:
        if k not in K[kind]:
            err(where, "unknown field %r" % k)
    return True


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def quantity(q, where):
    """The value of a Kubernetes quantity, None (and an error) if malformed."""
    if is_int(q) or isinstance(q, float):
        q = str(q)
    m = QUANTITY.match(q) if isinstance(q, str) else None
    if not m:
        err(where, "malformed quantity %r" % (q,))
        return None
    s = m.group(2) or ""
    if s[:1] in "eE" and s:
        return float(m.group(1)) * 10 ** int(s[1:])
    return float(m.group(1)) * SUFFIX[s]


def check_labels(meta, where):
    for field in ("labels", "annotations"):
        for k, v in (meta.get(field) or {}).items():
            if not LABEL_KEY.match(k):
                err(where, "bad %s key %r" % (field, k))
            if not isinstance(v, str):
                err(where, "%s %s: value %r is not a string" % (field, k, v))
            elif field == "labels" and not LABEL_VALUE.match(v):
                err(where, "bad label value %s=%r" % (k, v))


def check_capname(c, where, allow_all):
    name = c[4:] if isinstance(c, str) and c.startswith("CAP_") else c
    if not (name in LINUX_CAPS or (allow_all and name == "ALL")):
        err(where, "not a Linux capability: %r" % (c,))
    return name


def check_security(sc, where, pod_level=False):
    if not keys(sc, "podSecurityContext" if pod_level else "securityContext",
                where):
        return set()
    for f in ("seccompProfile", "appArmorProfile"):
        if f in sc and keys(sc[f], "profile", where + "." + f):
            if sc[f].get("type") not in ("RuntimeDefault", "Unconfined",
                                         "Localhost"):
                err(where, "%s.type %r" % (f, sc[f].get("type")))
    added = set()
    caps = sc.get("capabilities")
    if caps is not None and keys(caps, "capabilities", where + ".capabilities"):
        for c in caps.get("drop") or []:
            check_capname(c, where + ".capabilities.drop", True)
        for c in caps.get("add") or []:
            added.add(check_capname(c, where + ".capabilities.add", False))
    # the API server refuses these combinations
    if sc.get("allowPrivilegeEscalation") is False:
        if sc.get("privileged"):
            err(where, "allowPrivilegeEscalation false with privileged")
        if "SYS_ADMIN" in added:
            err(where, "allowPrivilegeEscalation false with CAP_SYS_ADMIN")
    for f in ("runAsUser", "runAsGroup"):
        if f in sc and not (is_int(sc[f]) and sc[f] >= 0):
            err(where, "%s %r" % (f, sc[f]))
    return added


def check_probe(p, where, portnames):
    if not keys(p, "probe", where):
        return
    for h in ("httpGet", "tcpSocket"):
        if h in p:
            port = p[h].get("port")
            if not (port in portnames or (is_int(port) and 0 < port < 65536)):
                err(where, "%s port %r is no container port" % (h, port))
            if h == "httpGet" and not str(p[h].get("path", "/")).startswith("/"):
                err(where, "httpGet path %r" % p[h].get("path"))


def check_container(c, where, volumes):
    """Returns {port name: number}."""
    if not keys(c, "container", where):
        return {}
    name = c.get("name")
    if not isinstance(name, str) or not DNS_LABEL.match(name):
        err(where, "container name %r" % (name,))
    where = "%s[%s]" % (where, name)
    image = c.get("image")
    if not isinstance(image, str) or not image:
        err(where, "no image")
    elif "@sha256:" not in image:
        tag = image.rsplit("/", 1)[-1].partition(":")[2]
        if not tag or tag == "latest":
            err(where, "image %r: pin a tag other than latest" % image)
    if c.get("imagePullPolicy", "IfNotPresent") not in (
            "Always", "IfNotPresent", "Never"):
        err(where, "imagePullPolicy %r" % c["imagePullPolicy"])
    envnames = set()
    for e in c.get("env") or []:
        if keys(e, "env", where + ".env"):
            envnames.add(e.get("name"))
            if ("value" in e) == ("valueFrom" in e):
                err(where, "env %s: exactly one of value, valueFrom" % e.get("name"))
            if "value" in e and not isinstance(e["value"], str):
                err(where, "env %s: value %r is not a string" % (e["name"], e["value"]))
            vf = e.get("valueFrom", {}).get("fieldRef")
            if vf and vf.get("fieldPath") not in (
                    "spec.nodeName", "metadata.name", "metadata.namespace",
                    "status.podIP", "status.hostIP", "spec.serviceAccountName"):
                err(where, "env %s: fieldPath %r" % (e["name"], vf.get("fieldPath")))
    for f in ("command", "args"):
        v = c.get(f, [])
        if not isinstance(v, list) or not all(isinstance(a, str) for a in v):
            err(where, "%s must be a list of strings (quote numbers): %r" % (f, v))
            continue
        for ref in re.findall(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", " ".join(v)):
            if ref not in envnames:
                err(where, "%s uses $(%s), which no env entry defines" % (f, ref))
    ports = {}
    for p in c.get("ports") or []:
        if not keys(p, "port", where + ".ports"):
            continue
        n = p.get("containerPort")
        if not (is_int(n) and 0 < n < 65536):
            err(where, "containerPort %r not an int in 1..65535" % (n,))
        if p.get("protocol", "TCP") not in ("TCP", "UDP", "SCTP"):
            err(where, "protocol %r" % p["protocol"])
        pn = p.get("name")
        if pn is not None:
            if not (isinstance(pn, str) and len(pn) <= 15 and
                    re.match(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$", pn) and
                    re.search(r"[a-z]", pn)):
                err(where, "port name %r (IANA_SVC_NAME, 15 chars)" % (pn,))
            if pn in ports:
                err(where, "port name %r twice" % pn)
            ports[pn] = n
    res = c.get("resources")
    if res is not None and keys(res, "resources", where + ".resources"):
        vals = {}
        for kind in ("requests", "limits"):
            for r, q in (res.get(kind) or {}).items():
                if r not in ("cpu", "memory", "ephemeral-storage") and \
                        not r.startswith("hugepages-") and "/" not in r:
                    err(where, "unknown resource %r" % r)
                vals[kind, r] = quantity(q, "%s.resources.%s.%s" % (where, kind, r))
        for (kind, r), v in vals.items():
            lim = vals.get(("limits", r))
            if kind == "requests" and v is not None and lim is not None and v > lim:
                err(where, "request %s above its limit" % r)
    caps = set()
    if "securityContext" in c:
        caps = check_security(c["securityContext"], where + ".securityContext")
    paths = set()
    for m in c.get("volumeMounts") or []:
        if not keys(m, "volumeMount", where + ".volumeMounts"):
            continue
        if m.get("name") not in volumes:
            err(where, "volumeMount %r names no declared volume" % m.get("name"))
        mp = m.get("mountPath")
        if not (isinstance(mp, str) and mp.startswith("/")):
            err(where, "mountPath %r not absolute" % (mp,))
        if mp in paths:
            err(where, "mountPath %s twice" % mp)
        paths.add(mp)
    for pr in ("readinessProbe", "livenessProbe", "startupProbe"):
        if pr in c:
            check_probe(c[pr], "%s.%s" % (where, pr), ports)
    c["_caps"] = caps   # for the agent check; removed again by the caller
    return ports


def check_workload(o, where, objs):
    spec = o.get("spec")
    if not keys(spec, o["kind"] + ".spec", where + ".spec"):
        return
    sel = (spec.get("selector") or {}).get("matchLabels") or {}
    tmpl = spec.get("template") or {}
    keys(tmpl, "template", where + ".template")
    tlabels = (tmpl.get("metadata") or {}).get("labels") or {}
    if not sel:
        err(where, "spec.selector.matchLabels empty")
    for k, v in sel.items():
        if tlabels.get(k) != v:
            err(where, "selector %s=%s not among the template's labels" % (k, v))
    keys(tmpl.get("metadata") or {}, "metadata", where + ".template.metadata")
    check_labels(tmpl.get("metadata") or {}, where + ".template.metadata")
    if o["kind"] == "Deployment" and not (is_int(spec.get("replicas", 1))
                                          and spec.get("replicas", 1) >= 0):
        err(where, "replicas %r" % spec.get("replicas"))
    us = spec.get("updateStrategy") or spec.get("strategy") or {}
    if us.get("type", "RollingUpdate") not in ("RollingUpdate", "OnDelete",
                                               "Recreate"):
        err(where, "update strategy %r" % us.get("type"))
    mu = (us.get("rollingUpdate") or {}).get("maxUnavailable", 1)
    if not ((is_int(mu) and mu >= 0) or
            (isinstance(mu, str) and re.fullmatch(r"\d+%", mu))):
        err(where, "maxUnavailable %r: an int or N%%" % (mu,))
    pod = tmpl.get("spec")
    if not keys(pod, "podSpec", where + ".podSpec"):
        return
    sa = pod.get("serviceAccountName")
    if sa and ("ServiceAccount", sa) not in objs:
        err(where, "serviceAccountName %r: no such ServiceAccount" % sa)
    if "securityContext" in pod:
        check_security(pod["securityContext"], where + ".podSecurityContext", True)
    for t in pod.get("tolerations") or []:
        if keys(t, "toleration", where + ".tolerations"):
            if t.get("operator", "Equal") not in ("Exists", "Equal"):
                err(where, "toleration operator %r" % t.get("operator"))
            if t.get("effect", "NoSchedule") not in (
                    "NoSchedule", "PreferNoSchedule", "NoExecute"):
                err(where, "toleration effect %r" % t.get("effect"))
    for k, v in (pod.get("nodeSelector") or {}).items():
        if not isinstance(v, str):
            err(where, "nodeSelector %s: %r is not a string" % (k, v))
    volumes = {}
    for v in pod.get("volumes") or []:
        if not keys(v, "volume", where + ".volumes"):
            continue
        n = v.get("name")
        if not (isinstance(n, str) and DNS_LABEL.match(n)) or n in volumes:
            err(where, "volume name %r bad or repeated" % (n,))
        if len(set(v) - {"name"}) != 1:
            err(where, "volume %s: exactly one source" % n)
        if "hostPath" in v and keys(v["hostPath"], "hostPath", where + ".volumes"):
            hp = v["hostPath"]
            if not str(hp.get("path", "")).startswith("/"):
                err(where, "volume %s: hostPath %r" % (n, hp.get("path")))
            if hp.get("type", "") not in HOSTPATH_TYPES:
                err(where, "volume %s: hostPath type %r" % (n, hp.get("type")))
        if "secret" in v and keys(v["secret"], "secretVolume", where + ".volumes"):
            sv = v["secret"]
            if not (isinstance(sv.get("secretName"), str) and DNS_LABEL.match(sv["secretName"])):
                err(where, "volume %s: secretName %r" % (n, sv.get("secretName")))
            if not (is_int(sv.get("defaultMode", 0o644)) and 0 <= sv.get("defaultMode", 0o644) <= 0o777):
                err(where, "volume %s: defaultMode %r" % (n, sv.get("defaultMode")))
            elif sv.get("defaultMode", 0o644) & 0o007:
                err(where, "volume %s: secret files readable by others (defaultMode %o)"
                    % (n, sv.get("defaultMode", 0o644)))
        if "emptyDir" in v and keys(v["emptyDir"] or {}, "emptyDirVolume", where + ".volumes"):
            if (v["emptyDir"] or {}).get("medium", "") not in ("", "Memory"):
                err(where, "volume %s: emptyDir medium %r" % (n, v["emptyDir"]["medium"]))
        volumes[n] = v
    containers = pod.get("containers")
    if not isinstance(containers, list) or not containers:
        err(where, "no containers")
        return
    names = set()
    for c in pod.get("initContainers") or []:
        check_container(c, where + ".initContainers", volumes)
        c.pop("_caps", None)
        if c.get("name") in names:
            err(where, "container %r twice" % c.get("name"))
        names.add(c.get("name"))
    for c in containers:
        ports = check_container(c, where + ".containers", volumes)
        if c.get("name") in names:
            err(where, "container %r twice" % c.get("name"))
        names.add(c.get("name"))
        c["_ports"] = ports
    o["_volumes"] = volumes


def check_service(o, where, objs):
    spec = o.get("spec")
    if not keys(spec, "Service.spec", where + ".spec"):
        return
    if spec.get("type", "ClusterIP") not in ("ClusterIP", "NodePort",
                                             "LoadBalancer", "ExternalName"):
        err(where, "type %r" % spec.get("type"))
    sel = spec.get("selector") or {}
    targets = [w for w in objs.values() if w["kind"] in ("DaemonSet", "Deployment")
               and sel and all(w["spec"]["template"]["metadata"]["labels"].get(k) == v
                               for k, v in sel.items())]
    if not targets:
        err(where, "selector %r matches no workload's pod labels" % (sel,))
    ports = spec.get("ports") or []
    if not ports:
        err(where, "no ports")
    for p in ports:
        if not keys(p, "servicePort", where + ".ports"):
            continue
        if not (is_int(p.get("port")) and 0 < p["port"] < 65536):
            err(where, "port %r" % (p.get("port"),))
        if len(ports) > 1 and not p.get("name"):
            err(where, "several ports: each needs a name")
        tp = p.get("targetPort", p.get("port"))
        for w in targets:
            cports = [c.get("_ports", {}) for c in w["spec"]["template"]["spec"]["containers"]]
            ok = any(tp in cp for cp in cports) if isinstance(tp, str) else \
                any(tp in cp.values() for cp in cports)
            if not ok:
                err(where, "targetPort %r is no container port of %s" %
                    (tp, w["metadata"]["name"]))


def check_objects(objs, where):
    """objs: {(kind, name): object} as loaded; all checks of one object set."""
    for (kind, name), o in objs.items():
        w = "%s %s/%s" % (where, kind, name)
        if kind not in API_VERSION:
            err(w, "kind not expected here (extend the checker)")
            continue
        keys(o, kind, w)
        if o.get("apiVersion") != API_VERSION[kind]:
            err(w, "apiVersion %r, want %s" % (o.get("apiVersion"), API_VERSION[kind]))
        keys(o["metadata"], "metadata", w + ".metadata")
        check_labels(o["metadata"], w + ".metadata")
        if len(name) > 63 or not DNS_LABEL.match(name):
            err(w, "name not a DNS label")
        if kind in ("DaemonSet", "Deployment"):
            check_workload(o, w, objs)
    for (kind, name), o in objs.items():
        if kind == "Service":
            check_service(o, "%s Service/%s" % (where, name), objs)
        elif kind == "NetworkPolicy":
            check_netpol(o, "%s NetworkPolicy/%s" % (where, name))


def check_netpol(o, where):
    spec = o.get("spec")
    if not keys(spec, "NetworkPolicy.spec", where + ".spec"):
        return
    if not (spec.get("podSelector") or {}).get("matchLabels"):
        err(where, "podSelector.matchLabels empty: it would select every pod")
    for t in spec.get("policyTypes") or []:
        if t not in ("Ingress", "Egress"):
            err(where, "policyType %r" % t)
    for rule in spec.get("ingress") or []:
        if not keys(rule, "npIngress", where + ".ingress"):
            continue
        for peer in rule.get("from") or []:
            keys(peer, "npPeer", where + ".ingress.from")
        for p in rule.get("ports") or []:
            if keys(p, "npPort", where + ".ingress.ports"):
                if p.get("protocol", "TCP") not in ("TCP", "UDP", "SCTP"):
                    err(where, "protocol %r" % p.get("protocol"))


def container_of(objs, kind, command):
    for (k, _), o in objs.items():
        if k != kind:
            continue
        for c in o["spec"]["template"]["spec"]["containers"]:
            if (c.get("command") or [None])[0] == command:
                return o, c
    return None, None


def metrics_port_of(args):
    """The port of --metrics [HOST]:PORT in an argument list."""
    args = [str(a) for a in args] + [""]
    if "--metrics" in args:
        port = args[args.index("--metrics") + 1].rsplit(":", 1)[-1]
        return int(port) if port.isdigit() else None
    return None


def check_fleet(objs, where, privileged=False, redis_url=None, stop_new=False,
                auth=True, netpol=True):
    """What ccld itself needs of the objects (the fleet contract)."""
    ds, agent = container_of(objs, "DaemonSet", "ccld-trace")
    dep, an = container_of(objs, "Deployment", "ccld-analyzer")
    if not agent:
        err(where, "no DaemonSet running ccld-trace")
    if not an:
        err(where, "no Deployment running ccld-analyzer")
    if not agent or not an:
        return
    pod = ds["spec"]["template"]["spec"]
    if pod.get("hostPID") is not True:
        err(where, "agent: hostPID must be true")
    mounts = {m["name"]: m for m in agent.get("volumeMounts", [])}
    for n, v in ds.get("_volumes", {}).items():
        hp = (v.get("hostPath") or {}).get("path")
        if hp and n in mounts and hp not in AGENT_HOST_PATHS:
            err(where, "agent: host path %s mounted, which it does not need "
                "(no bpffs: it pins nothing; no tracefs: uprobes by the PMU)" % hp)
    for path, ro in AGENT_HOST_PATHS.items():
        vols = [n for n, v in ds.get("_volumes", {}).items()
                if (v.get("hostPath") or {}).get("path") == path and n in mounts]
        if not vols:
            err(where, "agent: host path %s not mounted" % path)
        elif ro and not mounts[vols[0]].get("readOnly"):
            err(where, "agent: %s should be mounted read-only" % path)
    a = agent.get("args", [])
    if a[:1] != ["daemon"]:
        err(where, "agent: args must start with the daemon subcommand: %r" % a)
    # never freeze a job (docs/deploy.md, "Stopping new processes"):
    # stopping new processes is opt-in
    if ("--stop-new" in a) != stop_new:
        err(where, "agent: --stop-new %s, want it %s" %
            ("given" if "--stop-new" in a else "absent", "given" if stop_new else "absent"))
    if stop_new and ("--stop-timeout" not in a or not re.fullmatch(
            r"\d+(\.\d+)?", str(a[a.index("--stop-timeout") + 1]))):
        err(where, "agent: --stop-new without --stop-timeout SEC")
    env = {e["name"]: e for e in agent.get("env", [])}
    if "--node" not in a or not a[a.index("--node") + 1].startswith("$("):
        err(where, "agent: --node $(VAR) missing")
    else:
        var = a[a.index("--node") + 1][2:-1]
        fp = env.get(var, {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
        if fp != "spec.nodeName":
            err(where, "agent: --node from %s, not the downward API spec.nodeName" % var)
    sc = agent.get("securityContext", {})
    if sc.get("runAsUser", 0) != 0:
        err(where, "agent: must run as root")
    if privileged:
        if sc.get("privileged") is not True or "capabilities" in sc:
            err(where, "agent: privileged mode should be privileged, no capability list")
    else:
        if sc.get("privileged"):
            err(where, "agent: default must not be privileged")
        want = AGENT_CAPS | ({"KILL"} if stop_new else set())
        got = agent.get("_caps", set())
        if want - got:
            err(where, "agent: capabilities missing: %s" % " ".join(sorted(want - got)))
        if got - want:
            err(where, "agent: capabilities it does not need: %s"
                % " ".join(sorted(got - want)))
        if "ALL" not in (sc.get("capabilities") or {}).get("drop", []):
            err(where, "agent: should drop ALL before adding its set")
    for w, c, want in ((ds, agent, AGENT_METRICS), (dep, an, ANALYZER_METRICS)):
        name = w["metadata"]["name"]
        port = metrics_port_of(c.get("args", []))
        if port != want:
            err(where, "%s: --metrics port %r, want %d" % (name, port, want))
        if port not in c.get("_ports", {}).values():
            err(where, "%s: metrics port %r is no containerPort" % (name, port))
        ann = w["spec"]["template"]["metadata"].get("annotations") or {}
        if ann and ann.get("prometheus.io/port") != str(port):
            err(where, "%s: prometheus.io/port %r != %r" %
                (name, ann.get("prometheus.io/port"), port))
        if "--redis" not in c.get("args", []):
            err(where, "%s: no --redis" % name)
        url = {e["name"]: e.get("value") for e in c.get("env", [])}.get("CCLD_REDIS_URL")
        if redis_url and url != redis_url:
            err(where, "%s: Redis URL %r, want %r" % (name, url, redis_url))
        if not redis_url and url and ("Service", url[8:].split(":")[0]) not in objs:
            err(where, "%s: Redis URL %r names no Service" % (name, url))
    args = [str(a) for a in an.get("args", [])] + [""]
    for flag in ("--stall", "--hang", "--slow-window"):
        if flag not in args or not re.fullmatch(r"\d+(\.\d+)?", args[args.index(flag) + 1]):
            err(where, "analyzer: %s SEC missing" % flag)
    if redis_url and any(k == "Deployment" and n.endswith("-redis") for k, n in objs):
        err(where, "an external Redis URL still deploys the in-chart Redis")
    check_auth(objs, where, (ds, agent), (dep, an), auth, netpol and not redis_url)


def secret_mount(w, c, path):
    """The Secret whose volume C of workload W mounts over PATH, or None."""
    vols = w.get("_volumes", {})
    for m in c.get("volumeMounts") or []:
        if path.startswith(m.get("mountPath", "") + "/"):
            return ((vols.get(m.get("name")) or {}).get("secret") or {}).get("secretName")
    return None


def check_auth(objs, where, agent, analyzer, auth, netpol):
    """Credentials as files from one Secret, none on a command line; the
    in-chart Redis requires them and admits only agent and analyzer pods."""
    for (kind, name), o in objs.items():
        text = yaml.safe_dump(strip_private(o))
        if re.search(r"requirepass|redis://[^\s\"']*@", text):
            err(where, "%s/%s: a password in the manifest (requirepass or a URL with @)"
                % (kind, name))
    secrets = set()
    for w, c in (agent, analyzer):
        args = [str(a) for a in c.get("args", [])] + [""]
        name = w["metadata"]["name"]
        for flag, path in AUTH_FILES.items():
            if not auth:
                if flag in args:
                    err(where, "%s: %s without auth.secretName" % (name, flag))
                continue
            if flag not in args or args[args.index(flag) + 1] != path:
                err(where, "%s: %s %s missing" % (name, flag, path))
            sec = secret_mount(w, c, path)
            if not sec:
                err(where, "%s: %s is on no Secret volume" % (name, path))
            secrets.add(sec)
    if auth and len(secrets) != 1:
        err(where, "agent and analyzer mount different Secrets: %s" % sorted(map(str, secrets)))
    rd = objs.get(("Deployment", agent[0]["metadata"]["name"][:-len("-agent")] + "-redis"))
    if not rd:
        return
    pod = rd["spec"]["template"]["spec"]
    redis = pod["containers"][0]
    args = [str(a) for a in redis.get("args", [])] + [""]
    if auth:
        acl = args[args.index("--aclfile") + 1] if "--aclfile" in args else ""
        vols = rd.get("_volumes", {})
        writers = [c for c in pod.get("initContainers") or []
                   if secret_mount(rd, c, AUTH_DIR + "/redis-auth") in secrets and
                   any(acl.startswith(m.get("mountPath", "") + "/") and
                       (vols.get(m["name"]) or {}).get("emptyDir", {}).get("medium") == "Memory"
                       for m in c.get("volumeMounts") or [])]
        if not acl or not writers:
            err(where, "Redis: --aclfile not written from the auth Secret into a "
                "memory volume by an init container")
    elif "--aclfile" in args:
        err(where, "Redis: --aclfile without auth.secretName")
    pols = [o for (k, _), o in objs.items() if k == "NetworkPolicy"]
    if not netpol:
        if pols:
            err(where, "a NetworkPolicy although networkPolicy=false or Redis is external")
        return
    labels = rd["spec"]["template"]["metadata"]["labels"]
    mine = [p for p in pols if all(labels.get(k) == v for k, v in
                                   p["spec"]["podSelector"]["matchLabels"].items())]
    if len(mine) != 1:
        err(where, "want one NetworkPolicy selecting the Redis pods, found %d" % len(mine))
        return
    spec = mine[0]["spec"]
    if "Ingress" not in spec.get("policyTypes", []):
        err(where, "the Redis NetworkPolicy does not restrict ingress")
    peers = [p.get("podSelector", {}).get("matchLabels", {})
             for r in spec.get("ingress", []) for p in r.get("from", [])]
    want = [w["spec"]["template"]["metadata"]["labels"] for w, _ in (agent, analyzer)]
    admitted = [w for w in want if any(all(w.get(k) == v for k, v in pe.items()) for pe in peers)]
    if len(admitted) != 2 or any(not pe or any(p.get("namespaceSelector") or p.get("ipBlock")
                                               for r in spec["ingress"] for p in r["from"])
                                 for pe in peers):
        err(where, "the Redis NetworkPolicy must admit the agent and analyzer pods, "
            "and only pods of this namespace by label: %r" % peers)
    other = [w for (k, _), w in objs.items() if k in ("DaemonSet", "Deployment")
             and w is not rd and w["spec"]["template"]["metadata"]["labels"] not in want and
             any(all(w["spec"]["template"]["metadata"]["labels"].get(k2) == v
                     for k2, v in pe.items()) for pe in peers)]
    if other:
        err(where, "the Redis NetworkPolicy also admits %s" % [w["metadata"]["name"] for w in other])
    ports = {p.get("port") for r in spec["ingress"] for p in r.get("ports", [])}
    if ports != set(redis.get("_ports", {}).values()):
        err(where, "the Redis NetworkPolicy admits ports %s, Redis listens on %s"
            % (sorted(ports), sorted(redis.get("_ports", {}).values())))


# ---- loading --------------------------------------------------------------
def load_docs(text, where):
    objs = {}
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as e:
        err(where, "YAML does not parse: %s" % e)
        return objs
    for d in docs:
        if not isinstance(d, dict):
            err(where, "document is not a mapping")
            continue
        for f in ("apiVersion", "kind"):
            if not isinstance(d.get(f), str):
                err(where, "object without %s" % f)
        name = (d.get("metadata") or {}).get("name")
        if not isinstance(name, str) or not name:
            err(where, "%s without metadata.name" % d.get("kind"))
            continue
        key = (d.get("kind"), name)
        if key in objs:
            err(where, "%s/%s defined twice" % key)
        objs[key] = d
    return objs


def strip_private(o):
    """Copy without the _keys the checks attached."""
    if isinstance(o, dict):
        return {k: strip_private(v) for k, v in o.items()
                if not (isinstance(k, str) and k.startswith("_"))}
    if isinstance(o, list):
        return [strip_private(v) for v in o]
    return o


def first_diff(a, b, path=""):
    if type(a) is not type(b):
        return "%s: %r vs %r" % (path or "/", a, b)
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b), key=str):
            if k not in a or k not in b:
                return "%s.%s only in one" % (path, k)
            d = first_diff(a[k], b[k], "%s.%s" % (path, k))
            if d:
                return d
    elif isinstance(a, list):
        if len(a) != len(b):
            return "%s: %d vs %d items" % (path, len(a), len(b))
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_diff(x, y, "%s[%d]" % (path, i))
            if d:
                return d
    elif a != b:
        return "%s: %r vs %r" % (path, a, b)
    return None


def compare(want, got, what):
    w, g = strip_private(want), strip_private(got)
    for key in sorted(set(w) | set(g)):
        if key not in g:
            err(what, "%s/%s is missing (it is in deploy/k8s)" % key)
        elif key not in w:
            err(what, "%s/%s is not in deploy/k8s" % key)
        else:
            d = first_diff(w[key], g[key])
            if d:
                err(what, "%s/%s differs from deploy/k8s: %s" % (key + (d,)))


# ---- the sections ---------------------------------------------------------
def check_kubernetes():
    plain_text = ""
    for f in sorted(glob.glob(os.path.join(TOP, "deploy/k8s/*.yaml"))):
        with open(f) as fh:
            plain_text += "---\n" + fh.read()
    plain = load_docs(plain_text, "deploy/k8s")
    check_objects(plain, "deploy/k8s")
    check_fleet(plain, "deploy/k8s")
    did("parsed and schema-checked deploy/k8s/*.yaml: %d objects (%s)" %
        (len(plain), ", ".join(sorted("%s/%s" % k for k in plain))))

    chart = os.path.join(TOP, "deploy/helm/ccld")
    with open(os.path.join(chart, "Chart.yaml")) as f:
        meta = yaml.safe_load(f)
    with open(os.path.join(chart, "values.yaml")) as f:
        values = yaml.safe_load(f)
    with open(os.path.join(TOP, "Makefile")) as f:
        mk = re.search(r"^VERSION\s*:?=\s*(\S+)", f.read(), re.M)
    if meta.get("apiVersion") != "v2" or meta.get("name") != "ccld":
        err("Chart.yaml", "apiVersion v2 and name ccld expected")
    if not re.fullmatch(r"\d+\.\d+\.\d+(-[\w.]+)?", str(meta.get("version"))):
        err("Chart.yaml", "version %r not SemVer" % meta.get("version"))
    if not mk or str(meta.get("appVersion")) != mk.group(1):
        err("Chart.yaml", "appVersion %r != Makefile VERSION %r" %
            (meta.get("appVersion"), mk and mk.group(1)))
    th = values.get("thresholds", {})
    if values["agent"]["metricsPort"] != AGENT_METRICS or \
            values["analyzer"]["metricsPort"] != ANALYZER_METRICS:
        err("values.yaml", "metrics ports must default to 9464 / 9465")
    for k in ("stall", "hang", "slowWindow"):
        if not isinstance(th.get(k), (int, float)) or th[k] <= 0:
            err("values.yaml", "thresholds.%s %r" % (k, th.get(k)))
    did("Chart.yaml (v2, SemVer, appVersion = Makefile VERSION %s) and values.yaml"
        % (mk and mk.group(1)))

    rendered = render.render_chart()
    got = load_docs("".join("---\n" + t for t in rendered.values()), "render.py")
    compare(plain, got, "render.py defaults")
    files = {os.path.basename(f) for f in glob.glob(os.path.join(TOP, "deploy/k8s/*.yaml"))}
    if files != set(rendered):
        err("deploy/k8s", "files %s, the chart renders %s" % (sorted(files), sorted(rendered)))
    did("deploy/render.py: the chart with its default values equals deploy/k8s "
        "object by object, file by file")

    # the other switches must also give valid objects
    url = "redis://redis.example:6379/2"
    sets = ["agent.privileged=true", "redis.url=" + url,
            "prometheusAnnotations=false", "agent.extraArgs={-v}",
            "agent.nodeSelector=null", "analyzer.replicas=3", "agent.stopNew=true"]
    var = load_docs("".join("---\n" + t for t in
                            render.render_chart(sets=sets).values()), "variant")
    check_objects(var, "variant")
    check_fleet(var, "variant", privileged=True, redis_url=url, stop_new=True)
    did("rendered and checked a variant: " + " ".join(sets))
    # --stop-new without privileged: the capability set gains KILL
    var = load_docs("".join("---\n" + t for t in render.render_chart(
        sets=["agent.stopNew=true"]).values()), "variant stopNew")
    check_objects(var, "variant stopNew")
    check_fleet(var, "variant stopNew", stop_new=True)
    did("rendered and checked a variant: agent.stopNew=true (KILL added)")
    # without the auth Secret and the NetworkPolicy: no credential flags
    sets = ["auth.secretName=", "networkPolicy=false"]
    var = load_docs("".join("---\n" + t for t in render.render_chart(
        sets=sets).values()), "variant noauth")
    check_objects(var, "variant noauth")
    check_fleet(var, "variant noauth", auth=False, netpol=False)
    did("rendered and checked a variant: " + " ".join(sets))

    helm = shutil.which("helm")
    if not helm:
        skipped("helm lint / helm template (no helm): deploy/render.py stood in")
        return
    r = subprocess.run([helm, "lint", chart], capture_output=True, text=True)
    if r.returncode:
        err("helm lint", r.stdout + r.stderr)
    r = subprocess.run([helm, "template", "ccld", chart], capture_output=True, text=True)
    if r.returncode:
        err("helm template", r.stderr)
    else:
        compare(plain, load_docs(r.stdout, "helm template"), "helm template")
    did("helm lint; helm template ccld equals deploy/k8s")


def parse_unit(path):
    sections, cur = {}, None
    with open(path) as f:
        lines = f.read().replace("\\\n", " ").split("\n")
    for line in lines:
        line = line.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            cur = sections.setdefault(line.strip("[]"), {})
        elif "=" in line and cur is not None:
            k, _, v = line.partition("=")
            cur.setdefault(k.strip(), []).append(v.strip())
        else:
            err(path, "not a key=value line: %r" % line)
    return sections


def check_systemd():
    d = os.path.join(TOP, "deploy/systemd")
    units = ["ccld-agent.service", "ccld-analyzer.service"]
    env = {}
    with open(os.path.join(d, "ccld.default")) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                k, sep, v = line.partition("=")
                if not sep or not re.fullmatch(r"[A-Z_][A-Z0-9_]*", k):
                    err("ccld.default", "not VAR=value: %r" % line)
                env[k] = v
    for u in units:
        s = parse_unit(os.path.join(d, u))
        for sec, key in (("Unit", "Description"), ("Service", "ExecStart"),
                         ("Service", "EnvironmentFile"), ("Install", "WantedBy")):
            if key not in s.get(sec, {}):
                err(u, "[%s] %s missing" % (sec, key))
        svc = s.get("Service", {})
        if svc.get("EnvironmentFile") != ["/etc/default/ccld"]:
            err(u, "EnvironmentFile must be /etc/default/ccld")
        defaults = " ".join(svc.get("Environment", []))
        for var in re.findall(r"\$\{?([A-Z_][A-Z0-9_]*)", " ".join(svc.get("ExecStart", []))):
            if var not in env and var + "=" not in defaults:
                err(u, "ExecStart uses $%s, set neither in ccld.default nor Environment=" % var)
        exe = svc.get("ExecStart", [""])[0].split()[0]
        if os.path.basename(exe) not in ("ccld-trace", "ccld-analyzer"):
            err(u, "ExecStart runs %r" % exe)
    agent = parse_unit(os.path.join(d, units[0]))["Service"]
    for bad in ("PrivateDevices", "ProtectKernelTunables", "ProtectKernelLogs",
                "ProtectClock", "PrivateUsers", "ProtectProc", "ProcSubset",
                "SystemCallFilter", "ProtectHome", "PrivateTmp", "User",
                "DynamicUser"):
        if bad in agent and agent[bad][-1] not in ("no", "false", "default", "all"):
            err(units[0], "%s=%s breaks BPF tracing (see the unit's comments)"
                % (bad, agent[bad][-1]))
    caps = {c[4:] for c in " ".join(agent.get("CapabilityBoundingSet", [])).split()}
    for c in caps:
        check_capname(c, units[0] + " CapabilityBoundingSet", False)
    want = AGENT_CAPS | {"SYSLOG"}
    if want - caps:
        err(units[0], "CapabilityBoundingSet lacks %s" % " ".join(sorted(want - caps)))
    if caps - want:
        err(units[0], "CapabilityBoundingSet has %s, which the agent does not need"
            % " ".join(sorted(caps - want)))
    if "ccld" not in agent.get("CacheDirectory", []):
        err(units[0], "CacheDirectory=ccld (/var/cache/ccld) missing")
    for k, p in (("CCLD_AGENT_METRICS", AGENT_METRICS),
                 ("CCLD_ANALYZER_METRICS", ANALYZER_METRICS)):
        if not env.get(k, "").endswith(":%d" % p):
            err("ccld.default", "%s should end in :%d" % (k, p))
    did("lint of the systemd units: sections, keys, variables, no hardening "
        "option that breaks BPF, capabilities")

    sda = shutil.which("systemd-analyze")
    if not sda:
        skipped("systemd-analyze verify (not installed)")
        return
    # verify wants ExecStart's program to exist: point it at the build's, or
    # at /bin/true before `make`; the rest of the unit is verified as is.
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for u in units:
            with open(os.path.join(d, u)) as f:
                text = f.read()
            for b in ("ccld-trace", "ccld-analyzer"):
                built = os.path.join(TOP, "build/bin", b)
                text = text.replace("/usr/local/bin/" + b,
                                    built if os.access(built, os.X_OK) else "/bin/true")
            paths.append(os.path.join(tmp, u))
            with open(paths[-1], "w") as f:
                f.write(text)
        r = subprocess.run([sda, "verify"] + paths, capture_output=True, text=True,
                           cwd=tmp, env=dict(os.environ, SYSTEMD_LOG_LEVEL="info"))
        # verify exits 0 on unknown keys and bad values: any line about our
        # files is a failure
        out = [l for l in (r.stdout + r.stderr).splitlines() if tmp in l or "ccld" in l]
        if r.returncode or out:
            err("systemd-analyze verify", "\n".join(out) or r.stderr)
    did("systemd-analyze verify of both units")


def dockerfile_instructions(path):
    with open(path) as f:
        text = re.sub(r"\\\n", " ", f.read())
    out = []
    for line in text.split("\n"):
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def makefile_targets():
    r = subprocess.run(["make", "-pn", "__ccld_no_such_target__"], cwd=TOP,
                       capture_output=True, text=True)
    return {m.group(1) for m in re.finditer(r"^([^\s:#=]+):(?!=)", r.stdout, re.M)}


def check_docker():
    path = os.path.join(TOP, "deploy/Dockerfile")
    ins = dockerfile_instructions(path)
    stages, cur, runtime_pkgs, copied, made = [], None, set(), [], []
    for word, rest in ins:
        if word == "FROM":
            m = re.fullmatch(r"(\S+?)(?::([\w.-]+))?(@sha256:[0-9a-f]{64})?"
                             r"(?:\s+AS\s+(\S+))?", rest, re.I)
            if not m:
                err("Dockerfile", "FROM %r" % rest)
                continue
            if not m.group(3) and (not m.group(2) or m.group(2) == "latest"):
                err("Dockerfile", "FROM %s: pin a tag other than latest" % rest)
            if not m.group(4):
                err("Dockerfile", "FROM %s: name the stage (AS name)" % rest)
            cur = m.group(4)
            stages.append(cur)
        elif word == "RUN":
            if "apt-get install" in rest:
                if "rm -rf /var/lib/apt/lists" not in rest:
                    err("Dockerfile", "RUN apt-get install without cleaning "
                        "/var/lib/apt/lists in the same layer")
                if "--no-install-recommends" not in rest:
                    err("Dockerfile", "apt-get install without --no-install-recommends")
                if "apt-get update" not in rest:
                    err("Dockerfile", "apt-get install without apt-get update in the same RUN")
                if cur == stages[-1] and len(stages) > 1:
                    after = rest.split("apt-get install", 1)[1].split("&&")[0]
                    runtime_pkgs |= {w for w in after.split() if not w.startswith("-")}
            if "install-deps.sh" in rest and "rm -rf /var/lib/apt/lists" not in rest:
                err("Dockerfile", "install-deps.sh without cleaning apt lists")
            m = re.search(r"\bmake\b(.*)", rest)
            if m:
                made += [w for w in m.group(1).split() if not w.startswith("-")]
        elif word == "COPY" and rest.startswith("--from="):
            src = rest.split()
            frm = src[0][7:]
            if frm not in stages[:-1]:
                err("Dockerfile", "COPY --from=%s: no earlier stage of that name" % frm)
            copied += src[1:-1]
        elif word == "ENTRYPOINT":
            err("Dockerfile", "no ENTRYPOINT: each workload names its command")
    if len(stages) < 2:
        err("Dockerfile", "expected a build and a runtime stage")
    if runtime_pkgs != RUNTIME_PKGS:
        err("Dockerfile", "runtime stage installs %s, want exactly %s" %
            (sorted(runtime_pkgs), sorted(RUNTIME_PKGS)))
    if not any(w == "CMD" for w, _ in ins):
        err("Dockerfile", "no CMD")
    targets = makefile_targets()
    for b in BINARIES:
        if b not in made:
            err("Dockerfile", "does not make %s" % b)
        if b not in targets:
            err("Dockerfile", "%s is not a Makefile target" % b)
        if not any(c.endswith("/" + b) for c in copied):
            err("Dockerfile", "does not copy %s into the runtime stage" % b)
    if not os.access(os.path.join(TOP, "deploy/install-deps.sh"), os.X_OK):
        err("Dockerfile", "deploy/install-deps.sh missing or not executable")
    ign = os.path.join(TOP, "deploy/Dockerfile.dockerignore")
    if not os.path.exists(ign) or "build/" not in open(ign).read():
        err("Dockerfile", "deploy/Dockerfile.dockerignore must keep build/ out")
    did("lint of deploy/Dockerfile: %d named stages, pinned tags, apt lists "
        "cleaned, runtime packages, binaries are Makefile targets" % len(stages))
    check_needed_libs()


def check_needed_libs():
    """The built binaries' direct NEEDED libraries come from the runtime
    stage's packages (or libc): catches a library added to LIBS but not to
    the Dockerfile.  Only for binaries already built, on Debian."""
    if not shutil.which("dpkg") or not shutil.which("readelf"):
        skipped("NEEDED libraries vs runtime packages (no dpkg/readelf)")
        return
    seen = []
    for b in BINARIES:
        p = os.path.join(TOP, b)
        if not os.path.exists(p):
            skipped("NEEDED libraries of %s (not built)" % b)
            continue
        r = subprocess.run(["readelf", "-d", p], capture_output=True, text=True)
        for so in re.findall(r"\(NEEDED\).*\[(.+)\]", r.stdout):
            q = subprocess.run(["dpkg", "-S", "*/" + so], capture_output=True, text=True)
            pkgs = {line.split(":")[0] for line in q.stdout.splitlines()
                    if line.endswith("/" + so)}
            if not pkgs & (RUNTIME_PKGS | BASE_PKGS):
                err(b, "needs %s (package %s), not installed by the runtime stage"
                    % (so, ",".join(sorted(pkgs)) or "?"))
        seen.append(b)
    if seen:
        did("NEEDED libraries of %s come from the runtime packages" % " ".join(seen))


def docker_build():
    docker = shutil.which("docker")
    if not docker or subprocess.run([docker, "info"], capture_output=True).returncode:
        skipped("docker build (no docker daemon reachable): linted instead")
        return
    r = subprocess.run([docker, "build", "-q", "-f", "deploy/Dockerfile",
                        "-t", "ccld:deploy-test", "."], cwd=TOP,
                       capture_output=True, text=True)
    if r.returncode:
        err("docker build", r.stderr[-3000:])
        return
    for b in ("ccld-trace", "ccld-analyzer"):
        r = subprocess.run([docker, "run", "--rm", "ccld:deploy-test", b, "--help"],
                           capture_output=True, text=True)
        if "Usage" not in r.stdout + r.stderr:
            err("docker run", "%s --help: %s" % (b, (r.stdout + r.stderr)[-500:]))
    did("docker build -f deploy/Dockerfile; both binaries run --help in the image")


def check_docs():
    with open(os.path.join(TOP, "docs/deploy.md")) as f:
        doc = f.read()
    for c in sorted(AGENT_CAPS | {"SYSLOG", "KILL", "SYS_RESOURCE"}):
        if "CAP_" + c not in doc:
            err("docs/deploy.md", "does not explain CAP_%s" % c)
    for p in (AGENT_METRICS, ANALYZER_METRICS):
        if str(p) not in doc:
            err("docs/deploy.md", "does not name metrics port %d" % p)
    did("docs/deploy.md explains every capability and names the metrics ports")


def main():
    for f in (check_kubernetes, check_systemd, check_docker, docker_build, check_docs):
        try:
            f()
        except Exception as e:   # a crash in one section still reports the rest
            err(f.__name__, "%s: %s" % (type(e).__name__, e))
    if ERRORS:
        print("\n".join("FAIL " + e for e in ERRORS), file=sys.stderr)
        print("%d problem(s)" % len(ERRORS), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
