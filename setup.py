"""Maps the folders of the design card onto the import package `memplug`.

`core/` is `memplug`, `adapters/` is `memplug.adapters` and `datasets/` is
`memplug.datasets`. pyproject.toml cannot list sub-packages of several mapped roots
without naming each one, so they are discovered here; works for wheels and editable
installs alike.
"""

from setuptools import find_packages, setup

ROOTS = {"memplug": "core", "memplug.adapters": "adapters", "memplug.datasets": "datasets"}

packages = []
for prefix, folder in ROOTS.items():
    packages.append(prefix)
    packages += [f"{prefix}.{sub}" for sub in find_packages(folder)]

setup(
    packages=packages,
    package_dir=ROOTS,
    package_data={
        "": ["*.json", "*.csv", "*.txt", "*.md", "*.html", "*.tsv"],
        "memplug": ["py.typed"],
        # nltk's English sentence model for the official chunking (MIT; its README.md says whence)
        "memplug.datasets.factcon": ["nltk_data/README.md", "nltk_data/tokenizers/punkt_tab/english/*"],
    },
    # package_data above names every data file; include_package_data would add the same files
    # from the manifest, and warn of nltk_data/ as a package missing from `packages`
    include_package_data=False,
)
