"""The course machinery: the CLI, the grader and its checker processes, the notebook executor, the learner
versions, the quiz.

Nothing here is part of the encoder; the model never imports it.
"""
