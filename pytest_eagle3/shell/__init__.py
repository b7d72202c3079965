"""The pytest shell: plugin hooks, options, fixtures, the verdict report and the command line.

The only package that imports pytest; everything below it is plain Python.
"""
