"""torch.distributed of the stand-in (torch/__init__.py says what it is):
one NCCL communicator per process, made with ncclCommInitRank (rank 0's
unique id passed through a file named after MASTER_PORT), and each call
the NCCL call PyTorch's ProcessGroupNCCL makes for it."""
import ctypes
import os
import time

import torch
from torch import _nccl, _ok, _stream, _record_end

_FLOAT32, _SUM, _MAX = 7, 0, 2


class ReduceOp:
    SUM, MAX = _SUM, _MAX


class _Id(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]


_vp, _sz_t, _int = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int
_nccl.ncclCommInitRank.argtypes = [ctypes.POINTER(_vp), _int, _Id, _int]
_nccl.ncclAllReduce.argtypes = [_vp, _vp, _sz_t, _int, _int, _vp, _vp]
_nccl.ncclReduceScatter.argtypes = [_vp, _vp, _sz_t, _int, _int, _vp, _vp]
_nccl.ncclAllGather.argtypes = [_vp, _vp, _sz_t, _int, _vp, _vp]
_nccl.ncclSend.argtypes = _nccl.ncclRecv.argtypes = [_vp, _sz_t, _int, _int, _vp, _vp]
_nccl.ncclCommDestroy.argtypes = [_vp]


class _PG:
    comm = None
    rank = world = 0


def is_nccl_available():
    return True


def init_process_group(backend="nccl", rank=0, world_size=1, timeout=None, device_id=None):
    path = f"/tmp/ccld-torch-standin-{os.environ['MASTER_PORT']}.id"
    uid = _Id()
    if rank == 0:
        _ok(_nccl.ncclGetUniqueId(ctypes.byref(uid)), "ncclGetUniqueId")
        with open(path + ".tmp", "wb") as f:
            f.write(bytes(uid))
        os.rename(path + ".tmp", path)
    else:
        while not os.path.exists(path):
            time.sleep(0.01)
        with open(path, "rb") as f:
            ctypes.memmove(ctypes.byref(uid), f.read(128), 128)
    comm = ctypes.c_void_p()
    _ok(_nccl.ncclCommInitRank(ctypes.byref(comm), world_size, uid, rank), "ncclCommInitRank")
    if rank == 0:
        os.unlink(path)
    _PG.comm, _PG.rank, _PG.world = comm, rank, world_size


def destroy_process_group():
    torch.cuda.synchronize()
    _ok(_nccl.ncclCommDestroy(_PG.comm), "ncclCommDestroy")


def _p(t):
    return ctypes.c_void_p(t.ptr)


def _sz(n):
    return ctypes.c_size_t(n)


def all_reduce(t, op=_SUM):
    _ok(_nccl.ncclAllReduce(_p(t), _p(t), _sz(t.n), _FLOAT32, op, _PG.comm, _stream()),
        "ncclAllReduce")
    _record_end()


def all_gather_into_tensor(out, inp):
    _ok(_nccl.ncclAllGather(_p(inp), _p(out), _sz(inp.n), _FLOAT32, _PG.comm, _stream()),
        "ncclAllGather")
    _record_end()


def reduce_scatter_tensor(out, inp, op=_SUM):
    _ok(_nccl.ncclReduceScatter(_p(inp), _p(out), _sz(out.n), _FLOAT32, op, _PG.comm,
                                _stream()), "ncclReduceScatter")
    _record_end()


def isend(t, peer):
    return ("send", t, peer)


def irecv(t, peer):
    return ("recv", t, peer)


class P2POp:
    def __init__(self, fn, tensor, peer):
        self.kind, self.tensor, self.peer = fn(tensor, peer)


class _Work:
    def wait(self):
        return True


def batch_isend_irecv(ops):
    _ok(_nccl.ncclGroupStart(), "ncclGroupStart")
    for o in ops:
        fn = _nccl.ncclSend if o.kind == "send" else _nccl.ncclRecv
        _ok(fn(_p(o.tensor), _sz(o.tensor.n), _FLOAT32, o.peer, _PG.comm, _stream()),
            "ncclSend/Recv")
    _ok(_nccl.ncclGroupEnd(), "ncclGroupEnd")
    _record_end()
    return [_Work() for _ in ops]
