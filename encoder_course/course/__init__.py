"""The course machinery: the CLI, the grader and its kernel runner, the learner versions, the quiz.

Nothing here is part of the encoder; the model never imports it.
"""
