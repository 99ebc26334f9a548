"""Chunk codecs for array stores: ``zarr3.ImiCodec`` (zarr 3, ``imij.imi``) and ``numcodecs.Imi`` (``imi``).

Both store one chunk as one IMI file through the core API (``chunk`` maps chunk shapes to images);
zarr and numcodecs find them through their entry points, so nothing here is imported eagerly.
"""
