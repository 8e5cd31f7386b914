# Writes 1.5 GB into its folder, /tmp and /dev/shm.
import os

chunk = b"x" * (1 << 20)
for folder in (".", "/tmp", "/dev/shm", os.environ.get("TMPDIR", ".")):
    try:
        with open(os.path.join(folder, "fill.bin"), "wb") as handle:
            for _ in range(1536):
                handle.write(chunk)
    except OSError:
        pass
exec(WRONG)
