#!/usr/bin/env bash
# Fuzzes the fleet auth and key file parsers (CCLD_FUZZ_SECONDS, fuzz_lib.sh's default,
# here a third of it: the parsers are small) from the documented forms.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/fuzz_lib.sh"
mkdir -p "$TMP/corpus"
printf 's3cretpassword\n' >"$TMP/corpus/pass"
printf '# the agents\n\nagent\tpw-1 \r\n' >"$TMP/corpus/acl"
printf 'a b c\n' >"$TMP/corpus/three"
head -c 33 /dev/urandom >"$TMP/corpus/key"
run_fuzzer fuzz_fleet_cred $(( $FUZZ_SECONDS / 3 + 1 )) 512 "$TMP/corpus"
