#!/usr/bin/env bash
# Fuzzes the DWARF struct layout reader (user/probe/dwarf_layout.c)
# for a third of CCLD_FUZZ_SECONDS (fuzz_lib.sh's default) from small ELF files
# compiled here (tests/fuzz/elf_seeds.sh), the stand-in libnccl.so.2 when
# built, and the committed regression inputs.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/fuzz_lib.sh"
. "$(dirname "$0")/elf_seeds.sh"
elf_corpus "$TMP/corpus"
run_fuzzer fuzz_dwarf $(( $FUZZ_SECONDS / 3 + 1 )) 262144 "$TMP/corpus"
