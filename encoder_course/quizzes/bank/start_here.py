"""Notebook 00 (start here): what a check cell's answers mean, the cells after an exercise, the self-check."""

from ..quiz import Question

QUESTIONS = (
    Question(
        text="You run an exercise's check cell and it prints the line below. What do you do next?",
        code="… scaled_dot_product_attention: not attempted yet (replace the `raise NotImplementedError` line ...)",
        options=(
            "Write the code in the exercise cell, run that cell, then run the check again",
            "Read the hint and fix the mistake it names in the code you already wrote",
            "Nothing: the check passed and your answer is saved in my_encoder/",
            "Restart the kernel: the checker could not reach the exercise cell",
        ),
        explanation="“Not attempted yet” means the exercise cell still raises NotImplementedError: the stub is "
                    "untouched, or its new version was never run. A wrong answer does not print this line: it "
                    "stops with an ExerciseError that names the mistake. A pass prints a line starting with ✓ "
                    "and says where your answer was saved.",
        see="00 · start_here, “Exercises and check cells”",
    ),
    Question(
        text="You skip the exercise of notebook 02 (its cell still raises NotImplementedError) and choose "
             "Run All. What happens to the cells below its check cell?",
        options=(
            "They run, using the package's version of the function",
            "They stop at the check cell until the exercise passes",
            "They run, and each one raises NotImplementedError",
            "They run, using the code of the solution notebook",
        ),
        explanation="A check cell whose exercise is not attempted prints a reminder and lets Run All go on, and "
                    "the cells after an exercise call the package's own version (ec.scaled_dot_product_attention), "
                    "never your stub, so a skipped exercise never blocks the rest of a notebook. Only a wrong "
                    "answer stops the run, with its hint.",
        see="00 · start_here, “Exercises and check cells”",
    ),
    Question(
        text="Before writing any exercise of notebook 03, you run pytest --nbval-lax notebooks/03_masks.ipynb "
             "on the file as you saved it. What does it report?",
        options=(
            "A failure: under the self-check an unattempted exercise fails",
            "A pass: “not attempted yet” is only a reminder, never a failure",
            "A pass, if the saved file shows a ✓ under each check cell",
            "A pass: the exercises are skipped and the other cells checked",
        ),
        explanation="The self-check runs the notebook from the top in a fresh kernel and judges what runs now, "
                    "not what the file has stored; under it, an exercise that still raises NotImplementedError "
                    "is a failure. “Not attempted yet” without stopping is what you get in JupyterLab, so that "
                    "Run All reaches the end.",
        see="00 · start_here, “Check a whole notebook yourself”",
    ),
)
