from setuptools import setup

setup(cffi_modules=["imij_plugins/_build.py:ffibuilder"])
