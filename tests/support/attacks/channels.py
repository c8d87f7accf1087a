"""Programs for the channel attacks between concurrent slots (tests/system/attacks/test_channels.py).

Each attack is a pair run at the same time in the two slots: a sender that encodes bits in state every slot
could see (locks on shared host files, the page cache) and a receiver that probes it a moment later.  Every
program reports its slot (``/proc/self/cgroup``) and wall-clock times, so the test can tell that the two ran
side by side in different slots and that the receiver probed while the sender held its state.  The Python
programs use `tests.support.attacks.kit`'s prelude (``P``, ``attempt``, ``report``, ``slot``); the C and bash
ones read their parameters from stdin (``warm`` compiles and exits) and print one JSON line.
"""

from __future__ import annotations

HOLD_S = 2.0
"""How long a sender keeps its state; the receiver probes after `WAIT_S`."""
WAIT_S = 0.7

PY_LOCK_SENDER = """
import fcntl, struct, time
def tried(fn, *args):
    got = attempt(fn, *args)
    return 'OK' if got.startswith('OK') else got
def lock(path, bit):
    if not bit:
        return None
    fds = [os.open(path, os.O_RDONLY) for _ in range(3)]
    read_lock = struct.pack('hhqqi4x', fcntl.F_RDLCK, 0, 0, 0, 0)
    return [tried(fcntl.flock, fds[0], fcntl.LOCK_SH | fcntl.LOCK_NB),
            tried(fcntl.fcntl, fds[1], fcntl.F_SETLK, read_lock),
            tried(fcntl.fcntl, fds[2], 37, read_lock)]  # F_OFD_SETLK
start = time.time()
held = [lock(path, bit) for path, bit in zip(P['paths'], P['bits'])]
null = os.open('/dev/null', os.O_RDWR)  # writable by every slot: a write lock on it too
held.append(tried(fcntl.fcntl, null, fcntl.F_SETLK, struct.pack('hhqqi4x', fcntl.F_WRLCK, 0, 0, 0, 0)))
time.sleep(P['hold'])
report(role='sender', slot=slot(), held=held, start=start, end=time.time())
"""

PY_LOCK_RECEIVER = """
import fcntl, struct, time
time.sleep(P['wait'])
probed = time.time()
def probe(path):
    fd = os.open(path, os.O_RDONLY)
    free = attempt(fcntl.flock, fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    want = struct.pack('hhqqi4x', fcntl.F_WRLCK, 0, 0, 0, 0)
    posix = struct.unpack('hhqqi4x', fcntl.fcntl(fd, fcntl.F_GETLK, want))[0]
    ofd = struct.unpack('hhqqi4x', fcntl.fcntl(fd, 36, want))[0]  # F_OFD_GETLK
    return ''.join(['0' if free == 'OK' else '1', '0' if posix == fcntl.F_UNLCK else '1',
                    '0' if ofd == fcntl.F_UNLCK else '1'])
seen = [probe(path) for path in P['paths']] + [probe('/dev/null')]
with open('/proc/locks') as f:
    locks = len(f.read().splitlines())
report(role='receiver', slot=slot(), seen=seen, probed=probed, proc_locks=locks)
"""

C_PRELUDE = r"""
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#define HELPER __attribute__((unused)) static
HELPER double now(void) { struct timespec t; clock_gettime(CLOCK_REALTIME, &t); return t.tv_sec + t.tv_nsec / 1e9; }
HELPER void slot(char *out, size_t n) {  /* the pids (v1) or unified (v2) line of /proc/self/cgroup */
    FILE *f = fopen("/proc/self/cgroup", "r"); char line[512]; out[0] = 0;
    while (f && fgets(line, sizeof line, f))
        if (strstr(line, ":pids:") || strncmp(line, "0::", 3) == 0) {
            line[strcspn(line, "\n")] = 0;
            snprintf(out, n, "%s", line);
            break;
        }
    if (f) fclose(f);
}
HELPER const char *err(int r) {  /* "OK", or the errno's name */
    static char buf[32];
    if (r >= 0) return "OK";
    snprintf(buf, sizeof buf, "%s", strerrorname_np(errno));
    return buf;
}
#define SENDER "{\"role\":\"sender\",\"slot\":\"%s\","
"""

C_LOCK_SENDER = (
    C_PRELUDE
    + r"""
int main(void) {
    char mode[16], bits[64], where[512]; int n = 0;
    if (scanf("%15s", mode) != 1 || strcmp(mode, "warm") == 0) return 0;
    if (scanf("%63s %d", bits, &n) != 2) return 2;
    double start = now(); char held[1024] = "";
    for (int i = 0; i < n; i++) {
        char path[256]; if (scanf("%255s", path) != 1) return 2;
        if (bits[i] != '1') continue;
        int a = open(path, O_RDONLY), b = open(path, O_RDONLY);
        struct flock rd = {.l_type = F_RDLCK, .l_whence = SEEK_SET};
        char one[96]; snprintf(one, sizeof one, "%s[\"%s\",", i ? "," : "", err(fcntl(a, F_SETLK, &rd)));
        strcat(held, one); snprintf(one, sizeof one, "\"%s\"]", err(fcntl(b, F_OFD_SETLK, &rd))); strcat(held, one);
    }
    usleep(2000000);
    slot(where, sizeof where);
    printf(SENDER "\"held\":[%s],\"start\":%.6f,\"end\":%.6f}\n", where, held, start, now());
    return 0;
}
"""
)

C_LOCK_RECEIVER = (
    C_PRELUDE
    + r"""
int main(void) {
    char mode[16], where[512]; int n = 0;
    if (scanf("%15s", mode) != 1 || strcmp(mode, "warm") == 0) return 0;
    if (scanf("%d", &n) != 1) return 2;
    usleep(700000);
    double probed = now(); char seen[1024] = "";
    for (int i = 0; i < n; i++) {
        char path[256]; if (scanf("%255s", path) != 1) return 2;
        int fd = open(path, O_RDONLY);
        struct flock p = {.l_type = F_WRLCK, .l_whence = SEEK_SET}, q = p;
        int posix = fcntl(fd, F_GETLK, &p), ofd = fcntl(fd, F_OFD_GETLK, &q);
        char one[64]; snprintf(one, sizeof one, "%s\"%c%c\"", i ? "," : "",
            posix < 0 ? 'E' : p.l_type == F_UNLCK ? '0' : '1', ofd < 0 ? 'E' : q.l_type == F_UNLCK ? '0' : '1');
        strcat(seen, one);
    }
    slot(where, sizeof where);
    printf("{\"role\":\"receiver\",\"slot\":\"%s\",\"seen\":[%s],\"probed\":%.6f}\n", where, seen, probed);
    return 0;
}
"""
)

BASH_LOCK_SENDER = r"""
read -r bits paths
start=$(date +%s.%N); i=0; fd=10
for p in $paths; do
  if [ "${bits:$i:1}" = 1 ]; then
    eval "exec $fd<$p"; flock -x -n $fd && held="$held 1" || held="$held E"; fd=$((fd + 1))
  fi
  i=$((i + 1))
done
sleep 2
printf '{"role":"sender","slot":"%s","held":"%s","start":%s,"end":%s}\n' \
  "$(grep -m1 -E ':pids:|^0::' /proc/self/cgroup)" "${held# }" "$start" "$(date +%s.%N)"
"""

BASH_LOCK_RECEIVER = r"""
read -r paths
sleep 0.7
probed=$(date +%s.%N); seen=""
for p in $paths; do
  exec 9<"$p"
  if flock -x -n 9; then seen="${seen}0"; else seen="${seen}1"; fi
  exec 9<&-
done
printf '{"role":"receiver","slot":"%s","seen":"%s","probed":%s}\n' \
  "$(grep -m1 -E ':pids:|^0::' /proc/self/cgroup)" "$seen" "$probed"
"""

PY_WATCHER = """
import ctypes, fcntl, signal, time
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def call(nr, *args):
    ctypes.set_errno(0)
    ret = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    return 'OK' if ret >= 0 else errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))
time.sleep(0.3)  # as the C watcher: probe once the neighbour is under way
got = {'inotify_init1': call(P['nr']['inotify_init1'], 0),
       'fanotify_init': call(P['nr']['fanotify_init'], 0x200, 0)}  # FAN_CLASS_NOTIF | FAN_REPORT_FID
if 'inotify_init' in P['nr']:
    got['inotify_init'] = call(P['nr']['inotify_init'])
events = []
signal.signal(signal.SIGIO, lambda *a: events.append(1))
lib = os.path.dirname(os.__file__)
dirfd = os.open(lib, os.O_RDONLY | os.O_DIRECTORY)
got['dnotify'] = attempt(fcntl.fcntl, dirfd, 1026, 0x1 | 0x80000000)  # F_NOTIFY: DN_ACCESS | DN_MULTISHOT
start = time.time()
time.sleep(P['hold'])  # the neighbour imports meanwhile
report(role='receiver', slot=slot(), got=got, events=len(events), probed=start)
"""

PY_IMPORTER = """
import importlib, time
start = time.time()
names = sorted(n[:-3] for n in os.listdir(os.path.dirname(os.__file__)) if n.endswith('.py') and not n.startswith('_'))
done = []
while time.time() < start + P['hold']:
    for name in names[:40]:
        try:
            importlib.import_module(name)
        except BaseException:
            pass
        done.append(name)
        sys.modules.pop(name, None)
    time.sleep(0.05)
report(role='sender', slot=slot(), imports=len(done), start=start, end=time.time())
"""

C_WATCHER = (
    C_PRELUDE
    + r"""
#include <sys/fanotify.h>
#include <sys/inotify.h>
int main(void) {
    char mode[16], where[512];
    if (scanf("%15s", mode) != 1 || strcmp(mode, "warm") == 0) return 0;
    usleep(300000);
    double probed = now();
    char a[32], b[32];
    snprintf(a, sizeof a, "%s", err(inotify_init1(IN_NONBLOCK)));
    snprintf(b, sizeof b, "%s", err(fanotify_init(FAN_CLASS_NOTIF | FAN_REPORT_FID, O_RDONLY)));
    int dir = open("/usr/lib", O_RDONLY | O_DIRECTORY);
    const char *dn = err(fcntl(dir, F_NOTIFY, DN_ACCESS | DN_MULTISHOT));
    slot(where, sizeof where);
    printf("{\"role\":\"receiver\",\"slot\":\"%s\",\"got\":{\"inotify_init1\":\"%s\",\"fanotify_init\":\"%s\",\"dnotify\":\"%s\"},\"events\":0,\"probed\":%.6f}\n",
           where, a, b, dn, probed);
    return 0;
}
"""
)

PY_EVICTOR = """
import mmap, time
start = time.time()
done = {}
for path in P['paths']:
    fd = os.open(path, os.O_RDONLY)
    with mmap.mmap(fd, 0, prot=mmap.PROT_READ) as m:
        sum(m[i] for i in range(0, len(m), 4096))  # mapped here: MADV_PAGEOUT works on mapped pages
        done[path] = [attempt(m.madvise, 21), attempt(m.madvise, 20)]  # MADV_PAGEOUT, MADV_COLD
    done[path].append(attempt(os.posix_fadvise, fd, 0, 0, os.POSIX_FADV_DONTNEED))  # unmapped: droppable
    os.close(fd)
time.sleep(P['hold'])
report(role='sender', slot=slot(), done=done, start=start, end=time.time())
"""

PY_CACHE_PROBE = """
import ctypes, mmap, time
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
time.sleep(P['wait'])
probed = time.time()
got = {}
for path in P['paths']:
    fd = os.open(path, os.O_RDONLY)
    got[path] = attempt(os.preadv, fd, [bytearray(4096)], 0, os.RWF_NOWAIT)
    os.close(fd)
fd = os.open(P['cold'], os.O_RDONLY)  # a file the host evicted: mincore's answer for it
with mmap.mmap(fd, 0, access=mmap.ACCESS_COPY) as m:
    vec = (ctypes.c_ubyte * ((len(m) + 4095) // 4096))()
    anchor = ctypes.c_char.from_buffer(m)
    libc.mincore(ctypes.c_void_p(ctypes.addressof(anchor)), ctypes.c_size_t(len(m)), vec)
    del anchor
resident = [sum(v & 1 for v in vec), len(vec)]
span, stat = (ctypes.c_uint64 * 2)(0, 4096), (ctypes.c_uint64 * 5)()
ctypes.set_errno(0)
cachestat = libc.syscall(ctypes.c_long(451), ctypes.c_long(fd), ctypes.addressof(span), ctypes.addressof(stat), 0)
got['cachestat'] = 'OK' if cachestat >= 0 else errno.errorcode.get(ctypes.get_errno())
ctypes.set_errno(0)
ctx = ctypes.c_ulong(0)
aio = libc.syscall(ctypes.c_long(P['io_setup']), 8, ctypes.addressof(ctx))
got['io_setup'] = 'OK' if aio >= 0 else errno.errorcode.get(ctypes.get_errno())
report(role='receiver', slot=slot(), got=got, cold_resident=resident, probed=probed)
"""

C_EVICTOR = (
    C_PRELUDE
    + r"""
int main(void) {
    char mode[16], where[512], done[2048] = ""; int n = 0;
    if (scanf("%15s", mode) != 1 || strcmp(mode, "warm") == 0) return 0;
    if (scanf("%d", &n) != 1) return 2;
    double start = now();
    for (int i = 0; i < n; i++) {
        char path[256]; if (scanf("%255s", path) != 1) return 2;
        int fd = open(path, O_RDONLY); struct stat st; fstat(fd, &st);
        volatile char *m = mmap(NULL, st.st_size, PROT_READ, MAP_SHARED, fd, 0); long sum = 0;
        for (off_t at = 0; at < st.st_size; at += 4096) sum += m[at];
        int p = madvise((void *)m, st.st_size, MADV_PAGEOUT), c = madvise((void *)m, st.st_size, MADV_COLD);
        munmap((void *)m, st.st_size);
        int f = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);  /* unmapped now: droppable */
        char one[160]; snprintf(one, sizeof one, "%s[\"%s\",", i ? "," : "", err(p)); strcat(done, one);
        snprintf(one, sizeof one, "\"%s\",%d]", err(c), f); strcat(done, one);
    }
    usleep(2000000);
    slot(where, sizeof where);
    printf(SENDER "\"done\":[%s],\"start\":%.6f,\"end\":%.6f}\n", where, done, start, now());
    return 0;
}
"""
)

C_CACHE_PROBE = (
    C_PRELUDE
    + r"""
int main(void) {
    char mode[16], where[512], got[2048] = ""; int n = 0;
    if (scanf("%15s", mode) != 1 || strcmp(mode, "warm") == 0) return 0;
    if (scanf("%d", &n) != 1) return 2;
    usleep(700000);
    double probed = now();
    for (int i = 0; i < n; i++) {
        char path[256], buf[4096]; if (scanf("%255s", path) != 1) return 2;
        int fd = open(path, O_RDONLY); struct iovec v = {buf, sizeof buf};
        char one[64]; snprintf(one, sizeof one, "%s\"%s\"", i ? "," : "", err(preadv2(fd, &v, 1, 0, RWF_NOWAIT)));
        strcat(got, one); close(fd);
    }
    char cold[256]; if (scanf("%255s", cold) != 1) return 2;
    int fd = open(cold, O_RDONLY); struct stat st; fstat(fd, &st);
    void *m = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    size_t pages = (st.st_size + 4095) / 4096, resident = 0; unsigned char *vec = calloc(pages, 1);
    mincore(m, st.st_size, vec);
    for (size_t i = 0; i < pages; i++) resident += vec[i] & 1;
    slot(where, sizeof where);
    printf("{\"role\":\"receiver\",\"slot\":\"%s\",\"nowait\":[%s],\"cold_resident\":[%zu,%zu],\"probed\":%.6f}\n",
           where, got, resident, pages, probed);
    return 0;
}
"""
)

BASH_EVICTOR = r"""
read -r paths
start=$(date +%s.%N); done=""
for p in $paths; do dd if="$p" iflag=nocache count=0 status=none && done="$done ok" || done="$done E"; done
sleep 2
printf '{"role":"sender","slot":"%s","done":"%s","start":%s,"end":%s}\n' \
  "$(grep -m1 -E ':pids:|^0::' /proc/self/cgroup)" "${done# }" "$start" "$(date +%s.%N)"
"""

BASH_CACHE_PROBE = r"""
read -r cold
sleep 0.7
probed=$(date +%s.%N)
res=$(fincore --bytes --noheadings --output RES "$cold" 2>&1); size=$(stat -c %s "$cold")
printf '{"role":"receiver","slot":"%s","fincore":"%s","size":%s,"probed":%s}\n' \
  "$(grep -m1 -E ':pids:|^0::' /proc/self/cgroup)" "$(echo $res)" "$size" "$probed"
"""
