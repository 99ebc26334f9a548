"""napari integration through npe2: ``napari.yaml`` (entry point ``napari.manifest``) names the reader and writer.

An adapter: layer keywords come from ``imij_plugins.physical``'s description, lazy data from
``imij_plugins.lazy``; nothing here reads the format itself. Importing needs neither napari nor Qt.
"""
