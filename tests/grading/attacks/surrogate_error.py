# An exception whose message holds a lone surrogate and bidi controls (it once stopped the whole class run).
def padding_mask(token_ids, pad_id):
    raise ValueError("bad \ud800 value \u202e reversed")
