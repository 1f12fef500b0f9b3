"""Files and tools shared by the corpus generators (standard library only).

The manifest of test/Corpus, the generated .mlir files with their header,
and IREE's input pipeline (`iree-compile --compile-to=input`)."""

import json
import os
import subprocess

from mlirtext import kept_expectations


def load_manifest(out):
    """The path of `out`/manifest.json and the manifest it holds."""
    manifest_path = os.path.join(out, "manifest.json")
    with open(manifest_path) as f:
        return manifest_path, json.load(f)


def save_manifest(manifest_path, manifest, files):
    """Writes `manifest` back with its entries `files`, sorted by path."""
    manifest["files"] = dict(sorted(files.items()))
    with open(manifest_path, "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


def write_generated(out, files, rel, header, text, entry, keep_expectations=True):
    """Writes `header` + `text` to `out`/`rel` and its manifest entry
    files[rel]: `entry`, its size ("bytes") and, with keep_expectations, the
    hand-written expectations of the entry it replaces."""
    with open(os.path.join(out, rel), "w") as f:
        f.write(header + text)
    kept = kept_expectations(files.get(rel)) if keep_expectations else {}
    files[rel] = {**entry, "bytes": len(header) + len(text), **kept}
    print("ok  ", rel, len(text) // 1024, "KB")


def iree_compile_to_input(iree_compile, src, dst):
    """Lowers the MLIR file `src` through IREE's input pipeline into `dst`
    (`iree-compile --compile-to=input`); returns the text of `dst`. Raises
    subprocess.CalledProcessError (with its stderr) where iree-compile fails."""
    subprocess.run([iree_compile, "--compile-to=input", src, "-o", dst], check=True,
                   capture_output=True, text=True)
    with open(dst) as f:
        return f.read()
