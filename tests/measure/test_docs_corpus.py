"""The docstring corpus of notebook 12: the stored snapshot, its split by module, and the builder."""

from __future__ import annotations

import json
import sys
import types

from encoder_course.measure import docs_corpus


def test_the_snapshot_names_its_python_and_licence_and_holds_unique_passages():
    info = docs_corpus.snapshot_info()
    passages = docs_corpus.load()
    assert info["passages"] == len(passages) > 3000
    assert info["python"].count(".") == 2 and "Python Software Foundation" in info["licence"]
    assert len({p.text for p in passages}) == len(passages)  # one passage per text
    assert len({p.name for p in passages}) == len(passages)
    assert [p.name for p in passages] == sorted(p.name for p in passages)
    assert all(len(p.text.split()) >= 4 and "\n" not in p.text for p in passages)
    names = {p.name for p in passages}
    assert {"json.dumps", "os.getcwd", "len"} <= names  # shown as a learner writes them (not posix.getcwd)


def test_the_split_is_by_module_and_about_a_fifth_is_held_out():
    passages = docs_corpus.load()
    train, held = docs_corpus.split(passages)
    assert len(train) + len(held) == len(passages)
    assert not {p.module for p in train} & {p.module for p in held}
    assert 0.1 < len(held) / len(passages) < 0.35
    # the hash alone decides: the same module is on the same side whatever else is in the list
    assert docs_corpus.held_out("json") == any(p.module == "json" for p in held)


def test_name_words_splits_dots_underscores_and_camel_case():
    assert docs_corpus.name_words("os.path.getsize") == "os path getsize"
    assert docs_corpus.name_words("logging.StreamHandler.setFormatter") == "logging stream handler set formatter"
    assert docs_corpus.name_words("http.HTTPStatus") == "http http status"
    assert docs_corpus.name_words("shutil.copy_tree") == "shutil copy tree"


def test_first_paragraph_and_what_is_not_a_passage():
    assert docs_corpus.first_paragraph("  Return x.\n  More here.\n\n  Second paragraph.") == "Return x. More here."
    assert not docs_corpus._usable("getattr(object, name[, default]) -> value")
    assert not docs_corpus._usable("Too short.")
    assert docs_corpus._usable("Return the square root of x.")


def test_the_builder_collects_public_objects_and_methods_once_and_writes_a_header(tmp_path, monkeypatch):
    module = types.ModuleType("toymod")
    exec('''
def public():
    """Return the answer to everything here.

    More detail that is not part of the passage.
    """

def _private():
    """Return something private that is never collected."""

def twin():
    """Return the answer to everything here."""

class Box:
    """A box that holds exactly one thing."""

    def open(self):
        """Open the box and show its content."""

    def _close(self):
        """Close the box without a word."""
''', module.__dict__)
    for name in ("public", "_private", "twin", "Box"):
        module.__dict__[name].__module__ = "toymod"
    monkeypatch.setitem(sys.modules, "toymod", module)
    passages = docs_corpus.collect(["toymod"])
    assert [p.name for p in passages] == ["toymod.Box", "toymod.Box.open", "toymod.public"]  # twin: same text
    assert passages[2].text == "Return the answer to everything here."
    out = tmp_path / "docs.jsonl"
    docs_corpus.write(out, ["toymod"])
    header = json.loads(out.read_text().splitlines()[0])
    assert header["passages"] == 3 and header["python"] == sys.version.split()[0]
    assert docs_corpus.load(out) == passages
