# Starts 400 processes that sleep (and would outlive the job).
import os
import time

started = 0
for _ in range(400):
    try:
        if os.fork() == 0:
            time.sleep(120)
            os._exit(0)
        started += 1
    except OSError:
        break
exec(WRONG)
