# The image `encoder-course grade --isolate container` runs each verdict process in.
# Build it from the repository root (the build context):
#   docker build -f encoder_course/grading/grader.Dockerfile -t encoder-course-grader .
# or let the grader do it: encoder-course grade --isolate container --build-image SUBMISSIONS
FROM python:3.11-slim

ENV PIP_NO_CACHE_DIR=1 PYTHONDONTWRITEBYTECODE=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 MPLBACKEND=Agg \
    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1

# CPU-only torch first (the default wheel would pull in CUDA), then the course and what its checkers import.
RUN pip install --index-url https://download.pytorch.org/whl/cpu "torch>=2.2"
COPY pyproject.toml README.md /course/
COPY encoder_course /course/encoder_course
RUN pip install /course ipython && python -c "import encoder_course.checks, encoder_course.grading.checker_process"

# Verdict processes run as nobody (`docker run --user 65534:65534`), with a read-only root file system.
WORKDIR /job
USER 65534:65534
CMD ["python", "-s", "-m", "encoder_course.grading.checker_process", "stdio"]
