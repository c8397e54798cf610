"""A GPU-less stand-in for the part of PyTorch that tests/gpu/workload.py
uses, over ccld's NCCL and CUDA runtime stand-ins (build/sim/lib,
docs/standin.md), so that tests/e2e/test_gpu_bundle.sh runs the real-GPU
acceptance script end to end on a machine without a GPU.  Not PyTorch:
tensors are float32 buffers from the stand-in's cudaMalloc, and every
operation is queued on one stream per process, as PyTorch queues compute
and NCCL work without waiting (the CPU runs ahead of its "GPU"):

- torch.mm is a simulated kernel of $CCLD_TORCH_STANDIN_MM_US microseconds
  (default 1000) on the stream; nothing is multiplied;
- collectives are the stand-in NCCL's, on that stream, with an event
  recorded after each (PyTorch's work end event) and queried once done;
- copy_, a[i] = v, tolist() are stream-ordered copies; tolist() waits.

$CCLD_TORCH_STANDIN_LIB is the directory of the stand-in libraries.
"""
import ctypes
import os

__version__ = "0.0+ccld.standin"
float32 = "float32"

_lib = os.environ.get("CCLD_TORCH_STANDIN_LIB") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "build", "sim", "lib")
_nccl = ctypes.CDLL(os.path.join(_lib, "libnccl.so.2"))
_rt = ctypes.CDLL(os.path.join(_lib, "libcudart.so.13"))
_KERNEL = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_vp = ctypes.c_void_p
_rt.ccldsim_gpu_busy.argtypes = [ctypes.c_double]
_rt.ccldsim_stream_launch.argtypes = [_vp, _KERNEL, _vp]
_rt.cudaMalloc.argtypes = [ctypes.POINTER(_vp), ctypes.c_size_t]
_rt.cudaMemcpyAsync.argtypes = [_vp, _vp, ctypes.c_size_t, ctypes.c_int, _vp]
for _f in ("cudaStreamSynchronize", "cudaEventQuery", "cudaEventDestroy"):
    getattr(_rt, _f).argtypes = [_vp]
_rt.cudaEventRecord.argtypes = [_vp, _vp]
_mm_us = ctypes.c_double(float(os.environ.get("CCLD_TORCH_STANDIN_MM_US", "1000")))


@_KERNEL
def _mm_kernel(arg):
    _rt.ccldsim_gpu_busy(ctypes.cast(arg, ctypes.POINTER(ctypes.c_double))[0])


def _ok(rc, what):
    if rc:
        raise RuntimeError(f"{what} failed: {rc}")


class _State:
    stream = None
    events = []     # recorded, not yet seen done
    pinned = []     # host sources of queued copies


def _stream():
    if _State.stream is None:
        s = ctypes.c_void_p()
        _ok(_rt.cudaStreamCreate(ctypes.byref(s)), "cudaStreamCreate")
        _State.stream = s
    return _State.stream


def _sync():
    _ok(_rt.cudaStreamSynchronize(_stream()), "cudaStreamSynchronize")
    _State.pinned.clear()
    _poll_events()


def _poll_events():
    # PyTorch's watchdog queries each work's end event until it is done
    left = []
    for ev in _State.events:
        if _rt.cudaEventQuery(ev) == 0:
            _rt.cudaEventDestroy(ev)
        else:
            left.append(ev)
    _State.events = left


def _record_end():
    ev = ctypes.c_void_p()
    _ok(_rt.cudaEventCreate(ctypes.byref(ev)), "cudaEventCreate")
    _ok(_rt.cudaEventRecord(ev, _stream()), "cudaEventRecord")
    _State.events.append(ev)
    _poll_events()


class device:
    def __init__(self, kind, index=0):
        self.type, self.index = kind, index


class Tensor:
    def __init__(self, n, ptr=None, base=None):
        self.n = n
        self.base = base
        if ptr is None:
            p = ctypes.c_void_p()
            _ok(_rt.cudaMalloc(ctypes.byref(p), max(4, 4 * n)), "cudaMalloc")
            ctypes.memset(p.value, 0, 4 * n)
            ptr = p.value
        self.ptr = ptr

    def numel(self):
        return self.n

    def view(self, *_shape):
        return Tensor(self.n, self.ptr, self)

    def __truediv__(self, _x):
        return Tensor(self.n)

    def __getitem__(self, s):
        if not isinstance(s, slice) or s.start or s.step:
            raise TypeError("the stand-in slices [:n] only")
        n = self.n if s.stop is None else min(s.stop, self.n)
        return Tensor(n, self.ptr, self)

    def __setitem__(self, i, v):
        src = (ctypes.c_float * 1)(v)
        _State.pinned.append(src)
        _ok(_rt.cudaMemcpyAsync(ctypes.c_void_p(self.ptr + 4 * i), src, 4, 4, _stream()),
            "cudaMemcpyAsync")

    def copy_(self, other):
        _ok(_rt.cudaMemcpyAsync(ctypes.c_void_p(self.ptr), ctypes.c_void_p(other.ptr),
                                4 * min(self.n, other.n), 4, _stream()), "cudaMemcpyAsync")
        return self

    def tolist(self):
        dst = (ctypes.c_float * self.n)()
        _ok(_rt.cudaMemcpyAsync(dst, ctypes.c_void_p(self.ptr), 4 * self.n, 4, _stream()),
            "cudaMemcpyAsync")
        _sync()
        return list(dst)

    def item(self):
        return self.tolist()[0]


def _size(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def empty(*shape, device=None, dtype=None):
    return Tensor(_size(shape))


zeros = randn = empty


def full(shape, value, device=None, dtype=None):
    t = Tensor(_size(shape))
    (ctypes.c_float * t.n).from_address(t.ptr)[:] = [float(value)] * t.n
    return t


def tensor(values, device=None, dtype=None):
    t = Tensor(len(values))
    (ctypes.c_float * t.n).from_address(t.ptr)[:] = [float(v) for v in values]
    return t


def mm(_a, _b, out=None):
    _ok(_rt.ccldsim_stream_launch(_stream(), _mm_kernel, ctypes.byref(_mm_us)),
        "ccldsim_stream_launch")
    return out


class _Nccl:
    @staticmethod
    def version():
        v = ctypes.c_int()
        _ok(_nccl.ncclGetVersion(ctypes.byref(v)), "ncclGetVersion")
        return (v.value // 10000, v.value // 100 % 100, v.value % 100)


class _Version:
    cuda = "standin"


class _Cuda:
    nccl = _Nccl()

    @staticmethod
    def is_available():
        return True

    @staticmethod
    def set_device(dev):
        _ok(_rt.cudaSetDevice(dev.index if isinstance(dev, device) else int(dev)),
            "cudaSetDevice")
        _stream()

    @staticmethod
    def synchronize():
        _sync()

    @staticmethod
    def get_device_name(_dev=None):
        return "ccld stand-in GPU (tests/sim)"


cuda = _Cuda()
version = _Version()
