#!/usr/bin/env bash
# Deployment artefacts, checked offline (no cluster, no network): the
# Kubernetes manifests and Helm chart, the systemd units, the Dockerfile
# (built only when a docker daemon answers), docs/deploy.md.  The checks
# are in check_manifests.py, which says which ones it ran ("did:") and
# which it could not ("skipped:").
. "$(dirname "$0")/../lib.sh"
command -v python3 >/dev/null || skip "no python3"
python3 -c 'import yaml' 2>/dev/null || skip "python3 has no PyYAML"
python3 "$TOP/tests/deploy/check_manifests.py" || fail "deployment artefacts: see above"
echo "ok: deployment artefacts are consistent and well-formed"
