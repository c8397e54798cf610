#!/usr/bin/env bash
# Fuzzes the ELF symbol index and build-id reader (user/probe/elfsym.c, user/probe/debuginfo.c)
# for a third of CCLD_FUZZ_SECONDS (fuzz_lib.sh's default) from small ELF files
# compiled here (tests/fuzz/elf_seeds.sh), the stand-in libnccl.so.2 when
# built, and the committed regression inputs.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/fuzz_lib.sh"
. "$(dirname "$0")/elf_seeds.sh"
elf_corpus "$TMP/corpus"
run_fuzzer fuzz_elfsym $(( $FUZZ_SECONDS / 3 + 1 )) 262144 "$TMP/corpus"
