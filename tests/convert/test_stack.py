"""convert/stack.py: a hyperstack's dimensions as the neutral description and the 1.5 records."""

from __future__ import annotations

from imij_plugins.container.metadata import science as sc
from imij_plugins.convert.stack import Dim, Stack, describe, science


def tzcyx(step: float | None = 0.75) -> Stack:
    """One time point (index 2 of the source's t), 4 z planes, 2 named channels, 8 x 6 pixels."""
    return Stack((Dim("t", 1, 0.5 if step else None, "s", 2), Dim("z", 4, step, "um"), Dim("c", 2),
                  Dim("y", 8, 0.4 if step else None, "um"), Dim("x", 6, 0.2 if step else None, "um")),
                 "c", ("DAPI", ""))


def test_a_stack_describes_frames_rows_columns_channels_and_a_coordinate():
    p = describe(tzcyx())
    assert [(d.name, d.binding, d.size, d.scale, d.unit, d.kind) for d in p.dims] == [
        ("z", "frames", 4, 0.75, "um", "space"), ("y", "rows", 8, 0.4, "um", "space"),
        ("x", "columns", 6, 0.2, "um", "space"), ("c", "channels", 2, 1.0, "", "channel")]
    assert [(c.name, c.index, c.value, c.unit, c.kind) for c in p.coordinates] == [("t", 2, 1.0, "s", "time")]
    assert p.axis_order == ("t", "z", "c", "y", "x") and p.scaled and p.has_axes


def test_a_stack_gives_axes_in_source_order_with_one_level_cord_and_channel_names():
    records = science(tzcyx())
    assert records["axes"] == sc.Axes(
        (sc.Axis("t", sc.KIND_TIME, sc.BIND_COORDINATE, "s"), sc.Axis("z", sc.KIND_SPACE, sc.BIND_FRAMES, "um"),
         sc.Axis("c", sc.KIND_CHANNEL, sc.BIND_CHANNELS), sc.Axis("y", sc.KIND_SPACE, sc.BIND_ROWS, "um"),
         sc.Axis("x", sc.KIND_SPACE, sc.BIND_COLUMNS, "um")),
        (sc.AxisLevel((0.5, 0.75, 1.0, 0.4, 0.2), (0.0,) * 5),))
    assert records["coordinates"] == sc.Coordinates((2,))  # 1.5: one index per coordinate-bound axis
    assert records["calibration"] == sc.Calibration((sc.ChannelCalibration(quantity="DAPI"), sc.ChannelCalibration()))


def test_a_stack_with_no_known_step_claims_no_scale():
    records = science(tzcyx(step=None))
    assert records["axes"].levels == () and not describe(tzcyx(step=None)).scaled
