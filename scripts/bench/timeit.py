#!/usr/bin/env python3
"""timeit.py BYTES CMD...: run CMD, print `bytes=BYTES wall_s= user_s= sys_s=` for it.

user/sys are the CPU seconds of CMD and its descendants (RUSAGE_CHILDREN delta), process
start-up included; the command must succeed.
"""
import resource
import subprocess
import sys
import time

n = int(sys.argv[1])
r0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
rc = subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL).returncode
t1, r1 = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
if rc != 0:
    sys.exit("timeit: %s exited with %d" % (sys.argv[2], rc))
print("bytes=%d wall_s=%.4f user_s=%.4f sys_s=%.4f" % (n, t1 - t0, r1.ru_utime - r0.ru_utime, r1.ru_stime - r0.ru_stime))
