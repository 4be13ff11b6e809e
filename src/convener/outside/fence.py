"""An operating-system fence for a process about to run code nobody vouches for (Linux: Landlock and seccomp).

An audit hook lives inside the interpreter it guards, so the guarded code can switch it off; this fence
lives in the kernel, and once a process has put it up neither it nor anything it starts can take it down.
:func:`apply` puts it up on the calling process, in this order, and raises :class:`Unfenced` if any step
fails, so a caller that goes on after it is fenced or not running at all:

1. ``PR_SET_NO_NEW_PRIVS``: no set-uid program or file capability can give the process more than it has (and
   Landlock and seccomp require it of a process without ``CAP_SYS_ADMIN``).
2. **Landlock**, handling every file-system right the running kernel's ABI knows: the process may read (never
   execute) beneath :attr:`Fence.readable` and read and write (never execute, nor make devices, sockets, fifos
   or links) beneath :attr:`Fence.writable`; every other path, ``/proc`` included, is out of reach whatever
   the process's uid or capabilities. From ABI 4 no TCP port may be bound or connected to; from ABI 6 no
   abstract UNIX socket made outside the fence can be reached and no process outside it can be signalled.
3. **seccomp**, a filter the kernel runs on every system call: no ``socket()`` at all (every family, so
   neither the network nor a UNIX socket on disk, which Landlock does not cover), no new process (``fork``,
   ``vfork``, ``clone`` without ``CLONE_THREAD``, ``execve``), no signal to another process, no raising a
   resource limit, and none of the calls that reach past a process's own memory and files (``ptrace``,
   ``process_vm_*``, ``mount`` and the new mount API, ``unshare``, ``setns``, ``bpf``, ``perf_event_open``,
   modules, ``kexec``, keyrings, ``userfaultfd``, ``io_uring``, ``mknod``, file handles). A system call of
   another ABI than the filter's (32-bit calls on x86-64) kills the process. Threads stay possible.
4. A check that it holds: opening ``/`` and making a socket must now fail.

Landlock binds only the calling thread, so :func:`apply` refuses a process that already has more than one.
Opened file descriptors stay usable: open what the process needs (pipes, ``/dev/null``) before.

:func:`missing` probes, without changing anything, what a fence here would lack; the parent asks it before
starting a child so that a machine without a fence refuses the work instead of running it unfenced.

Standard library only, with no import of ``convener``: a sandboxed child loads this file by its path before
anything else of the host could reach it.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import socket
import struct
import sys
import sysconfig
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

# --- Landlock (include/uapi/linux/landlock.h) ---------------------------------------------------------------

LANDLOCK_CREATE_RULESET_VERSION = 1 << 0
LANDLOCK_RULE_PATH_BENEATH = 1
SYS_LANDLOCK_CREATE_RULESET, SYS_LANDLOCK_ADD_RULE, SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446  # every arch

FS_EXECUTE = 1 << 0
FS_WRITE_FILE = 1 << 1
FS_READ_FILE = 1 << 2
FS_READ_DIR = 1 << 3
FS_REMOVE_DIR = 1 << 4
FS_REMOVE_FILE = 1 << 5
FS_MAKE_CHAR = 1 << 6
FS_MAKE_DIR = 1 << 7
FS_MAKE_REG = 1 << 8
FS_MAKE_SOCK = 1 << 9
FS_MAKE_FIFO = 1 << 10
FS_MAKE_BLOCK = 1 << 11
FS_MAKE_SYM = 1 << 12
FS_REFER = 1 << 13  # ABI 2
FS_TRUNCATE = 1 << 14  # ABI 3
FS_IOCTL_DEV = 1 << 15  # ABI 5
NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1

# The file-system rights each ABI knows; a ruleset must handle no right its kernel does not know.
FS_RIGHTS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 4: (1 << 15) - 1,
                    5: (1 << 16) - 1}
FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV  # what a file can take
READ = FS_READ_FILE | FS_READ_DIR
READ_WRITE = (READ | FS_WRITE_FILE | FS_REMOVE_DIR | FS_REMOVE_FILE | FS_MAKE_DIR | FS_MAKE_REG | FS_REFER
              | FS_TRUNCATE)

# --- seccomp (include/uapi/linux/seccomp.h, filter.h, audit.h) ----------------------------------------------

PR_SET_NO_NEW_PRIVS = 38
PR_GET_SECCOMP = 21
SECCOMP_SET_MODE_FILTER = 1
SECCOMP_GET_ACTION_AVAIL = 2
SECCOMP_FILTER_FLAG_TSYNC = 1
SECCOMP_RET_KILL_PROCESS = 0x80000000
SECCOMP_RET_ERRNO = 0x00050000
SECCOMP_RET_ALLOW = 0x7FFF0000
BPF_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
BPF_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
BPF_JGE_K = 0x35
BPF_JSET_K = 0x45
BPF_RET_K = 0x06
DATA_NR, DATA_ARCH = 0, 4  # offsets in struct seccomp_data; args[i] at 16 + 8 * i
CLONE_THREAD = 0x00010000
X32_SYSCALL_BIT = 0x40000000


@dataclass(frozen=True)
class Arch:
    audit: int  # AUDIT_ARCH_* the kernel puts in seccomp_data.arch
    seccomp: int  # number of the seccomp system call
    calls: dict[str, int]  # the numbers of the system calls the filter names
    x32: bool = False  # the x32 ABI shares the architecture number: refuse its calls by their bit


_GENERIC = {  # include/uapi/asm-generic/unistd.h (aarch64)
    "execve": 221, "execveat": 281, "clone": 220, "clone3": 435, "kill": 129, "tkill": 130, "tgkill": 131,
    "rt_sigqueueinfo": 138, "rt_tgsigqueueinfo": 240, "pidfd_send_signal": 424, "pidfd_open": 434,
    "pidfd_getfd": 438, "socket": 198, "socketpair": 199, "ptrace": 117, "process_vm_readv": 270,
    "process_vm_writev": 271, "mount": 40, "umount2": 39, "pivot_root": 41, "chroot": 51, "unshare": 97,
    "setns": 268, "bpf": 280, "perf_event_open": 241, "init_module": 105, "finit_module": 273,
    "delete_module": 106, "kexec_load": 104, "kexec_file_load": 294, "keyctl": 219, "add_key": 217,
    "request_key": 218, "userfaultfd": 282, "io_uring_setup": 425, "io_uring_enter": 426,
    "io_uring_register": 427, "setrlimit": 164, "prlimit64": 261, "mknodat": 33, "open_by_handle_at": 265,
    "name_to_handle_at": 264, "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431,
    "fsmount": 432, "fspick": 433, "mount_setattr": 442, "reboot": 142, "swapon": 224, "swapoff": 225,
    "acct": 89, "syslog": 116, "quotactl": 60,
}
_X86_64 = {  # arch/x86/entry/syscalls/syscall_64.tbl
    "fork": 57, "vfork": 58, "execve": 59, "execveat": 322, "clone": 56, "clone3": 435, "kill": 62,
    "tkill": 200, "tgkill": 234, "rt_sigqueueinfo": 129, "rt_tgsigqueueinfo": 297, "pidfd_send_signal": 424,
    "pidfd_open": 434, "pidfd_getfd": 438, "socket": 41, "socketpair": 53, "ptrace": 101,
    "process_vm_readv": 310, "process_vm_writev": 311, "mount": 165, "umount2": 166, "pivot_root": 155,
    "chroot": 161, "unshare": 272, "setns": 308, "bpf": 321, "perf_event_open": 298, "init_module": 175,
    "finit_module": 313, "delete_module": 176, "kexec_load": 246, "kexec_file_load": 320, "keyctl": 250,
    "add_key": 248, "request_key": 249, "userfaultfd": 323, "io_uring_setup": 425, "io_uring_enter": 426,
    "io_uring_register": 427, "setrlimit": 160, "prlimit64": 302, "mknod": 133, "mknodat": 259,
    "open_by_handle_at": 304, "name_to_handle_at": 303, "open_tree": 428, "move_mount": 429, "fsopen": 430,
    "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442, "reboot": 169, "swapon": 167,
    "swapoff": 168, "acct": 163, "syslog": 103, "iopl": 172, "ioperm": 173, "quotactl": 179,
}
ARCHES = {"x86_64": Arch(0xC000003E, 317, _X86_64, x32=True), "aarch64": Arch(0xC00000B7, 277, _GENERIC)}

# Refused outright (EPERM); the calls with conditions are in _filter().
DENIED = (
    "fork", "vfork", "execve", "execveat",  # processes (clone is below)
    "tkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_send_signal", "pidfd_open",
    "pidfd_getfd",  # signals (kill and tgkill are below)
    "socket",  # the network and UNIX sockets on disk (socketpair is below)
    "ptrace", "process_vm_readv", "process_vm_writev",  # other processes' memory
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "open_tree", "move_mount", "fsopen",
    "fsconfig", "fsmount", "fspick", "mount_setattr",  # the view of the file system
    "open_by_handle_at", "name_to_handle_at", "mknod", "mknodat",  # around paths; device nodes
    "setrlimit",  # raising a limit (prlimit64 is below)
    "bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
    "keyctl", "add_key", "request_key",  # the kernel's larger attack surfaces, and its keyrings
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "reboot", "swapon",
    "swapoff", "acct", "syslog", "iopl", "ioperm", "quotactl",  # the machine itself
)


class Unfenced(Exception):
    """The fence could not be put up (or could not be shown to hold); the message says what is missing."""


@dataclass(frozen=True)
class Fence:
    """What a fenced process may reach on disk: everything else is out of reach."""

    readable: tuple[str, ...]  # folders and files that may be read (not executed)
    writable: tuple[str, ...] = ()  # folders and files that may be read and written (not executed)


# --- Probes -------------------------------------------------------------------------------------------------


@cache
def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    libc.prctl.restype = ctypes.c_int
    return libc


def _arch() -> Arch | None:
    if sys.platform != "linux" or sys.byteorder != "little":
        return None
    return ARCHES.get(platform.machine())


def landlock_abi() -> int | None:
    """The Landlock ABI version of the running kernel, or None when Landlock is absent or disabled."""
    if _arch() is None:
        return None
    version = _libc().syscall(ctypes.c_long(SYS_LANDLOCK_CREATE_RULESET), None, ctypes.c_size_t(0),
                              ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION))
    return int(version) if version > 0 else None


def seccomp_filters() -> bool:
    """Whether the kernel takes seccomp filters that answer with an errno (asked without installing one)."""
    arch = _arch()
    if arch is None:
        return False
    action = ctypes.c_uint32(SECCOMP_RET_ERRNO)
    answer = _libc().syscall(ctypes.c_long(arch.seccomp), ctypes.c_uint(SECCOMP_GET_ACTION_AVAIL),
                             ctypes.c_uint(0), ctypes.byref(action))
    return int(answer) == 0


def missing() -> list[str]:
    """What a fence on this machine would lack; empty when :func:`apply` can put one up."""
    if _arch() is None:
        return [f"the fence is built for Linux on {' or '.join(ARCHES)}, not {sys.platform} on "
                f"{platform.machine() or 'an unknown machine'}"]
    problems = []
    if landlock_abi() is None:
        problems.append("Landlock is not available (Linux 5.13 or later with 'landlock' in the lsm= boot "
                        "parameter or CONFIG_LSM)")
    if not seccomp_filters():
        problems.append("seccomp filters are not available (CONFIG_SECCOMP_FILTER)")
    return problems


def describe(abi: int | None) -> str:
    """The fence this kernel gives, in words."""
    if abi is None:
        return "none"
    parts = ["files"] + (["TCP"] if abi >= 4 else []) + (["signals and abstract sockets"] if abi >= 6 else [])
    return f"Landlock ABI {abi} ({', '.join(parts)}) and a seccomp filter"


def runtime_paths() -> tuple[str, ...]:
    """What this interpreter reads after it has started: its standard library and installed packages, the
    shared libraries their extension modules load, and the dynamic linker's cache. Existing paths only."""
    paths = sysconfig.get_paths()
    python = [paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths]
    libraries = ("/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/local/lib", "/etc/ld.so.cache")
    return allowed([*python, *libraries])


def allowed(paths: Iterable[str]) -> tuple[str, ...]:
    """``paths`` resolved (symlinks followed, so that a rule lands on what is opened), if they exist."""
    return tuple(sorted({os.path.realpath(path) for path in paths if os.path.exists(path)}))


# --- Putting it up ------------------------------------------------------------------------------------------


def apply(fence: Fence) -> str:
    """Fences the calling process for good (see the module docstring); returns :func:`describe`'s words.
    Raises :class:`Unfenced` when any step fails: the process must then not run what it was to run."""
    arch = _arch()
    if arch is None:
        raise Unfenced(missing()[0])
    _single_threaded()
    libc = _libc()
    if libc.prctl(ctypes.c_int(PR_SET_NO_NEW_PRIVS), ctypes.c_ulong(1), ctypes.c_ulong(0), ctypes.c_ulong(0),
                  ctypes.c_ulong(0)) != 0:
        raise Unfenced(f"prctl(PR_SET_NO_NEW_PRIVS) failed: {_errno_text()}")
    abi = landlock_abi()
    if abi is None:
        raise Unfenced("Landlock is not available on this kernel")
    _landlock(libc, abi, fence)
    _seccomp(libc, arch)
    _check(fence)
    return describe(abi)


def _single_threaded() -> None:
    try:
        threads = len(os.listdir("/proc/self/task"))
    except OSError as error:
        raise Unfenced(f"cannot count this process's threads: {error.strerror}") from error
    if threads != 1:
        raise Unfenced(f"the process has {threads} threads; Landlock would fence only the calling one")


def _errno_text() -> str:
    number = ctypes.get_errno()
    return f"{errno.errorcode.get(number, number)} ({os.strerror(number)})"


def _landlock(libc: ctypes.CDLL, abi: int, fence: Fence) -> None:
    fs = FS_RIGHTS_BY_ABI[min(abi, 5)]
    net = NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 else 0
    scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0
    attr = struct.pack("<QQQ", fs, net, scoped)
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8  # the struct as this ABI knows it
    buffer = ctypes.create_string_buffer(attr[:size], size)
    ruleset = libc.syscall(ctypes.c_long(SYS_LANDLOCK_CREATE_RULESET), buffer, ctypes.c_size_t(size),
                           ctypes.c_uint32(0))
    if ruleset < 0:
        raise Unfenced(f"landlock_create_ruleset failed: {_errno_text()}")
    try:
        for paths, rights in ((fence.readable, READ), (fence.writable, READ_WRITE)):
            for path in paths:
                _allow(libc, int(ruleset), path, rights & fs)
        if libc.syscall(ctypes.c_long(SYS_LANDLOCK_RESTRICT_SELF), ctypes.c_int(ruleset),
                        ctypes.c_uint32(0)) != 0:
            raise Unfenced(f"landlock_restrict_self failed: {_errno_text()}")
    finally:
        os.close(ruleset)


def _allow(libc: ctypes.CDLL, ruleset: int, path: str, rights: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError as error:
        raise Unfenced(f"cannot open {path!r} to allow it: {error.strerror}") from error
    try:
        if not os.path.isdir(path):
            rights &= FILE_RIGHTS
        rule = ctypes.create_string_buffer(struct.pack("<Qi", rights, fd), 12)  # packed path_beneath_attr
        if libc.syscall(ctypes.c_long(SYS_LANDLOCK_ADD_RULE), ctypes.c_int(ruleset),
                        ctypes.c_int(LANDLOCK_RULE_PATH_BENEATH), rule, ctypes.c_uint32(0)) != 0:
            raise Unfenced(f"landlock_add_rule for {path!r} failed: {_errno_text()}")
    finally:
        os.close(fd)


def _seccomp(libc: ctypes.CDLL, arch: Arch) -> None:
    program = _filter(arch, os.getpid())
    code = b"".join(struct.pack("<HBBI", *instruction) for instruction in program)
    filters = ctypes.create_string_buffer(code, len(code))

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = SockFprog(len(program), ctypes.addressof(filters))
    if libc.syscall(ctypes.c_long(arch.seccomp), ctypes.c_uint(SECCOMP_SET_MODE_FILTER),
                    ctypes.c_uint(SECCOMP_FILTER_FLAG_TSYNC), ctypes.byref(fprog)) != 0:
        raise Unfenced(f"installing the seccomp filter failed: {_errno_text()}")
    if libc.prctl(ctypes.c_int(PR_GET_SECCOMP), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0),
                  ctypes.c_ulong(0)) != 2:
        raise Unfenced("the seccomp filter is not in force after installing it")


Instruction = tuple[int, int, int, int]  # code, jump if true, jump if false, constant


def _filter(arch: Arch, pid: int) -> list[Instruction]:
    """The classic BPF program: a list of rules, each ``if nr == N: <block>``, where every block returns."""
    deny = (BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | errno.EPERM)
    allow = (BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW)

    def low(arg: int) -> Instruction:
        return (BPF_LD_W_ABS, 0, 0, 16 + 8 * arg)  # little-endian: the low half comes first

    def high(arg: int) -> Instruction:
        return (BPF_LD_W_ABS, 0, 0, 20 + 8 * arg)

    def only_if_equal(arg: int, value: int) -> list[Instruction]:
        # int arguments: the kernel reads the low 32 bits only, so they decide
        return [low(arg), (BPF_JEQ_K, 0, 1, value), allow, deny]

    rules: list[tuple[str, list[Instruction]]] = [(name, [deny]) for name in DENIED]
    rules += [
        ("clone", [low(0), (BPF_JSET_K, 0, 1, CLONE_THREAD), allow, deny]),  # threads, no processes
        # clone3 takes its flags in memory, out of a filter's sight: ENOSYS makes the C library use clone
        ("clone3", [(BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | errno.ENOSYS)]),
        ("kill", only_if_equal(0, pid)),  # itself only (os.abort, signal.raise_signal)
        ("tgkill", only_if_equal(0, pid)),
        ("socketpair", only_if_equal(0, socket.AF_UNIX)),  # a connected pair reaches nothing (asyncio)
        # prlimit64(pid, resource, new, old): reading a limit is fine, setting one is not
        ("prlimit64", [low(2), (BPF_JEQ_K, 0, 3, 0), high(2), (BPF_JEQ_K, 0, 1, 0), allow, deny]),
    ]
    body: list[Instruction] = []
    for name, block in rules:
        number = arch.calls.get(name)
        if number is not None:
            body += [(BPF_JEQ_K, 0, len(block), number), *block]
    head: list[Instruction] = [(BPF_LD_W_ABS, 0, 0, DATA_ARCH)]
    check_x32 = [(BPF_JGE_K, 0, 1, X32_SYSCALL_BIT), deny] if arch.x32 else []
    rest = [(BPF_LD_W_ABS, 0, 0, DATA_NR), *check_x32, *body, allow]
    head.append((BPF_JEQ_K, 0, len(rest), arch.audit))  # another ABI's call: kill (below)
    program = [*head, *rest, (BPF_RET_K, 0, 0, SECCOMP_RET_KILL_PROCESS)]
    if len(program) > 4096 or any(jt > 255 or jf > 255 for _, jt, jf, _ in program):
        raise Unfenced("the seccomp filter does not fit classic BPF")
    return program


def _check(fence: Fence) -> None:
    """Proof that the fence holds, by two things it must now refuse."""
    if "/" not in fence.readable:
        try:
            os.close(os.open("/", os.O_RDONLY | os.O_DIRECTORY))
        except PermissionError:
            pass
        else:
            raise Unfenced("Landlock is in place but '/' can still be read")
    try:
        socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()
    except PermissionError:
        return
    raise Unfenced("the seccomp filter is in place but a socket can still be made")

