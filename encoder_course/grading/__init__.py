"""The class grader (``encoder-course grade``): reads a class's notebooks, judges every exercise with the course's
checkers, writes the gradebook. May import the model, ``checks`` and ``notebook_tools``; nothing imports it but
the command line.

Trust model: a submission is hostile code. It runs only in the learner's process (``worker.py``), forked by a
checker process (``checker_process.py``) inside the isolation of ``sandbox.py``; the grader's side (``grade.py``,
``solutions.py``) reads notebooks as data and hears the learner's process only through ``wire.py``'s typed
messages, never unpickled. The learner's process holds no working copy of the answer its exercise is graded
against (``withhold.py``). What each isolation mode protects, and what not, is the teachers' guide's table.
"""
