# Junk on every descriptor: a line with a non-ASCII token, a JSON line nested 100,000 deep, a lone surrogate,
# a huge length prefix.
import os

lines = [b'{"token": "\xc3\xa9", "status": "passed"}\n', b"[" * 100_000 + b"]" * 100_000 + b"\n",
         '{"status": "passed", "message": "\ud800"}\n'.encode("utf-8", "surrogatepass"), b"\xff\xff\xff\xff"]
for fd in range(0, 64):
    for line in lines:
        try:
            os.write(fd, line)
        except OSError:
            pass
exec(WRONG)
