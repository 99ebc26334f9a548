"""ndarray in and out: numpy dtypes for sample types, channel layouts for array shapes."""

from imij_plugins.pixels.dtypes import as_image_array, dtype_of, layout_code, sample_code

__all__ = ["as_image_array", "dtype_of", "layout_code", "sample_code"]
