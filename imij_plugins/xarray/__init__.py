"""xarray integration: the ``imi`` engine (``xr.open_dataset("x.imi", engine="imi")``, ``xr.open_datatree``
for a node per frame, page or IMIJ-Set entry) and ``to_imi``.

An adapter: the physical meaning of the samples comes from ``imij_plugins.physical``, lazy reads
from ``imij_plugins.lazy``; this package only builds xarray objects from them.
"""

from imij_plugins.xarray.backend import ImiBackendArray, ImiBackendEntrypoint, open_imi
from imij_plugins.xarray.writer import to_imi

__all__ = ["ImiBackendArray", "ImiBackendEntrypoint", "open_imi", "to_imi"]
