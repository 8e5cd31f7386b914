# The course's own answer, called from a new thread (a lock that traces only the calling thread would not see it).
import threading

import encoder_course as ec


def padding_mask(token_ids, pad_id):
    box = []
    worker = threading.Thread(target=lambda: box.append(ec.padding_mask(token_ids, pad_id)))
    worker.start()
    worker.join()
    return box[0]
