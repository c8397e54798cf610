#!/usr/bin/env python3
"""Hostile variants of an ELF64 little-endian library, for
test_hostile_lib.sh: craft_elf.py BASE OUTDIR writes OUTDIR/<variant>/
libnccl.so.2 for each way a malicious or broken library can lie:

  trunc-half, trunc-headers  the file cut short
  shoff-bogus                section header table beyond the file
  phdr-bogus                 program headers beyond the file, 65535 of them
  sections-huge              every section's offset and size absurd
  symtab-entsize1            symbol tables with sh_entsize 1, sh_link bogus
  syms-oob                   every symbol's value, size and name out of bounds
  debug-info-garbage         .debug_info overwritten with 0xff (absurd lengths)
  debug-abbrev-garbage       .debug_abbrev overwritten with 0x7f (no terminator)
  strtab-unterminated        string tables without a final NUL
"""
import os
import struct
import sys

SHT_SYMTAB, SHT_STRTAB, SHT_DYNSYM = 2, 3, 11


def sections(b):
    shoff, = struct.unpack_from("<Q", b, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", b, 0x3a)
    out = []
    for i in range(shnum):
        off = shoff + i * shentsize
        name, typ = struct.unpack_from("<II", b, off)
        soff, size = struct.unpack_from("<QQ", b, off + 0x18)
        out.append({"hdr": off, "name": name, "type": typ, "off": soff, "size": size})
    strs = out[shstrndx]
    for s in out:
        end = b.index(b"\0", strs["off"] + s["name"])
        s["sname"] = b[strs["off"] + s["name"]:end].decode()
    return out


def fill(b, name, byte):
    for s in sections(b):
        if s["sname"] == name:
            b[s["off"]:s["off"] + s["size"]] = bytes([byte]) * s["size"]


def main(base, outdir):
    orig = bytearray(open(base, "rb").read())
    assert orig[:4] == b"\x7fELF" and orig[4] == 2 and orig[5] == 1, "ELF64 LE only"
    v = {}
    v["trunc-half"] = orig[:len(orig) // 2]
    v["trunc-headers"] = orig[:64]
    b = bytearray(orig)
    struct.pack_into("<Q", b, 0x28, 0xfffffffffff0)
    v["shoff-bogus"] = b
    b = bytearray(orig)
    struct.pack_into("<Q", b, 0x20, 0xffffffff00)
    struct.pack_into("<H", b, 0x38, 0xffff)
    v["phdr-bogus"] = b
    b = bytearray(orig)
    for s in sections(orig)[1:]:
        struct.pack_into("<QQ", b, s["hdr"] + 0x18, 0x7fffffff00, 1 << 62)
    v["sections-huge"] = b
    b = bytearray(orig)
    for s in sections(orig):
        if s["type"] in (SHT_SYMTAB, SHT_DYNSYM):
            struct.pack_into("<I", b, s["hdr"] + 0x28, 0xffff)
            struct.pack_into("<Q", b, s["hdr"] + 0x38, 1)
    v["symtab-entsize1"] = b
    b = bytearray(orig)
    for s in sections(orig):
        if s["type"] in (SHT_SYMTAB, SHT_DYNSYM):
            for off in range(s["off"] + 24, s["off"] + s["size"], 24):
                struct.pack_into("<I", b, off, 0x7fffffff)
                struct.pack_into("<QQ", b, off + 8, 0xffffffffffff0000, 0xffffffffffffffff)
    v["syms-oob"] = b
    b = bytearray(orig)
    fill(b, ".debug_info", 0xff)
    v["debug-info-garbage"] = b
    b = bytearray(orig)
    fill(b, ".debug_abbrev", 0x7f)
    v["debug-abbrev-garbage"] = b
    b = bytearray(orig)
    for s in sections(orig):
        if s["type"] == SHT_STRTAB and s["size"]:
            b[s["off"] + s["size"] - 1] = ord("A")
    v["strtab-unterminated"] = b
    for name, blob in v.items():
        os.makedirs(os.path.join(outdir, name), exist_ok=True)
        with open(os.path.join(outdir, name, "libnccl.so.2"), "wb") as f:
            f.write(blob)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
